#include "runtime/confinement.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace handler::runtime {
namespace json = boost::json;

namespace {

constexpr std::uint64_t kMebibyte = 1024 * 1024;

std::string mebibytes(std::uint64_t count) { return std::to_string(count) + " MiB"; }

const json::object* object_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value == nullptr ? nullptr : value->if_object();
}

} // namespace

bool HostConfinement::has_controller(std::string_view name) const {
    return std::find(cgroup_controllers.begin(), cgroup_controllers.end(), name) != cgroup_controllers.end();
}

Result<HostConfinement> parse_host_confinement(std::string_view podman_info_json) {
    boost::system::error_code error;
    const json::value parsed = json::parse(podman_info_json, error);
    const auto missing = [](const std::string& what) {
        return make_error(ErrorCode::internal, "`podman info --format json` " + what + ". Is this podman 4.x?");
    };
    if (error || !parsed.is_object()) return missing("did not print a JSON object");
    const json::object* host = object_at(parsed.get_object(), "host");
    if (host == nullptr) return missing("printed no host");
    HostConfinement confinement;
    if (const json::value* version = host->if_contains("cgroupVersion"); version && version->is_string())
        confinement.cgroup_version = version->get_string();
    // Podman prints null rather than [] where it may use no controller.
    if (const json::value* controllers = host->if_contains("cgroupControllers"); controllers && controllers->is_array())
        for (const json::value& controller : controllers->get_array())
            if (controller.is_string()) confinement.cgroup_controllers.emplace_back(controller.get_string());
    const json::object* security = object_at(*host, "security");
    if (security == nullptr) return missing("printed no host.security");
    if (const json::value* rootless = security->if_contains("rootless"); rootless && rootless->is_bool())
        confinement.rootless = rootless->get_bool();
    if (const json::value* enabled = security->if_contains("seccompEnabled"); enabled && enabled->is_bool())
        confinement.seccomp_enabled = enabled->get_bool();
    if (const json::value* path = security->if_contains("seccompProfilePath"); path && path->is_string())
        confinement.seccomp_profile_path = std::string(path->get_string());
    return confinement;
}

std::vector<std::string> confinement_arguments(const SessionLimits& limits, const HostConfinement& host,
                                               const std::filesystem::path& seccomp_profile,
                                               std::string_view container_home) {
    std::vector<std::string> arguments = {
        "--security-opt=seccomp=" + seccomp_profile.string(),
        "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777,size=" + std::to_string(limits.tmp_size_mib) + "m",
        "--tmpfs=" + std::string(container_home) + ":rw,nosuid,nodev,U,size=" + std::to_string(limits.home_size_mib) + "m",
        "--ulimit=nproc=" + std::to_string(limits.process_limit) + ":" + std::to_string(limits.process_limit),
    };
    // Podman ignores cgroup limits it cannot set (with a warning): only those that apply.
    if (host.has_controller("pids")) arguments.push_back("--pids-limit=" + std::to_string(limits.process_limit));
    if (limits.memory_limit_mib > 0) {
        const std::string megabytes = std::to_string(limits.memory_limit_mib) + "m";
        if (host.has_controller("memory")) {
            arguments.push_back("--memory=" + megabytes);
            arguments.push_back("--memory-swap=" + megabytes); // no swap beyond it
        } else {
            const std::string bytes = std::to_string(limits.memory_limit_mib * kMebibyte);
            arguments.push_back("--ulimit=data=" + bytes + ":" + bytes);
        }
    }
    arguments.push_back("--oom-score-adj=" + std::to_string(kSessionOomScoreAdjust));
    return arguments;
}

std::vector<LimitReport> describe_limits(const SessionLimits& limits, const HostConfinement& host) {
    const std::string cgroups = "cgroup " + (host.cgroup_version.empty() ? std::string("(version unknown)")
                                                                         : host.cgroup_version);
    const std::string no_controller = host.rootless ? " is not delegated to this user (" + cgroups + ", rootless)"
                                                    : " is not available (" + cgroups + ")";
    std::vector<LimitReport> reports;
    reports.push_back({"tmp", mebibytes(limits.tmp_size_mib), true, "size of the tmpfs on /tmp"});
    reports.push_back({"home", mebibytes(limits.home_size_mib), true, "size of the tmpfs on HOME"});
    std::string processes = "RLIMIT_NPROC: the session's own processes and threads (its user namespace)";
    processes += host.has_controller("pids") ? ", and the cgroup's pids.max"
                                             : "; no cgroup pids.max: the pids controller" + no_controller;
    reports.push_back({"processes", std::to_string(limits.process_limit), true, processes});
    const std::string oom = "the kernel's OOM killer takes the session's processes first (oom_score_adj " +
                            std::to_string(kSessionOomScoreAdjust) + ")";
    if (limits.memory_limit_mib == 0)
        reports.push_back({"memory", "none", false, "not limited ([sessions] memory_limit_mib = 0); " + oom});
    else if (host.has_controller("memory"))
        reports.push_back({"memory", mebibytes(limits.memory_limit_mib), true,
                           "the cgroup's memory.max, swap included; " + oom});
    else
        reports.push_back({"memory", mebibytes(limits.memory_limit_mib), false,
                           "not for the session as a whole: the memory controller" + no_controller +
                               "; each process is held to this much data (RLIMIT_DATA), and " + oom});
    return reports;
}

std::string limits_json(const std::vector<LimitReport>& reports) {
    json::array array;
    for (const LimitReport& report : reports)
        array.push_back(json::object{
            {"name", report.name}, {"value", report.value}, {"holds", report.holds}, {"how", report.how}});
    return json::serialize(array);
}

} // namespace handler::runtime
