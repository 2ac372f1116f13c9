// PodmanRuntime over the fake runner: the exact security-relevant flags, that nothing of
// the user's home, ~/.ssh, ~/.aws, the runtime folder or the podman socket is mounted,
// the parsing of real podman 4.3 output (samples/), and error messages.
#include "runtime/podman_runtime.hpp"

#include "support/fake_command_runner.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include <algorithm>
#include <iterator>

namespace handler::runtime {
namespace {

namespace fs = std::filesystem;
using handler::testing::contains;
using handler::testing::FakeCommandRunner;
using handler::testing::TempDir;

std::string sample(const std::string& name) {
    auto text = read_file(fs::path(HANDLER_RUNTIME_SAMPLES_DIR) / name);
    if (!text) ADD_FAILURE() << text.error().message;
    return text ? *text : std::string();
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
    return std::find(argv.begin(), argv.end(), word) != argv.end();
}

// A home folder with a project, a second project and the secrets next to them, as on a
// user's machine. Everything lives in a temporary folder.
class PodmanRuntimeTest : public ::testing::Test {
protected:
    PodmanRuntimeTest() {
        home_ = dir_.path() / "home";
        project_ = home_ / "projects" / "alpha";
        other_project_ = home_ / "projects" / "beta";
        for (const fs::path& folder :
             {project_, other_project_, home_ / ".ssh", home_ / ".aws",
              home_ / ".local/share/handler", home_ / ".config/handler", dir_.path() / "run/handler",
              dir_.path() / "knowledge"})
            fs::create_directories(folder);
        paths_.config_dir = home_ / ".config/handler";
        paths_.data_dir = home_ / ".local/share/handler";
        paths_.runtime_dir = dir_.path() / "run/handler";
        options_ = PodmanOptions::for_user(home_, paths_, 1000);
        // What `podman info` says on the CI machines (rootless, cgroup v1), known
        // beforehand, with a base profile of podman's shape.
        base_profile_ = dir_.write("seccomp.json", R"({"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,)"
                                                   R"("syscalls":[{"names":["read","unshare","clone"],"action":"SCMP_ACT_ALLOW"}]})");
        options_.host = HostConfinement{"v1", {}, true, true, base_profile_};
    }

    ContainerSpec spec() const {
        ContainerSpec spec;
        spec.session_id = "s-42";
        spec.image = "localhost/handler-test-busybox:latest";
        spec.argv = {"sleep", "infinity"};
        spec.project_path = project_;
        return spec;
    }

    std::vector<std::string> run_argv(const ContainerSpec& container) {
        PodmanRuntime runtime(runner_, options_);
        runner_.answer(0, "0123abcd\n");
        auto id = runtime.create_and_start(container);
        EXPECT_TRUE(id) << (id ? "" : id.error().message);
        return runner_.last_argv();
    }

