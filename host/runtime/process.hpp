// Running a program and capturing what it printed. Behind an interface, like ninja's
// CommandRunner, so PodmanRuntime can be tested without podman: the fake in
// tests/support/fake_command_runner.hpp records every argv and returns scripted results.
#pragma once

#include "core/file_descriptor.hpp"
#include "core/result.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::runtime {

struct CommandRequest {
    // argv[0] is looked up in PATH. Never passed through a shell: every element reaches
    // the program as one argument, whatever characters it holds.
    std::vector<std::string> argv;
    // Written to the program's standard input, which is then closed. Without it the
    // program reads /dev/null, so nothing ever waits on handlerd's own stdin.
    std::optional<std::string> stdin_data;
    // The program is killed (SIGKILL) when it runs longer; the result is an error.
    std::int64_t timeout_ms = 60'000;
    // More output than this on stdout or stderr kills the program: a runaway command must
    // not grow handlerd's memory without bound.
    std::size_t output_limit_bytes = 16 * 1024 * 1024;
    // Set only for a command that changes nothing and whose answer only this handlerd
    // wants (podman ps, inspect): once handlerd is stopping, the runner stops waiting for
    // it and lets it finish on its own, so a stop is not held up by a question nobody
    // will read the answer to. A command that changes something is always waited for.
    bool abandon_when_stopping = false;
    // Called on the running thread with each piece of output as it arrives (stdout and
    // stderr alike), besides collecting it: a long build shows its progress. Pieces are
    // not lines; the callback must be quick.
    std::function<void(std::string_view)> on_output = nullptr;
};

struct CommandResult {
    // The exit status, or 128 + the signal number when a signal ended the program
    // (the shell's convention, so callers compare one number).
    int exit_code = 0;
    std::string stdout_text;
    std::string stderr_text;
};

class CommandRunner {
public:
    virtual ~CommandRunner() = default;
    // An error only when the program could not be run or did not finish (not found,
    // timeout, output limit); a non-zero exit is a result for the caller to judge.
    virtual Result<CommandResult> run(const CommandRequest& request) = 0;
};

// The real runner: posix_spawnp with pipes. Every descriptor of handlerd other than the
// three pipes is closed in the child (closefrom), so a container runtime never inherits
// handlerd's sockets, database or lock file even if some library forgot O_CLOEXEC. The
// child starts with an empty signal mask and default dispositions.
class SystemCommandRunner final : public CommandRunner {
public:
    SystemCommandRunner();
    ~SystemCommandRunner() override = default;
    SystemCommandRunner(const SystemCommandRunner&) = delete;
    SystemCommandRunner& operator=(const SystemCommandRunner&) = delete;

    Result<CommandResult> run(const CommandRequest& request) override;

    // handlerd is stopping (any thread, once or more): the runs under way whose request
    // says abandon_when_stopping return an error at once, and later ones are not started.
    // The programs themselves are not signalled; each finishes, finds its output pipe
    // closed and exits. Other runs are unaffected.
    void abandon_reads();

private:
    std::atomic<bool> stopping_ = false;
    FileDescriptor stopping_fd_; // an eventfd, readable from abandon_reads() on: wakes the polls
};

// argv as one line for messages: elements with spaces or quotes are single-quoted.
std::string describe_command(const std::vector<std::string>& argv);

} // namespace handler::runtime
