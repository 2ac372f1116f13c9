#include "cli/cli.hpp"
#include "cli/permissions.hpp"
#include "support/fake_system_probe.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

namespace handler::cli {
namespace {
namespace json = boost::json;

struct Call {
    std::string method;
    std::string target;
    std::string body;
};

// A daemon that answers from a script and records what it was asked.
class FakeDaemon {
public:
    void answer(unsigned status, std::string body) {
        answers_.push_back(api::Response{status, std::move(body), "application/json", {}});
    }
    void go_away() { running_ = false; }

    std::unique_ptr<ApiClient> connect() {
        class Client : public ApiClient {
        public:
            explicit Client(FakeDaemon& daemon) : daemon_(daemon) {}
            Result<api::Response> call(std::string_view method, std::string_view target,
                                       std::string_view body) override {
                daemon_.calls.push_back({std::string(method), std::string(target),
                                         std::string(body)});
                if (!daemon_.running_)
                    return make_error(ErrorCode::unavailable,
                                      "handlerd is not running (no answer on /x.sock)");
                if (daemon_.answers_.empty())
                    return api::Response{500, R"({"error":{"code":"internal","message":"unscripted"}})", "application/json", {}};
                auto response = daemon_.answers_.front();
                daemon_.answers_.pop_front();
                return response;
            }
            Result<api::client::TerminalEnd> attach(std::string_view target, api::client::TerminalHooks& hooks) override {
                daemon_.calls.push_back({"WEBSOCKET", std::string(target), ""});
                if (!daemon_.terminal) return ApiClient::attach(target, hooks);
                return daemon_.terminal(hooks);
            }

        private:
            FakeDaemon& daemon_;
        };
        return std::make_unique<Client>(*this);
    }

    std::vector<Call> calls;
    // What the terminal WebSocket does for an attach: calls the hooks, returns how it ended.
    std::function<Result<api::client::TerminalEnd>(api::client::TerminalHooks&)> terminal;

private:
    std::deque<api::Response> answers_;
    bool running_ = true;
};

struct Run {
    int code;
    std::string out;
    std::string err;
};

// `adjust` changes the context before the run (its home folder, clock, time zone).
Run run(FakeDaemon& daemon, const std::vector<std::string>& arguments,
        std::filesystem::path current_dir = "/home/u/code/app/src",
        const std::function<void(CliContext&)>& adjust = {}) {
    std::ostringstream out, err;
    int daemon_runs = 0;
    CliContext context{[&] { return daemon.connect(); }, out, err, current_dir,
                       [&](const DaemonCommand&) { return ++daemon_runs, 0; }, false, {},
                       -1, {}, {}, {}, &system_clock(), &local_time_zone(), {}, {}};
    if (adjust) adjust(context);
    const int code = run_cli(arguments, context);
    return {code, out.str(), err.str()};
}

// Times shown to people are fixed by these: now is 2023-11-14 22:13:20 UTC, and the
// local zone is one hour east of UTC.
const handler::testing::FakeClock kNow{1'700'000'000'000};
const FixedTimeZone kZone{3600};

void at_fixed_time(CliContext& context) {
    context.clock = &kNow;
    context.time_zone = &kZone;
}

const char* kProject =
    R"({"projects":[{"id":7,"name":"app","path":"/home/u/code/app","context":null}]})";

TEST(Cli, StatusWhenDaemonIsDownSaysSoWithExitCode3) {
    FakeDaemon daemon;
    daemon.go_away();
    auto result = run(daemon, {"status"});
    EXPECT_EQ(result.code, kExitUnavailable);
    EXPECT_NE(result.err.find("not running"), std::string::npos) << result.err;
}

// `handler acp` hands stdin and stdout to the ACP server, with --agent, and asks
// nothing of handlerd itself first (the server starts it when it must).
TEST(Cli, AcpRunsTheStdioServerWithTheAgentNamed) {
    FakeDaemon daemon;
    std::vector<AcpCommand> runs;
    auto result = run(daemon, {"acp", "--agent", "reviewer", "-v"}, "/home/u/code/app",
                      [&](CliContext& context) {
                          context.run_acp = [&](const AcpCommand& command) {
                              runs.push_back(command);
                              return 0;
                          };
                      });
    EXPECT_EQ(result.code, kExitOk);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].agent, "reviewer");
    EXPECT_EQ(runs[0].verbosity, 1);
    EXPECT_TRUE(daemon.calls.empty());
    EXPECT_TRUE(result.out.empty()); // stdout is the protocol's alone
}

TEST(Cli, RootIsPointedToTheUserThatRunsHandlerd) {
    FakeDaemon daemon;
    daemon.go_away();
    std::ostringstream out, err;
    CliContext context{[&] { return daemon.connect(); }, out, err, "/", {}, true, {}, -1, {}, {}, {}, &system_clock(), &local_time_zone(), {}, {}};
    EXPECT_EQ(run_cli({"status"}, context), kExitUnavailable);
    EXPECT_NE(err.str().find("su - handler -c"), std::string::npos) << err.str();
    // and a normal user is not told about root
    EXPECT_EQ(run(daemon, {"status"}).err.find("root"), std::string::npos);
}

TEST(Cli, SetupCheckJsonReportsTheProbedMachineWithoutTheDaemon) {
    FakeDaemon daemon;
    std::ostringstream out, err;
    CliContext context{[&] { return daemon.connect(); }, out, err, "/", {}, false, [] {
        auto probe = std::make_unique<handler::testing::FakeSystemProbe>();
        probe->programs.erase("podman");
        return std::unique_ptr<setup::SystemProbe>(std::move(probe));
    }, -1, {}, {}, {}, &system_clock(), &local_time_zone(), {}, {}};
    EXPECT_EQ(run_cli({"setup", "--check", "--json"}, context), 1) << err.str();
    auto parsed = json::parse(out.str()).as_object();
    EXPECT_FALSE(parsed.at("ok").as_bool());
    EXPECT_TRUE(parsed.at("check_only").as_bool());
    const auto& podman = parsed.at("checks").as_array().at(0).as_object();
    EXPECT_EQ(podman.at("id").as_string(), "podman");
    EXPECT_EQ(podman.at("status").as_string(), "problem");
    EXPECT_NE(std::string(podman.at("fix").as_string()).find("apt-get install podman"),
              std::string::npos);
    EXPECT_FALSE(parsed.contains("daemon"));
    EXPECT_TRUE(daemon.calls.empty()); // --check neither asks for nor starts handlerd
}

TEST(Cli, SetupAsRootIsRefused) {
    FakeDaemon daemon;
    std::ostringstream out, err;
    CliContext context{[&] { return daemon.connect(); }, out, err, "/", {}, true, [] {
        auto probe = std::make_unique<handler::testing::FakeSystemProbe>();
        probe->user_id = 0;
        return std::unique_ptr<setup::SystemProbe>(std::move(probe));
    }, -1, {}, {}, {}, &system_clock(), &local_time_zone(), {}, {}};
    EXPECT_EQ(run_cli({"setup"}, context), 1);
    EXPECT_NE(out.str().find("agents never run as root"), std::string::npos) << out.str();
    EXPECT_TRUE(daemon.calls.empty());
}

