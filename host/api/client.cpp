// The only translation unit of the client that includes Beast. Synchronous to its
// caller, asynchronous inside: Asio's blocking calls take no timeout, so each call runs a
// private io_context with a deadline on the stream instead.
#include "api/client.hpp"

// GCC 12 at -O2 reports -Wnull-dereference inside Asio's own headers (io_context.hpp,
// scheduler.ipp) once they are inlined: false positives we cannot fix, so silenced for
// the Boost headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <deque>
#include <exception>
#include <optional>
#include <thread>

namespace handler::api::client {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using Local = net::local::stream_protocol;
using Stream = beast::basic_stream<Local>;

// Responses carry lists (agents, sessions); this only stops a broken daemon from
// exhausting the CLI's memory.
constexpr std::uint64_t kResponseBodyLimitBytes = 64ull * 1024 * 1024;

} // namespace

Error connection_error(const std::filesystem::path& socket, boost::system::error_code error,
                       bool connected, unsigned timeout_ms) {
    if (!connected && (error == net::error::connection_refused ||
                       error == boost::system::errc::no_such_file_or_directory))
        return make_error(ErrorCode::unavailable,
                          "handlerd is not running (no answer on " + socket.string() +
                              "); start it with `handlerd --detach` (or `handler daemon` in the foreground)");
    if (!connected && error == boost::system::errc::permission_denied)
        return make_error(ErrorCode::forbidden,
                          "permission denied on " + socket.string() +
                              ": that handlerd belongs to another user; set XDG_RUNTIME_DIR "
                              "to your own runtime folder");
    if (error == beast::error::timeout)
        return make_error(ErrorCode::unavailable,
                          "handlerd did not answer within " + std::to_string(timeout_ms) +
                              " ms on " + socket.string() +
                              "; it may be overloaded or stuck (see handlerd.log)");
    return make_error(ErrorCode::unavailable, std::string(connected ? "lost the connection to"
                                                                    : "cannot connect to") +
                                                  " handlerd on " + socket.string() + ": " +
                                                  error.message());
}

namespace {

// One request/response exchange on `io`; the lambdas chain connect → write → read, and
// `done` is called once at the end.
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
    Exchange(net::io_context& io, std::filesystem::path socket, unsigned timeout_ms,
             std::function<void(Result<Response>)> done)
        : socket_(std::move(socket)), timeout_ms_(timeout_ms), stream_(io), done_(std::move(done)) {}

    void start(http::request<http::string_body> request) {
        request_ = std::move(request);
        parser_.body_limit(kResponseBodyLimitBytes);
        stream_.expires_after(std::chrono::milliseconds(timeout_ms_));
        stream_.async_connect(Local::endpoint(socket_.native()), [self = shared_from_this()](beast::error_code error) {
            if (error) return self->fail(error);
            self->connected_ = true;
            http::async_write(self->stream_, self->request_, [self](beast::error_code write_error, std::size_t) {
                if (write_error) return self->fail(write_error);
                http::async_read(self->stream_, self->buffer_, self->parser_,
                                 [self](beast::error_code read_error, std::size_t) {
                                     if (read_error) return self->fail(read_error);
                                     self->finish();
                                 });
            });
        });
    }

private:
    void finish() {
        auto& message = parser_.get();
        Response response;
        response.status = message.result_int();
        response.content_type = std::string(message[http::field::content_type]);
        for (const auto& field : message)
            if (field.name() != http::field::content_type)
                response.headers[std::string(field.name_string())] = std::string(field.value());
        response.body = std::move(message.body());
        done_(std::move(response));
    }

    void fail(beast::error_code error) { done_(connection_error(socket_, error, connected_, timeout_ms_)); }

    const std::filesystem::path socket_;
    const unsigned timeout_ms_;
    Stream stream_;
    std::function<void(Result<Response>)> done_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response_parser<http::string_body> parser_;
    bool connected_ = false;
};

http::request<http::string_body> make_request(std::string_view method, std::string_view target, std::string body) {
    http::request<http::string_body> message;
    message.version(11);
    const http::verb verb = http::string_to_verb(method);
    if (verb == http::verb::unknown) message.method_string(method);
    else message.method(verb);
    message.target(target);
    message.set(http::field::host, "localhost");
    message.set(http::field::user_agent, "handler/" HANDLER_VERSION);
    if (!body.empty()) message.set(http::field::content_type, "application/json");
    message.body() = std::move(body);
    message.prepare_payload();
    return message;
}

