// Private to server.cpp (see server_state.hpp). One client of GET /api/v1/events: every
// message published on the EventHub is sent to it as a text frame, in order. A client
// that says nothing gets just that; the page also opens terminal channels on it, so that
// a tab needs one socket (docs/api.md, "Terminal channels"):
//
//   client → server  text   {"type":"attach","channel":N,"session":ID,...options}
//                           {"type":"detach","channel":N}
//                           {"type":"resize","channel":N,"rows":R,"cols":C}
//                           {"type":"eof","channel":N}
//                           {"type":"follow","sessions":[...]|"*","kinds":[...]}
//                    binary one byte of channel + input for its program
//   server → client  text   the hub's messages; terminal.attached, terminal.event,
//                           terminal.exit, terminal.ended, terminal.detached and
//                           terminal.error with their "channel"; following, the
//                           answer to a follow; error for a message that names no
//                           channel
//                    binary one byte of channel, one of stream, the chunk's end
//                           offset (8 bytes), then output
#pragma once

#include "api/event_follow.hpp"
#include "api/terminal_channel.hpp"
#include "api/websocket_connection.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <string>

namespace handler::api::detail {

class WebSocketSession final : public WebSocketConnection, public ChannelSink {
public:
    // docs/api.md: a client more than this many hub messages behind is disconnected (1008)
    // instead of letting the daemon's memory grow with it.
    static constexpr std::size_t kQueueLimit = 1024;
    // Each channel holds an attach, its replay and its share of the queue: a bound keeps
    // one socket from attaching to everything at once.
    static constexpr std::size_t kChannelLimit = 16;

    WebSocketSession(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp)
        : WebSocketConnection(std::move(stream), std::move(state), over_tcp,
                              Limits{kTerminalIncomingLimitBytes, kTerminalQueueLimitBytes, kQueueLimit}) {}

    ~WebSocketSession() override { on_end(); }

    void shut_down() override {
        if (!accepted()) return abort();
        begin_close(websocket::close_code::going_away, "handlerd is stopping");
    }

    // ---- ChannelSink --------------------------------------------------------------------

    void channel_send(unsigned channel, std::string message, bool binary) override {
        if (send(std::make_shared<const std::string>(std::move(message)), binary) != Queued::over_limit) return;
        spdlog::warn("api: events client fell {} bytes behind on terminal channel {}; disconnecting it",
                     queued_bytes(), channel);
        begin_close(websocket::close_code::policy_error,
                    "fell too far behind; reconnect, and attach again to get the screen");
    }
    void channel_finished(unsigned channel) override { channels_.erase(channel); }

private:
    void on_open() override {
        if (state().stopping || state().events == nullptr)
            return begin_close(websocket::close_code::going_away, "handlerd is stopping");
        // Weak: the hub must not keep a finished session alive.
        subscription_ = state().events->subscribe(
            [weak = weak_from_this()](const EventHub::Message& message, const Topic& topic) {
                if (auto self = weak.lock()) static_cast<WebSocketSession&>(*self).publish(message, topic);
            });
    }

    void publish(const EventHub::Message& message, const Topic& topic) {
        if (!filter_.wants(topic)) return;
        if (send(message, false, Counted::yes) != Queued::over_limit) return;
        spdlog::warn("api: events client fell {} messages behind; disconnecting it", queued_counted());
        begin_close(websocket::close_code::policy_error,
                    "fell more than 1024 events behind; reconnect and re-read the state");
    }

    void on_message(std::string_view bytes, bool binary) override {
        if (binary) return on_input(bytes);
        if (auto follow = parse_follow(bytes)) {
            if (!*follow) return refuse(kNoChannel, follow->error());
            // Every message published from here on is judged by the new filter, and the
            // answer is queued behind what the old one let through.
            filter_ = std::move(**follow);
            return channel_send(kNoChannel, following_message(filter_), false);
        }
        auto parsed = parse_channel_command(bytes);
        if (!parsed.command) return refuse(parsed.channel, parsed.command.error());
        const auto& command = *parsed.command;
        const auto open = channels_.find(command.channel);
        if (command.kind == TerminalCommand::Kind::attach) return attach(command, open != channels_.end());
        if (open == channels_.end())
            return refuse(command.channel, make_error(ErrorCode::invalid_argument,
                                                      "channel " + std::to_string(command.channel) +
                                                          " is not open (attach it first)"));
        auto channel = open->second;
        switch (command.kind) {
        case TerminalCommand::Kind::resize: return channel->resize(command.rows, command.cols);
        case TerminalCommand::Kind::eof: return channel->input_eof();
        case TerminalCommand::Kind::detach:
            channel->detach();
            channels_.erase(open);
            channel_send(command.channel, detached_message(command.channel), false);
            return;
        case TerminalCommand::Kind::attach: return;
        }
    }

    void attach(const TerminalCommand& command, bool open) {
        const unsigned number = command.channel;
        if (open)
            return refuse(number, make_error(ErrorCode::conflict, "channel " + std::to_string(number) +
                                                                      " is open already (detach it, or use another)"));
        if (channels_.size() >= kChannelLimit)
            return refuse(number, make_error(ErrorCode::invalid_argument,
                                             "this socket has " + std::to_string(kChannelLimit) +
                                                 " channels open, the most it takes; detach one first"));
        if (state().sessions == nullptr)
            return refuse(number, make_error(ErrorCode::unavailable, "this handlerd has no session service"));
        auto channel = std::make_shared<TerminalChannel>(*this, number, command.session);
        // In the map before the attach: an ended session finishes (and leaves it) within it.
        channels_[number] = channel;
        if (auto attached = channel->attach(*state().sessions, command.options); !attached) {
            channels_.erase(number);
            refuse(number, attached.error());
        }
    }

    // Input: the channel's byte, then the bytes for its program.
    void on_input(std::string_view bytes) {
        if (bytes.empty())
            return refuse(kNoChannel, make_error(ErrorCode::invalid_argument,
                                                 "a binary message must start with its channel's byte"));
        const unsigned number = static_cast<unsigned char>(bytes.front());
        const auto open = channels_.find(number);
        if (open == channels_.end())
            return refuse(number, make_error(ErrorCode::invalid_argument,
                                             "input for channel " + std::to_string(number) +
                                                 ", which is not open (attach it first)"));
        open->second->input(bytes.substr(1));
    }

    void refuse(unsigned channel, const Error& error) {
        channel_send(channel, error_message(channel, error.code, error.message), false);
    }

    void on_end() override {
        if (subscription_ != 0 && state().events != nullptr) state().events->unsubscribe(subscription_);
        subscription_ = 0;
        auto channels = std::move(channels_);
        channels_.clear();
        for (auto& [number, channel] : channels) channel->detach();
    }

    std::map<unsigned, std::shared_ptr<TerminalChannel>> channels_;
    std::uint64_t subscription_ = 0;
    EventFilter filter_;
};

} // namespace handler::api::detail
