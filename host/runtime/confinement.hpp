// The limits a session's container runs under, and what this machine lets them be
// (docs/security.md, "Limits"). Pure functions of the settings and of what `podman info`
// said, so that the command line and what `handler setup` and `handler session show` say
// come from one place and are unit-tested.
//
// What holds where:
//   - every tmpfs a session can write has a size (/tmp and HOME here; /dev/shm is
//     podman's, 62.5 MiB);
//   - processes: RLIMIT_NPROC always (--ulimit nproc). It counts the tasks of one uid in
//     one user namespace, and each keep-id container has a user namespace of its own, so
//     it counts the session's processes and threads only: neither the user's own
//     processes nor other sessions' (measured: docs/security.md). Where the cgroup pids
//     controller is delegated (cgroup v2), pids.max as well;
//   - memory: only a cgroup (v2, memory delegated) limits a session's memory as a
//     whole. Elsewhere each process is held to the same amount of data (RLIMIT_DATA),
//     which bounds one runaway process and no more;
//   - always: the kernel's OOM killer picks a session's processes before any other
//     (oom_score_adj 1000), so a session that runs the machine out of memory loses its
//     own process, not handlerd.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace handler::runtime {

// From [sessions] in config.toml (docs/configuration.md).
struct SessionLimits {
    std::uint64_t tmp_size_mib = 1024;
    std::uint64_t home_size_mib = 2048;
    std::uint64_t process_limit = 4096;   // processes and threads
    std::uint64_t memory_limit_mib = 8192; // 0: none
};

// What `podman info` says about confining containers on this machine.
struct HostConfinement {
    std::string cgroup_version;                 // "v1" or "v2"
    std::vector<std::string> cgroup_controllers; // those podman may use (rootless: delegated)
    bool rootless = true;
    bool seccomp_enabled = false;
    std::filesystem::path seccomp_profile_path; // the profile podman would apply

    bool has_controller(std::string_view name) const;
};

// Parses `podman info --format json`; an error names what is missing.
Result<HostConfinement> parse_host_confinement(std::string_view podman_info_json);

// The kernel's OOM killer takes a process with this score first (the highest there is).
inline constexpr int kSessionOomScoreAdjust = 1000;

// The podman run arguments that confine a session: its seccomp profile, tmpfs sizes,
// process and memory limits as this machine allows. `container_home` is HOME inside.
std::vector<std::string> confinement_arguments(const SessionLimits& limits, const HostConfinement& host,
                                               const std::filesystem::path& seccomp_profile,
                                               std::string_view container_home);

// One limit, and whether it holds here.
struct LimitReport {
    std::string name;  // "tmp", "home", "processes", "memory"
    std::string value; // "1024 MiB", "4096", "none"
    bool holds = true; // false: it does not hold for the session as a whole
    std::string how;   // by what, or why it cannot: a sentence
    friend bool operator==(const LimitReport&, const LimitReport&) = default;
};

std::vector<LimitReport> describe_limits(const SessionLimits& limits, const HostConfinement& host);

// As JSON text ([{"name","value","holds","how"}...]), for the session record and the API.
std::string limits_json(const std::vector<LimitReport>& reports);

} // namespace handler::runtime
