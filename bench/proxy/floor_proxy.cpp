// floor_proxy: the least a CONNECT proxy can do, as a yardstick for bench/proxy.sh. It is
// not a proxy anyone should run: no policy, no audit, no names (IP literals only), no
// limits, no timeouts. What it does is only the system calls every CONNECT proxy must
// make, on one thread with edge-triggered epoll: accept, read the head, connect, answer
// 200, then per chunk one read and one write, and it never reads again after a read that
// came back short (the kernel reports new bytes as a new edge), so it makes no read that
// finds nothing. Each socket is added to epoll once and never modified.
//
//   floor_proxy --port P
//
// Whatever it reaches on this machine bounds what any single-threaded proxy can: the
// distance from Handler to it is what Handler's own design costs.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kPipeBytes = 1024 * 1024;
constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

struct Connection;

// One socket of a connection, and the bytes read from it not yet written to its peer.
struct End {
    Connection* owner = nullptr;
    int fd = -1;
    bool readable = false;  // an edge came and no read since came back short
    bool writable = true;   // no write since came back short
    bool hup = false;       // the peer's end of input was reported: read until it shows
    bool eof = false;       // read 0: passed on as a half-close once the buffer is out
    bool shut = false;      // that half-close was made
    std::unique_ptr<char[]> buffer{new char[kChunk]};
    std::size_t start = 0, end = 0; // pending bytes read from this end
    // Once one read fills the buffer, the bytes from this end go through a pipe with
    // splice(2) and are never copied, as Handler does.
    int pipe_read = -1, pipe_write = -1;
    std::size_t in_pipe = 0;
    ~End() {
        if (pipe_read >= 0) ::close(pipe_read);
        if (pipe_write >= 0) ::close(pipe_write);
    }
};

struct Connection {
    End client, upstream;
    bool tunnelling = false;
    bool connecting = false;
    std::string head;
};

int g_epoll = -1;

void fail(const char* what) {
    std::perror(what);
    std::exit(1);
}

void watch(End& end) {
    epoll_event event{};
    event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    event.data.ptr = &end;
    if (::epoll_ctl(g_epoll, EPOLL_CTL_ADD, end.fd, &event) != 0) fail("epoll_ctl");
}

void destroy(Connection* connection) {
    // Closing removes the descriptors from epoll; events for them already fetched in
    // this round are skipped through the closed list in the loop.
    if (connection->client.fd >= 0) ::close(connection->client.fd);
    if (connection->upstream.fd >= 0) ::close(connection->upstream.fd);
    delete connection;
}

End& peer_of(End& end) {
    return &end == &end.owner->client ? end.owner->upstream : end.owner->client;
}

// What FROM has read reached the end of its input: pass that on as a half-close, or end
// the connection when the other way is over too. Returns false when it is over.
bool ended(End& from) {
    End& other = peer_of(from);
    if (other.eof && other.start == other.end && other.in_pipe == 0) return false;
    if (!from.shut) ::shutdown(other.fd, SHUT_WR);
    from.shut = true;
    return true;
}

constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

// From one read that filled the buffer on, FROM's bytes go through a pipe.
void start_piping(End& from) {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return; // stays with the buffer
    from.pipe_read = fds[0];
    from.pipe_write = fds[1];
    ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
}

// Moves what FROM has read to its peer (the buffer's bytes first, then the pipe's),
// reading more while the peer takes it all. Returns false when the connection is over.
bool relay(End& from) {
    End& to = peer_of(from);
    for (;;) {
        while (from.start < from.end || from.in_pipe > 0) {
            if (!to.writable) return true;
            const bool buffered = from.start < from.end;
            const ssize_t sent =
                buffered ? ::send(to.fd, from.buffer.get() + from.start, from.end - from.start, MSG_NOSIGNAL)
                         : ::splice(from.pipe_read, nullptr, to.fd, nullptr, from.in_pipe, kSpliceFlags);
            if (sent < 0) {
                if (errno != EAGAIN) return false;
                to.writable = false;
                return true;
            }
            if (buffered)
                from.start += static_cast<std::size_t>(sent);
            else
                from.in_pipe -= static_cast<std::size_t>(sent);
            // Short: the peer's buffer is full, and its next edge says when it is not.
            if (buffered ? from.start < from.end : from.in_pipe > 0) {
                to.writable = false;
                return true;
            }
        }
        from.start = from.end = 0;
        if (from.eof) return ended(from);
        if (!from.readable) return true;
        const bool piped = from.pipe_read >= 0;
        const std::size_t room = piped ? kPipeBytes : kChunk;
        const ssize_t got = piped ? ::splice(from.fd, nullptr, from.pipe_write, nullptr, room, kSpliceFlags)
                                  : ::recv(from.fd, from.buffer.get(), room, 0);
        if (got < 0) {
            if (errno != EAGAIN) return false;
            from.readable = false;
            return true;
        }
        if (got == 0) {
            from.eof = true;
            continue;
        }
        (piped ? from.in_pipe : from.end) = static_cast<std::size_t>(got);
        // Short: nothing is left but what a new edge will announce, except an end of
        // input already reported with these bytes, which no further edge announces.
        if (static_cast<std::size_t>(got) < room)
            from.readable = from.hup;
        else if (!piped)
            start_piping(from); // a bulk transfer
    }
}

