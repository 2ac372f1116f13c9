#include "program.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace handler::shim {
namespace {

std::string describe(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

bool set_nonblocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void close_if_open(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
}

// The child's side of fork(): the shim is single-threaded, so allocating here is safe.
[[noreturn]] void child_fail(const std::string& what, const std::string& name) {
    const int error = errno;
    const std::string message =
        "handler-shim: " + what + " '" + name + "': " + std::strerror(error) + "\n";
    [[maybe_unused]] auto written = write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
}

[[noreturn]] void run_child(const Options& options, int in, int out, int err, int terminal) {
    // The program starts with what a fresh login would have: no blocked signals and
    // default dispositions (an ignored signal would otherwise survive exec). A
    // zero-filled sigaction is SIG_DFL without the old-style cast in the macro.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction default_action {};
    for (int signal_number = 1; signal_number < NSIG; ++signal_number)
        sigaction(signal_number, &default_action, nullptr);

    // Its own session and process group, so a signal to -pid reaches everything it
    // started; in tty mode the pty also becomes its controlling terminal.
    setsid();
    if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
        _exit(127);
    if (terminal >= 0 && ioctl(STDIN_FILENO, TIOCSCTTY, 0) != 0)
        child_fail("cannot make the terminal the controlling terminal of", options.command[0]);
    if (close_range(3, ~0u, 0) != 0) {
        // Kernels before 5.9 lack close_range.
        const long limit = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < (limit > 0 && limit < 65536 ? limit : 65536); ++fd) close(fd);
    }

    if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0)
        child_fail("cannot change to directory", options.workdir);

    std::vector<char*> argv;
    for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    child_fail("cannot run", options.command[0]);
}

StartResult start_with_terminal(const Options& options) {
    StartResult result;
    Program& program = result.program;
    program.terminal_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (program.terminal_fd < 0) return {{}, describe("cannot open a pseudo-terminal (posix_openpt)")};
    if (grantpt(program.terminal_fd) != 0 || unlockpt(program.terminal_fd) != 0) {
        result.error = describe("cannot unlock the pseudo-terminal");
        close_if_open(program.terminal_fd);
        return result;
    }
    // TIOCGPTPEER opens the peer of *this* master even when /dev/pts in our mount
    // namespace is a different devpts instance; the path is the fallback for old kernels.
    int terminal = ioctl(program.terminal_fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (terminal < 0) {
        char name[128];
        if (ptsname_r(program.terminal_fd, name, sizeof name) == 0)
            terminal = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
    if (terminal < 0) {
        result.error = describe("cannot open the pseudo-terminal's peer");
        close_if_open(program.terminal_fd);
        return result;
    }
    winsize size{};
    size.ws_row = options.rows;
    size.ws_col = options.cols;
    ioctl(program.terminal_fd, TIOCSWINSZ, &size);

    // The program's TERM describes the terminal it will actually talk to: handlerd's
    // clients emulate an xterm. Set in the shim itself so the child need not build an
    // environment after fork.
    setenv("TERM", "xterm-256color", 0);

    program.pid = fork();
    if (program.pid < 0) {
        result.error = describe("cannot fork");
        close(terminal);
        close_if_open(program.terminal_fd);
        return result;
    }
    if (program.pid == 0) run_child(options, terminal, terminal, terminal, terminal);
    close(terminal);
    set_nonblocking(program.terminal_fd);
    return result;
}

StartResult start_with_pipes(const Options& options) {
    StartResult result;
    Program& program = result.program;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    const auto close_all = [&] {
        for (int* pair : {in, out, err}) {
            close_if_open(pair[0]);
            close_if_open(pair[1]);
        }
    };
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        result.error = describe("cannot create pipes for the program");
        close_all();
        return result;
    }
    program.pid = fork();
    if (program.pid < 0) {
        result.error = describe("cannot fork");
        close_all();
        return result;
    }
    if (program.pid == 0) run_child(options, in[0], out[1], err[1], -1);
    close_if_open(in[0]);
    close_if_open(out[1]);
    close_if_open(err[1]);
    program.stdin_fd = in[1];
    program.stdout_fd = out[0];
    program.stderr_fd = err[0];
    for (int fd : {program.stdin_fd, program.stdout_fd, program.stderr_fd}) set_nonblocking(fd);
    return result;
}

} // namespace

StartResult start_program(const Options& options) {
    return options.tty ? start_with_terminal(options) : start_with_pipes(options);
}

} // namespace handler::shim