enum class Stage { connect = 1, handshake };

// A refused upgrade as an Error: handlerd's own message from its {"error":{...}} body.
Error refusal(const websocket::response_type& response) {
    std::string message = response.body();
    boost::system::error_code parse_error;
    auto value = boost::json::parse(message, parse_error);
    if (!parse_error && value.is_object())
        if (const auto* inner = value.as_object().if_contains("error"); inner && inner->is_object())
            if (const auto* text = inner->as_object().if_contains("message"); text && text->is_string())
                message = std::string(text->as_string());
    const auto status = response.result_int();
    return make_error(status == 404 ? ErrorCode::not_found
                      : status == 400 ? ErrorCode::invalid_argument
                                      : ErrorCode::unavailable,
                      message);
}

// Connects to handlerd's socket and opens the WebSocket at `target`; `done(error, stage)`
// says how far it got. Connecting and the handshake must finish within timeout_ms (the
// websocket's own timer bounds the handshake); once open, the stream may be quiet for
// hours, so there is no idle limit.
template <class Done>
void open_websocket(websocket::stream<Stream>& ws, const std::filesystem::path& socket,
                    std::string target, unsigned timeout_ms,
                    websocket::response_type& response, Done done) {
    auto& lowest = beast::get_lowest_layer(ws);
    lowest.expires_after(std::chrono::milliseconds(timeout_ms));
    lowest.async_connect(Local::endpoint(socket.native()),
                         [&ws, target = std::move(target), &response, timeout_ms,
                          done](beast::error_code error) mutable {
        if (error) return done(error, Stage::connect);
        beast::get_lowest_layer(ws).expires_never();
        ws.set_option(websocket::stream_base::timeout{std::chrono::milliseconds(timeout_ms),
                                                      websocket::stream_base::none(), false});
        ws.async_handshake(response, "localhost", target,
                           [done](beast::error_code handshake_error) mutable {
                               done(handshake_error, Stage::handshake);
                           });
    });
}

// The events stream; the lambdas chain connect → handshake → read → read ...
class EventStream {
public:
    EventStream(const std::filesystem::path& socket, const EventCallback& on_event,
                unsigned connect_timeout_ms)
        : socket_(socket), on_event_(on_event), timeout_ms_(connect_timeout_ms), ws_(io_) {}

    Result<void> run() {
        open_websocket(ws_, socket_, "/api/v1/events", timeout_ms_, handshake_response_,
                       [this](beast::error_code error, Stage stage) {
                           connected_ = stage == Stage::handshake;
                           if (!error) return read();
                           if (stage == Stage::connect) return fail(error);
                           on_handshake_error(error);
                       });
        io_.run();
        if (error_) return std::move(*error_);
        return {};
    }

private:
    void read() {
        ws_.async_read(buffer_, [this](beast::error_code error, std::size_t) {
            if (error) return on_read_error(error);
            const std::string message = beast::buffers_to_string(buffer_.data());
            buffer_.consume(buffer_.size());
            Follow next = Follow::stop;
            try {
                next = on_event_(message);
            } catch (const std::exception& exception) {
                error_ = make_error(ErrorCode::internal,
                                    std::string("while following events: ") + exception.what());
            }
            if (next == Follow::keep_going) return read();
            ws_.async_close(websocket::close_code::normal, [](beast::error_code) {});
        });
    }

    void on_handshake_error(beast::error_code error) {
        if (error != websocket::error::upgrade_declined) return fail(error);
        error_ = make_error(ErrorCode::unavailable,
                            "handlerd refused the events stream on " + socket_.string() +
                                " with HTTP " + std::to_string(handshake_response_.result_int()) +
                                ": " + handshake_response_.body());
    }

    void on_read_error(beast::error_code error) {
        if (error != websocket::error::closed) return fail(error);
        const auto& reason = ws_.reason();
        const std::string why = reason.reason.empty() ? std::string("no reason given")
                                                      : std::string(reason.reason.c_str());
        if (reason.code == websocket::close_code::going_away)
            error_ = make_error(ErrorCode::unavailable, "handlerd stopped (" + why + ")");
        else
            error_ = make_error(ErrorCode::unavailable,
                                "handlerd closed the events stream with code " +
                                    std::to_string(reason.code) + " (" + why + ")");
    }

    void fail(beast::error_code error) {
        error_ = connection_error(socket_, error, connected_, timeout_ms_);
    }

