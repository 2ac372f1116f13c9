// handlerd's settings: $XDG_CONFIG_HOME/handler/config.toml (docs/configuration.md).
//
// The file is the user's, so every mistake in it is reported with file:line:column and
// the key, and handlerd refuses to start rather than guess. Files written by an older
// handlerd are converted on load, after a backup of the original; a file written by a
// newer handlerd is refused, because silently dropping settings we do not understand
// could, for example, re-open a listener the user had closed.
#pragma once

#include "core/result.hpp"
#include "runtime/confinement.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace handler::settings {

// The format this handlerd writes and understands. Format 1 was the pre-release flat
// layout (top-level log_level, api_port, api_tcp); a file without `format` is format 1.
inline constexpr int kCurrentFormat = 2;

enum class LogLevel { trace = 1, debug, info, warn, error };

std::string_view to_string(LogLevel level);
std::optional<LogLevel> parse_log_level(std::string_view text);

struct DaemonSettings {
    LogLevel log_level = LogLevel::info;
};

struct ApiSettings {
    bool tcp = true;
    // Loopback only (127.0.0.0/8 or ::1): the TCP listener is guarded by a token, but it
    // must still never be reachable from another machine.
    std::string address = "127.0.0.1";
    std::uint16_t port = 7420; // 0 picks a free port
    std::uint64_t body_limit_bytes = 1024 * 1024;
    std::uint32_t read_timeout_ms = 30000;
};

struct PluginSettings {
    std::vector<std::string> disabled; // plugin ids that are found but not loaded
};

struct SessionSettings {
    std::string image; // empty: the base image `handler setup` builds
    std::uint64_t log_limit_bytes = std::uint64_t{64} << 20;
    // A headless run still going after this long is stopped (0: never). Harnesses retry
    // an unreachable model without end (Codex does), and nobody watches a headless run.
    std::uint64_t headless_timeout_minutes = 120;
    // Each session's limits (docs/security.md, "Limits"): the sizes of its tmpfs /tmp and
    // HOME, its processes and threads, and its memory (0: none). Where the machine's
    // cgroups cannot limit memory, each process is held to it instead.
    runtime::SessionLimits limits;
};

struct NetworkSettings {
    // Inside each session: the port of the bridge to the egress proxy.
    std::uint16_t proxy_port = 3128;
    // name -> address, like curl --resolve, or name:port -> address:port, like curl
    // --connect-to: for test upstreams on this machine. A name listed here is the user's,
    // so it may be loopback.
    std::map<std::string, std::string> resolve;
};

struct Settings {
    DaemonSettings daemon;
    ApiSettings api;
    PluginSettings plugins;
    SessionSettings sessions;
    NetworkSettings network;
};

// Ranges accepted for the numeric settings, shared with the docs and the tests.
inline constexpr std::uint64_t kMinBodyLimitBytes = 1024;
inline constexpr std::uint64_t kMaxBodyLimitBytes = 1024ull * 1024 * 1024;
inline constexpr std::uint32_t kMinReadTimeoutMs = 100;
inline constexpr std::uint64_t kMinLogLimitBytes = 64 * 1024;
inline constexpr std::uint64_t kMaxLogLimitBytes = std::uint64_t{64} << 30;
inline constexpr std::uint64_t kMaxHeadlessTimeoutMinutes = 7 * 24 * 60;
inline constexpr std::uint32_t kMaxReadTimeoutMs = 3600 * 1000;
inline constexpr std::uint64_t kMinTmpfsSizeMib = 16;
inline constexpr std::uint64_t kMaxTmpfsSizeMib = std::uint64_t{1} << 20; // 1 TiB
inline constexpr std::uint64_t kMinProcessLimit = 64;
inline constexpr std::uint64_t kMaxProcessLimit = std::uint64_t{1} << 22; // the kernel's pid_max
inline constexpr std::uint64_t kMaxMemoryLimitMib = std::uint64_t{1} << 24; // 16 TiB

// Parses the text of a config file of any known format. `file` is only used in messages
// ("FILE:LINE:COLUMN: [api] port: ..."). Pure: no file system access.
struct Parsed {
    Settings settings;
    int format = kCurrentFormat;
    // The settings the file sets explicitly, as "section.key" ("api.port"); a converted
    // file writes exactly these and leaves every other setting as a commented default.
    std::vector<std::string> explicit_keys;
};
Result<Parsed> parse(std::string_view text, const std::filesystem::path& file);

// The text of a current-format file: `format = 2`, every setting documented in a
// comment, the ones named in `explicit_keys` set and the others commented out so they
// follow the defaults of future versions.
std::string render(const Settings& settings, const std::vector<std::string>& explicit_keys);

enum class MissingFile {
    write_default = 1, // create a commented default file (what handlerd does)
    leave_alone,       // just use the defaults
};

struct Loaded {
    Settings settings;
    int file_format = kCurrentFormat; // the format the file was in before loading
    bool wrote_default = false;       // the file was missing and a default one was written
    std::optional<std::filesystem::path> backup; // set when an older file was converted
    // Sentences for the log ("converted ... from format 1 to 2; the original is kept in
    // ..."), so the daemon reports what the load changed on disk.
    std::vector<std::string> notes;
};

// Reads `file`, converting an older format in place (backup first, then an atomic
// rewrite) and creating a default file if it is missing. Errors: invalid_argument for
// anything wrong in the file (message "FILE:LINE:COLUMN: KEY: what; fix"),
// incompatible for a newer format, internal for I/O failures.
Result<Loaded> load(const std::filesystem::path& file,
                    MissingFile missing = MissingFile::write_default);

} // namespace handler::settings
