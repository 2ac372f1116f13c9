// Shared by the shim's host-side test programs (shim_test.cpp, bridge_test.cpp): a
// temporary folder and a listening unix socket, the two things both fake a handlerd with.
#pragma once

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace handler::shim::testing {

class TempDir {
public:
    explicit TempDir(const char* prefix = "handler-shim-it") {
        std::string pattern = std::string("/tmp/") + prefix + "-XXXXXX";
        if (!mkdtemp(pattern.data())) std::abort();
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

inline sockaddr_un unix_address(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    return address;
}

// A listening unix socket at `path` (a test failure if it cannot be made); -1 on error.
inline int listen_unix(const std::string& path, int backlog) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const auto address = unix_address(path);
    if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        listen(fd, backlog) != 0) {
        ADD_FAILURE() << "cannot listen on " << path << ": " << std::strerror(errno);
    }
    return fd;
}

// The next connection on `listener`, or -1 after `timeout`.
inline int accept_within(int listener, std::chrono::milliseconds timeout) {
    pollfd polled{listener, POLLIN, 0};
    if (poll(&polled, 1, static_cast<int>(timeout.count())) != 1) return -1;
    return ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
}

} // namespace handler::shim::testing
