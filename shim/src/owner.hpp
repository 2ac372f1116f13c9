// Who holds a connection to the egress proxy: the shim answers handlerd's WHO from the
// container's /proc, which it sees because it is the container's first process (same pid
// and network namespaces). handlerd cannot read it: the container's pids and sockets are
// not its own.
//
// The lookup: the TCP socket in net/tcp (and tcp6) whose local port is the one asked and
// whose remote port is the proxy port gives an inode; the first process with
// fd/N -> socket:[inode] holds it; its parents follow through stat's ppid, up to the
// shim (excluded) or pid 1, at most kMaxChain processes in all. Everything is bounded:
// the /proc files read, the processes and fds scanned, each command line.
//
// `proc_root` is "/proc" in the shim, a fake tree in the unit tests.
#pragma once

#include <handler/shim_protocol.hpp>

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace handler::shim {

struct OwnerLimits {
    std::size_t processes = 4096;  // /proc/PID entries looked into
    std::size_t fds = 256 * 1024;  // fd entries read in all
    std::size_t table_bytes = 8u << 20; // of net/tcp and net/tcp6 each
};

// `stop_at`: the shim's own pid, where the chain of parents ends (exclusive). `likely`:
// pids looked at before the full scan (the holders of the last answers).
OwnerAnswer find_owner(const std::string& proc_root, std::uint16_t port, std::uint16_t proxy_port,
                       pid_t stop_at, const OwnerLimits& limits = {},
                       const std::vector<std::uint32_t>& likely = {});

// The inode of the socket from local `port` to remote `proxy_port` in one /proc/net/tcp
// table's text, or 0. Exposed for the tests.
std::uint64_t socket_inode(std::string_view table, std::uint16_t port, std::uint16_t proxy_port);

} // namespace handler::shim