    const std::filesystem::path& socket_;
    const EventCallback& on_event_;
    const unsigned timeout_ms_;
    net::io_context io_;
    websocket::stream<Stream> ws_;
    beast::flat_buffer buffer_;
    websocket::response_type handshake_response_;
    std::optional<Error> error_;
    bool connected_ = false;
};

// Reads the input descriptor on its own thread (a terminal, a pipe, a file or /dev/null:
// poll works on all of them, where epoll would refuse files) and posts each piece to the
// io thread. stop() wakes it through a pipe and joins it.
class InputPump {
public:
    InputPump(net::io_context& io, int fd, std::function<void(std::optional<std::string>)> deliver)
        : io_(io), fd_(fd), deliver_(std::move(deliver)) {
        if (fd_ < 0 || ::pipe2(wake_, O_CLOEXEC) != 0) return;
        thread_ = std::thread([this] { loop(); });
    }
    ~InputPump() { stop(); }

    void stop() {
        if (!thread_.joinable()) return;
        const char byte = 0;
        [[maybe_unused]] auto ignored = ::write(wake_[1], &byte, 1);
        thread_.join();
        ::close(wake_[0]);
        ::close(wake_[1]);
    }

private:
    void loop() {
        char buffer[16 * 1024];
        for (;;) {
            pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0) {
                if (errno == EINTR) continue;
                break;
            }
            if (fds[1].revents != 0) return;
            const ssize_t got = ::read(fd_, buffer, sizeof buffer);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) break;
            net::post(io_, [this, data = std::string(buffer, static_cast<std::size_t>(got))]() mutable {
                deliver_(std::move(data));
            });
        }
        net::post(io_, [this] { deliver_(std::nullopt); });
    }

    net::io_context& io_;
    const int fd_;
    std::function<void(std::optional<std::string>)> deliver_;
    int wake_[2] = {-1, -1};
    std::thread thread_;
};

// The terminal WebSocket: connect → handshake → read loop, with input, resizes and the
// detach key feeding one write queue.
class TerminalLink {
public:
    TerminalLink(const std::filesystem::path& socket, std::string_view target, TerminalHooks& hooks,
                 unsigned connect_timeout_ms)
        : socket_(socket), target_(target), hooks_(hooks), timeout_ms_(connect_timeout_ms),
          ws_(io_), winch_(io_) {}

    Result<TerminalEnd> run() {
        ws_.read_message_max(std::size_t{64} << 20);
        open_websocket(ws_, socket_, target_, timeout_ms_, response_,
                       [this](beast::error_code error, Stage stage) {
                           connected_ = stage == Stage::handshake;
                           if (!error) return on_open();
                           if (stage == Stage::connect) return fail(error);
                           on_handshake_error(error);
                       });
        io_.run();
        if (pump_) pump_->stop();
        if (error_) return std::move(*error_);
        if (!end_) return make_error(ErrorCode::unavailable, "the terminal stream ended without a word");
        return std::move(*end_);
    }

private:
    void on_open() {
        read();
        if (hooks_.window_size) {
            send_size();
            winch_.add(SIGWINCH);
            watch_window();
        }
        if (hooks_.input_fd >= 0)
            pump_.emplace(io_, hooks_.input_fd, [this](std::optional<std::string> data) {
                on_input(std::move(data));
            });
    }

    void watch_window() {
        winch_.async_wait([this](const boost::system::error_code& error, int) {
            if (error || done_) return;
            send_size();
            watch_window();
        });
    }

    void send_size() {
        auto size = hooks_.window_size();
        if (!size) return;
        enqueue(boost::json::serialize(boost::json::object{
                    {"type", "resize"}, {"rows", size->first}, {"cols", size->second}}),
                false);
    }

    void on_input(std::optional<std::string> data) {
        if (done_) return;
        if (!data) {
            if (hooks_.eof_on_input_end) enqueue(R"({"type":"eof"})", false);
            return;
        }
        bool keep = true;
        if (hooks_.filter) keep = hooks_.filter(*data);
        if (!data->empty()) enqueue(std::move(*data), true);
        if (!keep) {
            end_ = TerminalEnd{TerminalEnd::How::detached, 0, {}};
            close();
        }
    }

    void enqueue(std::string bytes, bool binary) {
        if (closing_) return;
        queue_.push_back({std::move(bytes), binary});
        if (!writing_) write_next();
    }