    TempDir dir_;
    fs::path home_, project_, other_project_, base_profile_;
    Paths paths_;
    PodmanOptions options_;
    FakeCommandRunner runner_;
};

TEST_F(PodmanRuntimeTest, RunsTheHardenedCommandLine) {
    ContainerSpec container = spec();
    container.env = {{"TERM", "xterm-256color"}, {"API_KEY", "stand-in"}};
    const std::string p = fs::canonical(project_).string();
    const std::vector<std::string> expected = {
        "podman", "run", "--detach", "--name", "handler-s-42",
        "--label", "io.handler.managed=1", "--label", "io.handler.session=s-42",
        "--pull=never", "--userns=keep-id", "--cap-drop=all",
        "--security-opt=no-new-privileges", "--network=none",
        "--security-opt=seccomp=" + (paths_.data_dir / "session-seccomp.json").string(),
        "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777,size=1024m", "--tmpfs=/home/agent:rw,nosuid,nodev,U,size=2048m",
        "--ulimit=nproc=4096:4096", "--ulimit=data=8589934592:8589934592", "--oom-score-adj=1000",
        "--volume=" + p + ":" + project_.string() + ":rw", "--init",
        "--workdir=" + project_.string(), "--env=HOME=/home/agent",
        "--env=TERM=xterm-256color", "--env=API_KEY=stand-in",
        "localhost/handler-test-busybox:latest", "sleep", "infinity"};
    EXPECT_EQ(run_argv(container), expected);
}

// Podman is asked about the machine once, before the first container; the seccomp
// profile is written then, from the base podman names, and every container runs under it.
TEST_F(PodmanRuntimeTest, AsksPodmanAboutTheMachineOnceAndConfinesEveryContainer) {
    options_.host.reset();
    std::string info = sample("info_rootless_cgroup_v1.json");
    const std::string machine_path = "/usr/share/containers/seccomp.json";
    info.replace(info.find(machine_path), machine_path.size(), base_profile_.string());
    PodmanRuntime runtime(runner_, options_);
    EXPECT_TRUE(runtime.limits().empty()) << "nothing is known before podman is asked";
    runner_.answer(0, info);
    runner_.answer(0, "0123abcd\n");
    ASSERT_TRUE(runtime.create_and_start(spec()));
    ASSERT_EQ(runner_.requests.size(), 2u);
    EXPECT_EQ(runner_.requests[0].argv, (std::vector<std::string>{"podman", "info", "--format", "json"}));
    const fs::path profile = paths_.data_dir / "session-seccomp.json";
    EXPECT_TRUE(has(runner_.last_argv(), "--security-opt=seccomp=" + profile.string()));
    auto written = read_file(profile);
    ASSERT_TRUE(written) << "the profile is written before the container starts";
    EXPECT_TRUE(contains(*written, "Handler: no new namespaces")) << *written;
    EXPECT_TRUE(has(runner_.last_argv(), "--ulimit=data=8589934592:8589934592")) << "cgroup v1: per process";

    runner_.answer(0, "4567cdef\n");
    ContainerSpec second = spec();
    second.session_id = "s-43";
    ASSERT_TRUE(runtime.create_and_start(second));
    EXPECT_EQ(runner_.requests.size(), 3u) << "podman info is asked once";
    const auto limits = runtime.limits();
    ASSERT_EQ(limits.size(), 4u);
    EXPECT_EQ(limits[3].name, "memory");
    EXPECT_FALSE(limits[3].holds);
}

// No confinement, no container: seccomp off, or a base profile that cannot be built on.
TEST_F(PodmanRuntimeTest, StartsNothingItCannotConfine) {
    options_.host->seccomp_enabled = false;
    {
        PodmanRuntime runtime(runner_, options_);
        auto id = runtime.create_and_start(spec());
        ASSERT_FALSE(id);
        EXPECT_TRUE(contains(id.error().message, "session s-42 not started: podman reports seccomp as off"))
            << id.error().message;
    }
    options_.host->seccomp_enabled = true;
    dir_.write("seccomp.json", R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]})");
    {
        PodmanRuntime runtime(runner_, options_);
        auto id = runtime.create_and_start(spec());
        ASSERT_FALSE(id);
        EXPECT_TRUE(contains(id.error().message, base_profile_.string() + " lets every call")) << id.error().message;
    }
    options_.host.reset();
    {
        PodmanRuntime runtime(runner_, options_);
        runner_.answer(125, "", "Error: cannot set up namespace\n");
        auto id = runtime.create_and_start(spec());
        ASSERT_FALSE(id);
        EXPECT_TRUE(contains(id.error().message, "`podman info` failed (exit 125)")) << id.error().message;
    }
    for (const auto& request : runner_.requests) EXPECT_NE(request.argv.at(1), "run");
}

// Where cgroup v2 delegates the controllers, they limit the session as a whole.
TEST_F(PodmanRuntimeTest, UsesTheCgroupLimitsWhereTheyApply) {
    options_.host->cgroup_version = "v2";
    options_.host->cgroup_controllers = {"memory", "pids"};
    options_.limits.process_limit = 777;
    const auto argv = run_argv(spec());
    EXPECT_TRUE(has(argv, "--pids-limit=777"));
    EXPECT_TRUE(has(argv, "--ulimit=nproc=777:777"));
    EXPECT_TRUE(has(argv, "--memory=8192m"));
    EXPECT_FALSE(std::any_of(argv.begin(), argv.end(), [](const std::string& word) {
        return word.starts_with("--ulimit=data");
    }));
}

TEST_F(PodmanRuntimeTest, ReturnsTheIdPodmanPrinted) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, "6e5a042cfa69\n", "Resource limits are not supported and ignored on cgroups V1 rootless systems\n");
    auto id = runtime.create_and_start(spec());
    ASSERT_TRUE(id) << id.error().message;
    EXPECT_EQ(*id, "6e5a042cfa69");
}

