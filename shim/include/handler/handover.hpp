// How handler-shim hands a program's connection to the session's egress proxy: on a new
// connection to the proxy's unix socket, one zero byte carrying the accepted TCP socket
// (SCM_RIGHTS), and nothing else. A zero byte never starts an HTTP request, so the proxy
// tells a handover from an older shim's relayed bytes by the first byte. Shared by the
// shim (send) and handlerd (receive), like shim_protocol.hpp; plain POSIX, no allocation
// on the send side.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace handler::shim {

inline constexpr char kHandoverByte = 0;

// Sends `fd` over the connected unix socket `unix_fd`. True when the byte went out (the
// receiver then holds its own copy of `fd`; the sender closes its).
inline bool send_handover(int unix_fd, int fd) {
    char byte = kHandoverByte;
    iovec part{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    return sendmsg(unix_fd, &message, MSG_NOSIGNAL) == 1;
}

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
};

inline Handover receive_handover(int unix_fd, int flags) {
    Handover handover;
    iovec part{&handover.byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
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
