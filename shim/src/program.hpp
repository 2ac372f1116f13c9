// Starting the session's program on a new terminal or on three pipes. Separate from the
// event loop so the fork/exec details (what the child resets, which fds it keeps) sit in
// one place.
#pragma once

#include "options.hpp"

#include <sys/types.h>

#include <string>

namespace handler::shim {

struct Program {
    pid_t pid = -1; // also its process group: the child calls setsid()
    int terminal_fd = -1; // tty mode: the pty master, for output and input alike
    int stdin_fd = -1;    // pipe mode: the shim's ends, all non-blocking
    int stdout_fd = -1;
    int stderr_fd = -1;
};

struct StartResult {
    Program program;
    std::string error; // what could not be set up; empty on success
};

// Forks and execs options.command. The signals the shim handles must already be blocked
// (the child unblocks them). A program that cannot be executed is *not* an error here:
// the child reports it on its own stderr (the terminal or stderr pipe, so the user sees
// it) and exits 127, like a shell would.
StartResult start_program(const Options& options);

} // namespace handler::shim
