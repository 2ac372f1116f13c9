#include "setup/setup.hpp"

#include "core/paths.hpp"
#include "support/fake_system_probe.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
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

// A machine like MACHINE.md's: cgroup v1 hybrid, runc only, an empty vfs store, no
// systemd; tun as scripts/install.sh leaves it (0666; the VM ships 0600, see the tests
// that clear `accessible`). The user's config folder is a real temporary one.
struct MachineFixture {
    TempDir home;
    FakeSystemProbe probe;
    bool daemon_running = false;
    // No CA and fixed values, so nothing of this machine's /etc reaches the tests.
    runtime::BaseImageRecipe recipe{"trixie", "apt", {"git", "curl"}, "http://deb.debian.org/debian", {}};

    MachineFixture() {
        probe.environment["HOME"] = home.path().string();
        probe.real_files_under = home.path();
        probe.make_cgroup_hybrid();
        probe.programs.erase("crun");
        probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "vfs", 0, 0));
        probe.answer({"podman", "volume", "ls", "--quiet"}, 0, "");
        // What the real commands change: the reset makes podman use storage.conf's
        // driver; handlerd --detach returns once it listens.
        probe.on_run = [this](const Argv& argv) {
            if (argv == kReset) probe.answer(kInfo, 0, FakeSystemProbe::podman_info("runc", "overlay", 0, 0));
            if (argv == kStartDaemon) daemon_running = true;
            // mmdebstrap writes the tarball named second to last.
            if (!argv.empty() && argv[0] == "mmdebstrap")
                std::ofstream(argv.at(argv.size() - 2)) << "rootfs";
        };
    }

    std::string image() const { return runtime::base_image_ref(recipe).value(); }
    Argv image_exists() const { return {"podman", "image", "exists", image()}; }
    bool ran_program(const std::string& program) const {
        return std::any_of(probe.ran.begin(), probe.ran.end(),
                           [&](const Argv& argv) { return !argv.empty() && argv[0] == program; });
    }

    Run run(SetupOptions options) {
        std::ostringstream out;
        SetupContext context{probe, out, [this] { return daemon_running; }, recipe};
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
    machine.probe.accessible.clear(); // tun 0600, as the VM ships it
    auto result = machine.run({true, false});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_TRUE(contains(result.out, "! runtime  cgroup v1 hybrid; podman uses runc")) << result.out;
    EXPECT_TRUE(contains(result.out, "✗ storage  podman stores images with vfs")) << result.out;
    EXPECT_TRUE(contains(result.out, "✗ tun")) << result.out;
    EXPECT_TRUE(contains(result.out, "✓ podman   podman 4.3.1")) << result.out;
    EXPECT_TRUE(contains(result.out, "2 problems remain")) << result.out;
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

// Issue 15: on a VM whose tun is 0600, setup said "Ready" and `handler run claude` then
// failed building its image. Now tun is the problem that remains, with what needs it and
// the fix; the base image (no RUN steps) is still built and handlerd still started.
TEST(SetupRun, AnUnusableTunIsAProblemThatNamesHarnessImagesAndItsFix) {
    MachineFixture machine;
    machine.probe.accessible.clear();
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_TRUE(contains(result.out, "✗ tun      /dev/net/tun exists but alice cannot open it")) << result.out;
    EXPECT_TRUE(contains(result.out, "fix: sudo chmod 0666 /dev/net/tun")) << result.out;
    EXPECT_TRUE(contains(result.out, "60-handler-tun.rules")) << result.out;
    EXPECT_TRUE(contains(result.out, "why: Harness images")) << result.out;
    EXPECT_TRUE(contains(result.out, "1 problem remains")) << result.out;
    EXPECT_FALSE(contains(result.out, "Ready")) << result.out;
    EXPECT_TRUE(machine.ran(machine.image_exists())) << "the base image needs no tun";
    EXPECT_TRUE(contains(result.out, "base image " + machine.image() + " is up to date")) << result.out;
    EXPECT_TRUE(machine.ran(kStartDaemon));
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
                                             "tun", "seccomp", "limits", "systemd"}));
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

