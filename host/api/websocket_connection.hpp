// Private to server.cpp (see server_state.hpp). What the events socket and the terminal
// socket share: the accept with its timeouts and incoming limit, the read loop, a write
// queue with one write in flight and a bound, and the close with a grace time for a client
// that never answers. The two sockets say what their messages are; this says how they go.
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

#include <deque>
#include <limits>
#include <string>
#include <string_view>

namespace handler::api::detail {

namespace websocket = beast::websocket;

class WebSocketConnection : public Connection,
                            public std::enable_shared_from_this<WebSocketConnection> {
public:
    struct Limits {
        std::size_t incoming_bytes = 0; // one client message
        std::size_t queued_bytes = 0;   // everything waiting to be sent
        // Waiting messages sent as Counted::yes (the events hub's): a bound in messages
        // where their number, not their size, is what docs/api.md promises.
        std::size_t queued_counted = std::numeric_limits<std::size_t>::max();
    };

    // How long a client that is sent a close frame has to answer before the connection is
    // dropped. A client that fell behind is often not reading at all, so its close frame
    // may never leave our send buffer.
    static constexpr std::chrono::milliseconds kCloseGrace{1000};

    ~WebSocketConnection() override { state_->remove(id_); }

    void start(const beast::http::request<beast::http::string_body>& upgrade) {
        id_ = state_->add(weak_from_this(), over_tcp_);
        // The websocket stream runs its own timers (handshake, idle with pings); the
        // HTTP read deadline still armed on the TCP layer must not cut it off.
        beast::get_lowest_layer(ws_).expires_never();
        ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws_.read_message_max(limits_.incoming_bytes);
        // A client's close frame ends what it follows at once; the read loop ends only
        // after the TCP teardown, which waits for the client to close its side.
        ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
            if (kind == websocket::frame_type::close) on_end();
        });
        ws_.async_accept(upgrade, [self = shared_from_this()](beast::error_code error) {
            if (error) return self->abort();
            self->accepted_ = true;
            self->on_open();
            self->read();
        });
    }

    void abort() override {
        on_end();
        close_timer_.cancel();
        beast::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

protected:
    enum class Counted { no = 1, yes };
    enum class Queued { yes = 1, over_limit, closing };

    WebSocketConnection(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp, Limits limits)
        : ws_(std::move(stream)), close_timer_(ws_.get_executor()), state_(std::move(state)),
          over_tcp_(over_tcp), limits_(limits) {}

    // Accepted: the read loop starts right after.
    virtual void on_open() = 0;
    virtual void on_message(std::string_view bytes, bool binary) = 0;
    // Closing or closed (called more than once): let go of what it follows.
    virtual void on_end() = 0;

    // over_limit: nothing was queued, and the caller closes the client (1008), which is
    // too far behind to be worth waiting for.
    Queued send(std::shared_ptr<const std::string> bytes, bool binary, Counted counted = Counted::no) {
        if (closing_ || close_when_sent_) return Queued::closing;
        const bool counts = counted == Counted::yes;
        if (queued_bytes_ + bytes->size() > limits_.queued_bytes ||
            (counts && queued_counted_ >= limits_.queued_counted))
            return Queued::over_limit;
        queued_bytes_ += bytes->size();
        if (counts) ++queued_counted_;
        queue_.push_back(Outgoing{std::move(bytes), binary, counts});
        if (!writing_) write_next();
        return Queued::yes;
    }
    Queued send_text(std::string text) {
        return send(std::make_shared<const std::string>(std::move(text)), false);
    }

    // A normal end: close once everything queued has been sent; nothing more is queued.
    void close_when_sent(websocket::close_code code) {
        if (closing_ || close_when_sent_) return;
        close_when_sent_ = true;
        close_code_ = code;
        if (!writing_) begin_close(code, "");
    }

    void begin_close(websocket::close_code code, const char* reason) {
        if (closing_) return;
        closing_ = true;
        on_end();
        // Free the backlog now; only the message being written must live until its
        // write completes.
        queue_.erase(writing_ ? queue_.begin() + 1 : queue_.begin(), queue_.end());
        queued_bytes_ = writing_ ? queue_.front().bytes->size() : 0;
        queued_counted_ = writing_ && queue_.front().counted ? 1 : 0;
        ws_.async_close(websocket::close_reason(code, reason),
                        [self = shared_from_this()](beast::error_code) { self->close_timer_.cancel(); });
        close_timer_.expires_after(kCloseGrace);
        close_timer_.async_wait([weak = weak_from_this()](beast::error_code error) {
            if (error) return; // Cancelled: the close finished in time.
            if (auto self = weak.lock()) self->abort();
        });
    }

    bool accepted() const { return accepted_; }
    std::size_t queued_bytes() const { return queued_bytes_; }
    std::size_t queued_counted() const { return queued_counted_; }
    ServerState& state() { return *state_; }

private:
    struct Outgoing {
        std::shared_ptr<const std::string> bytes;
        bool binary = false;
        bool counted = false;
    };

    void read() {
        ws_.async_read(incoming_, [self = shared_from_this()](beast::error_code error, std::size_t) {
            // The client closed, vanished, timed out, or we closed it.
            if (error) {
                self->on_end();
                self->close_timer_.cancel();
                return;
            }
            const auto data = self->incoming_.cdata();
            self->on_message(std::string_view(static_cast<const char*>(data.data()), data.size()),
                             self->ws_.got_binary());
            self->incoming_.consume(self->incoming_.size());
            self->read();
        });
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
        if (queue_.front().counted) --queued_counted_;
        queue_.pop_front();
        if (error) return abort(); // The read then fails too, and the connection ends.
        if (closing_) return;
        if (!queue_.empty()) return write_next();
        if (close_when_sent_) begin_close(close_code_, "");
    }

    websocket::stream<Stream> ws_;
    beast::flat_buffer incoming_;
    std::deque<Outgoing> queue_;
    std::size_t queued_bytes_ = 0;
    std::size_t queued_counted_ = 0;
    net::steady_timer close_timer_;
    std::shared_ptr<ServerState> state_;
    const bool over_tcp_;
    const Limits limits_;
    std::uint64_t id_ = 0;
    bool accepted_ = false;
    bool writing_ = false;
    bool closing_ = false;
    bool close_when_sent_ = false;
    websocket::close_code close_code_ = websocket::close_code::normal;
};

} // namespace handler::api::detail
