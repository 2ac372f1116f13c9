// The shim's command line. Hand-parsed because the shim links statically and must not
// pull in anything beyond libc and libstdc++; kept apart from main.cpp so the unit tests
// can check every refusal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace handler::shim {

// Exit status when the shim itself fails: bad usage, or no terminal or pipes to be had.
// 125 as podman uses it, next to the shell's 126/127 ("cannot run"), so a caller can tell
// "the shim failed" from what the program returned (barring a program that exits 125).
inline constexpr int kShimErrorExitCode = 125;

struct Options {
    std::string socket_path;
    bool tty = false;
    std::uint16_t rows = 24;
    std::uint16_t cols = 80;
    std::size_t ring_bytes = 1024 * 1024;
    std::uint64_t exit_grace_ms = 30'000;
    std::string workdir; // empty: inherit the shim's
    // The egress bridge (bridge.hpp): TCP on loopback at this port, each connection
    // passed on to the unix socket at proxy_socket. Both set, or neither (port 0).
    std::uint16_t proxy_port = 0;
    std::string proxy_socket;
    std::vector<std::string> command; // PROGRAM ARGS..., never empty once parsed
};

struct ParseResult {
    Options options;
    std::string error; // empty when the command line was good
    bool help = false; // --help: print usage_text() and exit 0
    bool ok() const { return error.empty() && !help; }
};

// `args` excludes argv[0].
ParseResult parse_options(const std::vector<std::string_view>& args);

std::string usage_text();

} // namespace handler::shim