namespace handler::setup {
namespace {

TEST(SetupImage, AnExistingBaseImageIsNotRebuilt) {
    MachineFixture machine;
    auto result = machine.run({});
    EXPECT_EQ(result.code, 0) << result.out;
    EXPECT_TRUE(machine.ran(machine.image_exists()));
    EXPECT_FALSE(machine.ran_program("mmdebstrap"));
    EXPECT_TRUE(contains(result.out, "base image " + machine.image() + " is up to date")) << result.out;
}

TEST(SetupImage, AMissingBaseImageIsBuiltWithProgressThenImported) {
    MachineFixture machine;
    machine.probe.programs.insert("mmdebstrap");
    machine.probe.answer(machine.image_exists(), 1, "");
    auto result = machine.run({});
    EXPECT_EQ(result.code, 0) << result.out;
    EXPECT_TRUE(machine.ran_program("mmdebstrap"));
    EXPECT_TRUE(std::any_of(machine.probe.ran.begin(), machine.probe.ran.end(), [&](const Argv& argv) {
        return argv.size() == 5 && argv[1] == "import" && argv[4] == machine.image();
    }));
    EXPECT_TRUE(contains(result.out, "building base image " + machine.image() +
                                         " (trixie, 2 packages)")) << result.out;
    EXPECT_TRUE(contains(result.out, "is ready")) << result.out;
    // Progress comes as it happens, after the header and before the summary.
    EXPECT_LT(result.out.find("checking this machine"), result.out.find("building base image"));
    EXPECT_LT(result.out.find("building base image"), result.out.find("Ready: no problems found."));
    // The build's files are gone; only the private folder stays.
    EXPECT_TRUE(std::filesystem::is_empty(machine.home.path() / ".cache/handler/build"));

    auto json_result = machine.run({false, true});
    auto parsed = boost::json::parse(json_result.out).as_object();
    EXPECT_EQ(parsed.at("image").as_object().at("status").as_string(), "built");
    EXPECT_EQ(parsed.at("image").as_object().at("reference").as_string(), machine.image());
}

TEST(SetupImage, CheckNeverBuildsOrEvenLooks) {
    MachineFixture machine;
    machine.probe.programs.insert("mmdebstrap");
    machine.probe.answer(machine.image_exists(), 1, "");
    auto result = machine.run({true, false});
    EXPECT_FALSE(machine.ran(machine.image_exists()));
    EXPECT_FALSE(machine.ran_program("mmdebstrap"));
    EXPECT_FALSE(contains(result.out, "base image")) << result.out;
}

TEST(SetupImage, AFailedBuildIsAProblemThatSaysWhatToDo) {
    MachineFixture machine; // no mmdebstrap on PATH
    machine.probe.answer(machine.image_exists(), 1, "");
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_TRUE(contains(result.out, "note: base image not built")) << result.out;
    EXPECT_TRUE(contains(result.out, "apt-get install mmdebstrap")) << result.out;
    EXPECT_FALSE(contains(result.out, "Ready: no problems found.")) << result.out;

    auto json_result = machine.run({false, true});
    auto parsed = boost::json::parse(json_result.out).as_object();
    EXPECT_FALSE(parsed.at("ok").as_bool());
    EXPECT_EQ(parsed.at("image").as_object().at("status").as_string(), "failed");
}

TEST(SetupImage, NotBuiltWhileProblemsRemain) {
    MachineFixture machine;
    machine.probe.programs.insert("mmdebstrap");
    machine.probe.files.erase("/etc/subuid");
    machine.probe.files.erase("/etc/subgid");
    auto result = machine.run({});
    EXPECT_EQ(result.code, 1) << result.out;
    EXPECT_FALSE(machine.ran(machine.image_exists()));
    EXPECT_TRUE(contains(result.out, "base image is built once the problems above are fixed")) << result.out;
}

} // namespace
} // namespace handler::setup
