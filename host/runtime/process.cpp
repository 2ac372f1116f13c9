#include "runtime/process.hpp"

#include "core/file_descriptor.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace handler::runtime {
namespace {

struct Pipe {
    FileDescriptor read_end;
    FileDescriptor write_end;
};

Result<Pipe> make_pipe() {
    int fds[2];
    // O_CLOEXEC: handlerd's ends must not leak into this child or any other.
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return make_error(ErrorCode::internal,
                          std::string("could not create a pipe: ") + std::strerror(errno));
    return Pipe{FileDescriptor(fds[0]), FileDescriptor(fds[1])};
}

std::string quote(const std::string& word) {
    if (!word.empty() && word.find_first_of(" \t\n'\"\\$`;&|<>*?()[]{}") == std::string::npos)
        return word;
    std::string quoted = "'";
    for (char c : word) {
        if (c == '\'') quoted += "'\\''";
        else quoted += c;
    }
    return quoted + "'";
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 255;
}

// Ends the child and collects it, so a failed run never leaves a zombie behind.
void kill_and_reap(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

// While a write to the child's stdin can hit a closed pipe, SIGPIPE is blocked for this
// thread (and a pending one consumed afterwards): the default action would end handlerd.
class SigpipeGuard {
public:
    SigpipeGuard() {
        sigemptyset(&sigpipe_);
        sigaddset(&sigpipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &sigpipe_, &old_);
    }
    ~SigpipeGuard() {
        timespec zero{};
        while (sigtimedwait(&sigpipe_, nullptr, &zero) > 0) {
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;

private:
    sigset_t sigpipe_;
    sigset_t old_;
};

} // namespace

std::string describe_command(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& word : argv) {
        if (!line.empty()) line += ' ';
        line += quote(word);
    }
    return line;
}

SystemCommandRunner::SystemCommandRunner()
    : stopping_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void SystemCommandRunner::abandon_reads() {
    stopping_ = true;
    const std::uint64_t one = 1;
    if (stopping_fd_.valid()) {
        [[maybe_unused]] auto written = ::write(stopping_fd_.get(), &one, sizeof one);
    }
}

namespace {

Error abandoned(const CommandRequest& request) {
    return make_error(ErrorCode::unavailable,
                      "`" + describe_command(request.argv) + "` was abandoned: handlerd is stopping");
}

// The child's three standard streams, handlerd's ends of them.
struct ChildPipes {
    Pipe out;
    Pipe err;
    std::optional<Pipe> in; // only when the request has stdin data
};

Result<ChildPipes> make_child_pipes(const CommandRequest& request) {
    auto out = make_pipe();
    if (!out) return out.take_error();
    auto err = make_pipe();
    if (!err) return err.take_error();
    ChildPipes pipes{std::move(*out), std::move(*err), std::nullopt};
    if (request.stdin_data) {
        auto in = make_pipe();
        if (!in) return in.take_error();
        pipes.in = std::move(*in);
    }
    return pipes;
}

// Starts the program with its standard streams on `pipes` (stdin /dev/null without
// stdin data), every other descriptor closed and the signal state reset.
Result<pid_t> spawn(const CommandRequest& request, const ChildPipes& pipes) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (pipes.in) posix_spawn_file_actions_adddup2(&actions, pipes.in->read_end.get(), 0);
    else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipes.out.write_end.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, pipes.err.write_end.get(), 2);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t no_signals;
    sigemptyset(&no_signals);
    sigset_t all_signals;
    sigfillset(&all_signals);
    posix_spawnattr_setsigmask(&attributes, &no_signals);
    posix_spawnattr_setsigdefault(&attributes, &all_signals);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> argv;
    argv.reserve(request.argv.size() + 1);
    for (const std::string& word : request.argv) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);

    pid_t pid = -1;
    int spawn_error =
        posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawn_error != 0) {
        ErrorCode code = spawn_error == ENOENT ? ErrorCode::unavailable : ErrorCode::internal;
        return make_error(code, "could not run `" + request.argv.front() +
                                    "`: " + std::strerror(spawn_error) +
                                    (spawn_error == ENOENT ? " (is it installed and in PATH?)"
                                                           : ""));
    }
    return pid;
}

Error timed_out(pid_t pid, const CommandRequest& request) {
    kill_and_reap(pid);
    return make_error(ErrorCode::unavailable,
                      "`" + describe_command(request.argv) + "` did not finish within " +
                          std::to_string(request.timeout_ms) + " ms and was killed");
}

