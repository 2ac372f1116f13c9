#include "daemon/process.hpp"

#include "core/paths.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace handler::daemon {

void Readiness::ready(std::string_view message) { send('K', message); }
void Readiness::failed(std::string_view message) { send('F', message); }

void Readiness::send(char verdict, std::string_view message) {
    if (!fd_.valid()) return;
    std::string report(1, verdict);
    report.append(message);
    // The parent reads until EOF, so a short write would only shorten the message.
    [[maybe_unused]] auto written = ::write(fd_.get(), report.data(), report.size());
    fd_.reset();
}

namespace {

// The pid the holder wrote, empty when there is no pid file (yet, or any more).
std::string holder_pid(const std::filesystem::path& pid_file) {
    auto text = read_file(pid_file);
    if (!text || text->empty()) return {};
    return text->substr(0, text->find('\n'));
}

std::string duration_text(std::chrono::milliseconds duration) {
    return duration.count() < 1000 ? std::to_string(duration.count()) + " ms"
                                   : std::to_string(duration.count() / 1000) + " s";
}

bool socket_present(const std::filesystem::path& socket_file) {
    struct stat info {};
    return ::lstat(socket_file.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

} // namespace

Result<InstanceLock> take_instance_lock(const InstanceFiles& files, const InstanceWait& wait) {
    const int fd = ::open(files.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return make_error(ErrorCode::internal, "cannot open " + files.lock_file.string() + ": " +
                                                   std::strerror(errno));
    InstanceLock lock(fd);
    const auto started = std::chrono::steady_clock::now();
    bool waiting = false;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if (waiting && wait.report)
                wait.report("the other handlerd let go of " + files.lock_file.string() +
                            " after " +
                            duration_text(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - started)));
            return lock;
        }
        const int error = errno;
        if (error != EWOULDBLOCK)
            return make_error(ErrorCode::internal, "cannot lock " + files.lock_file.string() +
                                                       ": " + std::strerror(error));
        const std::string pid = holder_pid(files.pid_file);
        if (!pid.empty() && socket_present(files.socket_file))
            return make_error(ErrorCode::conflict,
                              "handlerd already running (pid " + pid + ", lock " +
                                  files.lock_file.string() +
                                  "); stop it first or use it: handler status");
        const auto waited = std::chrono::steady_clock::now() - started;
        const std::string holder = "another handlerd (pid " + (pid.empty() ? "unknown" : pid) + ")";
        if (waited >= wait.limit)
            return make_error(ErrorCode::conflict,
                              holder + " has held " + files.lock_file.string() + " for " +
                                  duration_text(wait.limit) +
                                  " without serving, so it seems stuck; end it (" +
                                  (pid.empty() ? "ps -C handlerd shows it" : "kill " + pid) +
                                  "), then start handlerd again");
        if (!waiting && wait.report)
            wait.report(holder + " holds " + files.lock_file.string() +
                        " but does not serve: it is stopping (or starting); waiting up to " +
                        duration_text(wait.limit) + " for it");
        waiting = true;
        std::this_thread::sleep_for(wait.poll_interval);
    }
}

Readiness detach() {
    std::fflush(nullptr);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        std::perror("handlerd: pipe");
        std::exit(1);
    }
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("handlerd: fork");
        std::exit(1);
    }
    if (child > 0) {
        ::close(pipe_fds[1]);
        std::string report;
        char buffer[512];
        ssize_t n;
        while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
            report.append(buffer, static_cast<std::size_t>(n));
        int status = 0;
        ::waitpid(child, &status, 0);
        if (report.empty()) {
            std::fprintf(stderr, "handlerd: the daemon exited before it was ready; see its log\n");
            std::exit(1);
        }
        std::fprintf(report[0] == 'K' ? stdout : stderr, "%s\n", report.c_str() + 1);
        std::exit(report[0] == 'K' ? 0 : 1);
    }

    ::close(pipe_fds[0]);
    ::setsid();
    // The second fork makes sure the daemon is not a session leader, so it can never
    // acquire a controlling terminal again.
    const pid_t grandchild = ::fork();
    if (grandchild < 0) std::_Exit(1);
    if (grandchild > 0) std::_Exit(0);

    if (::chdir("/") != 0) std::_Exit(1);
    const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd >= 0) {
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(null_fd, STDOUT_FILENO);
        ::dup2(null_fd, STDERR_FILENO);
        if (null_fd > STDERR_FILENO) ::close(null_fd);
    }
    return Readiness(pipe_fds[1]);
}

} // namespace handler::daemon
