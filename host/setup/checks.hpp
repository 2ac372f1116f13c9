// `handler setup`'s machine checks (docs/setup.md). Each check is a pure function of
// what a SystemProbe answers, and says what it found and the command that fixes it.
#pragma once

#include "runtime/confinement.hpp"
#include "setup/system_probe.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace handler::setup {

enum class CheckStatus { ok = 1, warn, problem };

std::string_view to_string(CheckStatus status);

// What setup may do about a problem by itself: only ever the user's own files.
enum class AutoFix {
    none = 1,
    select_runc,          // [engine] runtime = "runc" in the user's containers.conf
    select_overlay,       // [storage] driver = "overlay" in the user's storage.conf
    reset_empty_storage,  // `podman system reset --force` on a store holding nothing
};

struct Check {
    std::string id;          // stable, for --json readers: "podman", "runtime", ...
    CheckStatus status = CheckStatus::ok;
    std::string found;       // what is there, in a sentence
    std::string fix_command; // what to run; empty when nothing is to be done
    std::string explanation; // why it matters
    AutoFix auto_fix = AutoFix::none;
    // Whether the base image's build (mmdebstrap and podman import, no RUN steps) needs
    // what this check checks: setup builds it only while no such check is a problem.
    bool needed_for_base_image = true;
};

// Where the user's container settings live: $XDG_CONFIG_HOME/containers, else
// ~/.config/containers (podman reads the same places).
struct ContainerConfigPaths {
    std::filesystem::path containers_conf;
    std::filesystem::path storage_conf;
};
ContainerConfigPaths container_config_paths(SystemProbe& probe);

// What `podman info --format json` said, in the fields the checks read.
struct PodmanInfo {
    std::string version;
    std::string runtime_name;   // host.ociRuntime.name
    std::string cgroup_version; // host.cgroupVersion: "v1" or "v2"
    std::string graph_driver;   // store.graphDriverName
    long long image_count = 0;
    long long container_count = 0;
    // Cgroups and seccomp as podman sees them; defaults (seccomp off) where it said nothing.
    runtime::HostConfinement confinement;
};

// podman present, its version, and its `info`. `info` stays empty when podman is
// missing or its info fails; the check then says which.
struct PodmanProbe {
    Check check;
    std::optional<PodmanInfo> info;
};
PodmanProbe check_podman(SystemProbe& probe);

// Parses `podman info --format json`; an error names the field that was missing.
Result<PodmanInfo> parse_podman_info(std::string_view json_text);

// cgroup v1 in hybrid mode: a cgroup2 tree mounted at /sys/fs/cgroup/unified beside v1
// controllers. crun refuses it; runc works.
bool cgroup_hybrid(SystemProbe& probe);

Check check_root(SystemProbe& probe);
Check check_runtime(SystemProbe& probe, const std::optional<PodmanInfo>& info);
Check check_storage(SystemProbe& probe, const std::optional<PodmanInfo>& info);
Check check_subordinate_ids(SystemProbe& probe);
Check check_tun(SystemProbe& probe);
Check check_user_namespaces(SystemProbe& probe);
Check check_systemd_user(SystemProbe& probe);
bool has_systemd_user_session(SystemProbe& probe);
// Whether Handler's seccomp profile can be built on podman's (no session starts without).
Check check_seccomp(SystemProbe& probe, const std::optional<PodmanInfo>& info);
// Which of the sessions' `limits` hold on this machine (docs/security.md, "Limits").
Check check_limits(const std::optional<PodmanInfo>& info, const runtime::SessionLimits& limits);

// All checks but root's, in the order they are printed. `limits`: the sessions' settings.
std::vector<Check> run_checks(SystemProbe& probe, const runtime::SessionLimits& limits = {});

} // namespace handler::setup
