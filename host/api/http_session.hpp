// Private to server.cpp (see server_state.hpp). One HTTP connection on either listener:
// read a request within the limits, run the TCP guards, hand it to the RequestHandler (or
// upgrade it to the events WebSocket), write the response, repeat while keep-alive.
//
// The header is read first and the body only after the guards pass, so a caller without
// the token cannot make the daemon buffer a body, and a Content-Length over the limit is
// refused from the header alone (at most one socket read of body bytes, 64 KiB, is ever
// pulled in with it).
#pragma once

#include "api/server_guards.hpp"
#include "api/server_state.hpp"
#include "api/terminal_session.hpp"
#include "api/terminal_target.hpp"
#include "api/ui_login.hpp"
#include "api/websocket_session.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // see server_state.hpp
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <exception>
#include <optional>

namespace handler::api::detail {

namespace http = beast::http;

inline constexpr std::string_view kEventsPath = "/api/v1/events";
// docs/web-ui.md, "Security": the page's own files and connections only, no inline
// script or style, no eval, never framed. 'self' in connect-src covers the page's own
// ws:// origin in CSP Level 3 browsers (Chromium, Firefox, Safari 15.4+): the browser
// tests open the events WebSocket under it. xterm.js's <style> elements and style
// strings are turned into CSSOM writes by the page (ui/src/csp_shims.js).
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

class HttpSession final : public Connection, public std::enable_shared_from_this<HttpSession> {
public:
    HttpSession(Stream stream, std::shared_ptr<ServerState> state, bool over_tcp)
        : stream_(std::move(stream)), state_(std::move(state)), over_tcp_(over_tcp) {}

    ~HttpSession() override { state_->remove(id_); }

    void start() {
        id_ = state_->add(weak_from_this(), over_tcp_);
        read_header();
    }

    // Idle, half-read or lingering: nothing is owed, close. Writing: finish that
    // response first (on_write sees closing_).
    void shut_down() override {
        closing_ = true;
        if (phase_ != Phase::writing) abort();
    }

    void abort() override {
        if (phase_ == Phase::upgraded || phase_ == Phase::closed) return;
        phase_ = Phase::closed;
        beast::error_code ignored;
        stream_.socket().shutdown(Protocol::socket::shutdown_both, ignored);
        stream_.close();
    }

private:
    enum class Phase { reading = 1, waiting, writing, lingering, upgraded, closed };
    enum class AfterWrite { keep_alive = 1, close };

    // After a response that ends the connection: discard what the client still sends, up
    // to this much for this long, so closing does not reset the connection (a reset can
    // destroy the response before the client reads it); then close regardless.
    static constexpr std::size_t kLingerLimitBytes = std::size_t{1024} * 1024;
    using LingerBuffer = std::array<char, std::size_t{16} * 1024>;
    static constexpr std::chrono::milliseconds kLingerTime{500};

    // A conversation's prompt may carry images (api/prompt_images.hpp): up to eight of
    // 5 MiB each would pass no sane general limit, so its route has one of its own.
    std::size_t body_limit(http::verb method, std::string_view target) const {
        const std::size_t general = state_->options.body_limit_bytes;
        const std::string_view path = target.substr(0, target.find('?'));
        const bool prompt = method == http::verb::post && path.starts_with("/api/v1/sessions/") &&
                            path.ends_with("/prompts") &&
                            std::count(path.begin(), path.end(), '/') == 5;
        return prompt ? std::max(general, state_->options.prompt_body_limit_bytes) : general;
    }
    std::string limit_origin(std::size_t limit) const {
        return limit == state_->options.body_limit_bytes ? " ([api] body_limit_bytes in config.toml)"
                                                         : " (a prompt with its images)";
    }