TEST_F(PodmanRuntimeTest, MountsOnlyTheProjectAndNothingOfTheHostsSecrets) {
    ContainerSpec container = spec();
    container.read_only_mounts = {{dir_.path() / "knowledge", "/knowledge"}};
    std::vector<std::string> argv = run_argv(container);
    std::vector<std::string> mounts;
    for (const std::string& word : argv)
        if (word.starts_with("--volume") || word.starts_with("-v") || word.starts_with("--mount"))
            mounts.push_back(word);
    ASSERT_EQ(mounts.size(), 2u);
    EXPECT_EQ(mounts[1], "--volume=" + fs::canonical(dir_.path() / "knowledge").string() +
                             ":/knowledge:ro");
    // The seccomp profile in handler's data folder is read by podman, not mounted: the
    // one mention of that folder.
    const std::string profile = "--security-opt=seccomp=" + (paths_.data_dir / "session-seccomp.json").string();
    ASSERT_EQ(std::count(argv.begin(), argv.end(), profile), 1);
    std::vector<std::string> rest;
    std::copy_if(argv.begin(), argv.end(), std::back_inserter(rest), [&](const std::string& w) { return w != profile; });
    const std::string joined = describe_command(rest);
    for (const std::string& secret :
         {home_.string() + ":", (home_ / ".ssh").string(), (home_ / ".aws").string(),
          paths_.data_dir.string(), paths_.runtime_dir.string(), std::string("podman.sock"),
          std::string("/run/user"), (home_ / "projects/beta").string()})
        EXPECT_FALSE(contains(joined, secret)) << secret << " in " << joined;
    EXPECT_FALSE(has(argv, "--privileged"));
    EXPECT_FALSE(has(argv, "--env-host"));
    EXPECT_FALSE(std::any_of(argv.begin(), argv.end(),
                             [](const std::string& w) { return w.starts_with("--cap-add"); }));
}

TEST_F(PodmanRuntimeTest, HonoursTtyInteractiveNetworkWorkdirAndLabels) {
    ContainerSpec container = spec();
    container.tty = true;
    container.interactive = true;
    container.network = NetworkMode::slirp4netns;
    container.workdir = project_ / "src";
    container.labels = {{"io.example.purpose", "test"}};
    std::vector<std::string> argv = run_argv(container);
    EXPECT_TRUE(has(argv, "--tty"));
    EXPECT_TRUE(has(argv, "--interactive"));
    EXPECT_TRUE(has(argv, "--network=slirp4netns:allow_host_loopback=false"));
    EXPECT_TRUE(has(argv, "--workdir=" + (project_ / "src").string()));
    EXPECT_TRUE(has(argv, "io.example.purpose=test"));
}

TEST_F(PodmanRuntimeTest, RefusesMountsThatWouldExposeTheHomeOrSecrets) {
    PodmanRuntime runtime(runner_, options_);
    for (const fs::path& bad :
         {home_, home_.parent_path(), fs::path("/"), home_ / ".ssh", home_ / ".aws",
          home_ / ".local/share/handler", home_ / ".local", paths_.runtime_dir,
          paths_.runtime_dir.parent_path()}) {
        ContainerSpec container = spec();
        container.project_path = bad;
        auto result = runtime.run_command(container);
        ASSERT_FALSE(result) << bad;
        EXPECT_EQ(result.error().code, ErrorCode::forbidden) << bad << ": " << result.error().message;
        EXPECT_TRUE(contains(result.error().message, bad.string())) << result.error().message;
    }
    ContainerSpec container = spec();
    container.read_only_mounts = {{home_ / ".ssh", {}}};
    EXPECT_FALSE(runtime.run_command(container));
    EXPECT_TRUE(runner_.requests.empty()) << "nothing may run when validation fails";
}

// The session's control folder sits in the protected runtime folder by design; it is
// mounted read-only at a fixed place, and only a folder named after the session is taken,
// so the runtime folder itself (with the API socket) can never be shown.
TEST_F(PodmanRuntimeTest, MountsTheControlAndHelperFoldersReadOnly) {
    const fs::path control = paths_.runtime_dir / "sessions" / "s-42";
    const fs::path helpers = dir_.path() / "libexec/handler";
    fs::create_directories(control);
    fs::create_directories(helpers);
    ContainerSpec container = spec();
    container.control_dir = control;
    container.helper_dir = helpers;
    const auto argv = run_argv(container);
    EXPECT_TRUE(has(argv, "--volume=" + fs::canonical(control).string() + ":/run/handler:ro"));
    EXPECT_TRUE(has(argv, "--volume=" + fs::canonical(helpers).string() + ":/opt/handler:ro"));

    PodmanRuntime runtime(runner_, options_);
    for (const fs::path& bad : {paths_.runtime_dir, paths_.runtime_dir / "sessions",
                                paths_.runtime_dir / "sessions" / "s-other"}) {
        fs::create_directories(bad);
        container = spec();
        container.control_dir = bad;
        auto result = runtime.run_command(container);
        ASSERT_FALSE(result) << bad;
        EXPECT_TRUE(contains(result.error().message, "named after session")) << result.error().message;
    }
    container = spec();
    container.helper_dir = home_ / ".ssh";
    auto result = runtime.run_command(container);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::forbidden);
}