TEST(Cli, StatusPrintsVersionAndPluginCounts) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"version":"0.1.0","abi":"1.0","pid":42,"socket":"/r/h.sock",
        "tcp":{"address":"127.0.0.1","port":7420},"plugins":{"loaded":1,"refused":2,"failed":0}})");
    auto result = run(daemon, {"status"});
    EXPECT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("pid 42"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("1 loaded, 2 refused"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("http://127.0.0.1:7420/"), std::string::npos) << result.out;
}

TEST(Cli, AgentAddResolvesTheProjectFromTheCurrentFolder) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(201, R"({"id":1,"name":"reviewer","project":7,"harness":"shell"})");
    auto result = run(daemon, {"agent", "add", "reviewer", "--harness", "shell", "--allow",
                               "github.com", "--allow", "*.npmjs.org:443", "--network", "open"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 2u);
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/projects?path=%2Fhome%2Fu%2Fcode%2Fapp%2Fsrc");
    EXPECT_EQ(daemon.calls[1].method, "POST");
    auto body = json::parse(daemon.calls[1].body).as_object();
    EXPECT_EQ(body.at("project").as_int64(), 7);
    EXPECT_EQ(body.at("harness").as_string(), "shell");
    EXPECT_EQ(body.at("network_mode").as_string(), "open");
    EXPECT_EQ(json::serialize(body.at("allowed_hosts")), R"(["github.com","*.npmjs.org:443"])");
}

TEST(Cli, AgentListShowsProjectNamesAndHosts) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"agents":[{"id":3,"name":"r","project":7,"harness":"shell",
        "network_mode":"filtered","allowed_hosts":["a.com","b.com"],"account":null,"goal":""}]})");
    daemon.answer(200, kProject);
    auto result = run(daemon, {"agent", "list", "--all"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("r     app"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("a.com, b.com"), std::string::npos) << result.out;
}

TEST(Cli, OutsideAnyProjectTheErrorSaysHowToRegisterIt) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"projects":[]})");
    auto result = run(daemon, {"agent", "list"}, "/tmp/elsewhere");
    EXPECT_EQ(result.code, kExitRefused);
    EXPECT_NE(result.err.find("handler project add /tmp/elsewhere"), std::string::npos)
        << result.err;
}

TEST(Cli, DaemonErrorMessageIsShownWithExitCode1) {
    FakeDaemon daemon;
    daemon.answer(409, R"({"error":{"code":"conflict","message":"context 'Work' exists"}})");
    auto result = run(daemon, {"context", "add", "Work"});
    EXPECT_EQ(result.code, kExitRefused);
    EXPECT_EQ(result.err, "handler: context 'Work' exists\n");
}

TEST(Cli, ServerErrorIsExitCode4) {
    FakeDaemon daemon;
    daemon.answer(500, R"({"error":{"code":"internal","message":"disk full"}})");
    EXPECT_EQ(run(daemon, {"context", "list"}).code, kExitInternal);
}

TEST(Cli, JsonListingIsTheDaemonsArray) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"plugins":[{"id":"shell","kind":"harness","version":"0.1.0",
        "abi":"1.0","state":"loaded","message":""}]})");
    auto result = run(daemon, {"plugins", "list", "--json"});
    ASSERT_EQ(result.code, kExitOk);
    auto parsed = json::parse(result.out);
    ASSERT_TRUE(parsed.is_array());
    EXPECT_EQ(parsed.as_array().at(0).as_object().at("id").as_string(), "shell");
}

TEST(Cli, TableShowsRefusalMessage) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"plugins":[{"id":"old","kind":"harness","version":"1","abi":"2.0",
        "state":"refused","message":"built for plugin ABI 2.0"}]})");
    auto result = run(daemon, {"plugins", "list"});
    ASSERT_EQ(result.code, kExitOk);
    EXPECT_NE(result.out.find("refused"), std::string::npos);
    EXPECT_NE(result.out.find("built for plugin ABI 2.0"), std::string::npos);
}

TEST(Cli, AgentEditMergesHostsAndPatchesById) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[{"id":3,"name":"r","allowed_hosts":["a.com","b.com"]}]})");
    daemon.answer(200, R"({"id":3,"name":"r","allowed_hosts":["b.com","c.com"]})");
    auto result = run(daemon, {"agent", "edit", "r", "--allow", "c.com", "--disallow", "a.com"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 3u);
    EXPECT_EQ(daemon.calls[2].method, "PATCH");
    EXPECT_EQ(daemon.calls[2].target, "/api/v1/agents/3");
    EXPECT_EQ(json::serialize(json::parse(daemon.calls[2].body).at("allowed_hosts")),
              R"(["b.com","c.com"])");
}

// Rules are stored canonical (lower case, canonical addresses and ports); one to remove,
// written another way, still finds its entry.
TEST(Cli, DisallowFindsARuleWrittenAnotherWay) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[{"id":3,"name":"r","allowed_hosts":["localhost:8080","[fd00::1]:443","b.com"]}]})");
    daemon.answer(200, R"({"id":3,"name":"r","allowed_hosts":["b.com"]})");
    auto result = run(daemon, {"agent", "edit", "r", "--disallow", "LocalHost:08080", "--disallow",
                               "[FD00:0::1]:443"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 3u);
    EXPECT_EQ(json::serialize(json::parse(daemon.calls[2].body).at("allowed_hosts")), R"(["b.com"])");
}

TEST(Cli, AgentAddAndEditSendTheAgentsAddons) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(201, R"({"id":1,"name":"r","project":7,"harness":"shell"})");
    auto added = run(daemon, {"agent", "add", "r", "--harness", "shell", "--addon", "playwright"});
    ASSERT_EQ(added.code, kExitOk) << added.err;
    EXPECT_EQ(json::serialize(json::parse(daemon.calls[1].body).at("addons")), R"(["playwright"])");

    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[{"id":1,"name":"r","allowed_hosts":[],"addons":["playwright","old"]}]})");
    daemon.answer(200, R"({"id":1,"name":"r","addons":["playwright","shopify-cli"]})");
    auto edited = run(daemon, {"agent", "edit", "r", "--addon", "shopify-cli", "--remove-addon", "old"});
    ASSERT_EQ(edited.code, kExitOk) << edited.err;
    const auto body = json::parse(daemon.calls[4].body).as_object();
    EXPECT_EQ(json::serialize(body.at("addons")), R"(["playwright","shopify-cli"])");
    EXPECT_FALSE(body.contains("allowed_hosts")) << "only what the command changes";
}

// --model and --thinking are the agent's sessions' defaults; --no-model and --no-thinking
// clear them (null), and a flag left out leaves the field out.
TEST(Cli, AgentAddAndEditSendTheModelAndThinkingLevel) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(201, R"({"id":1,"name":"r","project":7,"harness":"codex"})");
    auto added = run(daemon, {"agent", "add", "r", "--harness", "codex", "--model", "gpt-5.1-codex", "--thinking",
                              "high"});
    ASSERT_EQ(added.code, kExitOk) << added.err;
    auto body = json::parse(daemon.calls[1].body).as_object();
    EXPECT_EQ(body.at("model"), "gpt-5.1-codex");
    EXPECT_EQ(body.at("thinking"), "high");

    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[{"id":1,"name":"r","allowed_hosts":[],"addons":[]}]})");
    daemon.answer(200, R"({"id":1,"name":"r"})");
    auto edited = run(daemon, {"agent", "edit", "r", "-m", "o3", "--no-thinking"});
    ASSERT_EQ(edited.code, kExitOk) << edited.err;
    body = json::parse(daemon.calls[4].body).as_object();
    EXPECT_EQ(body.at("model"), "o3");
    EXPECT_TRUE(body.at("thinking").is_null());

    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[{"id":1,"name":"r","allowed_hosts":[],"addons":[]}]})");
    daemon.answer(200, R"({"id":1,"name":"r"})");
    auto cleared = run(daemon, {"agent", "edit", "r", "--no-model", "--goal", "g"});
    ASSERT_EQ(cleared.code, kExitOk) << cleared.err;
    body = json::parse(daemon.calls[7].body).as_object();
    EXPECT_TRUE(body.at("model").is_null());
    EXPECT_FALSE(body.contains("thinking"));

    const auto calls = daemon.calls.size();
    auto both = run(daemon, {"agent", "edit", "r", "--model", "o3", "--no-model"});
    EXPECT_NE(both.code, kExitOk);
    EXPECT_EQ(daemon.calls.size(), calls) << "refused before asking handlerd";
}

