// Everything `handler setup` learns about the machine goes through SystemProbe, so each
// check is a pure function of what the probe answers and is unit-tested with
// FakeSystemProbe (tests/support/fake_system_probe.hpp) instead of this machine.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace handler::setup {

struct CommandOutput {
    int exit_code = -1; // -1 when it was killed (timeout) or did not exit normally
    std::string out;
    std::string err;
    bool timed_out = false;
};

class SystemProbe {
public:
    virtual ~SystemProbe() = default;

    // Runs argv[0] (searched on PATH, no shell) and captures its output. A program that
    // is not installed is an error of code not_found, so callers can tell "missing" from
    // "ran and failed".
    virtual Result<CommandOutput> run(const std::vector<std::string>& argv,
                                      int timeout_ms) = 0;
    // The full path of `program` found on PATH, or nullopt.
    virtual std::optional<std::filesystem::path> find_program(const std::string& program) = 0;
    virtual Result<std::string> read_file(const std::filesystem::path& path) = 0;
    virtual bool exists(const std::filesystem::path& path) = 0;
    // access(2) with R_OK|W_OK: what the current user may actually do, mode and ACLs
    // included.
    virtual bool readable_and_writable(const std::filesystem::path& path) = 0;
    // statfs(2) f_type of the file system holding `path`.
    virtual std::optional<long> filesystem_magic(const std::filesystem::path& path) = 0;
    virtual unsigned uid() = 0;
    virtual std::string user_name() = 0;
    virtual std::optional<std::string> env(const std::string& name) = 0;
    // The folder of the running `handler` binary: handlerd is installed beside it.
    virtual std::filesystem::path self_dir() = 0;
};

std::unique_ptr<SystemProbe> make_system_probe();

} // namespace handler::setup