    void read_header() {
        phase_ = Phase::reading;
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(state_->options.header_limit_bytes));
        // No body limit while the header is read: Beast would stop at the Content-Length
        // field, before the fields after it (Host, Authorization) are parsed, and the
        // guards must see the whole header. The limit is decided in on_header and set
        // for the body read.
        parser_->body_limit(boost::none);
        // One deadline for header and body together: a request must arrive within it,
        // however slowly the bytes trickle in.
        stream_.expires_after(state_->read_timeout());
        http::async_read_header(stream_, buffer_, *parser_,
                                [self = shared_from_this()](beast::error_code error,
                                                            std::size_t) {
                                    self->on_header(error);
                                });
    }

    void on_header(beast::error_code error) {
        if (error == http::error::header_limit)
            return send_error(ErrorCode::too_large,
                              "request header is over the limit of " +
                                  std::to_string(state_->options.header_limit_bytes) + " bytes");
        if (error) return on_read_error(error);

        // Guards first: a stranger learns nothing, not even the body limit.
        if (over_tcp_ && !guards_pass()) return;
        const auto& request = parser_->get();
        const std::string_view target = request.target();
        const std::size_t limit = limit_ = body_limit(request.method(), target);
        if (const auto length = parser_->content_length(); length && *length > limit)
            return send_error(ErrorCode::too_large,
                              "request body of " + std::to_string(*length) + " bytes is over the limit of " +
                                  std::to_string(limit) + " bytes" + limit_origin(limit));
        // A chunked body has no length up front: the parser stops it at the limit.
        parser_->body_limit(limit);
        // Origin-form only: an absolute URL would name a host other than the Host header.
        if (target.empty() || target.front() != '/')
            return send_error(ErrorCode::invalid_argument,
                              "request target must be a path starting with '/'");

        const std::string_view path = target.substr(0, target.find('?'));
        auto terminal = parse_terminal_target(target);
        if (websocket::is_upgrade(request)) {
            if (path != kEventsPath && !terminal)
                return send_error(ErrorCode::not_found,
                                  "only " + std::string(kEventsPath) +
                                      " and /api/v1/sessions/{id}/terminal take a WebSocket");
            if (terminal && !*terminal) return send_error(terminal->error().code, terminal->error().message);
            if (closing_ || state_->stopping)
                return send_error(ErrorCode::unavailable, "handlerd is stopping");
            phase_ = Phase::upgraded;
            if (terminal) {
                std::make_shared<TerminalSocket>(std::move(stream_), state_, over_tcp_,
                                                 std::move((*terminal)->session_id),
                                                 (*terminal)->options)
                    ->start(parser_->get());
                return;
            }
            std::make_shared<WebSocketSession>(std::move(stream_), state_, over_tcp_)
                ->start(parser_->get());
            return;
        }
        if (terminal)
            return send_error(ErrorCode::invalid_argument,
                              "GET " + std::string(path) +
                                  " is a WebSocket: send it with Upgrade: websocket");
        if (path == kEventsPath)
            return send_error(ErrorCode::invalid_argument,
                              "GET " + std::string(kEventsPath) +
                                  " is a WebSocket: send it with Upgrade: websocket");

        if (parser_->is_done()) return handle();
        if (beast::iequals(request[http::field::expect], "100-continue")) {
            // curl waits a second for this before sending a larger body.
            static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                             [self = shared_from_this()](beast::error_code write_error,
                                                         std::size_t) {
                                 if (write_error) return self->abort();
                                 self->read_body();
                             });
            return;
        }
        read_body();
    }

    void read_body() {
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code error, std::size_t) {
                             if (error == http::error::body_limit)
                                 return self->send_error(
                                     ErrorCode::too_large,
                                     "request body is over the limit of " + std::to_string(self->limit_) +
                                         " bytes" + self->limit_origin(self->limit_));
                             if (error) return self->on_read_error(error);
                             self->handle();
                         });
    }

    void on_read_error(beast::error_code error) {
        // The client went away, was idle past the deadline, or we are stopping: there is
        // no one to answer. A malformed request gets a 400 so a person can see why.
        const auto& parse_errors = http::make_error_code(http::error::bad_method).category();
        const bool malformed = error.category() == parse_errors &&
                               error != http::error::end_of_stream &&
                               error != http::error::partial_message;
        if (malformed)
            return send_error(ErrorCode::invalid_argument,
                              "malformed HTTP request: " + error.message());
        abort();
    }

    // Host, Origin and token on a TCP request; answers and returns false if they fail.
    bool guards_pass() {
        const auto& request = parser_->get();
        GuardHeaders headers;
        auto collect = [&](http::field field, std::vector<std::string_view>& into) {
            for (auto [it, end] = request.equal_range(field); it != end; ++it)
                into.push_back(it->value());
        };
        collect(http::field::host, headers.hosts);
        collect(http::field::origin, headers.origins);
        collect(http::field::authorization, headers.authorizations);
        collect(http::field::cookie, headers.cookies);
        TcpCredentials credentials{state_->options.token, {}};
        if (state_->logins != nullptr)
            credentials.session_valid = [logins = state_->logins](std::string_view session) {
                return logins->session_valid(session);
            };
        const std::string_view target = request.target();
        const bool open = !websocket::is_upgrade(request) &&
                          is_open_route(request.method_string(), target.substr(0, target.find('?')));
        auto checked = check_tcp_guards(headers, state_->tcp_port, credentials, open);
        if (checked) return true;
        send_error(checked.error().code, checked.error().message);
        return false;
    }

    void handle() {
        auto& request = parser_->get();
        Request call;
        call.method = std::string(request.method_string());
        call.target = std::string(request.target());
        call.body = std::move(request.body());
        call.over_tcp = over_tcp_;
        call.accept_encoding = std::string(request[http::field::accept_encoding]);
        GuardHeaders cookies;
        for (auto [it, end] = request.equal_range(http::field::cookie); it != end; ++it)
            cookies.cookies.push_back(it->value());
        call.session_cookie = std::string(presented_session(cookies));

        Response response;
        if (state_->handler == nullptr) {
            response = error_response(ErrorCode::unavailable, "handlerd is stopping");
        } else {
            // A bug in one route must cost one request, not the daemon.
            try {
                response = state_->handler->handle(call);
            } catch (const std::exception& exception) {
                spdlog::error("api: {} {} threw: {}", call.method, call.target, exception.what());
                response = error_response(ErrorCode::internal,
                                          "internal error in " + call.method + " " + call.target +
                                              ": " + exception.what());
            } catch (...) {
                spdlog::error("api: {} {} threw a non-exception", call.method, call.target);
                response = error_response(ErrorCode::internal,
                                          "internal error in " + call.method + " " + call.target);
            }
        }
        if (response.later) return wait_for(std::move(response.later), request.keep_alive());
        send(std::move(response), request.keep_alive() && !closing_ ? AfterWrite::keep_alive
                                                                    : AfterWrite::close);
    }

    // A route that answers later (Response::later): its worker calls back on its own
    // thread, and the answer is sent from the io thread. The session is kept alive by the
    // callback; if the connection was closed meanwhile, the write fails and it ends.
    void wait_for(std::function<void(std::function<void(Response)>)> later, bool keep_alive) {
        phase_ = Phase::waiting;
        auto reply = [self = shared_from_this(), keep_alive](Response answer) {
            net::post(self->stream_.get_executor(), [self, keep_alive, answer = std::move(answer)]() mutable {
                if (self->phase_ != Phase::waiting) return; // closed meanwhile
                answer.later = nullptr;
                self->send(std::move(answer), keep_alive && !self->closing_ ? AfterWrite::keep_alive
                                                                             : AfterWrite::close);
            });
        };
        try {
            later(std::move(reply));
        } catch (const std::exception& exception) {
            spdlog::error("api: a deferred answer failed to start: {}", exception.what());
            send(error_response(ErrorCode::internal, std::string("internal error: ") + exception.what()),
                 AfterWrite::close);
        }
    }

    void send_error(ErrorCode code, const std::string& message) {
        Response response = error_response(code, message);
        if (code == ErrorCode::unauthorized)
            response.headers["WWW-Authenticate"] = "Bearer realm=\"handlerd\"";
        // The request may be half-read (its body is unread, or it was malformed), so the
        // connection cannot carry another one.
        send(std::move(response), AfterWrite::close);
    }

    // A header name or value with CR, LF or NUL would let a handler that echoes input
    // split the response; Beast does not check for us.
    static bool header_safe(std::string_view text) {
        return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
    }

    static bool build(http::response<http::string_body>& out, Response& response) {
        if (response.status < 100 || response.status > 999) return false;
        out.result(response.status);
        for (const auto& [name, value] : response.headers) {
            if (name.empty() || !header_safe(name) || !header_safe(value)) return false;
            out.set(name, value);
        }
        if (!response.content_type.empty()) {
            if (!header_safe(response.content_type)) return false;
            out.set(http::field::content_type, response.content_type);
        }
        // On every answer, the page's and the API's alike (docs/web-ui.md, "Security"):
        // only handlerd's own files and connections, never framed, no referrer.
        if (out.find("X-Content-Type-Options") == out.end())
            out.set("X-Content-Type-Options", "nosniff");
        out.set("Content-Security-Policy", kContentSecurityPolicy);
        out.set("Referrer-Policy", "no-referrer");
        out.set("Cross-Origin-Opener-Policy", "same-origin");
        out.body() = std::move(response.body);
        return true;
    }

    void send(Response response, AfterWrite after) {
        const unsigned version = parser_ ? parser_->get().version() : 11;
        response_.emplace();
        response_->version(version == 10 ? 10 : 11);
        if (!build(*response_, response)) {
            spdlog::error("api: handler returned an invalid response (status {})",
                          response.status);
            response_.emplace();
            response_->version(version == 10 ? 10 : 11);
            Response fallback = error_response(
                ErrorCode::internal, "the handler returned an invalid status or header");
            build(*response_, fallback);
        }
        close_after_ = after == AfterWrite::close;
        response_->keep_alive(!close_after_);
        response_->prepare_payload();

        phase_ = Phase::writing;
        stream_.expires_after(state_->read_timeout());
        http::async_write(stream_, *response_,
                          [self = shared_from_this()](beast::error_code error, std::size_t) {
                              self->on_write(error);
                          });
    }

    void on_write(beast::error_code error) {
        response_.reset();
        if (error) return abort();
        if (close_after_ || closing_) return linger_close();
        read_header();
    }

    void linger_close() {
        phase_ = Phase::lingering;
        if (closing_) return abort();
        beast::error_code ignored;
        stream_.socket().shutdown(Protocol::socket::shutdown_send, ignored);
        buffer_.clear();
        linger_buffer_ = std::make_unique<LingerBuffer>();
        stream_.expires_after(kLingerTime); // basic_stream closes the socket when it expires
        linger();
    }

    void linger() {
        stream_.async_read_some(net::buffer(*linger_buffer_),
                                [self = shared_from_this()](beast::error_code error,
                                                            std::size_t bytes) {
                                    self->lingered_bytes_ += bytes;
                                    if (error || self->lingered_bytes_ >= kLingerLimitBytes)
                                        return self->abort();
                                    self->linger();
                                });
    }

    Stream stream_;
    std::shared_ptr<ServerState> state_;
    const bool over_tcp_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::optional<http::response<http::string_body>> response_;
    std::unique_ptr<LingerBuffer> linger_buffer_; // only while lingering
    std::size_t lingered_bytes_ = 0;
    std::size_t limit_ = 0; // the body limit of the request being read
    std::uint64_t id_ = 0;
    Phase phase_ = Phase::reading;
    bool close_after_ = false;
    bool closing_ = false;
};

} // namespace handler::api::detail
