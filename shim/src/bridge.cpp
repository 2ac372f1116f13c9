#include "bridge.hpp"

#include <handler/handover.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace handler::shim {
namespace {

// Connections taken off one listener per loop pass, so a flood of them cannot keep the
// loop from the terminal and handlerd.
constexpr int kAcceptsPerPass = 64;
// After a lease ends or is refused, the next offer waits this long, doubling up to the
// cap while offers fail; per-connection handovers carry on meanwhile.
constexpr std::chrono::milliseconds kLeaseRetry{100};
constexpr std::chrono::milliseconds kLeaseRetryCap{5'000};

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
    if (lease_fd_ >= 0) close(lease_fd_);
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
    // While the proxy holds the lease it accepts; the shim stays off the listeners.
    for (int fd : listeners_) fds.push_back({leased() ? -1 : fd, POLLIN, 0});
    fds.push_back({lease_fd_, POLLIN, 0});
}

void Bridge::handle(std::span<const pollfd> polled, Clock::time_point now) {
    // Anything else is a bug in the loop; doing nothing beats misattributing events.
    if (polled.size() != listeners_.size() + 1) return;
    for (std::size_t i = 0; i < listeners_.size(); ++i)
        if (polled[i].fd >= 0 && polled[i].revents != 0) accept_from(listeners_[i]);
    const auto& lease = polled[listeners_.size()];
    if (lease.fd >= 0 && lease.fd == lease_fd_ && lease.revents != 0) on_lease_event(now);
}

void Bridge::tick(Clock::time_point now) {
    if (listeners_.empty() || lease_fd_ >= 0 || now < next_lease_) return;
    const int fd = connect_proxy();
    // send_fds passes the listeners in one message; the proxy answers when it takes them.
    if (fd < 0 || !send_fds(fd, kLeaseByte, listeners_.data(), listeners_.size())) {
        if (fd >= 0) close(fd);
        next_lease_ = now + lease_backoff_;
        lease_backoff_ = std::min(lease_backoff_ * 2, kLeaseRetryCap);
        return;
    }
    lease_fd_ = fd;
    lease_state_ = LeaseState::offered;
}

Bridge::Clock::time_point Bridge::next_wake() const {
    if (listeners_.empty() || lease_fd_ >= 0) return Clock::time_point::max();
    return next_lease_;
}

void Bridge::on_lease_event(Clock::time_point now) {
    char answer = 0;
    const ssize_t got = recv(lease_fd_, &answer, 1, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (lease_state_ == LeaseState::offered && got == 1 && answer == kLeaseByte) {
        lease_state_ = LeaseState::held;
        lease_backoff_ = kLeaseRetry;
        return;
    }
    // The end of the lease (handlerd went away) or a refusal (an older handlerd, or one
    // that did not take these listeners); anything else on the connection ends it too.
    drop_lease(now, lease_state_ == LeaseState::offered);
}

void Bridge::drop_lease(Clock::time_point now, bool refused) {
    close(lease_fd_);
    lease_fd_ = -1;
    lease_state_ = LeaseState::none;
    next_lease_ = now + lease_backoff_;
    if (refused) lease_backoff_ = std::min(lease_backoff_ * 2, kLeaseRetryCap);
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

int Bridge::connect_proxy() const {
    const int proxy = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (proxy < 0) return -1;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, proxy_socket_.data(), proxy_socket_.size());
    // A unix stream connect completes at once or fails (EAGAIN when the listener's
    // backlog is full); it is never left in progress. A fresh connection has room for
    // the one byte that follows, so that send does not wait either.
    if (connect(proxy, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        const int error = errno;
        close(proxy);
        errno = error;
        return -1;
    }
    return proxy;
}

bool Bridge::hand_over(int fd) {
    int error = 0;
    const int proxy = connect_proxy();
    if (proxy < 0) {
        error = errno;
    } else {
        if (send_handover(proxy, fd)) {
            close(proxy);
            if (proxy_failing_) log_("the egress proxy at '" + proxy_socket_ + "' answers again");
            proxy_failing_ = false;
            return true;
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