TEST(Cli, ProjectAddSendsItsAllowedHosts) {
    FakeDaemon daemon;
    daemon.answer(201, R"({"id":7,"name":"tmp","path":"/tmp","context":null,"allowed_hosts":["pypi.org"]})");
    auto result = run(daemon, {"project", "add", "/tmp", "--allow", "pypi.org", "--allow",
                               "*.npmjs.org:443"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 1u);
    EXPECT_EQ(daemon.calls[0].method, "POST");
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/projects");
    auto body = json::parse(daemon.calls[0].body).as_object();
    EXPECT_EQ(body.at("path").as_string(), "/tmp");
    EXPECT_EQ(json::serialize(body.at("allowed_hosts")), R"(["pypi.org","*.npmjs.org:443"])");

    // Without --allow the field is left out (the daemon's default: none).
    daemon.answer(201, R"({"id":8,"name":"tmp","path":"/tmp","context":null,"allowed_hosts":[]})");
    ASSERT_EQ(run(daemon, {"project", "add", "/tmp"}).code, kExitOk);
    EXPECT_FALSE(json::parse(daemon.calls[1].body).as_object().contains("allowed_hosts"));
}

TEST(Cli, ProjectEditMergesHostsAndPatchesById) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"projects":[{"id":7,"name":"app","path":"/home/u/code/app",
        "context":null,"allowed_hosts":["a.com","b.com"]}]})");
    daemon.answer(200, R"({"id":7,"name":"app","allowed_hosts":["b.com","c.com"]})");
    auto result = run(daemon, {"project", "edit", "--allow", "c.com", "--disallow", "a.com"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 2u);
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/projects?path=%2Fhome%2Fu%2Fcode%2Fapp%2Fsrc");
    EXPECT_EQ(daemon.calls[1].method, "PATCH");
    EXPECT_EQ(daemon.calls[1].target, "/api/v1/projects/7");
    EXPECT_EQ(daemon.calls[1].body, R"({"allowed_hosts":["b.com","c.com"]})");
    EXPECT_NE(result.out.find("c.com"), std::string::npos) << result.out;

    // A folder given names the project; nothing to change is a usage error, sent nowhere.
    daemon.answer(200, R"({"projects":[{"id":9,"name":"lib","path":"/srv/lib","context":"Work",
        "allowed_hosts":[]}]})");
    auto nothing = run(daemon, {"project", "edit", "/srv/lib"});
    EXPECT_EQ(nothing.code, kExitUsage);
    EXPECT_NE(nothing.err.find("handler project edit --help"), std::string::npos) << nothing.err;
    EXPECT_EQ(daemon.calls.back().target, "/api/v1/projects?path=%2Fsrv%2Flib");

    daemon.answer(200, R"({"projects":[{"id":9,"name":"lib","path":"/srv/lib","context":"Work",
        "allowed_hosts":[]}]})");
    daemon.answer(200, R"({"id":9,"name":"core","context":null,"allowed_hosts":[]})");
    ASSERT_EQ(run(daemon, {"project", "edit", "/srv/lib", "--rename", "core", "--no-context"}).code,
              kExitOk);
    EXPECT_EQ(daemon.calls.back().target, "/api/v1/projects/9");
    EXPECT_EQ(json::parse(daemon.calls.back().body), json::parse(R"({"name":"core","context":null})"));
}

TEST(Cli, ProjectListShowsHosts) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"projects":[{"id":7,"name":"app","path":"/home/u/code/app",
        "context":null,"allowed_hosts":["pypi.org","*.npmjs.org"]}]})");
    auto result = run(daemon, {"project", "list"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("pypi.org, *.npmjs.org"), std::string::npos) << result.out;
}

TEST(Cli, UnknownAgentNamesTheProject) {
    FakeDaemon daemon;
    daemon.answer(200, kProject);
    daemon.answer(200, R"({"agents":[]})");
    auto result = run(daemon, {"agent", "rm", "ghost"});
    EXPECT_EQ(result.code, kExitRefused);
    EXPECT_NE(result.err.find("no agent named 'ghost' in project 'app'"), std::string::npos);
    EXPECT_EQ(daemon.calls.size(), 2u); // and no DELETE was sent
}

TEST(Cli, AccountAddSendsTheBaseUrlOfALocalServer) {
    FakeDaemon daemon;
    daemon.answer(201, R"({"id":1,"name":"gpu","kind":"ollama","context":null,
        "base_url":"http://10.0.0.5:11434","has_secret":false})");
    auto result = run(daemon, {"account", "add", "gpu", "--kind", "ollama", "--base-url",
                               "http://10.0.0.5:11434/"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 1u);
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/accounts");
    EXPECT_EQ(json::parse(daemon.calls[0].body),
              json::parse(R"({"name":"gpu","kind":"ollama","base_url":"http://10.0.0.5:11434/"})"));
    EXPECT_EQ(result.out, "Added account gpu (ollama, http://10.0.0.5:11434).\n");

    // The name picks the kind; without --base-url the daemon's default applies.
    daemon.answer(201, R"({"id":2,"name":"ollama","kind":"ollama","context":null,
        "base_url":"http://127.0.0.1:11434","has_secret":false})");
    ASSERT_EQ(run(daemon, {"account", "add", "ollama"}).code, kExitOk);
    EXPECT_EQ(json::parse(daemon.calls[1].body),
              json::parse(R"({"name":"ollama","kind":"ollama"})"));
}

TEST(Cli, AKeyForALocalServerIsRefusedBeforeAnythingIsCreated) {
    FakeDaemon daemon;
    auto result = run(daemon, {"account", "add", "box", "--kind", "ollama", "--api-key-stdin"});
    EXPECT_EQ(result.code, kExitUsage);
    EXPECT_EQ(result.err.rfind("handler: ollama accounts have no key; give --base-url", 0), 0u)
        << result.err;
    EXPECT_TRUE(daemon.calls.empty());
}

TEST(Cli, AccountSetUrlPatchesByIdAndListShowsIt) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"accounts":[{"id":4,"name":"box","kind":"llama-cpp","context":null,
        "base_url":"http://127.0.0.1:8080","has_secret":false}]})");
    daemon.answer(200, R"({"id":4,"name":"box","kind":"llama-cpp","context":null,
        "base_url":"http://gpu:8081","has_secret":false})");
    auto result = run(daemon, {"account", "set-url", "box", "http://GPU:8081"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 2u);
    EXPECT_EQ(daemon.calls[1].method, "PATCH");
    EXPECT_EQ(daemon.calls[1].target, "/api/v1/accounts/4");
    EXPECT_EQ(daemon.calls[1].body, R"({"base_url":"http://GPU:8081"})");
    EXPECT_NE(result.out.find("http://gpu:8081"), std::string::npos) << result.out;

    daemon.answer(200, R"({"accounts":[{"id":4,"name":"box","kind":"llama-cpp","context":null,
        "base_url":"http://gpu:8081","has_secret":false},{"id":5,"name":"anthropic",
        "kind":"anthropic-api-key","context":null,"base_url":null,"has_secret":true}]})");
    auto listed = run(daemon, {"account", "list"});
    ASSERT_EQ(listed.code, kExitOk) << listed.err;
    EXPECT_NE(listed.out.find("BASE URL"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("http://gpu:8081"), std::string::npos) << listed.out;

    EXPECT_EQ(run(daemon, {"account", "set-url", "box"}).code, kExitUsage); // URL missing
}