// An account's state is mounted read-write, and only a folder that is plainly one
// account's: never the data folder that holds the database and keys.
TEST_F(PodmanRuntimeTest, MountsOnlyAnAccountsOwnStateFolderReadWrite) {
    const fs::path data = dir_.path() / "data";
    const fs::path state = data / "account-state" / "7";
    fs::create_directories(state);
    ContainerSpec container = spec();
    container.account_state_dir = state;
    EXPECT_TRUE(has(run_argv(container), "--volume=" + fs::canonical(state).string() + ":/var/lib/handler/account:rw"));

    PodmanRuntime runtime(runner_, options_);
    for (const fs::path& bad : {data, data / "account-state", data / "sessions" / "7", data / "account-state" / "x7",
                                data / "account-state" / "missing"}) {
        fs::create_directories(bad == data / "account-state" / "missing" ? data : bad);
        container = spec();
        container.account_state_dir = bad;
        auto result = runtime.run_command(container);
        EXPECT_FALSE(result) << bad;
    }
}

// A conversation's own state (its transcript) is mounted read-write, and only the folder
// of that very session: never another session's, its output folder, or the data folder.
TEST_F(PodmanRuntimeTest, MountsOnlyTheSessionsOwnStateFolderReadWrite) {
    const fs::path data = dir_.path() / "data";
    const fs::path state = data / "sessions" / "s-42" / "state";
    fs::create_directories(state);
    ContainerSpec container = spec();
    container.session_state_dir = state;
    EXPECT_TRUE(has(run_argv(container), "--volume=" + fs::canonical(state).string() + ":/var/lib/handler/session:rw"));

    PodmanRuntime runtime(runner_, options_);
    for (const fs::path& bad : {data, data / "sessions" / "s-42", data / "sessions" / "s-43" / "state",
                                data / "sessions" / "s-42" / "states", data / "sessions" / "s-42" / "missing"}) {
        if (bad.filename() != "missing") fs::create_directories(bad);
        container = spec();
        container.session_state_dir = bad;
        auto result = runtime.run_command(container);
        EXPECT_FALSE(result) << bad;
    }
    // A symlink named like the folder, pointing at the data folder, is refused too.
    fs::create_directories(data / "sessions" / "s-44");
    fs::create_symlink(data, data / "sessions" / "s-44" / "state");
    container = spec();
    container.session_id = "s-44";
    container.session_state_dir = data / "sessions" / "s-44" / "state";
    EXPECT_FALSE(runtime.run_command(container));
}

// The trust bundle goes over the image's system store, and only a file of the session's
// own control folder may: never a host file such as ~/.ssh/id_ed25519.
TEST_F(PodmanRuntimeTest, MountsTheSessionsTrustBundleOverTheSystemStoreOnly) {
    const fs::path control = paths_.runtime_dir / "sessions" / "s-42";
    fs::create_directories(control);
    std::ofstream(control / "ca-bundle.crt") << "CAS";
    ContainerSpec container = spec();
    container.control_dir = control;
    container.trust_bundle = control / "ca-bundle.crt";
    EXPECT_TRUE(has(run_argv(container), "--volume=" + fs::canonical(control / "ca-bundle.crt").string() +
                                             ":/etc/ssl/certs/ca-certificates.crt:ro"));

    PodmanRuntime runtime(runner_, options_);
    fs::create_directories(home_ / ".ssh");
    std::ofstream(home_ / ".ssh/id_ed25519") << "KEY";
    fs::create_symlink(home_ / ".ssh/id_ed25519", control / "link.crt");
    for (const fs::path& bad : {home_ / ".ssh/id_ed25519", control / "link.crt", control / "missing.crt"}) {
        container.trust_bundle = bad;
        auto result = runtime.run_command(container);
        ASSERT_FALSE(result) << bad;
        EXPECT_TRUE(contains(result.error().message, "control folder")) << result.error().message;
    }
    container.control_dir.clear();
    container.trust_bundle = control / "ca-bundle.crt";
    EXPECT_FALSE(runtime.run_command(container));
}