// Feeds the child its stdin and collects its stdout and stderr until both are closed,
// within the deadline and the output limit (past either the child is killed). Once
// `stopping_fd` (-1: none) is readable, the exchange is abandoned.
Result<void> exchange(pid_t pid, const CommandRequest& request, ChildPipes& pipes, int stopping_fd,
                      std::chrono::steady_clock::time_point deadline, CommandResult& result) {
    FileDescriptor& out = pipes.out.read_end;
    FileDescriptor& err = pipes.err.read_end;
    std::optional<Pipe>& in = pipes.in;
    std::size_t written = 0;
    char buffer[16 * 1024];

    while (out.get() >= 0 || err.get() >= 0) {
        pollfd fds[4];
        nfds_t count = 0;
        auto add = [&](const FileDescriptor& fd, short events) {
            if (fd.get() >= 0) fds[count++] = pollfd{fd.get(), events, 0};
        };
        add(out, POLLIN);
        add(err, POLLIN);
        if (in) add(in->write_end, POLLOUT);
        if (stopping_fd >= 0) fds[count++] = pollfd{stopping_fd, POLLIN, 0};

        auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
        if (remaining <= 0) return timed_out(pid, request);
        int ready = ::poll(fds, count, static_cast<int>(std::min<std::int64_t>(remaining, 1000)));
        if (ready < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            kill_and_reap(pid);
            return make_error(ErrorCode::internal, std::string("poll failed: ") + std::strerror(saved));
        }
        for (nfds_t i = 0; i < count; ++i) {
            if (fds[i].revents == 0) continue;
            // Our pipe ends close on return; the program is left to exit by itself, and
            // is collected if it already has.
            if (fds[i].fd == stopping_fd) {
                int status = 0;
                ::waitpid(pid, &status, WNOHANG);
                return abandoned(request);
            }
            if (in && fds[i].fd == in->write_end.get()) {
                const std::string& data = *request.stdin_data;
                ssize_t n = ::write(fds[i].fd, data.data() + written, data.size() - written);
                if (n > 0) written += static_cast<std::size_t>(n);
                // EPIPE: the program stopped reading; what it did read is its business.
                if ((n < 0 && errno != EINTR && errno != EAGAIN) || written == data.size())
                    in->write_end.reset();
                continue;
            }
            FileDescriptor& source = fds[i].fd == out.get() ? out : err;
            std::string& sink = &source == &out ? result.stdout_text : result.stderr_text;
            ssize_t n = ::read(source.get(), buffer, sizeof buffer);
            if (n > 0) {
                sink.append(buffer, static_cast<std::size_t>(n));
                if (request.on_output) request.on_output(std::string_view(buffer, static_cast<std::size_t>(n)));
                if (sink.size() > request.output_limit_bytes) {
                    kill_and_reap(pid);
                    return make_error(ErrorCode::too_large,
                                      "`" + describe_command(request.argv) + "` printed more than " +
                                          std::to_string(request.output_limit_bytes) +
                                          " bytes and was killed");
                }
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                source.reset();
            }
        }
    }
    return {};
}

// Output is closed; the child is exiting. Its exit is still bounded by the deadline in
// case it closed its output early and kept running.
Result<int> wait_for_exit(pid_t pid, const CommandRequest& request,
                          std::chrono::steady_clock::time_point deadline) {
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) return exit_code_of(status);
        if (done < 0 && errno != EINTR)
            return make_error(ErrorCode::internal, std::string("waitpid failed: ") + std::strerror(errno));
        if (std::chrono::steady_clock::now() >= deadline) return timed_out(pid, request);
        ::usleep(2000);
    }
}

} // namespace

Result<CommandResult> SystemCommandRunner::run(const CommandRequest& request) {
    if (request.argv.empty() || request.argv.front().empty())
        return make_error(ErrorCode::invalid_argument, "no program to run (empty argv)");
    if (request.abandon_when_stopping && stopping_) return abandoned(request);
    auto pipes = make_child_pipes(request);
    if (!pipes) return pipes.take_error();
    auto pid = spawn(request, *pipes);
    if (!pid) return pid.take_error();

    // The child holds its own copies now; closing ours is what lets EOF arrive.
    pipes->out.write_end.reset();
    pipes->err.write_end.reset();
    std::optional<Pipe>& in = pipes->in;
    if (in) in->read_end.reset();
    if (in && request.stdin_data->empty()) in->write_end.reset();

    // Handlerd's ends are non-blocking: a blocking write of a large stdin would wait for
    // a child that itself waits for us to read its output. (The child's ends are other
    // open file descriptions and stay blocking.)
    for (int fd : {pipes->out.read_end.get(), pipes->err.read_end.get(), in ? in->write_end.get() : -1})
        if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

    SigpipeGuard sigpipe_guard;
    CommandResult result;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(request.timeout_ms);
    const int stopping_fd = request.abandon_when_stopping ? stopping_fd_.get() : -1;
    if (auto exchanged = exchange(*pid, request, *pipes, stopping_fd, deadline, result); !exchanged)
        return exchanged.take_error();
    // Whatever stdin was not taken by now never will be; an open pipe would keep a
    // program that reads to EOF waiting until the deadline.
    if (in) in->write_end.reset();
    auto exit_code = wait_for_exit(*pid, request, deadline);
    if (!exit_code) return exit_code.take_error();
    result.exit_code = *exit_code;
    return result;
}

} // namespace handler::runtime
