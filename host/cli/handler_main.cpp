// `handler`: the command line. See docs/cli.md.
#include "acp/stdio_server.hpp"
#include "cli/cli.hpp"
#include "core/paths.hpp"
#include "daemon/daemon.hpp"
#include "setup/system_probe.hpp"

#include <filesystem>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace {
// Session output goes straight to the descriptor: a terminal program's screen must not
// wait in an iostream buffer.
void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t written = ::write(fd, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) continue;
            return;
        }
        bytes.remove_prefix(static_cast<std::size_t>(written));
    }
}
// `handler ui`: xdg-open, the desktop's own choice of browser. The login link is not
// put on its command line, where any local user can read it in /proc/PID/cmdline (and
// race to spend the token first): xdg-open gets a private file (0600, in handler's
// runtime folder) that sends the browser on to the link, as Jupyter does. Its exit
// status says whether it found a browser; it returns once the browser is started.
bool open_url(const std::string& url) {
    constexpr std::string_view kPrefix = "http://127.0.0.1:";
    // The link goes into HTML: only what handlerd makes (digits, hex, ':', '/', '#', '=').
    if (!url.starts_with(kPrefix) ||
        url.find_first_not_of("0123456789abcdef:/.#=lognin", kPrefix.size()) != std::string::npos)
        return false;
    auto paths = handler::Paths::from_process_environment();
    if (!paths) return false;
    const std::filesystem::path page = paths->runtime_dir / "ui-login.html";
    const std::string html = "<!doctype html><meta charset=\"utf-8\"><title>Handler</title>"
                             "<meta http-equiv=\"refresh\" content=\"0; url=" + url + "\">"
                             "<a href=\"" + url + "\">Open Handler</a>\n";
    if (!handler::write_file_atomic(page, html, 0600)) return false;
    const std::string target = "file://" + page.string();
    const pid_t child = ::fork();
    if (child < 0) return false;
    if (child == 0) {
        const char* const argv[] = {"xdg-open", target.c_str(), nullptr};
        ::execvp(argv[0], const_cast<char* const*>(argv));
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
} // namespace

int main(int argc, char** argv) {
    using namespace handler;
    std::error_code error;
    auto current = std::filesystem::current_path(error);
    const char* home = std::getenv("HOME");
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
        [] { return setup::make_system_probe(); },
        STDIN_FILENO,
        [](std::string_view bytes) { write_all(STDOUT_FILENO, bytes); },
        [](std::string_view bytes) { write_all(STDERR_FILENO, bytes); },
        home != nullptr && *home == '/' ? std::filesystem::path(home) : std::filesystem::path(),
        &cli::system_clock(), &cli::local_time_zone(),
        [](const cli::AcpCommand& command) {
            return acp::run_stdio_server(acp::ServerOptions{command.agent, command.verbosity});
        },
        open_url};
    return cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), context);
}
