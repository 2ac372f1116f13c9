// Private to server.cpp (see server_state.hpp), though free of Beast. One client's attach to
// one session, on behalf of a socket: the terminal route's socket has one (kNoChannel), the
// events socket one per open channel. It is the TerminalClient the session service calls;
// it words each call as the protocol's message for its channel (terminal_protocol.hpp) and
// hands it to the socket, and it remembers the attach so it can detach.
#pragma once

#include "api/session_control.hpp"
#include "api/terminal_protocol.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace handler::api::detail {

// The socket side of a channel.
class ChannelSink {
public:
    virtual ~ChannelSink() = default;
    // One message of the channel, in order.
    virtual void channel_send(unsigned channel, std::string message, bool binary) = 0;
    // Its session ended (the exit or ended message was sent): the channel is done.
    virtual void channel_finished(unsigned channel) = 0;
};

class TerminalChannel final : public TerminalClient,
                              public std::enable_shared_from_this<TerminalChannel> {
public:
    // The sink owns the channel and outlives it (it detaches its channels as it ends).
    TerminalChannel(ChannelSink& sink, unsigned channel, std::string session)
        : sink_(&sink), channel_(channel), session_(std::move(session)) {}

    // The greeting first, then what the attach replayed (held back meanwhile, since the
    // service replays before it returns), or the service's refusal and nothing else.
    Result<void> attach(SessionControl& sessions, const AttachOptions& options) {
        holding_ = true;
        auto attached = sessions.attach(session_, weak_from_this(), options);
        holding_ = false;
        auto held = std::move(held_);
        held_.clear();
        if (!attached) return attached.take_error();
        // An ended session says so during the attach: there is nothing to detach then.
        if (!finished_) {
            sessions_ = &sessions;
            attach_id_ = attached->attach_id;
        }
        sink_->channel_send(channel_, attached_message(channel_, session_, *attached), false);
        for (auto& [message, binary] : held) sink_->channel_send(channel_, std::move(message), binary);
        if (finished_) sink_->channel_finished(channel_);
        return {};
    }

    void input(std::string_view bytes) {
        if (attach_id_ != 0) sessions_->input(attach_id_, bytes);
    }
    void resize(std::uint16_t rows, std::uint16_t cols) {
        if (attach_id_ != 0) sessions_->resize(attach_id_, rows, cols);
    }
    void input_eof() {
        if (attach_id_ != 0) sessions_->input_eof(attach_id_);
    }
    // Called again, it does nothing.
    void detach() {
        if (attach_id_ != 0) sessions_->detach(attach_id_);
        attach_id_ = 0;
    }

    // ---- TerminalClient (called by the session service on the io thread) -------------

    void output(OutputStream stream, std::uint64_t, std::uint64_t end,
                const std::shared_ptr<const std::string>& bytes) override {
        send(output_message(channel_, stream, end, *bytes), true);
    }
    void event(const store::SessionEvent& event) override { send(event_message(channel_, event), false); }
    void exited(std::int64_t code) override { finish(exit_message(channel_, code)); }
    void ended(const std::string& reason) override { finish(ended_message(channel_, reason)); }

private:
    void send(std::string message, bool binary) {
        if (finished_) return;
        if (holding_) {
            held_.emplace_back(std::move(message), binary);
            return;
        }
        sink_->channel_send(channel_, std::move(message), binary);
    }

    void finish(std::string last) {
        if (finished_) return;
        send(std::move(last), false);
        finished_ = true;
        attach_id_ = 0; // nothing to detach from any more
        if (!holding_) sink_->channel_finished(channel_);
    }

    ChannelSink* sink_;
    SessionControl* sessions_ = nullptr;
    const unsigned channel_;
    const std::string session_;
    std::uint64_t attach_id_ = 0;
    bool holding_ = false;
    bool finished_ = false;
    std::vector<std::pair<std::string, bool>> held_;
};

} // namespace handler::api::detail