// The CONNECT head from the client, then the connection upstream. Returns false when the
// connection is over.
bool read_head(Connection& connection) {
    End& client = connection.client;
    while (client.readable) {
        char chunk[4096];
        const ssize_t got = ::recv(client.fd, chunk, sizeof chunk, 0);
        if (got <= 0) {
            if (got < 0 && errno == EAGAIN) {
                client.readable = false;
                break;
            }
            return false;
        }
        if (static_cast<std::size_t>(got) < sizeof chunk) client.readable = client.hup;
        connection.head.append(chunk, static_cast<std::size_t>(got));
        if (connection.head.size() > 16384) return false;
    }
    const auto end = connection.head.find("\r\n\r\n");
    if (end == std::string::npos) return true;
    // "CONNECT 127.0.0.1:PORT HTTP/1.1"
    const std::string_view line(connection.head.data(), connection.head.find("\r\n"));
    if (line.substr(0, 8) != "CONNECT ") return false;
    const auto authority = line.substr(8, line.find(' ', 8) - 8);
    const auto colon = authority.rfind(':');
    if (colon == std::string_view::npos) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    const std::string host(authority.substr(0, colon));
    unsigned port = 0;
    std::from_chars(authority.data() + colon + 1, authority.data() + authority.size(), port);
    if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1 || port == 0 || port > 65535) return false;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    // Bytes behind the head go upstream first.
    const std::string early = connection.head.substr(end + 4);
    std::memcpy(client.buffer.get(), early.data(), early.size());
    client.start = 0;
    client.end = early.size();
    connection.head.clear();

    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connection.upstream.fd = fd;
    connection.upstream.writable = false;
    connection.connecting = true;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 && errno != EINPROGRESS)
        return false;
    watch(connection.upstream);
    return true;
}

// Upstream is connected: answer the client and start relaying.
bool connected(Connection& connection) {
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(connection.upstream.fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) return false;
    connection.connecting = false;
    connection.tunnelling = true;
    // The 200 is 39 bytes on a fresh socket: it always fits.
    if (::send(connection.client.fd, kEstablished.data(), kEstablished.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(kEstablished.size()))
        return false;
    return relay(connection.client) && relay(connection.upstream);
}

bool on_event(End& end, std::uint32_t events) {
    Connection& connection = *end.owner;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) end.readable = true;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) end.hup = true;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) end.writable = true;
    if (!connection.tunnelling) {
        if (&end == &connection.client) return connection.connecting || read_head(connection);
        return !end.writable || connected(connection);
    }
    // Readable: move its bytes on. Writable: what its peer had waiting can go now.
    return relay(end) && relay(peer_of(end));
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3 || std::string_view(argv[1]) != "--port") {
        std::fprintf(stderr, "usage: floor_proxy --port P\n");
        return 2;
    }
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // A proxy's client speaks first: accept once its bytes are there, as Handler does.
    const int defer_s = 1;
    ::setsockopt(listener, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
    if (::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) fail("bind");
    if (::listen(listener, 1024) != 0) fail("listen");
    g_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLET;
    event.data.ptr = nullptr; // the listener
    if (::epoll_ctl(g_epoll, EPOLL_CTL_ADD, listener, &event) != 0) fail("epoll_ctl");

    epoll_event events[256];
    for (;;) {
        const int ready = ::epoll_wait(g_epoll, events, 256, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            fail("epoll_wait");
        }
        // Connections ended in this round: later events of this round may name them.
        Connection* ended[256];
        int ended_count = 0;
        const auto is_ended = [&](const Connection* connection) {
            for (int i = 0; i < ended_count; ++i)
                if (ended[i] == connection) return true;
            return false;
        };
        for (int i = 0; i < ready; ++i) {
            if (events[i].data.ptr == nullptr) {
                for (;;) {
                    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    auto* connection = new Connection;
                    connection->client.owner = connection;
                    connection->upstream.owner = connection;
                    connection->client.fd = fd;
                    // Deferred accept: the head is already there. Watched once read, so
                    // that adding it reports no edge for bytes already taken.
                    connection->client.readable = true;
                    if (!read_head(*connection)) {
                        destroy(connection);
                        continue;
                    }
                    watch(connection->client);
                }
                continue;
            }
            End& end = *static_cast<End*>(events[i].data.ptr);
            Connection* connection = end.owner;
            if (is_ended(connection)) continue;
            if (!on_event(end, events[i].events)) {
                ended[ended_count++] = connection;
            }
        }
        for (int i = 0; i < ended_count; ++i) destroy(ended[i]);
    }
}
