// `handlerd`: the daemon, as a program of its own for service managers and scripts.
// `handler daemon` runs the same code in the foreground.
#include "daemon/daemon.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
    handler::daemon::DaemonOptions options;
    CLI::App app{"handlerd: keeps Handler's sessions running; serves its API", "handlerd"};
    app.set_version_flag("--version", std::string("handlerd ") + HANDLER_VERSION);
    app.add_flag("-v,--verbose", options.verbosity,
                 "More log output (repeat for more); overrides [daemon] log_level");
    app.add_flag("--detach", options.detach,
                 "Run in the background; return once it listens (or say why it cannot)");
    CLI11_PARSE(app, argc, argv);
    return handler::daemon::run_daemon(options);
}