TEST(Cli, UsageErrorsAreExitCode2AndTouchNoDaemon) {
    FakeDaemon daemon;
    EXPECT_EQ(run(daemon, {"agent", "add", "x"}).code, kExitUsage); // --harness missing
    EXPECT_EQ(run(daemon, {"no-such-command"}).code, kExitUsage);
    EXPECT_EQ(run(daemon, {"agent", "add", "x", "--harness", "h", "--network", "sideways"}).code,
              kExitUsage);
    EXPECT_TRUE(daemon.calls.empty());
}

TEST(Cli, HelpIsExitCode0) {
    FakeDaemon daemon;
    auto result = run(daemon, {"agent", "add", "--help"});
    EXPECT_EQ(result.code, kExitOk);
    EXPECT_NE(result.out.find("--harness"), std::string::npos);
}

std::string run_shell(const std::string& script) {
    char path[] = "/tmp/handler-completion-XXXXXX";
    const int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    { std::ofstream(path) << script; }
    std::string output;
    if (FILE* pipe = ::popen((std::string("bash ") + path).c_str(), "r")) {
        char buffer[4096];
        while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
        ::pclose(pipe);
    }
    std::remove(path);
    return output;
}

TEST(Completions, BashCompletesSubcommandsAndOptionsFromTheTree) {
    FakeDaemon daemon;
    const std::string script = run(daemon, {"completions", "bash"}).out;
    auto complete = [&](const std::string& words, int current) {
        return run_shell(script + "COMP_WORDS=(" + words + "); COMP_CWORD=" +
                         std::to_string(current) + "; _handler; echo \"${COMPREPLY[*]}\"\n");
    };
    EXPECT_EQ(complete("handler ag", 1), "agent\n");
    EXPECT_EQ(complete("handler agent e", 2), "edit\n");
    EXPECT_EQ(complete("handler agent add x --har", 4), "--harness\n");
    EXPECT_EQ(complete("handler plugins list --j", 3), "--json\n");
    EXPECT_EQ(complete("handler network allow x --ses", 4), "--session\n");
}