TEST_F(PodmanRuntimeTest, RefusesASymlinkThatLeadsToTheHome) {
    fs::create_directory_symlink(home_, dir_.path() / "innocent");
    ContainerSpec container = spec();
    container.project_path = dir_.path() / "innocent";
    PodmanRuntime runtime(runner_, options_);
    auto result = runtime.run_command(container);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::forbidden);
}

TEST_F(PodmanRuntimeTest, RefusesMalformedInput) {
    PodmanRuntime runtime(runner_, options_);
    auto refused = [&](ContainerSpec container, const std::string& expected_text) {
        auto result = runtime.run_command(container);
        ASSERT_FALSE(result) << expected_text;
        EXPECT_TRUE(contains(result.error().message, expected_text)) << result.error().message;
    };
    ContainerSpec container = spec();
    container.session_id = "../x";
    refused(container, "session id");
    container = spec();
    container.image = "--privileged";
    refused(container, "image reference");
    container = spec();
    container.argv.clear();
    refused(container, "empty argv");
    container = spec();
    container.project_path = "relative/path";
    refused(container, "absolute");
    container = spec();
    container.project_path = dir_.path() / "missing";
    refused(container, "not an existing folder");
    fs::create_directories(dir_.path() / "a:b");
    container = spec();
    container.project_path = dir_.path() / "a:b";
    refused(container, "':'");
    container = spec();
    container.env = {{"BAD NAME", "x"}};
    refused(container, "BAD NAME");
    container = spec();
    container.labels = {{"io.handler.session", "other"}};
    refused(container, "reserved");
}

TEST_F(PodmanRuntimeTest, RunFailureNamesTheCommandSessionAndStderr) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(125, "", "Error: localhost/nope: image not known\n");
    auto id = runtime.create_and_start(spec());
    ASSERT_FALSE(id);
    EXPECT_EQ(id.error().code, ErrorCode::unavailable);
    const std::string& message = id.error().message;
    EXPECT_TRUE(contains(message, "`podman run` for session s-42 failed (exit 125)")) << message;
    EXPECT_TRUE(contains(message, "image not known")) << message;
    EXPECT_TRUE(contains(message, "docs/containers.md")) << message;
}

TEST_F(PodmanRuntimeTest, MissingPodmanIsReported) {
    PodmanRuntime runtime(runner_, options_);
    runner_.fail(make_error(ErrorCode::unavailable,
                            "could not run `podman`: No such file or directory"));
    auto id = runtime.create_and_start(spec());
    ASSERT_FALSE(id);
    EXPECT_TRUE(contains(id.error().message, "`podman run`: could not run")) << id.error().message;
}

TEST_F(PodmanRuntimeTest, ExecStopRemoveCommands) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, "1003\n");
    ExecRequest request{{"id", "-u"}, {{"A", "b"}}, project_, std::nullopt, 5000};
    auto result = runtime.exec("6e5a042cfa69", request);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->stdout_text, "1003\n");
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "exec", "--workdir=" + project_.string(),
                                        "--env=A=b", "6e5a042cfa69", "id", "-u"}));
    EXPECT_EQ(runner_.requests.back().timeout_ms, 5000);

    ASSERT_TRUE(runtime.stop("6e5a042cfa69", std::chrono::milliseconds(1500)));
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "stop", "--time=2", "6e5a042cfa69"}));
    ASSERT_TRUE(runtime.remove("6e5a042cfa69"));
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "rm", "--force", "6e5a042cfa69"}));
    EXPECT_FALSE(runtime.stop("--all", std::chrono::milliseconds(0)));
    EXPECT_EQ(runner_.requests.size(), 3u) << "an id that looks like an option never runs";
}

TEST_F(PodmanRuntimeTest, ExecReturnsTheProgramsExitCode) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(1, "", "");
    ExecRequest request;
    request.argv = {"test", "-e", "/nope"};
    auto result = runtime.exec("abc", request);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->exit_code, 1);
}

TEST_F(PodmanRuntimeTest, ExecInAStoppedContainerIsAnError) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(125, "", "Error: can only create exec sessions on running containers: container state improper\n");
    ExecRequest request;
    request.argv = {"true"};
    auto result = runtime.exec("abc", request);
    ASSERT_FALSE(result);
    EXPECT_TRUE(contains(result.error().message, "`podman exec` for container abc failed (exit 125)"))
        << result.error().message;
    EXPECT_TRUE(contains(result.error().message, "state improper"));
}