    void write_next() {
        if (queue_.empty()) {
            if (close_when_drained_) close();
            return;
        }
        writing_ = true;
        ws_.binary(queue_.front().second);
        ws_.async_write(net::buffer(queue_.front().first), [this](beast::error_code error, std::size_t) {
            writing_ = false;
            queue_.pop_front();
            if (error) return fail(error);
            write_next();
        });
    }

    void close() {
        if (writing_) {
            close_when_drained_ = true;
            return;
        }
        if (closing_) return;
        closing_ = true;
        stop_extras();
        ws_.async_close(websocket::close_code::normal, [](beast::error_code) {});
    }

    void stop_extras() {
        done_ = true;
        boost::system::error_code ignored;
        winch_.cancel(ignored);
    }

    void read() {
        ws_.async_read(buffer_, [this](beast::error_code error, std::size_t) {
            if (error) return on_read_error(error);
            const auto data = buffer_.cdata();
            const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
            if (ws_.got_binary()) {
                if (!bytes.empty() && hooks_.output)
                    hooks_.output(static_cast<OutputStream>(bytes.front()), bytes.substr(1));
            } else if (!on_text(bytes)) {
                return;
            }
            buffer_.consume(buffer_.size());
            read();
        });
    }

    // False: the stream is over (an error was recorded).
    bool on_text(std::string_view text) {
        boost::system::error_code error;
        auto value = boost::json::parse(text, error);
        const auto* object = error ? nullptr : value.if_object();
        const auto* type = object ? object->if_contains("type") : nullptr;
        if (type == nullptr || !type->is_string()) return true; // newer server: ignore
        auto text_of = [&](const char* key) {
            const auto* field = object->if_contains(key);
            return field && field->is_string() ? std::string(field->as_string()) : std::string();
        };
        if (*type == "attached") {
            const auto* tty = object->if_contains("tty");
            const auto* produced = object->if_contains("produced");
            if (hooks_.attached)
                hooks_.attached(tty && tty->is_bool() && tty->as_bool(),
                                produced && produced->is_number() ? produced->to_number<std::uint64_t>() : 0);
            if (hooks_.events_mode) hooks_.events_mode(text_of("events"));
        } else if (*type == "event") {
            if (hooks_.event) hooks_.event(*object);
        } else if (*type == "exit") {
            const auto* code = object->if_contains("code");
            end_ = TerminalEnd{TerminalEnd::How::exited,
                               code && code->is_int64() ? code->as_int64() : 255, {}};
            stop_extras();
        } else if (*type == "ended") {
            end_ = TerminalEnd{TerminalEnd::How::ended, 0, text_of("reason")};
            stop_extras();
        } else if (*type == "error") {
            const std::string code = text_of("code");
            error_ = make_error(code == "not_found" ? ErrorCode::not_found : ErrorCode::invalid_argument,
                                text_of("message"));
            if (end_) error_.reset();
            if (!end_) {
                stop_extras();
                close();
                return false;
            }
        }
        return true;
    }

    void on_handshake_error(beast::error_code error) {
        if (error != websocket::error::upgrade_declined) return fail(error);
        error_ = refusal(response_);
        stop_extras();
    }

    void on_read_error(beast::error_code error) {
        stop_extras();
        if (end_ || error_) return; // the last word was said; any close is fine
        if (error == websocket::error::closed) {
            const auto& reason = ws_.reason();
            error_ = make_error(ErrorCode::unavailable,
                                "handlerd closed the terminal (code " + std::to_string(reason.code) +
                                    (reason.reason.empty() ? std::string()
                                                           : ": " + std::string(reason.reason.c_str())) +
                                    ")");
            return;
        }
        fail(error);
    }

    void fail(beast::error_code error) {
        stop_extras();
        if (!error_ && !end_) error_ = connection_error(socket_, error, connected_, timeout_ms_);
        beast::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

    const std::filesystem::path& socket_;
    const std::string target_;
    TerminalHooks& hooks_;
    const unsigned timeout_ms_;
    net::io_context io_;
    websocket::stream<Stream> ws_;
    net::signal_set winch_;
    websocket::response_type response_;
    beast::flat_buffer buffer_;
    std::deque<std::pair<std::string, bool>> queue_;
    std::optional<InputPump> pump_;
    std::optional<Error> error_;
    std::optional<TerminalEnd> end_;
    bool connected_ = false;
    bool writing_ = false;
    bool closing_ = false;
    bool close_when_drained_ = false;
    bool done_ = false;
};

// A WebSocket read for its text messages on someone else's io_context. The handle the
// caller holds closes it; the reads in flight keep this object alive until they end, and
// nothing reaches the hooks once the handle is gone.
class MessageReader final : public std::enable_shared_from_this<MessageReader> {
public:
    MessageReader(net::io_context& io, std::filesystem::path socket, MessageHooks hooks, unsigned timeout_ms)
        : socket_(std::move(socket)), hooks_(std::move(hooks)), timeout_ms_(timeout_ms), ws_(io) {}

