#include "setup/checks.hpp"

#include "support/fake_system_probe.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::setup {
namespace {
using testing::contains;
using testing::FakeSystemProbe;

TEST(SetupChecks, RootIsRefusedWithTheReasonAndAUserToSwitchTo) {
    FakeSystemProbe probe;
    probe.user_id = 0;
    probe.name = "root";
    const Check check = check_root(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.explanation, "setrlimit")) << check.explanation;
    EXPECT_TRUE(contains(check.explanation, "agents never run as root")) << check.explanation;
    EXPECT_TRUE(contains(check.fix_command, "useradd -m")) << check.fix_command;
    probe.user_id = 1000;
    EXPECT_EQ(check_root(probe).status, CheckStatus::ok);
}

TEST(SetupChecks, MissingPodmanSaysHowToInstallIt) {
    FakeSystemProbe probe;
    probe.programs.erase("podman");
    const auto podman = check_podman(probe);
    EXPECT_EQ(podman.check.status, CheckStatus::problem);
    EXPECT_EQ(podman.check.found, "podman is not installed (not found on PATH)");
    EXPECT_TRUE(contains(podman.check.fix_command, "apt-get install podman"));
    EXPECT_FALSE(podman.info.has_value());
}

TEST(SetupChecks, PodmanVersionIsReportedAndOldOnesWarned) {
    FakeSystemProbe probe;
    auto podman = check_podman(probe);
    EXPECT_EQ(podman.check.status, CheckStatus::ok);
    EXPECT_EQ(podman.check.found, "podman 4.3.1 (/usr/bin/podman)");
    ASSERT_TRUE(podman.info.has_value());
    EXPECT_EQ(podman.info->runtime_name, "crun");
    EXPECT_EQ(podman.info->graph_driver, "overlay");

    probe.answer({"podman", "info", "--format", "json"}, 0,
                 FakeSystemProbe::podman_info("runc", "overlay", 0, 0, "3.0.1"));
    podman = check_podman(probe);
    EXPECT_EQ(podman.check.status, CheckStatus::warn);
    EXPECT_TRUE(contains(podman.check.found, "podman 3.0.1")) << podman.check.found;
}

TEST(SetupChecks, FailingPodmanInfoShowsItsLastErrorLine) {
    FakeSystemProbe probe;
    probe.answer({"podman", "info", "--format", "json"}, 125, "",
                 "warning\nError: cannot set up namespace: newuidmap: write to uid_map failed\n");
    const auto podman = check_podman(probe);
    EXPECT_EQ(podman.check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(podman.check.found, "newuidmap: write to uid_map failed"))
        << podman.check.found;
    EXPECT_FALSE(contains(podman.check.found, "warning"));
}

TEST(SetupChecks, ParsesRealPodmanInfoShape) {
    // Trimmed from `podman info --format json` of podman 4.3.1 on Debian 12.
    auto info = parse_podman_info(R"({"host":{"cgroupVersion":"v1","ociRuntime":{"name":"runc",
        "package":"runc_1.1.5"},"security":{"rootless":true}},"store":{"configFile":"/h/s.conf",
        "containerStore":{"number":2,"paused":0},"graphDriverName":"vfs","imageStore":{"number":3}},
        "version":{"APIVersion":"4.3.1","Version":"4.3.1"}})");
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->version, "4.3.1");
    EXPECT_EQ(info->runtime_name, "runc");
    EXPECT_EQ(info->cgroup_version, "v1");
    EXPECT_EQ(info->graph_driver, "vfs");
    EXPECT_EQ(info->image_count, 3);
    EXPECT_EQ(info->container_count, 2);
    EXPECT_FALSE(parse_podman_info("not json"));
    EXPECT_FALSE(parse_podman_info(R"({"host":{}})"));
}

TEST(SetupChecks, CgroupV2NeedsNoParticularRuntime) {
    FakeSystemProbe probe;
    EXPECT_FALSE(cgroup_hybrid(probe));
    PodmanInfo info;
    info.runtime_name = "crun";
    const Check check = check_runtime(probe, info);
    EXPECT_EQ(check.status, CheckStatus::ok);
    EXPECT_EQ(check.found, "cgroup v2: any OCI runtime works (podman uses crun)");
}