TEST_F(PodmanRuntimeTest, TrailingSlashesDoNotHideTheHome) {
    ContainerSpec container = spec();
    container.project_path = home_.string() + "/";
    PodmanRuntime runtime(runner_, options_);
    auto result = runtime.run_command(container);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::forbidden);
}

TEST_F(PodmanRuntimeTest, InspectParsesARealRunningContainer) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, sample("inspect_running.json"));
    auto info = runtime.inspect("handler-s1");
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(runner_.last_argv(), (std::vector<std::string>{"podman", "container", "inspect",
                                                             "--format=json", "handler-s1"}));
    EXPECT_EQ(info->id, "6e5a042cfa6904fe1c9df4a434534aa529f87d9d7ed882e55d3afc7ba4a5d39d");
    EXPECT_EQ(info->name, "handler-s1");
    EXPECT_EQ(info->image, "localhost/handler-test-busybox:latest");
    EXPECT_EQ(info->state, ContainerState::running);
    EXPECT_EQ(info->session_id(), "s1");
    EXPECT_EQ(info->labels.at("io.handler.managed"), "1");
}

TEST(PodmanParse, InspectOfAnExitedContainerHasItsExitCode) {
    auto info = parse_podman_inspect(sample("inspect_exited.json"));
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->state, ContainerState::exited);
    EXPECT_EQ(info->exit_code, 143);
}

TEST(PodmanParse, PsListsLabelledContainers) {
    auto list = parse_podman_ps(sample("ps_running.json"));
    ASSERT_TRUE(list) << list.error().message;
    ASSERT_EQ(list->size(), 1u);
    EXPECT_EQ(list->front().name, "handler-s1");
    EXPECT_EQ(list->front().state, ContainerState::running);
    EXPECT_EQ(list->front().session_id(), "s1");
    EXPECT_EQ(list->front().image, "localhost/handler-test-busybox:latest");
}

TEST(PodmanParse, EmptyAndBrokenOutput) {
    auto empty = parse_podman_ps("[]\n");
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
    auto broken = parse_podman_ps("Error: something");
    ASSERT_FALSE(broken);
    EXPECT_TRUE(contains(broken.error().message, "podman ps")) << broken.error().message;
    auto none = parse_podman_inspect("[]");
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, ErrorCode::not_found);
}

TEST_F(PodmanRuntimeTest, InspectOfAMissingContainerIsNotFound) {
    PodmanRuntime runtime(runner_, options_);
    // What podman 4.3.1 printed for a name that does not exist.
    runner_.answer(125, "[]\n", "Error: inspecting object: no such object: \"nonexistent\"\n");
    auto info = runtime.inspect("nonexistent");
    ASSERT_FALSE(info);
    EXPECT_EQ(info.error().code, ErrorCode::not_found);
    EXPECT_TRUE(contains(info.error().message, "`podman container inspect` for container nonexistent"))
        << info.error().message;
}

TEST_F(PodmanRuntimeTest, ListFiltersOnTheManagedLabel) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, sample("ps_running.json"));
    auto all = runtime.list(kManagedSelector);
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "ps", "--all", "--format=json",
                                        "--filter=label=io.handler.managed=1"}));
    runner_.answer(0, "[]");
    auto one = runtime.list("io.handler.session=s1");
    ASSERT_TRUE(one);
    EXPECT_TRUE(has(runner_.last_argv(), "--filter=label=io.handler.session=s1"));
    EXPECT_TRUE(has(runner_.last_argv(), "--filter=label=io.handler.managed=1"));
}

