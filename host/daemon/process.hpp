// Turning handlerd into a background daemon where there is no systemd to do it (as on
// these machines, and in containers). The caller learns whether the daemon really
// started: the parent waits until the child reports ready or failed.
#pragma once

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

// Double-forks into a new session with stdio on /dev/null. Returns in the daemon
// process only; the original process waits for the daemon's verdict, prints its
// message and exits 0 (ready) or 1 (failed or died). Call before any thread starts.
Readiness detach();

} // namespace handler::daemon
