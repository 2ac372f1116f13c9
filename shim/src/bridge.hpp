// The egress bridge: sessions run without a network (only loopback), and their one way out
// is handlerd's egress proxy on a unix socket mounted into the container. The bridge
// listens on TCP 127.0.0.1:PORT (and [::1]:PORT where the kernel has IPv6), so tools that
// honour HTTP(S)_PROXY can reach it, and hands each accepted connection over to the
// proxy: a new connection to that unix socket carries one zero byte and the TCP socket
// itself (SCM_RIGHTS). The proxy then serves the program's own connection, so no byte is
// copied through the shim, and the socket is per session, so handlerd knows whose every
// connection is.
//
// It runs inside the shim's one poll() loop: the loop asks add_pollfds() for the fds to
// watch (the listeners) and hands the results back to handle(). The shim keeps nothing of
// a connection once it is handed over.
#pragma once

#include <poll.h>

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
    // Accepts and hands over, as poll() reported in `polled`.
    void handle(std::span<const pollfd> polled);

private:
    void accept_from(int listener);
    // Hands `fd` to the proxy; false when the proxy cannot take it (then `fd` is reset).
    bool hand_over(int fd);

    std::string proxy_socket_;
    Log log_;
    std::uint16_t port_ = 0;
    std::vector<int> listeners_;
    int spare_fd_ = -1;          // given up to accept-and-close when out of fds
    bool proxy_failing_ = false; // log the first failure of a streak only
    bool out_of_fds_ = false;
};

} // namespace handler::shim
