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
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

#include <chrono>
#include <exception>
#include <optional>

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

// What a failure to reach or talk to handlerd means to a person.
Error connection_error(const std::filesystem::path& socket, beast::error_code error,
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

// One request/response exchange; the lambdas chain connect → write → read.
class Exchange {
public:
    Exchange(const std::filesystem::path& socket, unsigned timeout_ms)
        : socket_(socket), timeout_ms_(timeout_ms), stream_(io_) {}

    Result<Response> run(http::request<http::string_body> request) {
        request_ = std::move(request);
        parser_.body_limit(kResponseBodyLimitBytes);
        stream_.expires_after(std::chrono::milliseconds(timeout_ms_));
        stream_.async_connect(Local::endpoint(socket_.native()), [this](beast::error_code error) {
            if (error) return fail(error);
            connected_ = true;
            http::async_write(stream_, request_, [this](beast::error_code write_error,
                                                        std::size_t) {
                if (write_error) return fail(write_error);
                http::async_read(stream_, buffer_, parser_,
                                 [this](beast::error_code read_error, std::size_t) {
                                     if (read_error) fail(read_error);
                                 });
            });
        });
        io_.run();
        if (error_) return std::move(*error_);

        auto& message = parser_.get();
        Response response;
        response.status = message.result_int();
        response.content_type = std::string(message[http::field::content_type]);
        for (const auto& field : message)
            if (field.name() != http::field::content_type)
                response.headers[std::string(field.name_string())] = std::string(field.value());
        response.body = std::move(message.body());
        return response;
    }

private:
    void fail(beast::error_code error) {
        error_ = connection_error(socket_, error, connected_, timeout_ms_);
    }

    const std::filesystem::path& socket_;
    const unsigned timeout_ms_;
    net::io_context io_;
    Stream stream_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> request_;
    http::response_parser<http::string_body> parser_;
    std::optional<Error> error_;
    bool connected_ = false;
};

// The events stream; the lambdas chain connect → handshake → read → read ...
class EventStream {
public:
    EventStream(const std::filesystem::path& socket, const EventCallback& on_event,
                unsigned connect_timeout_ms)
        : socket_(socket), on_event_(on_event), timeout_ms_(connect_timeout_ms), ws_(io_) {}

    Result<void> run() {
        auto& lowest = beast::get_lowest_layer(ws_);
        lowest.expires_after(std::chrono::milliseconds(timeout_ms_));
        lowest.async_connect(Local::endpoint(socket_.native()), [this](beast::error_code error) {
            if (error) return fail(error);
            connected_ = true;
            // From here the websocket's own timer bounds the handshake; once open, the
            // stream may be quiet for hours, so no idle limit.
            beast::get_lowest_layer(ws_).expires_never();
            ws_.set_option(websocket::stream_base::timeout{
                std::chrono::milliseconds(timeout_ms_), websocket::stream_base::none(), false});
            ws_.async_handshake(handshake_response_, "localhost", "/api/v1/events",
                                [this](beast::error_code handshake_error) {
                                    if (handshake_error) return on_handshake_error(handshake_error);
                                    read();
                                });
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

} // namespace

Result<Response> request(const std::filesystem::path& socket, std::string_view method,
                         std::string_view target, std::string body, unsigned timeout_ms) {
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
    Exchange exchange(socket, timeout_ms);
    return exchange.run(std::move(message));
}

Result<void> follow_events(const std::filesystem::path& socket, const EventCallback& on_event,
                           unsigned connect_timeout_ms) {
    EventStream stream(socket, on_event, connect_timeout_ms);
    return stream.run();
}

} // namespace handler::api::client
