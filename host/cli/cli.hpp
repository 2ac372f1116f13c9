// The `handler` command line (CLI11). Every command but `daemon`, `setup` and
// `completions` is a thin client of handlerd's API, so the CLI, the web UI and editors see
// one truth.
#pragma once

#include "cli/api_client.hpp"
#include "cli/time_format.hpp"
#include "setup/system_probe.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace handler::cli {

// Documented in docs/cli.md; scripts rely on them.
enum ExitCode : int {
    kExitOk = 0,
    kExitRefused = 1,     // handlerd answered with an error (bad input, unknown name...)
    kExitUsage = 2,       // the command line itself is wrong
    kExitUnavailable = 3, // handlerd is not running or not reachable
    kExitInternal = 4,    // handlerd failed (5xx) or answered something unreadable
};

struct DaemonCommand {
    int verbosity = 0; // each -v lowers the log level one step
};

// `handler acp`: the ACP agent on stdin/stdout (host/acp/stdio_server.hpp).
struct AcpCommand {
    std::string agent; // --agent NAME; empty: the project's only agent
    int verbosity = 0;
};

struct CliContext {
    // Made on first use, so `handler --help` and `handler completions` need no daemon.
    std::function<std::unique_ptr<ApiClient>()> connect;
    std::ostream& out;
    std::ostream& err;
    std::filesystem::path current_dir;
    std::function<int(const DaemonCommand&)> run_daemon;
    // handlerd never runs as root, so root looking for its own daemon gets a pointer to
    // the user that runs it.
    bool as_root = false;
    // `handler setup` looks at the machine only through this probe; tests pass a fake.
    std::function<std::unique_ptr<setup::SystemProbe>()> make_probe;
    // Where a session's input comes from (`handler run`, `attach`): -1 for none. When it
    // is a terminal, it is put in raw mode while attached and the detach keys work.
    int input_fd = -1;
    // Raw output bytes of a session go straight here (stdout), unbuffered by iostreams;
    // unset: to `out`.
    std::function<void(std::string_view)> write_out;
    std::function<void(std::string_view)> write_err;
    // $HOME: `handler project add` refuses it and the folders above it, so an error
    // never suggests registering one of those. Empty when unknown.
    std::filesystem::path home_dir;
    // What "now" and the local zone are when times are shown to people.
    const Clock* clock = &system_clock();
    const TimeZone* time_zone = &local_time_zone();
    // `handler acp` takes over stdin and stdout; unset: the command says it is unavailable.
    std::function<int(const AcpCommand&)> run_acp;
    // `handler ui`: opens a URL in the user's browser (xdg-open); false when that could
    // not be done, and the URL is printed instead. Unset: always printed.
    std::function<bool(const std::string& url)> open_url;
};

// Builds the command tree without running anything: also the source of the shell
// completions, so they can never disagree with the parser.
void define_commands(CLI::App& app);

int run_cli(const std::vector<std::string>& arguments, CliContext& context);

} // namespace handler::cli
