// handlerd's HTTP+JSON API transport (docs/api.md): the unix socket and the loopback TCP
// listener, the TCP guards (Host, Origin, token), the limits, and the events WebSocket.
// Routes are not here: every request that passes the guards goes to a RequestHandler.
//
// This header is free of Beast and Asio (pimpl) so that only server.cpp pays for them;
// io_context is forward-declared and the daemon includes <boost/asio/io_context.hpp>.
#pragma once

#include "api/event_hub.hpp"
#include "api/http_types.hpp"
#include "api/session_control.hpp"
#include "core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace handler::api {

class UiLogins;

struct ServerOptions {
    // The unix socket (Paths::socket_file()). Its folder must already be private: owned
    // by us with no group/other bits (the daemon calls ensure_private_dir). The socket is
    // made with mode 0600; a stale one (nothing answers) is replaced.
    std::filesystem::path socket_path;
    // Only named in the "already running" error, so the user can find the other daemon.
    std::filesystem::path pid_file;

    bool tcp_enabled = true;
    // Must be a loopback address (127.0.0.0/8 or ::1); anything else is refused at start.
    std::string tcp_address = "127.0.0.1";
    std::uint16_t tcp_port = 7420; // 0 picks a free port; Server::tcp_port() tells which.
    // Required when tcp_enabled (load_or_create_token in api/token.hpp).
    std::string token;

    // TCP connections open at once; further ones are closed as soon as they are accepted.
    // Any local user can connect to the port (the token is only read from a request), so
    // without a cap they could use up handlerd's file descriptors and lock the owner out
    // of the unix socket as well.
    std::size_t max_tcp_connections = 128;

    std::size_t body_limit_bytes = std::size_t{1024} * 1024;
    // POST /api/v1/sessions/ID/prompts: its text and images (kMaxPromptImagesBytes).
    std::size_t prompt_body_limit_bytes = std::size_t{24} * 1024 * 1024;
    std::size_t header_limit_bytes = std::size_t{16} * 1024;
    // The whole request (header and body) must arrive within this; it is also the idle
    // time allowed between keep-alive requests, and the time a response may take to write.
    std::uint32_t read_timeout_ms = 30'000;
};

// Threading: everything runs on the one thread that calls io_context::run(), so
// RequestHandler::handle and EventHub are only ever called there. That single thread is
// Asio's "implicit strand": the per-connection strands of the Beast examples would add a
// queue hop per event (an unbounded one, in front of our bounded WebSocket queue) and
// protect nothing more. Do not run this io_context on more than one thread.
//
// Lifetime: the RequestHandler and the EventHub must outlive the Server. Destroy the
// Server on the io thread or after run() has returned; the destructor closes whatever is
// still open without waiting.
class Server {
public:
    // `sessions` (may be null: the terminal WebSocket then answers 503) serves
    // /api/v1/sessions/{id}/terminal and must outlive the Server too. `logins` (may be
    // null: only the API token is taken over TCP) decides the page's handler_session
    // cookie, and must outlive the Server.
    Server(boost::asio::io_context& io, ServerOptions options, RequestHandler& handler,
           EventHub& events, SessionControl* sessions = nullptr, UiLogins* logins = nullptr);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds the unix socket and (if enabled) the TCP port and starts accepting; the
    // daemon then calls io.run(). Errors name what failed and what to do, e.g.
    // Error{conflict, "handlerd already running (pid file ..., socket ...)"}.
    Result<void> start();

    // Graceful shutdown: stops accepting, removes the socket file, closes idle keep-alive
    // connections, lets a response being written finish, sends WebSocket clients a close
    // frame (1001 going away) and drops those that do not answer within a second. After
    // that io.run() returns if nothing else of the daemon's keeps it busy. Safe to call
    // from a signal_set handler, from any other thread, and more than once.
    void stop();

    // The bound TCP port (useful with tcp_port = 0); 0 before start() or without TCP.
    std::uint16_t tcp_port() const;
    const std::filesystem::path& socket_path() const;
    // Open HTTP and WebSocket connections on both listeners (for status and tests). Call
    // it on the io thread, or while the io_context is not running.
    std::size_t connection_count() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace handler::api
