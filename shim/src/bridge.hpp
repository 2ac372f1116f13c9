// The egress bridge: sessions run without a network (only loopback), and their one way out
// is handlerd's egress proxy on a unix socket mounted into the container. The bridge
// listens on TCP 127.0.0.1:PORT (and [::1]:PORT where the kernel has IPv6), so tools that
// honour HTTP(S)_PROXY can reach it, and passes each accepted connection byte for byte to
// a new connection to that unix socket. The socket is per session, so handlerd knows whose
// every connection is.
//
// It runs inside the shim's one poll() loop: the loop asks add_pollfds() for the fds to
// watch and hands the results back to handle(). Every fd is non-blocking, each pass moves
// at most one buffer per direction per connection, and memory is bounded: at most
// kMaxConnections connections, each with at most kBufferBytes in flight per direction.
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
    // Simultaneous connections; beyond this, a new one is accepted and reset at once.
    static constexpr std::size_t kMaxConnections = 256;
    // Bytes read from one side and not yet written to the other, per direction. While the
    // buffer is full the bridge stops reading that side, so a slow reader slows the writer
    // down (TCP flow control does the rest) instead of growing the shim.
    static constexpr std::size_t kBufferBytes = 64 * 1024;

    using Log = void (*)(std::string_view message);

    // Does nothing until listen(); `proxy_socket` is the unix socket each connection is
    // passed on to.
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
    // Accepts, connects, moves bytes and closes, as poll() reported in `polled`.
    void handle(std::span<const pollfd> polled);

    std::size_t connections() const { return pairs_.size(); }

private:
    // One direction of a connection: bytes read from one fd, waiting to be written to the
    // other. The buffer exists only while it holds bytes, so an idle connection costs
    // nothing but its two fds.
    struct Direction {
        std::unique_ptr<char[]> buffer;
        std::size_t begin = 0; // bytes [begin, end) of buffer are still to be written
        std::size_t end = 0;
        bool eof = false;  // the source said end of file...
        bool shut = false; // ...and the destination was shut down for writing: done

        std::size_t pending() const { return end - begin; }
        bool wants_read() const { return !eof && pending() < kBufferBytes; }
        bool wants_write() const { return pending() > 0; }
    };
    // A bridged connection: the program's TCP connection and ours to the proxy.
    struct Pair {
        int tcp = -1;
        int proxy = -1;
        Direction up;   // tcp → proxy: what the program sends
        Direction down; // proxy → tcp: what the proxy answers
    };

    void accept_from(int listener);
    int connect_to_proxy();
    // Moves what it can from `from` to `to`; false on an error that ends the connection.
    static bool step(Direction& direction, int from, int to, bool readable, bool writable);
    static bool flush(Direction& direction, int to);
    // `abort`: reset the program's connection rather than end it cleanly, so a response
    // cut short does not look complete.
    static void close_pair(Pair& pair, bool abort);

    std::string proxy_socket_;
    Log log_;
    std::uint16_t port_ = 0;
    std::vector<int> listeners_;
    std::vector<Pair> pairs_;
    int spare_fd_ = -1;            // given up to accept-and-close when out of fds
    bool proxy_failing_ = false;   // log the first failure of a streak only...
    bool refusing_ = false;        // ...and the first refusal for being full
    bool out_of_fds_ = false;
};

} // namespace handler::shim
