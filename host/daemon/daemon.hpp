// handlerd: wires settings, store, plugins and the API together and runs them on one
// io thread until SIGTERM/SIGINT (docs/architecture.md, "Start-up order").
#pragma once

namespace handler::daemon {

struct DaemonOptions {
    int verbosity = 0;   // each step lowers the log level below the configured one
    bool detach = false; // run in the background; return once ready (or failed)
};

// Returns the process exit code: 0 after a clean stop, 1 when it could not start (the
// reason was printed, or reported to the waiting parent when detached).
int run_daemon(const DaemonOptions& options);

} // namespace handler::daemon
