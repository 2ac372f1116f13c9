// The egress bridge: sessions run without a network (only loopback), and their one way out
// is handlerd's egress proxy on a unix socket mounted into the container. The bridge
// listens on TCP 127.0.0.1:PORT (and [::1]:PORT where the kernel has IPv6), so tools that
// honour HTTP(S)_PROXY can reach it, and passes the connections to the proxy over that
// unix socket (handover.hpp), which is per session, so handlerd knows whose every
// connection is:
//   - It leases the listeners themselves to the proxy, which then accepts the programs'
//     connections directly: the shim does nothing per connection. The lease lasts as long
//     as the unix connection that carried it.
//   - Without a lease (before the proxy took it, while handlerd restarts, or with a
//     handlerd that does not take leases) the shim accepts each connection and hands the
//     socket over on a new unix connection.
// Either way the proxy serves the program's own TCP connection, and no byte is copied
// through the shim.
//
// It runs inside the shim's one poll() loop: the loop asks add_pollfds() for the fds to
// watch and hands the results back to handle(); tick() and next_wake() drive the lease
// attempts. The shim keeps nothing of a connection once it is handed over.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace handler::shim {

class Bridge {
public:
    using Log = void (*)(std::string_view message);
    using Clock = std::chrono::steady_clock;

    // Does nothing until listen(); `proxy_socket` is the unix socket each connection is
    // handed over on.
    Bridge(std::string proxy_socket, Log log);
    ~Bridge();
    Bridge(const Bridge&) = delete;
    Bridge& operator=(const Bridge&) = delete;

    // Listens on 127.0.0.1:port and, if the kernel has IPv6, on [::1]:port (IPv6 only).
    // Returns why 127.0.0.1 cannot be listened on, or "". No IPv6 is not an error; any
    // other failure on ::1 is logged and the bridge carries on with 127.0.0.1.
    std::string listen(std::uint16_t port);

    // Appends the fds to poll now. handle() must get exactly these entries back.
    void add_pollfds(std::vector<pollfd>& fds) const;
    // Accepts and hands over, and follows the lease, as poll() reported in `polled`.
    void handle(std::span<const pollfd> polled, Clock::time_point now);
    // Offers the proxy a lease when one is due.
    void tick(Clock::time_point now);
    // When tick() next has something to do (time_point::max(): nothing).
    Clock::time_point next_wake() const;
    bool leased() const { return lease_state_ == LeaseState::held; }

private:
    enum class LeaseState { none, offered, held };

    void accept_from(int listener);
    // Hands `fd` to the proxy; false when the proxy cannot take it (then `fd` is reset).
    bool hand_over(int fd);
    // A new unix connection to the proxy, or -1 with errno set.
    int connect_proxy() const;
    void on_lease_event(Clock::time_point now);
    void drop_lease(Clock::time_point now, bool refused);

    std::string proxy_socket_;
    Log log_;
    std::uint16_t port_ = 0;
    std::vector<int> listeners_;
    int spare_fd_ = -1;          // given up to accept-and-close when out of fds
    bool proxy_failing_ = false; // log the first failure of a streak only
    bool out_of_fds_ = false;
    int lease_fd_ = -1;
    LeaseState lease_state_ = LeaseState::none;
    Clock::time_point next_lease_{}; // the first offer goes out at once
    std::chrono::milliseconds lease_backoff_{100};
};

} // namespace handler::shim
