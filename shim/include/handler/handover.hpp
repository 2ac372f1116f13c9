// How handler-shim passes connections to the session's egress proxy, over a new
// connection to the proxy's unix socket (SCM_RIGHTS). Two messages, each one byte:
//   - a lease: kLeaseByte carrying the shim's listening sockets (127.0.0.1:PORT and
//     [::1]:PORT). The proxy answers kLeaseByte when it takes them, then accepts the
//     programs' connections itself, and the shim stays out of the way. The connection is
//     held open as the lease: when either end closes it (handlerd restarted, the session
//     ended), the proxy closes its copies and the shim goes back to accepting.
//   - a handover: kHandoverByte carrying one accepted TCP socket, and nothing else. The
//     shim does this for each connection while it holds no lease.
// Neither byte ever starts an HTTP request, so the proxy tells both from an older shim's
// relayed bytes by the first byte. Shared by the shim (send) and handlerd (receive), like
// shim_protocol.hpp; plain POSIX, no allocation on the send side.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace handler::shim {

inline constexpr char kHandoverByte = 0;
inline constexpr char kLeaseByte = 1;
inline constexpr std::size_t kMaxPassedFds = 4;

// Sends `byte` with `fds` (1 to kMaxPassedFds) over the connected unix socket `unix_fd`.
// True when the byte went out (the receiver then holds its own copies).
inline bool send_fds(int unix_fd, char byte, const int* fds, std::size_t count) {
    if (count == 0 || count > kMaxPassedFds) return false;
    iovec part{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds, count * sizeof(int));
    return sendmsg(unix_fd, &message, MSG_NOSIGNAL) == 1;
}

// One accepted connection; the sender closes its copy once this is true.
inline bool send_handover(int unix_fd, int fd) { return send_fds(unix_fd, kHandoverByte, &fd, 1); }

// What one read of a fresh connection brought: `got` as recvmsg returned it (errno set
// when -1), the first byte, and every descriptor that came along, which the caller now
// owns and must close. `truncated`: more descriptors were sent than fit (and were lost).
struct Handover {
    long got = -1;
    char byte = 1;
    std::vector<int> fds;
    bool truncated = false;

    // Exactly what a shim sends: the zero byte and one descriptor.
    bool well_formed() const { return got == 1 && byte == kHandoverByte && fds.size() == 1 && !truncated; }
    // A lease as a shim sends it: kLeaseByte and one or two listeners.
    bool lease() const { return got == 1 && byte == kLeaseByte && !fds.empty() && fds.size() <= 2 && !truncated; }
};

inline Handover receive_handover(int unix_fd, int flags) {
    Handover handover;
    iovec part{&handover.byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    handover.got = recvmsg(unix_fd, &message, flags | MSG_CMSG_CLOEXEC);
    if (handover.got < 0) return handover;
    handover.truncated = (message.msg_flags & MSG_CTRUNC) != 0;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        for (std::size_t i = 0; i < (header->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            handover.fds.push_back(fd);
        }
    }
    return handover;
}

} // namespace handler::shim
