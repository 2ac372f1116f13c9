#include "bridge.hpp"

#include <handler/handover.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace handler::shim {
namespace {

// Connections taken off one listener per loop pass, so a flood of them cannot keep the
// loop from the terminal and handlerd.
constexpr int kAcceptsPerPass = 64;

std::string error_text(int error) { return std::strerror(error); }

// A listening socket on `address`, or -1 with `error` set.
int open_listener(const sockaddr* address, socklen_t size, int& error) {
    const int fd = socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = errno;
        return -1;
    }
    const int one = 1;
    // Lets a restarted shim listen again while old connections sit in TIME_WAIT; a port
    // someone else listens on stays refused.
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (address->sa_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, address, size) != 0 || ::listen(fd, SOMAXCONN) != 0) {
        error = errno;
        close(fd);
        return -1;
    }
    return fd;
}

// Closes a TCP connection with a reset: the program sees ECONNRESET, not an end of file
// that could pass for a complete answer.
void reset_and_close(int fd) {
    const linger abort_on_close{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    close(fd);
}

} // namespace

Bridge::Bridge(std::string proxy_socket, Log log)
    : proxy_socket_(std::move(proxy_socket)), log_(log) {}

Bridge::~Bridge() {
    for (int fd : listeners_) close(fd);
    if (spare_fd_ >= 0) close(spare_fd_);
}

std::string Bridge::listen(std::uint16_t port) {
    port_ = port;
    const std::string port_text = std::to_string(port);
    int error = 0;

    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int fd4 = open_listener(reinterpret_cast<const sockaddr*>(&v4), sizeof v4, error);
    if (fd4 < 0)
        return "cannot listen on 127.0.0.1:" + port_text + " for the egress proxy: " +
               error_text(error);
    listeners_.push_back(fd4);

    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    v6.sin6_addr = in6addr_loopback;
    const int fd6 = open_listener(reinterpret_cast<const sockaddr*>(&v6), sizeof v6, error);
    if (fd6 >= 0) {
        listeners_.push_back(fd6);
    } else if (error != EAFNOSUPPORT && error != EPROTONOSUPPORT && error != EADDRNOTAVAIL) {
        // Those three mean no IPv6 (or none on loopback): nothing to serve there.
        log_("cannot listen on [::1]:" + port_text + " for the egress proxy: " +
             error_text(error) + "; serving 127.0.0.1 only");
    }

    // Held in reserve for when accept() fails for want of fds (see accept_from).
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return {};
}

void Bridge::add_pollfds(std::vector<pollfd>& fds) const {
    for (int fd : listeners_) fds.push_back({fd, POLLIN, 0});
}

void Bridge::handle(std::span<const pollfd> polled) {
    // Anything else is a bug in the loop; doing nothing beats misattributing events.
    if (polled.size() != listeners_.size()) return;
    for (std::size_t i = 0; i < listeners_.size(); ++i)
        if (polled[i].revents != 0) accept_from(listeners_[i]);
}

void Bridge::accept_from(int listener) {
    for (int accepted = 0; accepted < kAcceptsPerPass; ++accepted) {
        const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            const int error = errno;
            if (error == EMFILE || error == ENFILE) {
                // The connection stays queued and poll() would report it again at once:
                // give up the spare fd to take it off the queue and reset it.
                if (!out_of_fds_)
                    log_("out of file descriptors; resetting connections to the egress proxy");
                out_of_fds_ = true;
                if (spare_fd_ < 0) return;
                close(spare_fd_);
                const int refused = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
                if (refused >= 0) reset_and_close(refused);
                spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (refused < 0) return;
                continue;
            }
            // That one connection went away before we took it; there may be more.
            if (error == EINTR || error == ECONNABORTED || error == EPROTO) continue;
            return; // EAGAIN: none left (anything else: try again next pass)
        }
        out_of_fds_ = false;
        // Bytes go out as they come in: the program and the proxy do their own batching.
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (hand_over(fd)) close(fd); // the proxy holds it now
    }
}

bool Bridge::hand_over(int fd) {
    int error = 0;
    const int proxy = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (proxy < 0) {
        error = errno;
    } else {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::memcpy(address.sun_path, proxy_socket_.data(), proxy_socket_.size());
        // A unix stream connect completes at once or fails (EAGAIN when the listener's
        // backlog is full); it is never left in progress. A fresh connection has room
        // for the one byte, so the send does not wait either.
        if (connect(proxy, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
            if (send_handover(proxy, fd)) {
                close(proxy);
                if (proxy_failing_) log_("the egress proxy at '" + proxy_socket_ + "' answers again");
                proxy_failing_ = false;
                return true;
            }
        }
        error = errno;
        close(proxy);
    }
    if (!proxy_failing_)
        log_("cannot reach the egress proxy at '" + proxy_socket_ + "': " + error_text(error) +
             "; resetting connections to port " + std::to_string(port_) + " until it answers");
    proxy_failing_ = true;
    reset_and_close(fd);
    return false;
}

} // namespace handler::shim