TEST(SetupChecks, HybridCgroupWithCrunIsAProblemFixedByWritingContainersConf) {
    FakeSystemProbe probe;
    probe.make_cgroup_hybrid();
    EXPECT_TRUE(cgroup_hybrid(probe));
    PodmanInfo info;
    info.runtime_name = "crun";
    const Check check = check_runtime(probe, info);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.found, "cgroup v1 hybrid; podman uses crun")) << check.found;
    EXPECT_TRUE(contains(check.fix_command,
                         "[engine] runtime = \"runc\" to /home/alice/.config/containers/containers.conf"))
        << check.fix_command;
    EXPECT_EQ(check.auto_fix, AutoFix::select_runc);
    EXPECT_TRUE(contains(check.explanation, "hybrid mode not supported"));
}

TEST(SetupChecks, HybridCgroupWithoutRuncSaysInstallIt) {
    FakeSystemProbe probe;
    probe.make_cgroup_hybrid();
    probe.programs.erase("runc");
    const Check check = check_runtime(probe, std::nullopt);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.fix_command, "sudo apt-get install runc")) << check.fix_command;
    EXPECT_EQ(check.auto_fix, AutoFix::none);
}

TEST(SetupChecks, HybridCgroupWithRuncSelectedIsOk) {
    FakeSystemProbe probe;
    probe.make_cgroup_hybrid();
    probe.environment["XDG_CONFIG_HOME"] = "/x/config";
    probe.files["/x/config/containers/containers.conf"] = "[engine]\nruntime = \"runc\"\n";
    PodmanInfo info;
    info.runtime_name = "runc";
    const Check check = check_runtime(probe, info);
    EXPECT_EQ(check.status, CheckStatus::ok) << check.found;
    EXPECT_TRUE(contains(check.found, "/x/config/containers/containers.conf"));
}

TEST(SetupChecks, RuncInUseButNotPinnedIsAWarningWithTheSameFix) {
    FakeSystemProbe probe;
    probe.make_cgroup_hybrid();
    PodmanInfo info;
    info.runtime_name = "runc";
    const Check check = check_runtime(probe, info);
    EXPECT_EQ(check.status, CheckStatus::warn);
    EXPECT_EQ(check.auto_fix, AutoFix::select_runc);
}

TEST(SetupChecks, UnparsableContainersConfIsReportedAndNotAutoFixed) {
    FakeSystemProbe probe;
    probe.make_cgroup_hybrid();
    probe.files["/home/alice/.config/containers/containers.conf"] = "[engine\nruntime=";
    const Check check = check_runtime(probe, std::nullopt);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.auto_fix, AutoFix::none);
    EXPECT_TRUE(contains(check.found, "containers.conf:1 is not valid TOML")) << check.found;
    EXPECT_TRUE(contains(check.fix_command, "fix or move away")) << check.fix_command;
}

PodmanInfo storage(const std::string& driver, long long images, long long containers) {
    PodmanInfo info;
    info.graph_driver = driver;
    info.image_count = images;
    info.container_count = containers;
    return info;
}

TEST(SetupChecks, OverlayStorageIsOk) {
    FakeSystemProbe probe;
    const Check check = check_storage(probe, storage("overlay", 4, 1));
    EXPECT_EQ(check.status, CheckStatus::ok);
    EXPECT_EQ(check.found, "podman stores images with overlay");
}

TEST(SetupChecks, EmptyVfsStoreIsFixedByWritingStorageConf) {
    FakeSystemProbe probe;
    const Check check = check_storage(probe, storage("vfs", 0, 0));
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.found, "podman stores images with vfs");
    EXPECT_TRUE(contains(check.fix_command, "[storage] driver = \"overlay\" to "
                                            "/home/alice/.config/containers/storage.conf"));
    EXPECT_EQ(check.auto_fix, AutoFix::select_overlay);
    EXPECT_TRUE(contains(check.explanation, "copies the whole image"));
}

TEST(SetupChecks, VfsStoreWithImagesNeedsAResetThatSetupNeverRunsItself) {
    FakeSystemProbe probe;
    const Check check = check_storage(probe, storage("vfs", 3, 1));
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.found, "holds 3 images and 1 container")) << check.found;
    EXPECT_TRUE(contains(check.fix_command, "podman system reset")) << check.fix_command;
    EXPECT_EQ(check.auto_fix, AutoFix::none);
}

