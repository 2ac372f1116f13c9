// Where Handler keeps things (docs/where-things-are-kept.md). Resolved once from the
// environment, passed in so tests point everything at a temporary folder.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace handler {

// Reads an environment variable; empty optional-like nullptr when unset. Injected so
// path resolution is testable without touching the real environment.
using GetEnv = std::function<const char*(const char*)>;

struct Paths {
    std::filesystem::path config_dir;  // $XDG_CONFIG_HOME/handler
    std::filesystem::path data_dir;    // $XDG_DATA_HOME/handler
    std::filesystem::path runtime_dir; // $XDG_RUNTIME_DIR/handler (0700)

    std::filesystem::path config_file() const { return config_dir / "config.toml"; }
    std::filesystem::path database_file() const { return data_dir / "handler.db"; }
    std::filesystem::path token_file() const { return data_dir / "api-token"; }
    std::filesystem::path user_plugin_dir() const { return data_dir / "plugins"; }
    std::filesystem::path socket_file() const { return runtime_dir / "handlerd.sock"; }
    std::filesystem::path pid_file() const { return runtime_dir / "handlerd.pid"; }
    std::filesystem::path log_file() const { return data_dir / "handlerd.log"; }

    // XDG base directories with their documented fallbacks. Without XDG_RUNTIME_DIR
    // (no login session, as on a server or in CI) the runtime folder falls back to
    // /run/user/UID if it exists, else a private folder under /tmp named by uid.
    static Result<Paths> from_environment(const GetEnv& getenv, unsigned uid);
    static Result<Paths> from_process_environment();
};

// Makes `dir` (and parents) and ensures it is a folder owned by us with exactly
// `mode`. A folder that exists but is owned by someone else is refused: in /tmp that
// is how another user would plant a socket for us to talk to.
Result<void> ensure_private_dir(const std::filesystem::path& dir, unsigned mode = 0700);

// Writes `contents` to `path` atomically (temporary file + rename) with `mode`.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view contents,
                               unsigned mode = 0600);

Result<std::string> read_file(const std::filesystem::path& path);

// The installed plugin folder: <prefix>/lib/handler/plugins next to the running binary
// (the build tree has the same layout), so neither build nor install hard-codes a path.
std::filesystem::path builtin_plugin_dir();
// <prefix>/libexec/handler next to the running executable's <prefix>/bin: handler's
// in-container helper programs (handler-shim), mounted read-only into every session.
std::filesystem::path builtin_helper_dir();
// <prefix>/share/handler/ui next to <prefix>/bin: the web page handlerd serves (the build
// tree has it at the same place, ui/CMakeLists.txt).
std::filesystem::path builtin_ui_dir();

} // namespace handler
