#include "daemon/process.hpp"

#include "core/paths.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/file.h>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace handler::daemon {

Readiness::~Readiness() {
    if (fd_ >= 0) ::close(fd_);
}

void Readiness::ready(std::string_view message) { send('K', message); }
void Readiness::failed(std::string_view message) { send('F', message); }

void Readiness::send(char verdict, std::string_view message) {
    if (fd_ < 0) return;
    std::string report(1, verdict);
    report.append(message);
    // The parent reads until EOF, so a short write would only shorten the message.
    [[maybe_unused]] auto written = ::write(fd_, report.data(), report.size());
    ::close(fd_);
    fd_ = -1;
}

Result<void> take_instance_lock(const std::filesystem::path& lock_file,
                                const std::filesystem::path& pid_file) {
    const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return make_error(ErrorCode::internal, "cannot open " + lock_file.string() + ": " +
                                                   std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        ::close(fd);
        if (error != EWOULDBLOCK)
            return make_error(ErrorCode::internal, "cannot lock " + lock_file.string() + ": " +
                                                       std::strerror(error));
        std::string pid = "unknown";
        if (auto text = read_file(pid_file); text && !text->empty())
            pid = text->substr(0, text->find('\n'));
        return make_error(ErrorCode::conflict,
                          "handlerd already running (pid " + pid + ", lock " +
                              lock_file.string() + "); stop it first or use it: handler status");
    }
    // Deliberately never closed: the lock lives exactly as long as this process.
    return {};
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
