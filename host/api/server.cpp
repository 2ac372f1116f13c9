// The only translation unit of the server that includes Beast: the role files below are
// private headers compiled here once (see server_state.hpp).
#include "api/server.hpp"

#include "api/http_session.hpp"
#include "api/listener.hpp"
#include "api/server_state.hpp"
#include "api/websocket_session.hpp"
#include "core/file_descriptor.hpp"
#include "core/paths.hpp"
#include "core/private_file.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // see server_state.hpp
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace handler::api {
namespace fs = std::filesystem;
using detail::Listener;
using detail::Protocol;
using detail::ServerState;

namespace {

// The socket's folder is what keeps other users off the socket (docs/api.md): refuse
// to create it in a folder that is not ours alone.
Result<void> check_private_folder(const fs::path& socket_path) {
    return check_private(socket_path.parent_path(), PrivateKind::folder,
                         {"the socket folder", "remove it and start again"});
}

std::string pid_file_text(const fs::path& pid_file) {
    if (pid_file.empty()) return "no pid file given";
    auto contents = read_file(pid_file);
    if (!contents) return "pid file " + pid_file.string() + " unreadable";
    std::string pid = *contents;
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (pid.empty() || pid.size() > 10 || pid.find_first_not_of("0123456789") != std::string::npos)
        return "pid file " + pid_file.string();
    return "pid file " + pid_file.string() + " says pid " + pid;
}

// A socket file is left behind when handlerd is killed. It is removed only if nothing
// answers on it; a live daemon there is reported, never displaced.
Result<void> remove_stale_socket(const fs::path& path, const fs::path& pid_file) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        if (errno == ENOENT) return {};
        return make_error(ErrorCode::internal,
                          "cannot inspect " + path.string() + ": " + std::strerror(errno));
    }
    if (!S_ISSOCK(info.st_mode))
        return make_error(ErrorCode::conflict,
                          path.string() + " exists and is not a socket; handlerd will not "
                                          "remove it. Remove it yourself and start again");

    FileDescriptor probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.valid())
        return make_error(ErrorCode::internal,
                          std::string("cannot create a probe socket: ") + std::strerror(errno));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.native().size()); // length checked
    const int connected =
        ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
    const int connect_error = errno;
    probe.reset();
    // EAGAIN: a listener whose backlog is full, which is still a live daemon.
    if (connected == 0 || connect_error == EAGAIN || connect_error == EINPROGRESS)
        return make_error(ErrorCode::conflict, "handlerd already running (" +
                                                   pid_file_text(pid_file) + ", socket " +
                                                   path.string() +
                                                   "); stop that one first, or use it");
    if (connect_error != ECONNREFUSED)
        return make_error(ErrorCode::internal,
                          "cannot tell whether handlerd is running on " + path.string() + ": " +
                              std::strerror(connect_error));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return make_error(ErrorCode::internal, "cannot remove the stale socket " +
                                                   path.string() + ": " + std::strerror(errno));
    spdlog::info("api: removed stale socket {} (nothing answered on it)", path.string());
    return {};
}

Result<Listener::Acceptor> bind_unix_socket(detail::net::io_context& io, const fs::path& path) {
    Listener::Acceptor acceptor(io);
    boost::system::error_code error;
    acceptor.open(Protocol(AF_UNIX, 0), error);
    if (error)
        return make_error(ErrorCode::internal, "cannot open a unix socket: " + error.message());
    detail::set_close_on_exec(acceptor.native_handle());
    // bind() creates the file with the umask applied: a umask of 0177 makes it 0600 from
    // the first instant, where a chmod afterwards would leave a window.
    const mode_t previous_umask = ::umask(0177);
    acceptor.bind(Protocol::endpoint(detail::net::local::stream_protocol::endpoint(path.native())),
                  error);
    ::umask(previous_umask);
    if (!error) acceptor.listen(detail::net::socket_base::max_listen_connections, error);
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot listen on " + path.string() + ": " + error.message());
    return acceptor;
}

struct TcpBinding {
    Listener::Acceptor acceptor;
    std::uint16_t port;
};

Result<TcpBinding> bind_tcp(detail::net::io_context& io, const ServerOptions& options) {
    namespace ip = detail::net::ip;
    boost::system::error_code error;
    const ip::address address = ip::make_address(options.tcp_address, error);
    if (error || !address.is_loopback())
        return make_error(ErrorCode::invalid_argument,
                          "[api] address \"" + options.tcp_address +
                              "\" is not a loopback address; handlerd listens only on "
                              "127.0.0.1 or ::1 (the unix socket and a token guard the rest)");
    const ip::tcp::endpoint endpoint(address, options.tcp_port);
    const std::string where = endpoint.address().to_string() + " port " +
                              std::to_string(options.tcp_port);
    ip::tcp::acceptor tcp(io);
    tcp.open(endpoint.protocol(), error);
    if (!error) {
        detail::set_close_on_exec(tcp.native_handle());
        tcp.set_option(ip::tcp::acceptor::reuse_address(true), error);
    }
    if (!error) tcp.bind(endpoint, error);
    if (error == detail::net::error::address_in_use)
        return make_error(ErrorCode::conflict,
                          "cannot listen on " + where +
                              ": another program uses it; set [api] port in config.toml to a "
                              "free port, or 0 to pick one");
    if (!error) tcp.listen(detail::net::socket_base::max_listen_connections, error);
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot listen on " + where + ": " + error.message());
    const std::uint16_t port = tcp.local_endpoint().port();
    // Hand the bound socket to the generic acceptor the sessions share.
    Listener::Acceptor acceptor(io);
    const int family = address.is_v4() ? AF_INET : AF_INET6;
    acceptor.assign(Protocol(family, IPPROTO_TCP), tcp.release(), error);
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot listen on " + where + ": " + error.message());
    return TcpBinding{std::move(acceptor), port};
}

