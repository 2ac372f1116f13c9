// Private to server.cpp (see server_state.hpp). One client of
// GET /api/v1/sessions/{id}/terminal[?from=OFFSET][&read_only=1] (docs/api.md), the CLI's
// `handler attach`: one session per socket, its messages without a channel
// (terminal_protocol.hpp words them):
//
//   server → client  text   {"type":"attached","session":ID,"tty":B,"produced":N,"state":S,
//                           "events":"structured|text|none"} first; then, with ?events=1,
//                           {"type":"event","seq":N,"at":MS,"kind":K,"payload":{...}};
//                           {"type":"exit","code":N} or {"type":"ended","reason":TEXT}
//                           last, before a normal close
//                    binary one byte of stream (1 terminal, 2 stdout, 3 stderr) + output
//   client → server  binary input for the program
//                    text   {"type":"resize","rows":R,"cols":C} | {"type":"eof"}
//
// The page's terminals are channels of the events socket instead (websocket_session.hpp),
// with the same messages and limits.
#pragma once

#include "api/terminal_channel.hpp"
#include "api/websocket_connection.hpp"

#include <spdlog/spdlog.h>

#include <string>

namespace handler::api::detail {

class TerminalSocket final : public WebSocketConnection, public ChannelSink {
public:
    TerminalSocket(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp,
                   std::string session_id, AttachOptions options)
        : WebSocketConnection(std::move(stream), std::move(state), over_tcp,
                              Limits{kTerminalIncomingLimitBytes, kTerminalQueueLimitBytes}),
          session_id_(std::move(session_id)), options_(options) {}

    ~TerminalSocket() override { detach(); }

    void shut_down() override {
        if (!accepted()) return abort();
        finish_with(ended_message(kNoChannel, "handlerd is stopping; the session keeps running"),
                    websocket::close_code::going_away);
    }

    // ---- ChannelSink --------------------------------------------------------------------

    void channel_send(unsigned, std::string message, bool binary) override {
        if (send(std::make_shared<const std::string>(std::move(message)), binary) != Queued::over_limit) return;
        spdlog::warn("api: terminal client of session {} fell {} bytes behind; disconnecting it", session_id_,
                     queued_bytes());
        begin_close(websocket::close_code::policy_error, "fell too far behind; attach again to get the screen");
    }
    void channel_finished(unsigned) override { close_when_sent(websocket::close_code::normal); }

private:
    void on_open() override {
        if (state().stopping || state().sessions == nullptr)
            return finish_with(ended_message(kNoChannel, "handlerd is stopping or has no session service"),
                               websocket::close_code::normal);
        channel_ = std::make_shared<TerminalChannel>(*this, kNoChannel, session_id_);
        if (auto attached = channel_->attach(*state().sessions, options_); !attached) {
            channel_.reset();
            finish_with(error_message(kNoChannel, attached.error().code, attached.error().message),
                        websocket::close_code::normal);
        }
    }

    void on_message(std::string_view bytes, bool binary) override {
        if (!channel_) return;
        if (binary) return channel_->input(bytes);
        auto parsed = parse_terminal_command(bytes);
        if (!parsed.command)
            return channel_send(kNoChannel, error_message(kNoChannel, ErrorCode::invalid_argument,
                                                          parsed.command.error().message),
                                false);
        const auto& command = *parsed.command;
        if (command.kind == TerminalCommand::Kind::resize) return channel_->resize(command.rows, command.cols);
        if (command.kind == TerminalCommand::Kind::eof) return channel_->input_eof();
    }

    void on_end() override { detach(); }

    // The last message, then a close once everything queued before it has been sent.
    void finish_with(std::string last, websocket::close_code code) {
        detach();
        channel_send(kNoChannel, std::move(last), false);
        close_when_sent(code);
    }

    void detach() {
        if (channel_) channel_->detach();
    }

    const std::string session_id_;
    const AttachOptions options_;
    std::shared_ptr<TerminalChannel> channel_;
};

} // namespace handler::api::detail
