// Turning handlerd into a background daemon where there is no systemd to do it (as on
// these machines, and in containers). The caller learns whether the daemon really
// started: the parent waits until the child reports ready or failed.
#pragma once

#include "core/file_descriptor.hpp"
#include "core/result.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace handler::daemon {

class Readiness {
public:
    Readiness() = default;
    explicit Readiness(int fd) : fd_(fd) {}

    // Both are no-ops when not detached, and once one was called.
    void ready(std::string_view message);
    void failed(std::string_view message);

private:
    void send(char verdict, std::string_view message);
    FileDescriptor fd_; // the pipe to the waiting parent
};

// One handlerd per user: an exclusive flock on the lock file, held for the life of the
// daemon. The socket check alone has a window in which two daemons that start at the
// same instant both find the socket stale.
struct InstanceFiles {
    std::filesystem::path lock_file;
    std::filesystem::path pid_file;    // written once the daemon serves, removed as it ends
    std::filesystem::path socket_file; // created as it starts serving, removed as it stops
};

// The lock, released when this goes (the daemon keeps it until everything it wrote is
// closed).
class InstanceLock {
public:
    InstanceLock() = default;
    explicit InstanceLock(int fd) : fd_(fd) {}

private:
    FileDescriptor fd_; // the flocked lock file
};

// How long a start waits for a daemon that holds the lock without serving. Under
// `handler setup`'s 30 s for `handlerd --detach`, so setup hears why it gave up.
inline constexpr std::chrono::milliseconds kInstanceWait{25'000};

struct InstanceWait {
    std::chrono::milliseconds limit = kInstanceWait;
    std::chrono::milliseconds poll_interval{10};
    // Told, in a sentence, when the wait begins and when it ends well.
    std::function<void(const std::string&)> report;
};

// Takes the lock. A holder that serves (its pid file and its socket are there) is
// refused at once, naming its pid. A holder without both is stopping (it removes its
// socket first and its pid file after its loop) or still starting: that one is waited
// for, up to `wait.limit`, until it lets go or starts serving.
Result<InstanceLock> take_instance_lock(const InstanceFiles& files, const InstanceWait& wait = {});

// Double-forks into a new session with stdio on /dev/null. Returns in the daemon
// process only; the original process waits for the daemon's verdict, prints its
// message and exits 0 (ready) or 1 (failed or died). Call before any thread starts.
Readiness detach();

} // namespace handler::daemon
