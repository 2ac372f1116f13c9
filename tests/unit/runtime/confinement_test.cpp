// The sessions' limits as podman arguments and as sentences, for a rootless cgroup v1
// machine (this one: samples/info_rootless_cgroup_v1.json) and a cgroup v2 one with the
// memory and pids controllers delegated.
#include "runtime/confinement.hpp"

#include "core/paths.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>

namespace handler::runtime {
namespace {

namespace fs = std::filesystem;
using handler::testing::contains;

HostConfinement cgroup_v1() {
    auto text = read_file(fs::path(HANDLER_RUNTIME_SAMPLES_DIR) / "info_rootless_cgroup_v1.json");
    EXPECT_TRUE(text);
    auto host = parse_host_confinement(text ? *text : "");
    EXPECT_TRUE(host) << host.error().message;
    return host ? *host : HostConfinement{};
}

HostConfinement cgroup_v2() {
    HostConfinement host = cgroup_v1();
    host.cgroup_version = "v2";
    host.cgroup_controllers = {"cpu", "io", "memory", "pids"};
    return host;
}

TEST(Confinement, ReadsWhatPodmanInfoSays) {
    const HostConfinement host = cgroup_v1();
    EXPECT_EQ(host.cgroup_version, "v1");
    EXPECT_TRUE(host.cgroup_controllers.empty());
    EXPECT_TRUE(host.rootless);
    EXPECT_TRUE(host.seccomp_enabled);
    EXPECT_EQ(host.seccomp_profile_path, "/usr/share/containers/seccomp.json");
    // Podman prints null where it may use no controller.
    auto null_controllers = parse_host_confinement(
        R"({"host":{"cgroupVersion":"v2","cgroupControllers":null,"security":{"seccompEnabled":false}}})");
    ASSERT_TRUE(null_controllers);
    EXPECT_TRUE(null_controllers->cgroup_controllers.empty());
    EXPECT_FALSE(null_controllers->seccomp_enabled);
    EXPECT_FALSE(parse_host_confinement("no"));
    EXPECT_FALSE(parse_host_confinement(R"({"host":{"cgroupVersion":"v1"}})"));
}

TEST(Confinement, OnCgroupV1EveryTmpfsIsSizedAndRlimitsStandInForCgroups) {
    SessionLimits limits;
    const auto arguments = confinement_arguments(limits, cgroup_v1(), "/data/session-seccomp.json", "/home/agent");
    EXPECT_EQ(arguments, (std::vector<std::string>{
                             "--security-opt=seccomp=/data/session-seccomp.json",
                             "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777,size=1024m",
                             "--tmpfs=/home/agent:rw,nosuid,nodev,U,size=2048m",
                             "--ulimit=nproc=4096:4096",
                             "--ulimit=data=8589934592:8589934592",
                             "--oom-score-adj=1000",
                         }));
}

TEST(Confinement, OnCgroupV2WithDelegationTheCgroupLimitsTheWhole) {
    SessionLimits limits{64, 128, 512, 1024};
    const auto arguments = confinement_arguments(limits, cgroup_v2(), "/p.json", "/home/agent");
    EXPECT_EQ(arguments, (std::vector<std::string>{
                             "--security-opt=seccomp=/p.json",
                             "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777,size=64m",
                             "--tmpfs=/home/agent:rw,nosuid,nodev,U,size=128m",
                             "--ulimit=nproc=512:512",
                             "--pids-limit=512",
                             "--memory=1024m",
                             "--memory-swap=1024m",
                             "--oom-score-adj=1000",
                         }));
}

TEST(Confinement, NoMemoryLimitMeansNoneOfItsArguments) {
    SessionLimits limits;
    limits.memory_limit_mib = 0;
    for (const HostConfinement& host : {cgroup_v1(), cgroup_v2()}) {
        const auto arguments = confinement_arguments(limits, host, "/p.json", "/home/agent");
        EXPECT_FALSE(std::any_of(arguments.begin(), arguments.end(), [](const std::string& argument) {
            return argument.starts_with("--memory") || argument.starts_with("--ulimit=data");
        }));
        EXPECT_EQ(arguments.back(), "--oom-score-adj=1000") << "the OOM killer's order holds anyway";
    }
}

TEST(Confinement, SaysWhichLimitsHoldHereAndWhy) {
    const auto reports = describe_limits(SessionLimits{}, cgroup_v1());
    ASSERT_EQ(reports.size(), 4u);
    EXPECT_EQ(reports[0], (LimitReport{"tmp", "1024 MiB", true, "size of the tmpfs on /tmp"}));
    EXPECT_EQ(reports[1], (LimitReport{"home", "2048 MiB", true, "size of the tmpfs on HOME"}));
    EXPECT_EQ(reports[2].name, "processes");
    EXPECT_TRUE(reports[2].holds);
    EXPECT_TRUE(contains(reports[2].how, "RLIMIT_NPROC")) << reports[2].how;
    EXPECT_TRUE(contains(reports[2].how, "the pids controller is not delegated to this user (cgroup v1, rootless)"))
        << reports[2].how;
    EXPECT_EQ(reports[3].name, "memory");
    EXPECT_FALSE(reports[3].holds);
    EXPECT_TRUE(contains(reports[3].how, "not for the session as a whole")) << reports[3].how;
    EXPECT_TRUE(contains(reports[3].how, "RLIMIT_DATA")) << reports[3].how;
    EXPECT_TRUE(contains(reports[3].how, "oom_score_adj 1000")) << reports[3].how;

    const auto delegated = describe_limits(SessionLimits{}, cgroup_v2());
    EXPECT_TRUE(std::all_of(delegated.begin(), delegated.end(), [](const LimitReport& report) { return report.holds; }));
    EXPECT_TRUE(contains(delegated[2].how, "pids.max")) << delegated[2].how;
    EXPECT_TRUE(contains(delegated[3].how, "memory.max")) << delegated[3].how;

    SessionLimits unlimited;
    unlimited.memory_limit_mib = 0;
    const auto none = describe_limits(unlimited, cgroup_v2());
    EXPECT_EQ(none[3].value, "none");
    EXPECT_FALSE(none[3].holds);
}

TEST(Confinement, LimitsAsJson) {
    const std::string text = limits_json({{"tmp", "64 MiB", true, "size"}, {"memory", "none", false, "off"}});
    EXPECT_EQ(boost::json::parse(text), boost::json::parse(R"([{"name":"tmp","value":"64 MiB","holds":true,"how":"size"},
        {"name":"memory","value":"none","holds":false,"how":"off"}])"));
}

} // namespace
} // namespace handler::runtime
