// Turning handlerd into a background daemon where there is no systemd to do it (as on
// these machines, and in containers). The caller learns whether the daemon really
// started: the parent waits until the child reports ready or failed.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <string_view>

namespace handler::daemon {

class Readiness {
public:
    Readiness() = default;
    explicit Readiness(int fd) : fd_(fd) {}
    Readiness(Readiness&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Readiness& operator=(Readiness&&) = delete;
    ~Readiness();

    // Both are no-ops when not detached, and once one was called.
    void ready(std::string_view message);
    void failed(std::string_view message);

private:
    void send(char verdict, std::string_view message);
    int fd_ = -1;
};

// One handlerd per user: an exclusive flock on `lock_file`, held (fd left open) for the
// life of the process. The socket check alone has a window in which two daemons that
// start at the same instant both find the socket stale.
Result<void> take_instance_lock(const std::filesystem::path& lock_file,
                                const std::filesystem::path& pid_file);

// Double-forks into a new session with stdio on /dev/null. Returns in the daemon
// process only; the original process waits for the daemon's verdict, prints its
// message and exits 0 (ready) or 1 (failed or died). Call before any thread starts.
Readiness detach();

} // namespace handler::daemon