TEST(SetupChecks, OverlaySelectedButDatabaseKeepsVfsResetsOnlyAnEmptyStore) {
    FakeSystemProbe probe;
    probe.files["/home/alice/.config/containers/storage.conf"] = "[storage]\ndriver = \"overlay\"\n";
    probe.answer({"podman", "volume", "ls", "--quiet"}, 0, "");
    Check check = check_storage(probe, storage("vfs", 0, 0));
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.auto_fix, AutoFix::reset_empty_storage);
    EXPECT_TRUE(contains(check.fix_command, "podman system reset --force")) << check.fix_command;

    probe.answer({"podman", "volume", "ls", "--quiet"}, 0, "data\n");
    check = check_storage(probe, storage("vfs", 0, 0));
    EXPECT_EQ(check.auto_fix, AutoFix::none);
    EXPECT_TRUE(contains(check.found, "holds volumes")) << check.found;
}

TEST(SetupChecks, WithoutPodmanOverlayIsChosenAheadOfItsFirstRun) {
    FakeSystemProbe probe;
    probe.programs.erase("podman");
    Check check = check_storage(probe, std::nullopt);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.auto_fix, AutoFix::select_overlay);
    probe.files["/home/alice/.config/containers/storage.conf"] = "[storage]\ndriver = \"overlay\"\n";
    check = check_storage(probe, std::nullopt);
    EXPECT_EQ(check.status, CheckStatus::ok) << check.found;
}

TEST(SetupChecks, AFailingPodmanOrAnExistingStoreIsNeverSwitchedBlindly) {
    FakeSystemProbe probe; // podman installed, but no info: it failed
    Check check = check_storage(probe, std::nullopt);
    EXPECT_EQ(check.status, CheckStatus::warn);
    EXPECT_EQ(check.auto_fix, AutoFix::none);
    EXPECT_TRUE(contains(check.found, "cannot tell which driver")) << check.found;

    probe.programs.erase("podman");
    probe.paths.insert("/home/alice/.local/share/containers/storage");
    EXPECT_EQ(check_storage(probe, std::nullopt).auto_fix, AutoFix::none);
}

TEST(SetupChecks, SubordinateIdsFoundByNameOrUid) {
    FakeSystemProbe probe;
    Check check = check_subordinate_ids(probe);
    EXPECT_EQ(check.status, CheckStatus::ok);
    EXPECT_EQ(check.found, "alice has 65536 subordinate uids and 65536 gids");

    probe.files["/etc/subuid"] = "bob:100000:65536\n1000:200000:65536\n";
    EXPECT_EQ(check_subordinate_ids(probe).status, CheckStatus::ok);
}

TEST(SetupChecks, MissingSubordinateIdsSayWhichFileAndTheUsermodCommand) {
    FakeSystemProbe probe;
    probe.files["/etc/subgid"] = "bob:100000:65536\n";
    const Check check = check_subordinate_ids(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.found, "no entry for alice in /etc/subgid");
    EXPECT_TRUE(contains(check.fix_command,
                         "sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 alice"))
        << check.fix_command;
}

TEST(SetupChecks, MissingNewuidmapSaysInstallUidmap) {
    FakeSystemProbe probe;
    probe.programs.erase("newuidmap");
    const Check check = check_subordinate_ids(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.fix_command, "sudo apt-get install uidmap");
}

TEST(SetupChecks, TooFewSubordinateIdsIsAWarning) {
    FakeSystemProbe probe;
    probe.files["/etc/subuid"] = "alice:100000:1000\n";
    EXPECT_EQ(check_subordinate_ids(probe).status, CheckStatus::warn);
}

// Issue 15: with tun at 0600 podman build's RUN steps fail (slirp4netns), so no harness
// image can be built; setup must not say "Ready".
TEST(SetupChecks, UnusableTunIsAProblemForHarnessImagesWithThePermanentFix) {
    FakeSystemProbe probe;
    EXPECT_EQ(check_tun(probe).status, CheckStatus::ok);
    probe.accessible.clear();
    Check check = check_tun(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.found, "alice cannot open it")) << check.found;
    EXPECT_TRUE(contains(check.fix_command, "sudo chmod 0666 /dev/net/tun")) << check.fix_command;
    EXPECT_TRUE(contains(check.fix_command, "KERNEL==\"tun\", MODE=\"0666\"")) << check.fix_command;
    EXPECT_TRUE(contains(check.fix_command, "/etc/udev/rules.d/60-handler-tun.rules")) << check.fix_command;
    EXPECT_TRUE(contains(check.explanation, "Harness images")) << check.explanation;
    EXPECT_TRUE(contains(check.explanation, "podman build's RUN steps")) << check.explanation;
    EXPECT_TRUE(contains(check.explanation, "network `open`")) << check.explanation;
    EXPECT_FALSE(check.needed_for_base_image);
    probe.paths.clear();
    check = check_tun(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_EQ(check.found, "/dev/net/tun does not exist");
    EXPECT_EQ(check.fix_command, "sudo modprobe tun");
}

