// Private to server.cpp (see server_state.hpp). One client of
// GET /api/v1/sessions/{id}/terminal[?from=OFFSET][&read_only=1] (docs/api.md):
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
// The output queue is bounded in bytes: a client that stops reading is closed (1008)
// rather than holding the daemon's memory; it can attach again and gets the replay.
#pragma once

#include "api/server_state.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // see server_state.hpp
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <deque>
#include <string>

namespace handler::api::detail {

class TerminalSocket final : public Connection,
                             public TerminalClient,
                             public std::enable_shared_from_this<TerminalSocket> {
public:
    static constexpr std::size_t kQueueLimitBytes = std::size_t{16} << 20;
    static constexpr std::size_t kIncomingMessageLimitBytes = std::size_t{64} << 10;
    static constexpr std::chrono::milliseconds kCloseGrace{1000};

    TerminalSocket(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp,
                   std::string session_id, AttachOptions options)
        : ws_(std::move(stream)), close_timer_(ws_.get_executor()), state_(std::move(state)),
          over_tcp_(over_tcp), session_id_(std::move(session_id)), options_(options) {}

    ~TerminalSocket() override {
        detach();
        state_->remove(id_);
    }

    void start(const beast::http::request<beast::http::string_body>& upgrade) {
        id_ = state_->add(weak_from_this(), over_tcp_);
        beast::get_lowest_layer(ws_).expires_never();
        ws_.set_option(beast::websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws_.read_message_max(kIncomingMessageLimitBytes);
        ws_.async_accept(upgrade, [self = shared_from_this()](beast::error_code error) {
            self->on_accept(error);
        });
    }

    void shut_down() override {
        if (!accepted_) return abort();
        finish_with({{"type", "ended"}, {"reason", "handlerd is stopping; the session keeps running"}},
                    beast::websocket::close_code::going_away);
    }

    void abort() override {
        detach();
        close_timer_.cancel();
        beast::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

    // ---- TerminalClient (called by the session service on the io thread) -------------

    void output(OutputStream stream, std::uint64_t, const std::shared_ptr<const std::string>& bytes) override {
        if (closing_) return;
        if (queued_bytes_ + bytes->size() > kQueueLimitBytes) {
            spdlog::warn("api: terminal client of session {} fell {} bytes behind; disconnecting it",
                         session_id_, queued_bytes_);
            return begin_close(beast::websocket::close_code::policy_error,
                               "fell too far behind; attach again to get the screen");
        }
        auto message = std::make_shared<std::string>();
        message->reserve(bytes->size() + 1);
        message->push_back(static_cast<char>(stream));
        message->append(*bytes);
        enqueue(Outgoing{std::move(message), true});
    }

    void event(const store::SessionEvent& event) override {
        if (closing_) return;
        // The payload was checked to be a JSON object when it was stored, and the kind is
        // one of handlerd's names: the message is put together without parsing again.
        auto message = std::make_shared<std::string>(
            R"({"type":"event","seq":)" + std::to_string(event.seq) + R"(,"at":)" + std::to_string(event.at) +
            R"(,"kind":)" + boost::json::serialize(boost::json::string(event.kind)) + R"(,"payload":)" +
            event.payload + "}");
        enqueue(Outgoing{std::move(message), false});
    }

    void exited(std::int64_t code) override {
        attach_id_ = 0; // nothing to detach from any more
        finish_with({{"type", "exit"}, {"code", code}}, beast::websocket::close_code::normal);
    }

    void ended(const std::string& reason) override {
        attach_id_ = 0;
        finish_with({{"type", "ended"}, {"reason", reason}}, beast::websocket::close_code::normal);
    }

private:
    struct Outgoing {
        std::shared_ptr<const std::string> bytes;
        bool binary = false;
    };

    void on_accept(beast::error_code error) {
        if (error) return abort();
        accepted_ = true;
        if (state_->stopping || state_->sessions == nullptr)
            return ended("handlerd is stopping or has no session service");
        // Output replayed during attach() is held back so "attached" goes first.
        holding_ = true;
        auto attached = state_->sessions->attach(session_id_, weak_from_this(), options_);
        holding_ = false;
        if (!attached) {
            held_.clear();
            return finish_with({{"type", "error"},
                                {"code", std::string(to_string(attached.error().code))},
                                {"message", attached.error().message}},
                               beast::websocket::close_code::normal);
        }
        if (!close_after_drain_) attach_id_ = attached->attach_id;
        boost::json::object hello{{"type", "attached"},
                                  {"session", session_id_},
                                  {"tty", attached->tty},
                                  {"produced", attached->produced},
                                  {"state", std::string(store::to_string(attached->state))},
                                  {"events", attached->events}};
        push_front_text(hello);
        read();
    }

    void read() {
        ws_.async_read(incoming_, [self = shared_from_this()](beast::error_code error, std::size_t) {
            if (error) return self->on_read_end();
            self->on_message();
            self->incoming_.consume(self->incoming_.size());
            self->read();
        });
    }

    void on_message() {
        if (attach_id_ == 0 || state_->sessions == nullptr) return;
        const auto data = incoming_.cdata();
        const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
        if (ws_.got_binary()) return state_->sessions->input(attach_id_, bytes);
        boost::system::error_code error;
        auto value = boost::json::parse(bytes, error);
        const auto* object = error ? nullptr : value.if_object();
        const auto* type = object ? object->if_contains("type") : nullptr;
        if (type == nullptr || !type->is_string())
            return send_error("a text message must be a JSON object with a \"type\"");
        if (*type == "resize") {
            const auto* rows = object->if_contains("rows");
            const auto* cols = object->if_contains("cols");
            if (rows == nullptr || cols == nullptr || !rows->is_int64() || !cols->is_int64() ||
                rows->as_int64() < 1 || rows->as_int64() > 10000 || cols->as_int64() < 1 ||
                cols->as_int64() > 10000)
                return send_error("resize needs integer \"rows\" and \"cols\" from 1 to 10000");
            return state_->sessions->resize(attach_id_, static_cast<std::uint16_t>(rows->as_int64()),
                                            static_cast<std::uint16_t>(cols->as_int64()));
        }
        if (*type == "eof") return state_->sessions->input_eof(attach_id_);
        send_error("unknown message type " + boost::json::serialize(*type) +
                   " (expected \"resize\" or \"eof\")");
    }

    void send_error(const std::string& message) {
        enqueue_text({{"type", "error"}, {"code", "invalid_argument"}, {"message", message}});
    }

    void enqueue_text(const boost::json::object& object) {
        enqueue(Outgoing{std::make_shared<const std::string>(boost::json::serialize(object)), false});
    }

    void push_front_text(const boost::json::object& object) {
        // Runs once, right after attach(): the held replay follows the greeting.
        std::deque<Outgoing> held = std::move(held_);
        held_.clear();
        Outgoing greeting{std::make_shared<const std::string>(boost::json::serialize(object)), false};
        queued_bytes_ += greeting.bytes->size();
        if (writing_) {
            queue_.insert(queue_.begin() + 1, greeting);
        } else {
            queue_.push_front(greeting);
        }
        for (auto& item : held) queue_.push_back(std::move(item));
        if (!writing_ && !queue_.empty()) write_next();
    }

    void enqueue(Outgoing message) {
        queued_bytes_ += message.bytes->size();
        if (holding_) {
            held_.push_back(std::move(message));
            return;
        }
        queue_.push_back(std::move(message));
        if (!writing_) write_next();
    }

    void write_next() {
        writing_ = true;
        ws_.binary(queue_.front().binary);
        ws_.async_write(net::buffer(*queue_.front().bytes),
                        [self = shared_from_this()](beast::error_code error, std::size_t) {
                            self->on_write(error);
                        });
    }

    void on_write(beast::error_code error) {
        writing_ = false;
        queued_bytes_ -= queue_.front().bytes->size();
        queue_.pop_front();
        if (error) return abort();
        if (!queue_.empty()) return write_next();
        if (close_after_drain_) begin_close(close_code_, "");
    }

    // The last message, then a close once everything queued before it has been sent.
    void finish_with(const boost::json::object& last, beast::websocket::close_code code) {
        if (closing_ || close_after_drain_) return;
        detach();
        enqueue_text(last);
        close_after_drain_ = true;
        close_code_ = code;
        if (!writing_ && !holding_) begin_close(code, "");
    }

    void begin_close(beast::websocket::close_code code, const char* reason) {
        if (closing_) return;
        closing_ = true;
        detach();
        if (writing_) {
            // Only the message being written must live on; the rest is dropped.
            queue_.erase(queue_.begin() + 1, queue_.end());
            queued_bytes_ = queue_.front().bytes->size();
        } else {
            queue_.clear();
            queued_bytes_ = 0;
        }
        held_.clear();
        ws_.async_close(beast::websocket::close_reason(code, reason),
                        [self = shared_from_this()](beast::error_code) { self->close_timer_.cancel(); });
        close_timer_.expires_after(kCloseGrace);
        close_timer_.async_wait([weak = weak_from_this()](beast::error_code error) {
            if (error) return;
            if (auto self = weak.lock()) self->abort();
        });
    }

    void on_read_end() {
        detach();
        close_timer_.cancel();
    }

    void detach() {
        if (attach_id_ != 0 && state_->sessions != nullptr) state_->sessions->detach(attach_id_);
        attach_id_ = 0;
    }

    beast::websocket::stream<Stream> ws_;
    beast::flat_buffer incoming_;
    std::deque<Outgoing> queue_;
    std::deque<Outgoing> held_;
    std::size_t queued_bytes_ = 0;
    net::steady_timer close_timer_;
    std::shared_ptr<ServerState> state_;
    const bool over_tcp_;
    const std::string session_id_;
    const AttachOptions options_;
    std::uint64_t id_ = 0;
    std::uint64_t attach_id_ = 0;
    bool accepted_ = false;
    bool writing_ = false;
    bool holding_ = false;
    bool closing_ = false;
    bool close_after_drain_ = false;
    beast::websocket::close_code close_code_ = beast::websocket::close_code::normal;
};

} // namespace handler::api::detail