// A stopping handlerd does not wait for podman's answers to questions (ps, inspect, image
// exists, images), and always waits for a command that changes something.
TEST_F(PodmanRuntimeTest, OnlyQuestionsAreAbandonedWhenStopping) {
    PodmanRuntime runtime(runner_, options_);
    auto last_abandonable = [this] { return runner_.requests.back().abandon_when_stopping; };
    runner_.answer(0, "[]");
    ASSERT_TRUE(runtime.list(kManagedSelector));
    EXPECT_TRUE(last_abandonable()) << "ps";
    runner_.answer(0, sample("inspect_running.json"));
    ASSERT_TRUE(runtime.inspect("6e5a042cfa69"));
    EXPECT_TRUE(last_abandonable()) << "inspect";
    runner_.answer(0);
    ASSERT_TRUE(runtime.image_exists("localhost/x:latest"));
    EXPECT_TRUE(last_abandonable()) << "image exists";
    runner_.answer(0, "[]");
    ASSERT_TRUE(runtime.image_tags("localhost/handler-pi"));
    EXPECT_TRUE(last_abandonable()) << "images";

    ASSERT_TRUE(runtime.stop("6e5a042cfa69", std::chrono::milliseconds(1500)));
    EXPECT_FALSE(last_abandonable()) << "stop";
    ASSERT_TRUE(runtime.remove("6e5a042cfa69"));
    EXPECT_FALSE(last_abandonable()) << "rm";
    runner_.answer(0, "6e5a042cfa69\n");
    ASSERT_TRUE(runtime.create_and_start(spec()));
    EXPECT_FALSE(last_abandonable()) << "run";
    runner_.answer(0);
    ASSERT_TRUE(runtime.remove_image("localhost/handler-pi:111"));
    EXPECT_FALSE(last_abandonable()) << "rmi";
}

TEST_F(PodmanRuntimeTest, ImageExistsAndImport) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0);
    EXPECT_TRUE(*runtime.image_exists("localhost/x:latest"));
    runner_.answer(1);
    EXPECT_FALSE(*runtime.image_exists("localhost/x:latest"));
    runner_.answer(125, "", "Error: cannot set up namespace\n");
    auto broken = runtime.image_exists("localhost/x:latest");
    ASSERT_FALSE(broken);
    EXPECT_TRUE(contains(broken.error().message, "cannot set up namespace"));

    fs::path tarball = dir_.write("rootfs.tar", "not really a tar");
    ASSERT_TRUE(runtime.import_image(tarball, "localhost/x:latest"));
    EXPECT_EQ(runner_.last_argv(), (std::vector<std::string>{"podman", "import", "--quiet",
                                                             tarball.string(), "localhost/x:latest"}));
    EXPECT_FALSE(runtime.import_image(dir_.path() / "missing.tar", "localhost/x:latest"));
}

// The tags of one repository (podman filters by reference, and prefixes match too, so
// the names are checked again), and removal that never forces: an image in use stays.
TEST_F(PodmanRuntimeTest, ImageTagsAndRemovalThatLeavesAnImageInUse) {
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, R"([{"Id":"a1","Names":["localhost/handler-pi:111","localhost/handler-pi:222"]},)"
                      R"({"Id":"b2","Names":["localhost/handler-pilot:333"]},{"Id":"c3"}])");
    auto tags = runtime.image_tags("localhost/handler-pi");
    ASSERT_TRUE(tags) << tags.error().message;
    EXPECT_EQ(*tags, (std::vector<std::string>{"localhost/handler-pi:111", "localhost/handler-pi:222"}));
    EXPECT_EQ(runner_.last_argv(), (std::vector<std::string>{"podman", "images", "--format=json",
                                                             "--filter=reference=localhost/handler-pi"}));
    EXPECT_FALSE(runtime.image_tags("localhost/handler-pi:111")) << "a repository, not an image";

    runner_.answer(0);
    ASSERT_TRUE(runtime.remove_image("localhost/handler-pi:111"));
    EXPECT_EQ(runner_.last_argv(), (std::vector<std::string>{"podman", "rmi", "localhost/handler-pi:111"}));
    runner_.answer(2, "", "Error: image used by 4f2a: image is in use by a container\n");
    auto in_use = runtime.remove_image("localhost/handler-pi:222");
    ASSERT_FALSE(in_use);
    EXPECT_EQ(in_use.error().code, ErrorCode::conflict);
    EXPECT_TRUE(contains(in_use.error().message, "in use by a container")) << in_use.error().message;
}

// A layered image is built from our own base only: never pulled, no cached layers.
TEST_F(PodmanRuntimeTest, BuildUsesTheFoldersContainerfileAndNeverPulls) {
    PodmanRuntime runtime(runner_, options_);
    dir_.write("build/Containerfile", "FROM localhost/handler-base:abc\n");
    runner_.answer(0);
    ASSERT_TRUE(runtime.build_image(dir_.path() / "build", "localhost/handler-x:123"));
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "build", "--quiet", "--pull=never", "--layers=false", "--tag",
                                        "localhost/handler-x:123", "--file",
                                        (dir_.path() / "build/Containerfile").string(),
                                        (dir_.path() / "build").string()}));
    runner_.answer(1, "", "Error: error building at STEP \"RUN npm install\": exit status 1\n");
    auto failed = runtime.build_image(dir_.path() / "build", "localhost/handler-x:123");
    ASSERT_FALSE(failed);
    EXPECT_TRUE(contains(failed.error().message, "npm install")) << failed.error().message;
    EXPECT_FALSE(runtime.build_image(dir_.path() / "nowhere", "localhost/handler-x:123"));
    EXPECT_FALSE(runtime.build_image(dir_.path() / "build", "not a ref"));
}