TEST(SetupChecks, DisabledUserNamespacesAreAProblem) {
    FakeSystemProbe probe;
    EXPECT_EQ(check_user_namespaces(probe).found, "user namespaces are enabled (max 96365)");
    probe.files["/proc/sys/kernel/unprivileged_userns_clone"] = "0\n";
    Check check = check_user_namespaces(probe);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.fix_command, "kernel.unprivileged_userns_clone=1"));
    probe.files["/proc/sys/user/max_user_namespaces"] = "0\n";
    check = check_user_namespaces(probe);
    EXPECT_TRUE(contains(check.fix_command, "user.max_user_namespaces=")) << check.fix_command;
}

TEST(SetupChecks, SystemdUserSessionIsDetected) {
    FakeSystemProbe probe;
    Check check = check_systemd_user(probe);
    EXPECT_EQ(check.status, CheckStatus::warn);
    EXPECT_EQ(check.found, "no systemd user session (PID 1 is bash); handlerd runs detached");
    EXPECT_TRUE(contains(check.fix_command, "handlerd --detach"));

    probe.files["/proc/1/comm"] = "systemd\n";
    probe.programs.insert("systemctl");
    probe.answer({"systemctl", "--user", "show-environment"}, 1, "", "Failed to connect to bus");
    EXPECT_FALSE(has_systemd_user_session(probe));
    probe.answer({"systemctl", "--user", "show-environment"}, 0, "HOME=/home/alice\n");
    EXPECT_TRUE(has_systemd_user_session(probe));
    EXPECT_EQ(check_systemd_user(probe).status, CheckStatus::ok);
}

// No session starts without Handler's seccomp profile, so setup says whether it can be
// built here, and what to reinstall when not.
TEST(SetupChecks, SeccompNeedsPodmansProfileToBuildOn) {
    FakeSystemProbe probe;
    auto podman = check_podman(probe);
    ASSERT_TRUE(podman.info);
    Check check = check_seccomp(probe, podman.info);
    EXPECT_EQ(check.status, CheckStatus::ok) << check.found;
    EXPECT_EQ(check.found, "Handler's profile builds on /usr/share/containers/seccomp.json");
    EXPECT_FALSE(check.needed_for_base_image);

    probe.files[FakeSystemProbe::kSeccompProfile] = R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]})";
    check = check_seccomp(probe, podman.info);
    EXPECT_EQ(check.status, CheckStatus::problem);
    EXPECT_TRUE(contains(check.found, "lets every call it does not list through")) << check.found;
    EXPECT_TRUE(contains(check.fix_command, "golang-github-containers-common")) << check.fix_command;

    probe.files.erase(FakeSystemProbe::kSeccompProfile);
    EXPECT_EQ(check_seccomp(probe, podman.info).status, CheckStatus::problem);
    podman.info->confinement.seccomp_enabled = false;
    EXPECT_TRUE(contains(check_seccomp(probe, podman.info).found, "seccomp as off"));
    EXPECT_EQ(check_seccomp(probe, std::nullopt).status, CheckStatus::problem);
}

// Which limits hold is the machine's: a warning on rootless cgroup v1 (this machine),
// which names the limits that do not hold as a whole and why; fine where cgroup v2
// delegates the controllers.
TEST(SetupChecks, LimitsSayWhichHoldOnThisMachine) {
    FakeSystemProbe probe;
    auto podman = check_podman(probe);
    ASSERT_TRUE(podman.info);
    runtime::SessionLimits limits;
    limits.process_limit = 1000;
    Check check = check_limits(podman.info, limits);
    EXPECT_EQ(check.status, CheckStatus::warn);
    EXPECT_EQ(check.found, "per session: tmp 1024 MiB, home 2048 MiB, processes 1000; not as a whole here: "
                           "memory 8192 MiB");
    EXPECT_TRUE(contains(check.explanation, "RLIMIT_DATA")) << check.explanation;
    EXPECT_TRUE(contains(check.fix_command, "cgroup v2")) << check.fix_command;

    podman.info->confinement.cgroup_version = "v2";
    podman.info->confinement.cgroup_controllers = {"memory", "pids"};
    check = check_limits(podman.info, limits);
    EXPECT_EQ(check.status, CheckStatus::ok);
    EXPECT_EQ(check.found, "per session: tmp 1024 MiB, home 2048 MiB, processes 1000, memory 8192 MiB");
}

} // namespace
} // namespace handler::setup