TEST(Completions, ZshAndFishNameEveryCommand) {
    FakeDaemon daemon;
    for (const char* shell : {"zsh", "fish"}) {
        const std::string script = run(daemon, {"completions", shell}).out;
        for (const char* word : {"daemon", "status", "plugins", "context", "project", "agent",
                                 "edit", "harness", "completions"})
            EXPECT_NE(script.find(word), std::string::npos) << shell << " lacks " << word;
    }
    EXPECT_EQ(run(daemon, {"completions", "tcsh"}).code, kExitUsage);
}

} // namespace
// A run's events, one line each for a person (the text, the tool call's title, the
// result), paged through with `after`; --json gives them as the daemon does.
TEST(Cli, SessionEventsSummarisesEachEventAndPagesThrough) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"events":[
        {"session":"s_1","seq":1,"at":1,"kind":"user_prompt","payload":{"content":{"type":"text","text":"create hello.txt"}}},
        {"session":"s_1","seq":2,"at":2,"kind":"tool_call","payload":{"toolCallId":"t1","title":"Write hello.txt","kind":"edit","status":"pending"}},
        {"session":"s_1","seq":3,"at":3,"kind":"result","payload":{"stopReason":"end_turn","isError":false,"result":"Done:\nwrote it"}}]})");
    auto result = run(daemon, {"session", "events", "s_1"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(daemon.calls.at(0).target, "/api/v1/sessions/s_1/events?after=0");
    EXPECT_NE(result.out.find("create hello.txt"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("Write hello.txt (edit, t1)"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("end_turn: Done: wrote it"), std::string::npos) << result.out;

    daemon.answer(200, R"({"events":[{"session":"s_1","seq":4,"at":4,"kind":"error","payload":{"message":"x"}}]})");
    auto lines = run(daemon, {"session", "events", "s_1", "--json"});
    ASSERT_EQ(lines.code, kExitOk) << lines.err;
    EXPECT_EQ(json::parse(lines.out).at("seq").as_int64(), 4);
}

// A structured harness's answer is made of what the container printed: it reaches the
// terminal the way the session's output does, without what would act on the user's machine.
TEST(Cli, AHeadlessRunsAnswerReachesTheTerminalFiltered) {
    FakeDaemon daemon;
    daemon.answer(201, R"({"id":"s_1","state":"starting","tty":false})");
    daemon.terminal = [](api::client::TerminalHooks& hooks) -> Result<api::client::TerminalEnd> {
        hooks.events_mode("structured");
        hooks.event(json::parse(R"({"type":"event","seq":1,"kind":"result","payload":{"stopReason":"end_turn",)"
                                R"("result":"\u001b[1mDone\u001b[0m\u001b]52;c;cm0gLXJmIH4K\u0007 here"}})").as_object());
        hooks.event(json::parse(R"({"type":"event","seq":2,"kind":"error","payload":{"message":"slow\u001b[21t"}})").as_object());
        return api::client::TerminalEnd{api::client::TerminalEnd::How::exited, 0, ""};
    };
    auto result = run(daemon, {"run", "app", "-p", "go"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(daemon.calls.at(1).target, "/api/v1/sessions/s_1/terminal?events=1");
    EXPECT_EQ(result.out, "\x1b[1mDone\x1b[0m here\n");
    EXPECT_EQ(result.err, "slow\n");
}

// One session, its hosts among its fields; --json as the daemon gives it.
TEST(Cli, SessionShowPrintsTheSessionWithItsHosts) {
    FakeDaemon daemon;
    const char* record = R"({"id":"s_1","harness":"shell","state":"running",
        "model_hosts":["api.openai.com"],"addon_hosts":["cdn.example.com","late.example.com"]})";
    daemon.answer(200, record);
    auto result = run(daemon, {"session", "show", "s_1"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(daemon.calls.at(0).method, "GET");
    EXPECT_EQ(daemon.calls.at(0).target, "/api/v1/sessions/s_1");
    EXPECT_NE(result.out.find("addon_hosts: cdn.example.com, late.example.com"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("state:       running"), std::string::npos) << result.out;

    daemon.answer(200, record);
    auto as_json = run(daemon, {"session", "show", "s_1", "--json"});
    ASSERT_EQ(as_json.code, kExitOk) << as_json.err;
    EXPECT_EQ(json::parse(as_json.out), json::parse(record));

    daemon.answer(404, R"({"error":{"code":"not_found","message":"no session s_9"}})");
    auto missing = run(daemon, {"session", "show", "s_9"});
    EXPECT_NE(missing.code, kExitOk);
    EXPECT_NE(missing.err.find("no session s_9"), std::string::npos) << missing.err;
}

// Two requests, the first answered: its events as the daemon gives them.
const char* kAskedTwice = R"({"events":[
    {"session":"s_1","seq":1,"at":1,"kind":"permission_request","payload":{"toolCallId":"t1","title":"Bash: ls",
     "options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"reject_once","name":"Reject","kind":"reject_once"}]}},
    {"session":"s_1","seq":2,"at":2,"kind":"permission_answer","payload":{"toolCallId":"t1","optionId":"allow_once","kind":"allow_once"}},
    {"session":"s_1","seq":3,"at":3,"kind":"permission_request","payload":{"toolCallId":"t2","title":"Write hello.txt",
     "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always"},
                {"optionId":"no","name":"Reject","kind":"reject_once"}]}}]})";

// `handler session answer` finds the one request still open and the option a word names.
TEST(Cli, SessionAnswerAnswersTheOpenRequestWithTheOptionNamed) {
    FakeDaemon daemon;
    daemon.answer(200, kAskedTwice);
    daemon.answer(204, "");
    auto result = run(daemon, {"session", "answer", "s_1", "reject"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 2u);
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/sessions/s_1/events?after=0&limit=1000");
    EXPECT_EQ(daemon.calls[1].method, "POST");
    EXPECT_EQ(daemon.calls[1].target, "/api/v1/sessions/s_1/answers");
    EXPECT_EQ(json::parse(daemon.calls[1].body), json::parse(R"({"toolCallId":"t2","optionId":"no"})"));

    daemon.answer(200, kAskedTwice);
    auto odd = run(daemon, {"session", "answer", "s_1", "maybe"});
    EXPECT_EQ(odd.code, kExitUsage);
    EXPECT_NE(odd.err.find("it offers ok, always, no"), std::string::npos) << odd.err;

    daemon.answer(200, kAskedTwice);
    auto answered = run(daemon, {"session", "answer", "s_1", "allow", "--tool-call", "t1"});
    EXPECT_EQ(answered.code, kExitRefused);
    EXPECT_NE(answered.err.find("no open permission request for tool call t1"), std::string::npos) << answered.err;
}

TEST(Permissions, OpenRequestsAndTheOptionsAWordNames) {
    const auto events = json::parse(kAskedTwice).at("events").as_array();
    auto open = open_requests(events);
    ASSERT_EQ(open.size(), 1u);
    EXPECT_EQ(open[0].at("toolCallId").as_string(), "t2");
    // A request nothing could answer (from inside the container, its id is not a string)
    // is not open: `session answer` must not trip over it.
    auto forged_events = events;
    forged_events.push_back(json::parse(R"({"seq":4,"kind":"permission_request","payload":{"toolCallId":7,"options":[]}})"));
    EXPECT_EQ(open_requests(forged_events).size(), 1u);
    EXPECT_EQ(*choose_option(open[0], "always"), "always");
    EXPECT_EQ(*choose_option(open[0], "allow"), "ok");
    EXPECT_EQ(*choose_option(open[0], "3"), "no");
    EXPECT_EQ(*choose_option(open[0], "ok"), "ok");
    EXPECT_FALSE(choose_option(open[0], "4").ok());
    EXPECT_EQ(describe_request(open[0]), "Write hello.txt: 1 Allow, 2 Always, 3 Reject");
    json::object forged = open[0];
    forged["title"] = "x\x1b]52;c;ZXZpbA==\x07\nrm -rf";
    EXPECT_EQ(describe_request(forged), "x ]52;c;ZXZpbA==  rm -rf: 1 Allow, 2 Always, 3 Reject");
}

// The question at the terminal: a wrong word is explained and asked again; a request
// answered elsewhere is dropped without sending anything.
TEST(Permissions, TheTerminalAskerSendsWhatThePersonChose) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::ostringstream err;
    std::mutex mutex;
    std::vector<std::string> sent;
    {
        TerminalAsker asker(fds[0], err, [&](const std::string& call, const std::string& option) {
            const std::lock_guard lock(mutex);
            sent.push_back(call + " " + option);
            return std::string();
        });
        auto open = open_requests(json::parse(kAskedTwice).at("events").as_array());
        asker.asked(open[0]);
        ASSERT_EQ(::write(fds[1], "perhaps\n2\n", 10), 10);
        for (int i = 0; i < 200; ++i) {
            {
                const std::lock_guard lock(mutex);
                if (!sent.empty()) break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        json::object other = open[0];
        other["toolCallId"] = "t3";
        asker.asked(other);
        asker.answered("t3");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    ::close(fds[0]);
    ::close(fds[1]);
    EXPECT_EQ(sent, std::vector<std::string>{"t2 always"});
    EXPECT_NE(err.str().find("Write hello.txt: 1 Allow, 2 Always, 3 Reject"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("'perhaps' is not an answer"), std::string::npos) << err.str();
}

TEST(Cli, RunSendsTheModelAndTheNetworkMode) {
    FakeDaemon daemon;
    daemon.answer(201, R"({"id":"s_1","state":"starting","tty":true})");
    auto result = run(daemon, {"run", "codex", "-d", "--model", "gpt-5.1-codex", "--network", "none", "--thinking", "high"});
    ASSERT_GE(daemon.calls.size(), 1u) << result.err;
    const auto body = json::parse(daemon.calls[0].body).as_object();
    EXPECT_EQ(body.at("model").as_string(), "gpt-5.1-codex");
    EXPECT_EQ(body.at("network").as_string(), "none");
    EXPECT_EQ(body.at("thinking").as_string(), "high");
}

namespace {

// Defect 3: the home folder (or a folder above it) cannot be a project, so the error
// there points to the project's own folder and --project instead of registering it.
TEST(Cli, InTheHomeFolderTheErrorSuggestsTheProjectsOwnFolder) {
    FakeDaemon daemon;
    const auto home = [](CliContext& context) { context.home_dir = "/home/u/"; };
    for (const char* folder : {"/home/u", "/home"}) {
        daemon.answer(200, R"({"projects":[]})");
        auto result = run(daemon, {"agent", "list"}, folder, home);
        EXPECT_EQ(result.code, kExitRefused);
        EXPECT_EQ(result.err.find(std::string("handler project add ") + folder), std::string::npos)
            << result.err;
        EXPECT_NE(result.err.find("handler project add PATH"), std::string::npos) << result.err;
        EXPECT_NE(result.err.find("project's own folder"), std::string::npos) << result.err;
        EXPECT_NE(result.err.find("--project PATH"), std::string::npos) << result.err;
    }
    // Below the home folder, registering the folder is still the suggestion.
    daemon.answer(200, R"({"projects":[]})");
    auto below = run(daemon, {"agent", "list"}, "/home/u/scratch", home);
    EXPECT_NE(below.err.find("handler project add /home/u/scratch"), std::string::npos) << below.err;
}

const char* kAgents = R"({"agents":[{"id":3,"name":"reviewer","project":7}]})";

// Defect 4: whose session it is and when it started, oldest first as the API lists
// them; --json is the API's array as it came.
TEST(Cli, SessionListShowsAgentProjectAndAgeOldestFirst) {
    FakeDaemon daemon;
    const char* sessions = R"({"sessions":[
        {"id":"s_old","agent":3,"project":7,"harness":"shell","state":"exited","exit_code":0,
         "mode":"terminal","message":null,"created_at":1699999820000,"updated_at":1699999830000},
        {"id":"s_new","agent":null,"project":7,"harness":"codex","state":"running","exit_code":null,
         "mode":"headless","message":null,"created_at":1699999995000,"updated_at":1699999995000}]})";
    daemon.answer(200, sessions);
    daemon.answer(200, kAgents);
    daemon.answer(200, kProject);
    auto result = run(daemon, {"session", "list"}, "/", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 3u);
    EXPECT_EQ(daemon.calls[1].target, "/api/v1/agents");
    EXPECT_EQ(daemon.calls[2].target, "/api/v1/projects");
    std::istringstream lines(result.out);
    std::string heading, first, second;
    std::getline(lines, heading);
    std::getline(lines, first);
    std::getline(lines, second);
    EXPECT_NE(heading.find("AGENT"), std::string::npos) << result.out;
    EXPECT_NE(heading.find("PROJECT"), std::string::npos) << result.out;
    EXPECT_NE(heading.find("STARTED"), std::string::npos) << result.out;
    EXPECT_EQ(first.rfind("s_old  reviewer  app", 0), 0u) << result.out;
    EXPECT_NE(first.find("3 min ago"), std::string::npos) << result.out;
    EXPECT_EQ(second.rfind("s_new  -         app", 0), 0u) << result.out;
    EXPECT_NE(second.find("5 s ago"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("1699999"), std::string::npos) << "no raw times: " << result.out;

    daemon.answer(200, sessions);
    auto as_json = run(daemon, {"session", "list", "--json"});
    ASSERT_EQ(as_json.code, kExitOk) << as_json.err;
    EXPECT_EQ(json::parse(as_json.out), json::parse(sessions).at("sessions"));
    EXPECT_EQ(daemon.calls.size(), 4u) << "--json needs no names";
}

// Defect 5: `agent show` gives its project's name and local times; --json is unchanged.
TEST(Cli, AgentShowGivesTheProjectNameAndLocalTimes) {
    FakeDaemon daemon;
    const char* agent = R"({"agents":[{"id":3,"name":"reviewer","project":7,"harness":"shell",
        "created_at":1699992800000,"updated_at":1699999940000}]})";
    daemon.answer(200, kProject);
    daemon.answer(200, agent);
    auto result = run(daemon, {"agent", "show", "reviewer"}, "/home/u/code/app", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("project:    app\n"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("created_at: 2023-11-14 21:13:20 (2 h ago)\n"), std::string::npos)
        << result.out;
    EXPECT_NE(result.out.find("updated_at: 2023-11-14 23:12:20 (1 min ago)\n"), std::string::npos)
        << result.out;

    daemon.answer(200, kProject);
    daemon.answer(200, agent);
    auto as_json = run(daemon, {"agent", "show", "reviewer", "--json"});
    ASSERT_EQ(as_json.code, kExitOk) << as_json.err;
    EXPECT_EQ(json::parse(as_json.out), json::parse(agent).at("agents").at(0));
}

// Defect 5: `session show` names its agent and project, and gives local times.
TEST(Cli, SessionShowNamesItsAgentAndProject) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"id":"s_1","agent":3,"project":7,"state":"running",
        "learn_until":1700000600000,"created_at":1699999400000})");
    daemon.answer(200, kAgents);
    daemon.answer(200, kProject);
    auto result = run(daemon, {"session", "show", "s_1"}, "/", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("agent:       reviewer\n"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("project:     app\n"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("learn_until: 2023-11-14 23:23:20 (in 10 min)\n"), std::string::npos)
        << result.out;
    EXPECT_NE(result.out.find("created_at:  2023-11-14 23:03:20 (10 min ago)\n"), std::string::npos)
        << result.out;
}

// Defect 5: first and last seen as ages, not epoch milliseconds; --json unchanged.
TEST(Cli, NetworkLearnedShowsWhenAsAges) {
    FakeDaemon daemon;
    const char* learned = R"({"learned":[{"host":"pypi.org","port":443,"count":4,
        "first_seen":1699999700000,"last_seen":1699999958000}]})";
    daemon.answer(200, learned);
    auto result = run(daemon, {"network", "learned", "s_1"}, "/", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(daemon.calls.at(0).target, "/api/v1/sessions/s_1/learned");
    EXPECT_NE(result.out.find("pypi.org  443   4      5 min ago   42 s ago"), std::string::npos)
        << result.out;

    daemon.answer(200, learned);
    auto as_json = run(daemon, {"network", "learned", "s_1", "--json"});
    EXPECT_EQ(json::parse(as_json.out), json::parse(learned).at("learned"));
}

// `network learn`: the session's own mode through the API, until when it says in local time.
TEST(Cli, NetworkLearnAsksTheApiAndSaysUntilWhen) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"id":"s_1","network_mode":"learn","learn_until":1700000600000})");
    auto result = run(daemon, {"network", "learn", "s_1", "--minutes", "10"}, "/", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 1u);
    EXPECT_EQ(daemon.calls.at(0).method, "POST");
    EXPECT_EQ(daemon.calls.at(0).target, "/api/v1/sessions/s_1/network");
    EXPECT_EQ(json::parse(daemon.calls.at(0).body), json::parse(R"({"mode":"learn","minutes":10})"));
    EXPECT_NE(result.out.find("s_1 learns until 2023-11-14 23:23:20 (in 10 min)"), std::string::npos) << result.out;

    daemon.answer(200, R"({"id":"s_1","network_mode":"filtered","learn_until":null})");
    auto stop = run(daemon, {"network", "learn", "s_1", "--stop"});
    ASSERT_EQ(stop.code, kExitOk) << stop.err;
    EXPECT_EQ(json::parse(daemon.calls.at(1).body), json::parse(R"({"mode":"filtered"})"));
    EXPECT_NE(stop.out.find("filtered again"), std::string::npos) << stop.out;

    auto both = run(daemon, {"network", "learn", "s_1", "--stop", "--minutes", "3"});
    EXPECT_EQ(both.code, kExitUsage);
    EXPECT_EQ(daemon.calls.size(), 2u) << "nothing sent for a usage error";

    daemon.answer(409, R"({"error":{"code":"conflict","message":"session s_1 is exited; a network mode is changed only while it runs"}})");
    auto ended = run(daemon, {"network", "learn", "s_1"});
    EXPECT_NE(ended.code, kExitOk);
    EXPECT_NE(ended.err.find("only while it runs"), std::string::npos) << ended.err;
    EXPECT_EQ(json::parse(daemon.calls.at(2).body), json::parse(R"({"mode":"learn"})"));
}