    void start(std::string target) {
        ws_.read_message_max(std::size_t{64} << 20);
        open_websocket(ws_, socket_, std::move(target), timeout_ms_, response_,
                       [self = shared_from_this()](beast::error_code error, Stage stage) {
                           if (self->stopped_) return;
                           self->connected_ = stage == Stage::handshake;
                           if (!error) return self->read();
                           self->finish(stage == Stage::handshake && error == websocket::error::upgrade_declined
                                            ? Result<CloseReason>(refusal(self->response_))
                                            : Result<CloseReason>(connection_error(self->socket_, error, self->connected_,
                                                                                   self->timeout_ms_)));
                       });
    }

    void stop() {
        stopped_ = true;
        beast::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
    }

private:
    void read() {
        ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code error, std::size_t) {
            if (self->stopped_) return;
            if (error) {
                if (error == websocket::error::closed)
                    return self->finish(CloseReason{self->ws_.reason().code, std::string(self->ws_.reason().reason.c_str())});
                return self->finish(connection_error(self->socket_, error, self->connected_, self->timeout_ms_));
            }
            const auto data = self->buffer_.cdata();
            const std::string text(static_cast<const char*>(data.data()), data.size());
            self->buffer_.consume(self->buffer_.size());
            if (!self->ws_.got_binary() && self->hooks_.message) self->hooks_.message(text);
            if (!self->stopped_) self->read();
        });
    }

    void finish(Result<CloseReason> how) {
        stopped_ = true;
        if (hooks_.closed) hooks_.closed(std::move(how));
    }

    const std::filesystem::path socket_;
    MessageHooks hooks_;
    const unsigned timeout_ms_;
    websocket::stream<Stream> ws_;
    websocket::response_type response_;
    beast::flat_buffer buffer_;
    bool connected_ = false;
    bool stopped_ = false;
};

class ReaderHandle final : public MessageStream {
public:
    explicit ReaderHandle(std::shared_ptr<MessageReader> reader) : reader_(std::move(reader)) {}
    ~ReaderHandle() override { reader_->stop(); }

private:
    std::shared_ptr<MessageReader> reader_;
};

} // namespace

Result<TerminalEnd> attach_terminal(const std::filesystem::path& socket, std::string_view target,
                                    TerminalHooks& hooks, unsigned connect_timeout_ms) {
    TerminalLink link(socket, target, hooks, connect_timeout_ms);
    return link.run();
}

Result<Response> request(const std::filesystem::path& socket, std::string_view method,
                         std::string_view target, std::string body, unsigned timeout_ms) {
    net::io_context io;
    std::optional<Result<Response>> answer;
    std::make_shared<Exchange>(io, socket, timeout_ms, [&answer](Result<Response> done) {
        answer.emplace(std::move(done));
    })->start(make_request(method, target, std::move(body)));
    io.run();
    return std::move(*answer);
}

void request_async(net::io_context& io, const std::filesystem::path& socket, std::string_view method,
                   std::string_view target, std::string body, unsigned timeout_ms,
                   std::function<void(Result<Response>)> done) {
    std::make_shared<Exchange>(io, socket, timeout_ms, std::move(done))
        ->start(make_request(method, target, std::move(body)));
}

std::unique_ptr<MessageStream> open_message_stream(net::io_context& io, const std::filesystem::path& socket,
                                                  std::string_view target, MessageHooks hooks,
                                                  unsigned connect_timeout_ms) {
    auto reader = std::make_shared<MessageReader>(io, socket, std::move(hooks), connect_timeout_ms);
    reader->start(std::string(target));
    return std::make_unique<ReaderHandle>(std::move(reader));
}

Result<void> follow_events(const std::filesystem::path& socket, const EventCallback& on_event,
                           unsigned connect_timeout_ms) {
    EventStream stream(socket, on_event, connect_timeout_ms);
    return stream.run();
}

} // namespace handler::api::client