// What stop() needs, shared with the handler it posts, so a stop() from another thread
// stays valid even if the Server is destroyed before the io thread runs it.
struct Running {
    std::shared_ptr<ServerState> state;
    std::shared_ptr<Listener> unix_listener;
    std::shared_ptr<Listener> tcp_listener;
    fs::path socket_path;
    dev_t socket_device = 0;
    ino_t socket_inode = 0;
    bool socket_removed = false;

    enum class How { graceful = 1, abort };

    void stop(How how) {
        state->stopping = true;
        if (unix_listener) unix_listener->close();
        if (tcp_listener) tcp_listener->close();
        remove_socket_file();
        for (const auto& weak : state->connections())
            if (auto connection = weak.lock())
                how == How::abort ? connection->abort() : connection->shut_down();
    }

    // Only our own socket: if the file was replaced meanwhile, it is not ours to remove.
    void remove_socket_file() {
        if (socket_removed || socket_path.empty()) return;
        socket_removed = true;
        struct stat info {};
        if (::lstat(socket_path.c_str(), &info) == 0 && info.st_dev == socket_device &&
            info.st_ino == socket_inode)
            ::unlink(socket_path.c_str());
    }
};

} // namespace

struct Server::Impl {
    detail::net::io_context& io;
    std::shared_ptr<Running> running = std::make_shared<Running>();
    bool started = false;
};

Server::Server(boost::asio::io_context& io, ServerOptions options, RequestHandler& handler,
               EventHub& events, SessionControl* sessions, UiLogins* logins)
    : impl_(std::make_unique<Impl>(Impl{io})) {
    impl_->running->state = std::make_shared<ServerState>(io, std::move(options), handler, events);
    impl_->running->state->sessions = sessions;
    impl_->running->state->logins = logins;
    impl_->running->socket_path = impl_->running->state->options.socket_path;
}

Server::~Server() {
    if (!impl_->started) return;
    auto& running = *impl_->running;
    running.stop(Running::How::abort);
    // Handlers still queued in the io_context find these null and leave the handler and
    // the hub alone: both may be destroyed right after us.
    running.state->handler = nullptr;
    running.state->events = nullptr;
    running.state->sessions = nullptr;
    running.state->logins = nullptr;
}

Result<void> Server::start() {
    if (impl_->started)
        return make_error(ErrorCode::internal, "the API server was started twice (a bug)");
    Running& running = *impl_->running;
    auto& state = *running.state;
    const ServerOptions& options = state.options;

    if (options.socket_path.empty() || options.socket_path.is_relative())
        return make_error(ErrorCode::invalid_argument,
                          "the API socket path must be absolute, got \"" +
                              options.socket_path.string() + "\"");
    if (options.socket_path.native().size() >= sizeof(sockaddr_un::sun_path))
        return make_error(ErrorCode::invalid_argument,
                          "the API socket path " + options.socket_path.string() + " is " +
                              std::to_string(options.socket_path.native().size()) +
                              " bytes, over the unix socket limit of " +
                              std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                              "; set XDG_RUNTIME_DIR to a shorter folder");
    if (options.tcp_enabled && options.token.size() < 32)
        return make_error(ErrorCode::invalid_argument,
                          "the TCP listener needs an API token of at least 32 characters "
                          "(a bug: the daemon loads it with load_or_create_token)");
    if (options.header_limit_bytes == 0 || options.body_limit_bytes == 0 ||
        options.read_timeout_ms == 0 || options.max_tcp_connections == 0)
        return make_error(ErrorCode::invalid_argument,
                          "[api] body_limit_bytes and read_timeout_ms must be above 0");

    if (auto checked = check_private_folder(options.socket_path); !checked)
        return checked.take_error();
    if (auto removed = remove_stale_socket(options.socket_path, options.pid_file); !removed)
        return removed.take_error();
    auto unix_acceptor = bind_unix_socket(state.io, options.socket_path);
    if (!unix_acceptor) return unix_acceptor.take_error();
    struct stat info {};
    if (::lstat(options.socket_path.c_str(), &info) == 0) {
        running.socket_device = info.st_dev;
        running.socket_inode = info.st_ino;
    }
    running.unix_listener = std::make_shared<Listener>(
        running.state, std::move(unix_acceptor.value()), /*over_tcp=*/false);

    if (options.tcp_enabled) {
        auto tcp = bind_tcp(state.io, options);
        if (!tcp) {
            running.unix_listener->close();
            running.remove_socket_file();
            return tcp.take_error();
        }
        state.tcp_port = tcp->port;
        running.tcp_listener = std::make_shared<Listener>(
            running.state, std::move(tcp->acceptor), /*over_tcp=*/true);
    }

    impl_->started = true;
    running.unix_listener->start();
    if (running.tcp_listener) running.tcp_listener->start();
    if (running.tcp_listener)
        spdlog::info("api: listening on {} and http://{}:{}", options.socket_path.string(),
                     options.tcp_address, state.tcp_port);
    else
        spdlog::info("api: listening on {} (TCP disabled)", options.socket_path.string());
    return {};
}

void Server::stop() {
    if (!impl_->started) return;
    // dispatch: runs inline when called on the io thread (a signal_set handler), and is
    // posted, which is thread-safe, when called from anywhere else.
    detail::net::dispatch(impl_->io, [running = impl_->running] {
        running->stop(Running::How::graceful);
    });
}

std::uint16_t Server::tcp_port() const { return impl_->running->state->tcp_port; }

const fs::path& Server::socket_path() const { return impl_->running->socket_path; }

std::size_t Server::connection_count() const {
    return impl_->running->state->connection_count();
}

} // namespace handler::api