// What a table prints may come from inside a container (the network log's paths, a
// session's message): escape sequences reach the terminal as spaces, C1 ones included.
TEST(Cli, TablesPrintNoControlCharactersFromTheirData) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"learned":[{"host":"evil\u001b]0;pwned\u0007.com","port":443,"count":1,
        "first_seen":1699999700000,"last_seen":1699999958000}]})");
    auto result = run(daemon, {"network", "learned", "s_1"}, "/", at_fixed_time);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(result.out.find('\x1b'), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find('\x07'), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("evil ]0;pwned .com"), std::string::npos) << result.out;
    EXPECT_EQ(printable("a\xc2\x9b" "31mb\xc2\xa0" "c"), "a 31mb\xc2\xa0" "c"); // CSI gone, NBSP kept
}

// `network log` shows who made each connection: the process (its command line is the
// container's to write, so it goes through printable()) and its tool call, or why not.
TEST(Cli, NetworkLogShowsTheProcessAndToolCallOfEachEntry) {
    FakeDaemon daemon;
    const std::string page = R"({"entries":[
        {"id":1,"at":1,"host":"api.example","port":443,"method":"CONNECT","path":"","verdict":"allow","rule":"x",
         "reason":"","secret":"","bytes_up":1,"bytes_down":2,"ended_at":null,"connection":7,"origin":"tool_call",
         "origin_note":"","process":{"pid":40,"command":"curl -s https://api.example\u001b[2J","parents":[]},
         "tool_call":{"id":"toolu_1","title":"Bash: curl"}},
        {"id":2,"at":1,"host":"api.example","port":443,"method":"CONNECT","path":"","verdict":"allow","rule":"x",
         "reason":"","secret":"","bytes_up":1,"bytes_down":2,"ended_at":null,"connection":8,"origin":"no_tool_call",
         "origin_note":"no tool call","process":{"pid":10,"command":"claude","parents":[]},"tool_call":null},
        {"id":3,"at":1,"host":"api.example","port":443,"method":"CONNECT","path":"","verdict":"deny","rule":"",
         "reason":"not allowed","secret":"","bytes_up":0,"bytes_down":0,"ended_at":null,"connection":9,
         "origin":"unknown","origin_note":"unknown: the shim did not answer","process":null,"tool_call":null}]})";
    daemon.answer(200, page);
    auto result = run(daemon, {"network", "log", "s_1"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_NE(result.out.find("PROCESS"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("TOOL CALL"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("40 curl -s https://api.example [2J"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find('\x1b'), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("toolu_1 Bash: curl"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("10 claude"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("none"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("unknown: the shim did not answer"), std::string::npos) << result.out;

    daemon.answer(200, page);
    auto as_json = run(daemon, {"network", "log", "s_1", "--json"});
    ASSERT_EQ(as_json.code, kExitOk) << as_json.err;
    const auto first = json::parse(as_json.out.substr(0, as_json.out.find('\n')));
    EXPECT_EQ(first.at("tool_call").at("id"), "toolu_1");
    EXPECT_EQ(first.at("process").at("pid"), 40);
}

TEST(TimeFormat, AgesAndLocalTimes) {
    constexpr std::int64_t kAt = 1'700'000'000'000; // 2023-11-14 22:13:20 UTC
    EXPECT_EQ(format_age(kAt, kAt + 400), "just now");
    EXPECT_EQ(format_age(kAt, kAt + 59'999), "59 s ago");
    EXPECT_EQ(format_age(kAt, kAt + 60'000), "1 min ago");
    EXPECT_EQ(format_age(kAt, kAt + 47LL * 3'600'000), "47 h ago");
    EXPECT_EQ(format_age(kAt, kAt + 49LL * 3'600'000), "2 d ago");
    EXPECT_EQ(format_age(kAt + 720'000, kAt), "in 12 min");
    EXPECT_EQ(format_local_time(kAt, 0), "2023-11-14 22:13:20");
    EXPECT_EQ(format_local_time(kAt + 999, 2 * 3600), "2023-11-15 00:13:20");
    EXPECT_EQ(format_local_time(kAt, -5 * 3600 - 1800), "2023-11-14 16:43:20");
    EXPECT_EQ(format_local_time(-1, 0), "1969-12-31 23:59:59");
    const handler::testing::FakeClock clock{kAt + 180'000};
    EXPECT_EQ(format_when(kAt, clock, FixedTimeZone{3600}), "2023-11-14 23:13:20 (3 min ago)");
}

const char* kSessionOfReviewer = R"({"id":"s_1","agent":3,"project":7,"state":"exited"})";

// Defect 6: `network allow HOST --session ID` works from any folder: the session names
// the agent and the project.
TEST(Cli, NetworkAllowWithASessionUsesItsAgentFromAnyFolder) {
    FakeDaemon daemon;
    daemon.answer(200, kSessionOfReviewer);
    daemon.answer(200, R"({"id":7,"name":"app","path":"/home/u/code/app","allowed_hosts":[]})");
    daemon.answer(200, R"({"id":3,"name":"reviewer","project":7,"allowed_hosts":["a.com"]})");
    daemon.answer(200, R"({"id":3,"name":"reviewer","project":7,"allowed_hosts":["a.com","pypi.org"]})");
    auto result = run(daemon, {"network", "allow", "pypi.org", "--session", "s_1"}, "/tmp/elsewhere");
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 4u);
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/sessions/s_1");
    EXPECT_EQ(daemon.calls[1].target, "/api/v1/projects/7");
    EXPECT_EQ(daemon.calls[2].target, "/api/v1/agents/3");
    EXPECT_EQ(daemon.calls[3].method, "PATCH");
    EXPECT_EQ(daemon.calls[3].target, "/api/v1/agents/3");
    EXPECT_EQ(daemon.calls[3].body, R"({"allowed_hosts":["a.com","pypi.org"]})");
    EXPECT_NE(result.out.find("project:       app"), std::string::npos) << result.out;
}

// A session without an agent (a harness run directly): the host goes on its project's
// list, and the output says so.
TEST(Cli, NetworkAllowForASessionWithoutAgentAddsToItsProjectAndSaysSo) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"id":"s_2","agent":null,"project":7,"state":"exited"})");
    daemon.answer(200, R"({"id":7,"name":"app","path":"/home/u/code/app","allowed_hosts":["a.com"]})");
    daemon.answer(200, R"({"id":7,"name":"app","path":"/home/u/code/app","allowed_hosts":["a.com","pypi.org"]})");
    auto result = run(daemon, {"network", "allow", "pypi.org", "--session", "s_2"}, "/");
    ASSERT_EQ(result.code, kExitOk) << result.err;
    ASSERT_EQ(daemon.calls.size(), 3u);
    EXPECT_EQ(daemon.calls[2].method, "PATCH");
    EXPECT_EQ(daemon.calls[2].target, "/api/v1/projects/7");
    EXPECT_EQ(daemon.calls[2].body, R"({"allowed_hosts":["a.com","pypi.org"]})");
    EXPECT_NE(result.out.find("Session s_2 has no agent"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("list of its project app, which every session in the project may reach"),
              std::string::npos)
        << result.out;

    // Refused: nothing is said to have been added.
    FakeDaemon refusing;
    refusing.answer(200, R"({"id":"s_2","agent":null,"project":7,"state":"exited"})");
    refusing.answer(200, R"({"id":7,"name":"app","path":"/home/u/code/app","allowed_hosts":[]})");
    refusing.answer(400, R"({"error":{"code":"invalid_argument","message":"allowed_hosts[0] '1.2.3' is not a host pattern"}})");
    auto refused = run(refusing, {"network", "allow", "1.2.3", "--session", "s_2"}, "/");
    EXPECT_EQ(refused.code, kExitRefused);
    EXPECT_EQ(refused.out.find("went on the list"), std::string::npos) << refused.out;
    EXPECT_NE(refused.err.find("is not a host pattern"), std::string::npos) << refused.err;
}

// Outside a project the error names both ways out; the words must fit the form used.
TEST(Cli, NetworkAllowOutsideAProjectNamesProjectAndSession) {
    FakeDaemon daemon;
    daemon.answer(200, R"({"projects":[]})");
    auto outside = run(daemon, {"network", "allow", "reviewer", "pypi.org"}, "/tmp/elsewhere");
    EXPECT_EQ(outside.code, kExitRefused);
    EXPECT_NE(outside.err.find("--project PATH"), std::string::npos) << outside.err;
    EXPECT_NE(outside.err.find("--session ID"), std::string::npos) << outside.err;

    const auto calls = daemon.calls.size();
    auto host_only = run(daemon, {"network", "allow", "pypi.org"});
    EXPECT_EQ(host_only.code, kExitUsage);
    EXPECT_NE(host_only.err.find("HOST --session ID"), std::string::npos) << host_only.err;
    EXPECT_EQ(run(daemon, {"network", "allow", "reviewer", "pypi.org", "--session", "s_1"}).code,
              kExitUsage);
    EXPECT_EQ(run(daemon, {"network", "allow", "pypi.org", "--session", "s_1", "--project", "/x"}).code,
              kExitUsage);
    auto no_host = run(daemon, {"network", "allow", "--session", "s_1"});
    EXPECT_EQ(no_host.code, kExitUsage);
    EXPECT_NE(no_host.err.find("give the HOST"), std::string::npos) << no_host.err;
    EXPECT_EQ(daemon.calls.size(), calls) << "usage errors ask handlerd nothing";
}

// The host names no harness's models: the plugins describe their own.
TEST(Cli, RunHelpNamesNoHarnessModels) {
    FakeDaemon daemon;
    auto result = run(daemon, {"run", "--help"});
    ASSERT_EQ(result.code, kExitOk);
    for (const char* word : {"sonnet", "opus", "claude:", "codex:", "gpt-", "anthropic/"})
        EXPECT_EQ(result.out.find(word), std::string::npos) << word << " in " << result.out;
    EXPECT_NE(result.out.find("handler plugins list --json"), std::string::npos) << result.out;
}

} // namespace

} // namespace handler::cli

namespace handler::cli {
namespace {

constexpr const char* kLoginLink =
    R"({"token":"abc","url":"http://127.0.0.1:7420/#login=abc","expires_at":1})";

TEST(CliUi, PrintUrlAsksForALinkAndOnlyPrintsIt) {
    FakeDaemon daemon;
    daemon.answer(201, kLoginLink);
    std::vector<std::string> opened;
    auto result = run(daemon, {"ui", "--print-url"}, "/home/u", [&](CliContext& context) {
        context.open_url = [&](const std::string& url) { return opened.push_back(url), true; };
    });
    EXPECT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(result.out, "http://127.0.0.1:7420/#login=abc\n");
    ASSERT_EQ(daemon.calls.size(), 1u);
    EXPECT_EQ(daemon.calls[0].method, "POST");
    EXPECT_EQ(daemon.calls[0].target, "/api/v1/ui/login-tokens");
    EXPECT_TRUE(opened.empty());
}

TEST(CliUi, OpensTheLinkAndPrintsItWhenTheBrowserCannotBeOpened) {
    FakeDaemon daemon;
    daemon.answer(201, kLoginLink);
    std::vector<std::string> opened;
    auto result = run(daemon, {"ui"}, "/home/u", [&](CliContext& context) {
        context.open_url = [&](const std::string& url) { return opened.push_back(url), true; };
    });
    EXPECT_EQ(result.code, kExitOk);
    EXPECT_EQ(opened, std::vector<std::string>{"http://127.0.0.1:7420/#login=abc"});
    EXPECT_NE(result.out.find("opened the web page"), std::string::npos) << result.out;

    daemon.answer(201, kLoginLink);
    auto failed = run(daemon, {"ui"}, "/home/u", [&](CliContext& context) {
        context.open_url = [](const std::string&) { return false; };
    });
    EXPECT_EQ(failed.code, kExitOk);
    EXPECT_NE(failed.out.find("open this link in your browser"), std::string::npos) << failed.out;
    EXPECT_NE(failed.out.find("http://127.0.0.1:7420/#login=abc"), std::string::npos);
}

TEST(CliUi, HandlerdDownOrRefusingIsReported) {
    FakeDaemon daemon;
    daemon.answer(409, R"({"error":{"code":"conflict","message":"TCP is off"}})");
    auto refused = run(daemon, {"ui", "--print-url"});
    EXPECT_EQ(refused.code, kExitRefused);
    EXPECT_NE(refused.err.find("TCP is off"), std::string::npos);
    daemon.go_away();
    EXPECT_EQ(run(daemon, {"ui"}).code, kExitUnavailable);
}

// `session changes`: the list, the notes, and with --diff each diff or the reason it is
// not there; the project's bytes never bring an escape sequence to the terminal.
TEST(Cli, SessionChangesListsFilesAndPrintsDiffsWithoutEscapes) {
    FakeDaemon daemon;
    const std::string changes = R"j({"git":true,"head":"0123456789abcdef0123","truncated":true,
        "notes":["3 more files left out (over max_files)"],
        "limits":{"max_files":500,"max_diff_bytes":1048576,"max_file_diff_bytes":262144},
        "files":[
          {"path":"hello.txt","status":"untracked","added":1,"removed":0,"binary":false,"size":3,
           "diff":"--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\u001b]52;c;cHduZWQ=\u0007\n"},
          {"path":"logo.png","status":"modified","added":null,"removed":null,"binary":true,"size":2048,
           "summary":"binary file, 2048 bytes"}]})j";
    daemon.answer(200, changes);
    auto result = run(daemon, {"session", "changes", "s_1"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_EQ(daemon.calls.at(0).target, "/api/v1/sessions/s_1/changes");
    EXPECT_NE(result.out.find("against git HEAD 0123456789ab\n"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("untracked  +1 -0   hello.txt"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("modified   binary  logo.png"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("note: 3 more files left out"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("+++ b/hello.txt"), std::string::npos) << "no diff without --diff";

    daemon.answer(200, changes);
    auto with_diff = run(daemon, {"session", "changes", "s_1", "--diff"});
    ASSERT_EQ(with_diff.code, kExitOk) << with_diff.err;
    EXPECT_NE(with_diff.out.find("+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi ]52;c;cHduZWQ= \n"), std::string::npos)
        << with_diff.out;
    EXPECT_NE(with_diff.out.find("logo.png: binary file, 2048 bytes"), std::string::npos) << with_diff.out;
    EXPECT_EQ(with_diff.out.find('\x1b'), std::string::npos) << with_diff.out;
    EXPECT_EQ(with_diff.out.find('\x07'), std::string::npos) << with_diff.out;

    daemon.answer(200, R"({"git":false,"head":null,"truncated":false,"notes":[],"limits":{},"files":[]})");
    auto none = run(daemon, {"session", "changes", "s_1"});
    ASSERT_EQ(none.code, kExitOk) << none.err;
    EXPECT_NE(none.out.find("not a git repository"), std::string::npos) << none.out;
    EXPECT_NE(none.out.find("no changes"), std::string::npos) << none.out;

    daemon.answer(200, changes);
    auto as_json = run(daemon, {"session", "changes", "s_1", "--json"});
    EXPECT_EQ(json::parse(as_json.out), json::parse(changes));
}

} // namespace
} // namespace handler::cli
