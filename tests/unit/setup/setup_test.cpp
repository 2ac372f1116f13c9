#include "setup/setup.hpp"

#include "core/paths.hpp"
#include "support/fake_system_probe.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace handler::setup {
namespace {
using testing::contains;
using testing::FakeSystemProbe;
using testing::TempDir;
using Argv = std::vector<std::string>;

const Argv kInfo = {"podman", "info", "--format", "json"};
const Argv kReset = {"podman", "system", "reset", "--force"};
const Argv kStartDaemon = {"/opt/handler/bin/handlerd", "--detach"};

struct Run {
    int code;
    std::string out;
};

// A machine like MACHINE.md's: cgroup v1 hybrid, runc only, an empty vfs store, tun
// 0600, no systemd; the user's config folder is a real temporary one.
struct MachineFixture {
    TempDir home;
    FakeSystemProbe probe;
    bool daemon_running = false;

    MachineFixture() {
        probe.environment["HOME"] = home.path().string();
        probe.real_files_under = home.path();
        probe.make_cgroup_hybrid();
        probe.programs.erase("crun");
        probe.accessible.clear();
        probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "vfs", 0, 0));
        probe.answer({"podman", "volume", "ls", "--quiet"}, 0, "");
        // What the real commands change: the reset makes podman use storage.conf's
        // driver; handlerd --detach returns once it listens.
        probe.on_run = [this](const Argv& argv) {
            if (argv == kReset) probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "overlay", 0, 0));
            if (argv == kStartDaemon) daemon_running = true;
        };
    }

    Run run(SetupOptions options) {
        std::ostringstream out;
        SetupContext context{probe, out, [this] { return daemon_running; }};
        const int code = run_setup(options, context);
        return {code, out.str()};
    }

    bool ran(const Argv& argv) const {
        return std::find(probe.ran.begin(), probe.ran.end(), argv) != probe.ran.end();
    }
    std::filesystem::path config(const std::string& name) const {
        return home.path() / ".config" / name;
    }
};

TEST(SetupRun, RootIsRefusedBeforeAnythingIsProbedOrWritten) {
    MachineFixture machine;
    machine.probe.user_id = 0;
    machine.probe.name = "root";
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1);
    EXPECT_TRUE(contains(result.out, "✗ user")) << result.out;
    EXPECT_TRUE(contains(result.out, "agents never run as root")) << result.out;
    EXPECT_TRUE(machine.probe.ran.empty());
    EXPECT_FALSE(std::filesystem::exists(machine.home.path() / ".config"));

    auto json_result = machine.run({false, true});
    EXPECT_EQ(json_result.code, 1);
    auto parsed = boost::json::parse(json_result.out).as_object();
    EXPECT_FALSE(parsed.at("ok").as_bool());
    EXPECT_EQ(parsed.at("checks").as_array().at(0).as_object().at("id").as_string(), "user");
}

TEST(SetupRun, CheckOnlyReportsProblemsAndChangesNothing) {
    MachineFixture machine;
    auto result = machine.run({true, false});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_TRUE(contains(result.out, "! runtime  cgroup v1 hybrid; podman uses runc")) << result.out;
    EXPECT_TRUE(contains(result.out, "✗ storage  podman stores images with vfs")) << result.out;
    EXPECT_TRUE(contains(result.out, "! tun")) << result.out;
    EXPECT_TRUE(contains(result.out, "✓ podman   podman 4.3.1")) << result.out;
    EXPECT_TRUE(contains(result.out, "1 problem remains")) << result.out;
    EXPECT_TRUE(contains(result.out, "--check: nothing was changed")) << result.out;
    EXPECT_FALSE(std::filesystem::exists(machine.home.path() / ".config"));
    EXPECT_FALSE(machine.ran(kReset));
    EXPECT_FALSE(machine.ran(kStartDaemon));
}

