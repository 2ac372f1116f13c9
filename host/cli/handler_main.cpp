// `handler`: the command line. See docs/cli.md.
#include "cli/cli.hpp"
#include "core/paths.hpp"
#include "daemon/daemon.hpp"
#include "setup/system_probe.hpp"

#include <filesystem>
#include <iostream>
#include <unistd.h>

int main(int argc, char** argv) {
    using namespace handler;
    std::error_code error;
    auto current = std::filesystem::current_path(error);
    cli::CliContext context{
        [] () -> std::unique_ptr<cli::ApiClient> {
            auto paths = Paths::from_process_environment();
            // Without a usable environment there is no socket to find; the client then
            // reports "not running" for an empty path, and the message says where it looked.
            return cli::make_unix_socket_client(paths ? paths->socket_file()
                                                      : std::filesystem::path(),
                                                10'000);
        },
        std::cout, std::cerr, current,
        [](const cli::DaemonCommand& command) {
            return daemon::run_daemon(daemon::DaemonOptions{command.verbosity, false});
        },
        ::geteuid() == 0,
        [] { return setup::make_system_probe(); }};
    return cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), context);
}
