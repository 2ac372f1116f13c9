// Private to server.cpp (see server_state.hpp). One client of GET /api/v1/events: every
// message published on the EventHub is sent to it as a text frame, in order, with one
// write in flight and at most kQueueLimit waiting. Anything the client sends is read
// (that is how pings, pongs and its close frame are processed) and ignored.
#pragma once

#include "api/server_state.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // see server_state.hpp
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <deque>
#include <string>

namespace handler::api::detail {

namespace websocket = beast::websocket;

class WebSocketSession final : public Connection,
                               public std::enable_shared_from_this<WebSocketSession> {
public:
    // docs/api.md: a client more than this many messages behind is disconnected (1008)
    // instead of letting the daemon's memory grow with it.
    static constexpr std::size_t kQueueLimit = 1024;
    // Clients have nothing to say on this stream; a big frame is a bug or an attack.
    static constexpr std::size_t kIncomingMessageLimitBytes = 4096;
    // How long a client that is sent a close frame has to answer before the connection is
    // dropped. A client that fell behind is often not reading at all, so its close frame
    // may never leave our send buffer.
    static constexpr std::chrono::milliseconds kCloseGrace{1000};

    WebSocketSession(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp)
        : ws_(std::move(stream)), close_timer_(ws_.get_executor()), state_(std::move(state)),
          over_tcp_(over_tcp) {}

    ~WebSocketSession() override {
        unsubscribe();
        state_->remove(id_);
    }

    void start(const beast::http::request<beast::http::string_body>& upgrade) {
        id_ = state_->add(weak_from_this(), over_tcp_);
        // The websocket stream runs its own timers (handshake, idle with pings); the
        // HTTP read deadline still armed on the TCP layer must not cut it off.
        beast::get_lowest_layer(ws_).expires_never();
        ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws_.read_message_max(kIncomingMessageLimitBytes);
        // A client's close frame ends its subscription at once; the read loop ends only
        // after the TCP teardown, which waits for the client to close its side.
        ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
            if (kind == websocket::frame_type::close) unsubscribe();
        });
        ws_.async_accept(upgrade, [self = shared_from_this()](beast::error_code error) {
            self->on_accept(error);
        });
    }

    void shut_down() override {
        if (!accepted_) return abort();
        begin_close(websocket::close_code::going_away, "handlerd is stopping");
    }

    void abort() override {
        unsubscribe();
        close_timer_.cancel();
        beast::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

private:
    void on_accept(beast::error_code error) {
        if (error) return abort();
        accepted_ = true;
        if (state_->stopping || state_->events == nullptr) {
            begin_close(websocket::close_code::going_away, "handlerd is stopping");
        } else {
            // Weak: the hub must not keep a finished session alive.
            subscription_ = state_->events->subscribe(
                [weak = weak_from_this()](const EventHub::Message& message) {
                    if (auto self = weak.lock()) self->enqueue(message);
                });
        }
        read();
    }

    void read() {
        ws_.async_read(incoming_, [self = shared_from_this()](beast::error_code error,
                                                              std::size_t) {
            if (error) return self->finish();
            self->incoming_.consume(self->incoming_.size());
            self->read();
        });
    }

    void enqueue(const EventHub::Message& message) {
        if (closing_) return;
        if (queue_.size() >= kQueueLimit) {
            spdlog::warn("api: events client fell {} messages behind; disconnecting it",
                         queue_.size());
            begin_close(websocket::close_code::policy_error,
                        "fell more than 1024 events behind; reconnect and re-read the state");
            return;
        }
        queue_.push_back(message);
        if (!writing_) write_next();
    }

    void write_next() {
        writing_ = true;
        ws_.text(true);
        ws_.async_write(net::buffer(*queue_.front()),
                        [self = shared_from_this()](beast::error_code error, std::size_t) {
                            self->on_write(error);
                        });
    }

    void on_write(beast::error_code error) {
        writing_ = false;
        queue_.pop_front();
        if (error) return abort(); // The read then fails too, and the session ends.
        if (!closing_ && !queue_.empty()) write_next();
    }

    void begin_close(websocket::close_code code, const char* reason) {
        if (closing_) return;
        closing_ = true;
        unsubscribe();
        // Free the backlog now; only the message being written must live until its
        // write completes.
        queue_.erase(writing_ ? queue_.begin() + 1 : queue_.begin(), queue_.end());
        ws_.async_close(websocket::close_reason(code, reason),
                        [self = shared_from_this()](beast::error_code) {
                            self->close_timer_.cancel();
                        });
        close_timer_.expires_after(kCloseGrace);
        close_timer_.async_wait([weak = weak_from_this()](beast::error_code error) {
            if (error) return; // Cancelled: the close finished in time.
            if (auto self = weak.lock()) self->abort();
        });
    }

    // The read loop ended: the client closed, vanished, timed out, or we closed it.
    void finish() {
        unsubscribe();
        close_timer_.cancel();
    }

    void unsubscribe() {
        if (subscription_ != 0 && state_->events != nullptr)
            state_->events->unsubscribe(subscription_);
        subscription_ = 0;
    }

    websocket::stream<Stream> ws_;
    beast::flat_buffer incoming_;
    std::deque<EventHub::Message> queue_;
    net::steady_timer close_timer_;
    std::shared_ptr<ServerState> state_;
    const bool over_tcp_;
    std::uint64_t id_ = 0;
    std::uint64_t subscription_ = 0;
    bool accepted_ = false;
    bool writing_ = false;
    bool closing_ = false;
};

} // namespace handler::api::detail