TEST(SetupRun, FixesTheUsersContainerSettingsResetsTheEmptyStoreAndStartsHandlerd) {
    MachineFixture machine;
    auto result = machine.run({});
    EXPECT_EQ(result.code, 0) << result.out;
    EXPECT_EQ(read_file(machine.config("containers/containers.conf")).value(),
              "[engine]\nruntime = \"runc\"\n");
    EXPECT_EQ(read_file(machine.config("containers/storage.conf")).value(),
              "[storage]\ndriver = \"overlay\"\n");
    EXPECT_TRUE(machine.ran(kReset));
    EXPECT_TRUE(machine.ran(kStartDaemon));
    EXPECT_TRUE(contains(result.out, "✓ runtime")) << result.out;
    EXPECT_TRUE(contains(result.out, "✓ storage  podman stores images with overlay")) << result.out;
    EXPECT_TRUE(contains(result.out, "changed: " + machine.config("containers/storage.conf").string()))
        << result.out;
    EXPECT_TRUE(contains(result.out, "handlerd started")) << result.out;
    EXPECT_TRUE(contains(result.out, "Ready: no problems found.")) << result.out;

    // Again: nothing left to change, no second reset, handlerd already answers.
    machine.probe.ran.clear();
    result = machine.run({});
    EXPECT_EQ(result.code, 0) << result.out;
    EXPECT_FALSE(contains(result.out, "changed:")) << result.out;
    EXPECT_FALSE(machine.ran(kReset));
    EXPECT_FALSE(machine.ran(kStartDaemon));
    EXPECT_TRUE(contains(result.out, "handlerd is running")) << result.out;
}

TEST(SetupRun, AStoreWithImagesIsNeverReset) {
    MachineFixture machine;
    machine.probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "vfs", 2, 0));
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_FALSE(machine.ran(kReset));
    EXPECT_FALSE(std::filesystem::exists(machine.config("containers/storage.conf")));
    EXPECT_TRUE(contains(result.out, "holds 2 images and 0 containers")) << result.out;
    EXPECT_TRUE(contains(result.out, "fix: podman system reset")) << result.out;
}

TEST(SetupRun, AnUnparsableContainersConfIsLeftAloneAndReported) {
    MachineFixture machine;
    const std::string broken = "[engine\n";
    machine.home.write(".config/containers/containers.conf", broken);
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_EQ(read_file(machine.config("containers/containers.conf")).value(), broken);
    EXPECT_TRUE(contains(result.out, "is not valid TOML")) << result.out;
}

TEST(SetupRun, WithASystemdUserSessionTheUnitKeepsContainersAliveOnStop) {
    MachineFixture machine;
    machine.probe.files["/proc/1/comm"] = "systemd\n";
    machine.probe.programs.insert("systemctl");
    machine.probe.answer({"systemctl", "--user", "show-environment"}, 0, "");
    auto result = machine.run({});
    const auto unit = machine.config("systemd/user/handlerd.service");
    const std::string text = read_file(unit).value();
    EXPECT_TRUE(contains(text, "KillMode=process")) << text;
    EXPECT_TRUE(contains(text, "ExecStart=/opt/handler/bin/handlerd\n")) << text;
    EXPECT_TRUE(contains(result.out, "systemctl --user enable handlerd")) << result.out;
    // Without systemd nothing is written there.
    MachineFixture plain;
    plain.run({});
    EXPECT_FALSE(std::filesystem::exists(plain.config("systemd")));
}

TEST(SetupRun, JsonListsEveryCheckWithItsFix) {
    MachineFixture machine;
    auto result = machine.run({true, true});
    auto parsed = boost::json::parse(result.out).as_object();
    EXPECT_FALSE(parsed.at("ok").as_bool());
    EXPECT_TRUE(parsed.at("check_only").as_bool());
    std::vector<std::string> ids;
    for (const auto& check : parsed.at("checks").as_array())
        ids.emplace_back(check.as_object().at("id").as_string());
    EXPECT_EQ(ids, (std::vector<std::string>{"podman", "runtime", "storage", "subids", "userns",
                                             "tun", "systemd"}));
    const auto& storage = parsed.at("checks").as_array().at(2).as_object();
    EXPECT_EQ(storage.at("status").as_string(), "problem");
    EXPECT_TRUE(contains(std::string(storage.at("fix").as_string()), "driver = \"overlay\""));
}

TEST(SetupRun, AFailedDaemonStartIsReportedWithItsMessage) {
    MachineFixture machine;
    machine.probe.on_run = nullptr;
    machine.probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "overlay", 0, 0));
    machine.probe.answer(kStartDaemon, 1, "", "handlerd: config.toml:3:1: not valid TOML\n");
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_TRUE(contains(result.out, "handlerd did not start")) << result.out;
    EXPECT_FALSE(contains(result.out, "Ready")) << result.out;
    EXPECT_TRUE(contains(result.out, "could not start /opt/handler/bin/handlerd --detach: "
                                     "handlerd: config.toml:3:1: not valid TOML"))
        << result.out;
}

} // namespace
} // namespace handler::setup