// A build someone watches prints its steps (no --quiet) to the listener as they come.
TEST_F(PodmanRuntimeTest, AStreamedBuildIsNotQuietAndPassesItsOutputOn) {
    PodmanRuntime runtime(runner_, options_);
    dir_.write("build/Containerfile", "FROM localhost/handler-base:abc\n");
    runner_.answer(0);
    std::string seen;
    ASSERT_TRUE(runtime.build_image_streaming(dir_.path() / "build", "localhost/handler-x:123",
                                              [&](std::string_view piece) { seen += piece; }));
    EXPECT_EQ(runner_.last_argv(),
              (std::vector<std::string>{"podman", "build", "--pull=never", "--layers=false", "--tag",
                                        "localhost/handler-x:123", "--file",
                                        (dir_.path() / "build/Containerfile").string(),
                                        (dir_.path() / "build").string()}));
    ASSERT_TRUE(runner_.requests.back().on_output);
    runner_.requests.back().on_output("STEP 1/2");
    EXPECT_EQ(seen, "STEP 1/2");
}

} // namespace
} // namespace handler::runtime

namespace handler::runtime {
namespace {

// A task (the Changes): the session's confinement flag for flag, in the foreground,
// removed at its end, with the project read-only, and never labelled as a session's.
TEST_F(PodmanRuntimeTest, RunsATaskUnderTheSessionsConfinementWithTheProjectReadOnly) {
    ContainerSpec task = spec();
    task.session_id = "changes-s_1-9-1";
    task.project_read_only = true;
    task.argv = {"sh", "-c", "true"};
    const std::string p = fs::canonical(project_).string();
    PodmanRuntime runtime(runner_, options_);
    runner_.answer(0, "mode 5\nplain");
    TaskOptions options;
    options.timeout_ms = 12'500;
    options.output_limit_bytes = 1234;
    auto ran = runtime.run_task(task, options);
    ASSERT_TRUE(ran) << ran.error().message;
    EXPECT_EQ(ran->stdout_text, "mode 5\nplain");
    const auto& request = runner_.requests.back();
    const std::vector<std::string> expected = {
        "podman", "run", "--rm", "--name", "handler-task-changes-s_1-9-1",
        "--label", "io.handler.task=changes-s_1-9-1", "--timeout=13",
        "--pull=never", "--userns=keep-id", "--cap-drop=all",
        "--security-opt=no-new-privileges", "--network=none",
        "--security-opt=seccomp=" + (paths_.data_dir / "session-seccomp.json").string(),
        "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777,size=1024m", "--tmpfs=/home/agent:rw,nosuid,nodev,U,size=2048m",
        "--ulimit=nproc=4096:4096", "--ulimit=data=8589934592:8589934592", "--oom-score-adj=1000",
        "--volume=" + p + ":" + project_.string() + ":ro", "--init",
        "--workdir=" + project_.string(), "--env=HOME=/home/agent",
        "localhost/handler-test-busybox:latest", "sh", "-c", "true"};
    EXPECT_EQ(request.argv, expected);
    EXPECT_FALSE(has(request.argv, "--detach"));
    EXPECT_FALSE(has(request.argv, "io.handler.managed=1")) << "start-up must never adopt a task as a session";
    EXPECT_EQ(request.output_limit_bytes, 1234u);
    EXPECT_TRUE(request.abandon_when_stopping) << "a stopping handlerd does not wait for a Changes run";
    EXPECT_GT(request.timeout_ms, 12'500) << "podman's own start and removal on top";

    // The same checks as a session's: the home folder is never mounted.
    ContainerSpec home = task;
    home.project_path = home_;
    EXPECT_FALSE(runtime.run_task(home, options));
    // 125 is podman's own failure; another status is the task's.
    runner_.answer(125, "", "Error: image not known");
    auto failed = runtime.run_task(task, options);
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().message.find("image not known"), std::string::npos) << failed.error().message;
    runner_.answer(2, "", "sh: oops");
    auto status = runtime.run_task(task, options);
    ASSERT_TRUE(status);
    EXPECT_EQ(status->exit_code, 2);
}

} // namespace
} // namespace handler::runtime
