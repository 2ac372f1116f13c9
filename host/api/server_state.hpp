// Private to server.cpp, like listener.hpp, http_session.hpp and websocket_session.hpp:
// the Beast roles live in their own files but compile in that one translation unit, so
// the project pays for Beast's templates once. Never include these anywhere else.
//
// What the listeners and sessions share: the options, the handler and hub, and the set
// of open connections that stop() must reach.
#pragma once

#include "api/server.hpp"

// GCC 12 at -O2 reports -Wnull-dereference inside Asio's own headers (io_context.hpp,
// scheduler.ipp) once they are inlined: false positives we cannot fix, so silenced
// for the Boost headers only (here and in the other role files).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/basic_stream.hpp>
#pragma GCC diagnostic pop

#include <fcntl.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace handler::api::detail {

namespace net = boost::asio;
namespace beast = boost::beast;

// One protocol type for both listeners, so each session type is compiled once rather
// than once for TCP and once for the unix socket.
using Protocol = net::generic::stream_protocol;
using Stream = beast::basic_stream<Protocol>;

// A listener's or session's view of shutdown.
class Connection {
public:
    virtual ~Connection() = default;
    // Server::stop(): finish what is owed to the client, then close.
    virtual void shut_down() = 0;
    // ~Server: close now; the handler and hub may be gone once this returns.
    virtual void abort() = 0;
};

struct ServerState {
    ServerState(net::io_context& io_context, ServerOptions server_options,
                RequestHandler& request_handler, EventHub& hub)
        : io(io_context), options(std::move(server_options)), handler(&request_handler),
          events(&hub) {}

    net::io_context& io;
    const ServerOptions options;
    // Null once the Server is destroyed: sessions whose handlers are still queued in the
    // io_context then neither call the handler nor touch the hub.
    RequestHandler* handler;
    EventHub* events;
    SessionControl* sessions = nullptr;
    // The web page's browser sessions (null: no cookie is accepted).
    UiLogins* logins = nullptr;
    std::uint16_t tcp_port = 0;
    bool stopping = false;

    std::uint64_t add(std::weak_ptr<Connection> connection, bool over_tcp) {
        const auto id = next_connection_id_++;
        connections_.emplace(id, Entry{std::move(connection), over_tcp});
        if (over_tcp) ++tcp_connections_;
        return id;
    }
    void remove(std::uint64_t id) {
        const auto found = connections_.find(id);
        if (found == connections_.end()) return;
        if (found->second.over_tcp) --tcp_connections_;
        connections_.erase(found);
    }

    // A copy, because shutting a connection down may add (an upgrade) or remove entries.
    std::vector<std::weak_ptr<Connection>> connections() const {
        std::vector<std::weak_ptr<Connection>> all;
        for (const auto& [id, entry] : connections_) all.push_back(entry.connection);
        return all;
    }

    std::size_t connection_count() const { return connections_.size(); }
    std::size_t tcp_connection_count() const { return tcp_connections_; }

    std::chrono::milliseconds read_timeout() const {
        return std::chrono::milliseconds(options.read_timeout_ms);
    }

private:
    struct Entry {
        std::weak_ptr<Connection> connection;
        bool over_tcp;
    };
    std::map<std::uint64_t, Entry> connections_;
    std::size_t tcp_connections_ = 0;
    std::uint64_t next_connection_id_ = 1;
};

// Asio does not open sockets close-on-exec, and handlerd starts podman and harness
// processes: without this every child would inherit the listening socket and the API
// connections. Set right after open/accept on the io thread; a process started from
// another thread in between would still inherit the descriptor.
inline void set_close_on_exec(int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

} // namespace handler::api::detail
