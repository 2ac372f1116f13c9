#include "owner.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::shim {
namespace {

// Reads at most `limit` bytes of `path`; `truncated` says whether there were more.
bool read_file(const std::string& path, std::size_t limit, std::string& out, bool& truncated) {
    out.clear();
    truncated = false;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    char buffer[4096];
    while (out.size() <= limit) {
        const ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        out.append(buffer, static_cast<std::size_t>(got));
    }
    close(fd);
    if (out.size() > limit) {
        out.resize(limit);
        truncated = true;
    }
    return true;
}

bool all_digits(std::string_view text) {
    if (text.empty() || text.size() > 10) return false;
    for (char c : text)
        if (c < '0' || c > '9') return false;
    return true;
}

template <class T> bool parse_number(std::string_view text, T& value, int base = 10) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    return error == std::errc() && end == text.data() + text.size();
}

// The next whitespace-separated field of `line` from `position`.
std::string_view next_field(std::string_view line, std::size_t& position) {
    while (position < line.size() && (line[position] == ' ' || line[position] == '\t')) ++position;
    const std::size_t start = position;
    while (position < line.size() && line[position] != ' ' && line[position] != '\t') ++position;
    return line.substr(start, position - start);
}

// "0100007F:1F90" -> 0x1F90.
bool port_of(std::string_view address, std::uint16_t& port) {
    const auto colon = address.rfind(':');
    return colon != std::string_view::npos && parse_number(address.substr(colon + 1), port, 16);
}

// The parent's pid from /proc/PID/stat: after the last ')' (the command in parentheses
// may hold any bytes, ')' and spaces included) come the state and the ppid.
bool parent_of(const std::string& proc_root, std::uint32_t pid, std::uint32_t& parent) {
    std::string stat;
    bool truncated = false;
    if (!read_file(proc_root + "/" + std::to_string(pid) + "/stat", 4096, stat, truncated)) return false;
    const auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) return false;
    const std::string_view rest = std::string_view(stat).substr(close_paren + 1);
    std::size_t position = 0;
    next_field(rest, position); // state
    return parse_number(next_field(rest, position), parent);
}

OwnerProcess process_of(const std::string& proc_root, std::uint32_t pid) {
    OwnerProcess process;
    process.pid = pid;
    read_file(proc_root + "/" + std::to_string(pid) + "/cmdline", kMaxCommandBytes, process.command,
              process.truncated);
    // The kernel ends the last argument with a NUL too; the separators are what matter.
    if (!process.truncated && !process.command.empty() && process.command.back() == '\0')
        process.command.pop_back();
    return process;
}

// Whether process `pid` has an fd on `wanted` ("socket:[inode]"); counts the fds read.
bool holds(const std::string& proc_root, std::string_view pid, std::string_view wanted, std::size_t& seen_fds,
           std::size_t limit) {
    const std::string fd_dir = proc_root + "/" + std::string(pid) + "/fd";
    // Another user's process (or one gone meanwhile) cannot be read: skipped.
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) return false;
    bool found = false;
    while (const dirent* fd = readdir(fds)) {
        if (++seen_fds > limit) break;
        if (!all_digits(fd->d_name)) continue;
        char target[64];
        const ssize_t length = readlinkat(dirfd(fds), fd->d_name, target, sizeof target);
        if (length > 0 && std::string_view(target, static_cast<std::size_t>(length)) == wanted) {
            found = true;
            break;
        }
    }
    closedir(fds);
    return found;
}

// The pid of the first process with an fd on socket:[inode], or 0. The `likely` ones
// first: a harness makes request after request from one process, and a full scan reads
// every fd of every process.
std::uint32_t holder_of(const std::string& proc_root, std::uint64_t inode, const OwnerLimits& limits,
                        const std::vector<std::uint32_t>& likely) {
    const std::string wanted = "socket:[" + std::to_string(inode) + "]";
    std::size_t seen_fds = 0;
    for (const std::uint32_t pid : likely)
        if (pid != 0 && holds(proc_root, std::to_string(pid), wanted, seen_fds, limits.fds)) return pid;
    DIR* processes = opendir(proc_root.c_str());
    if (processes == nullptr) return 0;
    std::uint32_t found = 0;
    std::size_t seen_processes = 0;
    while (found == 0 && seen_processes < limits.processes && seen_fds < limits.fds) {
        const dirent* entry = readdir(processes);
        if (entry == nullptr) break;
        if (!all_digits(entry->d_name)) continue;
        ++seen_processes;
        std::uint32_t pid = 0;
        if (!parse_number(std::string_view(entry->d_name), pid) || pid == 0) continue;
        if (holds(proc_root, entry->d_name, wanted, seen_fds, limits.fds)) found = pid;
    }
    closedir(processes);
    return found;
}

} // namespace

std::uint64_t socket_inode(std::string_view table, std::uint16_t port, std::uint16_t proxy_port) {
    bool header = true;
    while (!table.empty()) {
        const auto end = table.find('\n');
        const std::string_view line = table.substr(0, end);
        table.remove_prefix(end == std::string_view::npos ? table.size() : end + 1);
        if (std::exchange(header, false)) continue; // "  sl  local_address rem_address ..."
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
        std::size_t position = 0;
        std::string_view fields[10];
        for (auto& field : fields) field = next_field(line, position);
        std::uint16_t local = 0, remote = 0;
        std::uint64_t inode = 0;
        if (!port_of(fields[1], local) || !port_of(fields[2], remote)) continue;
        if (local != port || remote != proxy_port) continue;
        if (parse_number(fields[9], inode) && inode != 0) return inode;
    }
    return 0;
}

OwnerAnswer find_owner(const std::string& proc_root, std::uint16_t port, std::uint16_t proxy_port, pid_t stop_at,
                       const OwnerLimits& limits, const std::vector<std::uint32_t>& likely) {
    OwnerAnswer answer;
    std::uint64_t inode = 0;
    bool any_table = false;
    for (const char* name : {"/net/tcp", "/net/tcp6"}) {
        std::string table;
        bool truncated = false;
        if (!read_file(proc_root + name, limits.table_bytes, table, truncated)) continue;
        any_table = true;
        inode = socket_inode(table, port, proxy_port);
        if (inode != 0) break;
    }
    if (!any_table) {
        answer.status = OwnerStatus::unreadable;
        return answer;
    }
    if (inode == 0) {
        answer.status = OwnerStatus::no_connection;
        return answer;
    }
    std::uint32_t pid = holder_of(proc_root, inode, limits, likely);
    if (pid == 0) {
        answer.status = OwnerStatus::no_process;
        return answer;
    }
    answer.status = OwnerStatus::found;
    while (pid != 0 && answer.processes.size() < kMaxChain && static_cast<pid_t>(pid) != stop_at) {
        answer.processes.push_back(process_of(proc_root, pid));
        std::uint32_t parent = 0;
        if (pid == 1 || !parent_of(proc_root, pid, parent)) break;
        pid = parent;
    }
    // The shim itself held it (a handover in flight): no program to name.
    if (answer.processes.empty()) answer.status = OwnerStatus::no_process;
    return answer;
}

} // namespace handler::shim
