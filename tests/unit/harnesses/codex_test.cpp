// The Codex harness (harnesses/codex): its exec --json parser driven directly with the
// lines Codex 0.169.0 printed in a real run against the fake model server (plus item
// types from its event definitions), and the built plugin loaded by the real loader.
#include "codex/exec_json.hpp"

#include "unit/harnesses/harness_test_support.hpp"

#include "support/fakes.hpp"

#include <boost/json/serialize.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

namespace json = boost::json;
using handler::codex::ExecJsonParser;
using handler::plugin_common::Event;
using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::StartMode;
using handler::testing::harnesses::describe;
using handler::testing::harnesses::payload;

std::vector<Event> parse_all(std::string_view output) {
    return handler::testing::harnesses::parse_all<ExecJsonParser>(output);
}

// `codex exec --json` writing hello.txt, as 0.169.0 printed it, non-ASCII text added so
// that splits fall inside characters too.
const std::string kTranscript =
    R"({"type":"thread.started","thread_id":"01a22caf-8b3d-7662-b204-b7b4372c3952"})"
    "\n"
    R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `gpt-handler-test` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}})"
    "\n"
    R"({"type":"turn.started"})"
    "\n"
    R"j({"type":"error","message":"Reconnecting... 2/5 (unexpected status 404 Not Found: {}, url: ws://127.0.0.1:36069/v1/responses)"})j"
    "\n"
    R"({"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc \"printf '%s' \\\"hi\\\" > /home/u/project/hello.txt\"","aggregated_output":"","exit_code":null,"status":"in_progress"}})"
    "\n"
    R"({"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc \"printf '%s' \\\"hi\\\" > /home/u/project/hello.txt\"","aggregated_output":"","exit_code":0,"status":"completed"}})"
    "\n"
    "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_3\",\"type\":\"agent_message\",\"text\":\"Done: wrote "
    "hello.txt \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80\"}}\n"
    R"({"type":"turn.completed","usage":{"input_tokens":40,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0}})"
    "\n";

TEST(CodexExecJson, TurnsARealRunIntoEvents) {
    const std::vector<Event> events = parse_all(kTranscript);
    ASSERT_EQ(events.size(), 7u) << describe(events);

    // Codex's warnings and transport retries are shown: a person waiting sees why.
    EXPECT_EQ(events[0].kind, HD_EVENT_ERROR);
    EXPECT_TRUE(handler::testing::contains(events[0].json, "Model metadata for `gpt-handler-test` not found"));
    EXPECT_EQ(events[1].kind, HD_EVENT_ERROR);
    EXPECT_TRUE(handler::testing::contains(events[1].json, "Reconnecting... 2/5"));

    EXPECT_EQ(events[2].kind, HD_EVENT_TOOL_CALL);
    const json::object call = payload(events[2]);
    EXPECT_EQ(call.at("toolCallId").as_string(), "item_2");
    EXPECT_EQ(call.at("title").as_string(), R"(Run: printf '%s' \"hi\" > /home/u/project/hello.txt)");
    EXPECT_EQ(call.at("kind").as_string(), "execute");
    EXPECT_EQ(call.at("name").as_string(), "command_execution");
    EXPECT_EQ(call.at("status").as_string(), "pending");
    EXPECT_EQ(json::serialize(call.at("rawInput")),
              R"({"command":"/bin/bash -lc \"printf '%s' \\\"hi\\\" > /home/u/project/hello.txt\""})");

    EXPECT_EQ(events[3].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[3].json, R"({"toolCallId":"item_2","status":"in_progress","content":[]})");
    EXPECT_EQ(events[4].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[4].json, R"({"toolCallId":"item_2","status":"completed","content":[]})");

    EXPECT_EQ(events[5].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(payload(events[5]).at("content").at("text").as_string(),
              "Done: wrote hello.txt \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80");

    EXPECT_EQ(events[6].kind, HD_EVENT_RESULT);
    const json::object result = payload(events[6]);
    EXPECT_EQ(result.at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(result.at("isError").as_bool(), false);
    EXPECT_EQ(result.at("result").as_string(), "Done: wrote hello.txt \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80");
    EXPECT_EQ(result.at("usage").at("output_tokens").as_int64(), 20);
}

TEST(CodexExecJson, GivesTheSameEventsWhereverTheOutputIsSplit) {
    handler::testing::harnesses::expect_same_events_wherever_split<ExecJsonParser>(kTranscript, 7);
}

TEST(CodexExecJson, AFailedCommandIsAFailedUpdateWithItsOutput) {
    const auto events = parse_all(
        R"({"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"bash -lc 'make\ntest'","aggregated_output":"make: *** No rule\n","exit_code":2,"status":"completed"}})"
        "\n"
        R"({"type":"item.completed","item":{"id":"c2","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}})"
        "\n");
    ASSERT_EQ(events.size(), 4u) << describe(events);
    // Completed without having started: announced, then finished.
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "Run: make \xe2\x80\xa6");
    EXPECT_EQ(events[1].json, R"({"toolCallId":"c1","status":"failed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"make: *** No rule\n"}}]})");
    EXPECT_EQ(events[3].json, R"({"toolCallId":"c2","status":"failed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"The command was not allowed to run"}}]})");
}

TEST(CodexExecJson, FileChangesAreEditsWithTheirFiles) {
    const auto events = parse_all(
        R"({"type":"item.completed","item":{"id":"f1","type":"file_change","changes":[{"path":"/p/a.txt","kind":"add"},{"path":"/p/b.txt","kind":"update"}],"status":"completed"}})"
        "\n"
        R"({"type":"item.completed","item":{"id":"f2","type":"file_change","changes":[{"path":"/p/old.txt","kind":"delete"}],"status":"failed"}})"
        "\n");
    ASSERT_EQ(events.size(), 4u) << describe(events);
    const auto first = payload(events[0]);
    EXPECT_EQ(first.at("title").as_string(), "Edit /p/a.txt and 1 more");
    EXPECT_EQ(first.at("kind").as_string(), "edit");
    EXPECT_EQ(json::serialize(first.at("locations")), R"([{"path":"/p/a.txt"},{"path":"/p/b.txt"}])");
    EXPECT_EQ(json::serialize(first.at("rawInput")),
              R"({"changes":[{"path":"/p/a.txt","kind":"add"},{"path":"/p/b.txt","kind":"update"}]})");
    EXPECT_EQ(events[1].json, R"({"toolCallId":"f1","status":"completed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"add /p/a.txt\nupdate /p/b.txt"}}]})");
    EXPECT_EQ(payload(events[2]).at("kind").as_string(), "delete");
    EXPECT_EQ(payload(events[3]).at("status").as_string(), "failed");
}

TEST(CodexExecJson, ToolsWebSearchesReasoningAndTodos) {
    const auto events = parse_all(
        R"({"type":"item.started","item":{"id":"m1","type":"mcp_tool_call","server":"docs","tool":"lookup","arguments":{"q":"x"},"status":"in_progress"}})"
        "\n"
        R"({"type":"item.completed","item":{"id":"m1","type":"mcp_tool_call","server":"docs","tool":"lookup","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"found"}]},"status":"completed"}})"
        "\n"
        R"({"type":"item.completed","item":{"id":"w1","type":"web_search","query":"boost beast"}})"
        "\n"
        R"({"type":"item.completed","item":{"id":"r1","type":"reasoning","text":"**Planning** the change"}})"
        "\n"
        R"({"type":"item.updated","item":{"id":"t1","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write","completed":false},{"text":"test","completed":false}]}})"
        "\n");
    ASSERT_EQ(events.size(), 7u) << describe(events);
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "docs: lookup");
    EXPECT_EQ(events[2].json, R"({"toolCallId":"m1","status":"completed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"found"}}]})");
    EXPECT_EQ(payload(events[3]).at("title").as_string(), "Search the web: boost beast");
    EXPECT_EQ(payload(events[3]).at("kind").as_string(), "fetch");
    EXPECT_EQ(events[5].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    EXPECT_EQ(events[6].kind, HD_EVENT_PLAN);
    EXPECT_EQ(events[6].json, R"({"entries":[{"content":"read","status":"completed","priority":"medium"},)"
                              R"({"content":"write","status":"in_progress","priority":"medium"},)"
                              R"({"content":"test","status":"pending","priority":"medium"}]})");
}

TEST(CodexExecJson, AFailedTurnIsAnErrorAndAFailedResult) {
    const auto events = parse_all(
        R"({"type":"turn.failed","error":{"message":"stream disconnected before completion"}})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"stream disconnected before completion"})");
    EXPECT_EQ(events[1].json,
              R"({"stopReason":"end_turn","isError":true,"result":"stream disconnected before completion"})");
}

TEST(CodexExecJson, FieldsOfTheWrongTypeYieldNothingAndDoNotStopTheStream) {
    const auto events = parse_all(
        R"({"type":"item.completed","item":"not an item"})"
        "\n"
        R"({"type":"item.completed","item":{"id":7,"type":"command_execution","command":["ls"],"exit_code":"zero"}})"
        "\n"
        R"({"type":"item.completed","item":{"type":"agent_message","text":42}})"
        "\n"
        R"({"type":"turn.completed","usage":"lots"})"
        "\n"
        R"({"type":"item.completed","item":{"id":"a","type":"agent_message","text":"still here"}})"
        "\n");
    ASSERT_EQ(events.size(), 4u) << describe(events);
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "Run a command");
    EXPECT_EQ(events[1].json, R"({"toolCallId":"","status":"completed","content":[]})");
    EXPECT_EQ(events[2].json, R"({"stopReason":"end_turn","isError":false,"result":""})");
    EXPECT_EQ(events[3].json, R"({"content":{"type":"text","text":"still here"}})");
}

// ------------------------------------------------------------------ the loaded plugin

class CodexPlugin : public handler::testing::harnesses::HarnessPluginTest {
protected:
    CodexPlugin() : HarnessPluginTest("codex") {}

    static LaunchRequest request(LaunchMode mode, StartMode start, std::string prompt,
                                 std::string account_kind = "openai-api-key") {
        return HarnessPluginTest::request(mode, start, std::move(prompt), std::move(account_kind));
    }
};

const std::vector<std::string> kQuiet = {"-c",        "analytics.enabled=false",
                                         "-c",        "check_for_update_on_startup=false",
                                         "--disable", "unbounded_connection_retries",
                                         "--disable", "enable_request_compression"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

TEST_F(CodexPlugin, IsListedAndDescribesItself) {
    const auto record = registry_.record("codex");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_TRUE(handler::testing::contains(record->library, "libcodex.so"));
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    const auto value = json::parse(*text).as_object();
    EXPECT_EQ(json::serialize(value.at("default_hosts")), R"(["api.openai.com"])");
    EXPECT_EQ(value.at("credentials").as_array().at(0).at("env").as_string(), "CODEX_API_KEY");
    EXPECT_EQ(value.at("events").as_string(), "structured");
}

TEST_F(CodexPlugin, ItsImageHasBubblewrapForItsSandboxAndThePinnedCli) {
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    ASSERT_EQ(recipe->run_steps.size(), 4u);
    EXPECT_TRUE(handler::testing::contains(recipe->run_steps[0], "apt-get install -y --no-install-recommends bubblewrap"));
    // bubblewrap without "--proc DIR" before the command (a rootless container refuses a
    // new /proc), and with everything else, "--proc" after "--" included, passed on.
    EXPECT_TRUE(handler::testing::contains(recipe->run_steps[1], "> /usr/local/bin/bwrap && chmod 755 /usr/local/bin/bwrap"));
    EXPECT_TRUE(handler::testing::contains(recipe->run_steps[1], "'exec /usr/bin/bwrap \"$@\"'"));
    EXPECT_EQ(recipe->run_steps[2], "npm install -g --no-fund --no-audit @openai/codex@0.169.0");
    EXPECT_EQ(recipe->run_steps[3], "codex --version && bwrap --version");
}

// The wrapper the recipe writes, run for real by /bin/sh with `echo` standing in for
// bubblewrap: "--proc DIR" before the command goes, everything else stays as it was.
TEST_F(CodexPlugin, ItsBubblewrapWrapperLeavesOutOnlyTheNewProc) {
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    handler::testing::TempDir dir;
    std::string step = recipe->run_steps.at(1);
    const auto replace = [&step](const std::string& from, const std::string& to) {
        const auto at = step.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        step.replace(at, from.size(), to);
    };
    const std::string wrapper = (dir.path() / "bwrap").string();
    replace("exec /usr/bin/bwrap", "exec echo");
    replace("> /usr/local/bin/bwrap && chmod 755 /usr/local/bin/bwrap", "> " + wrapper + " && chmod 755 " + wrapper);
    const auto script = dir.write("step.sh", step);
    ASSERT_EQ(std::system(("/bin/sh " + script.string()).c_str()), 0) << step;
    FILE* pipe = ::popen(
        (wrapper + " --as-pid-1 --ro-bind / / --unshare-pid --proc /proc --dev /dev -- sh -c 'a  b' --proc x").c_str(),
        "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    EXPECT_EQ(::pclose(pipe), 0);
    EXPECT_EQ(out, "--as-pid-1 --ro-bind / / --unshare-pid --dev /dev -- sh -c a  b --proc x\n");
}

TEST_F(CodexPlugin, HeadlessRunsExecJsonWithTheKeyAsCodexApiKey) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "Create hello.txt");
    r.model = "gpt-5.1-codex";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              concat(concat({"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write",
                             "--model", "gpt-5.1-codex"},
                            kQuiet),
                     {"Create hello.txt"}));
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->secret_env, (std::vector<handler::plugins::SecretEnv>{{"CODEX_API_KEY", "openai-api-key"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.openai.com", 443}}));
}

TEST_F(CodexPlugin, StartModesPickTheSandboxAndApprovals) {
    EXPECT_EQ(arguments(request(LaunchMode::headless, StartMode::locked_down, "go")),
              concat(concat({"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only"}, kQuiet),
                     {"go"}));
    EXPECT_EQ(arguments(request(LaunchMode::headless, StartMode::open, "go")),
              concat(concat({"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "codex", "exec", "--json", "--skip-git-repo-check",
                             "--dangerously-bypass-approvals-and-sandbox"},
                            kQuiet),
                     {"go"}));
    // Interactive, someone can answer: it asks. (The TUI starts logged in with the key.)
    const std::vector<std::string> tui = {
        "sh", "-c", "printenv CODEX_API_KEY | codex login --with-api-key >/dev/null 2>&1; exec codex \"$@\"", "codex"};
    EXPECT_EQ(arguments(request(LaunchMode::interactive, StartMode::guarded, "")),
              concat(concat(tui, {"--sandbox", "workspace-write", "--ask-for-approval", "on-request"}), kQuiet));
    EXPECT_EQ(arguments(request(LaunchMode::interactive, StartMode::locked_down, "")),
              concat(concat(tui, {"--sandbox", "read-only", "--ask-for-approval", "on-request"}), kQuiet));
    // Without a key (a ChatGPT login), the TUI itself.
    EXPECT_EQ(arguments(request(LaunchMode::interactive, StartMode::guarded, "", "chatgpt-login")).at(0), "codex");
}

TEST_F(CodexPlugin, APromptThatLooksLikeAnOptionComesAfterDashDash) {
    const auto argv = arguments(request(LaunchMode::headless, StartMode::guarded, "-v is broken"));
    ASSERT_GE(argv.size(), 2u);
    EXPECT_EQ(argv[argv.size() - 2], "--");
    EXPECT_EQ(argv.back(), "-v is broken");
}

TEST_F(CodexPlugin, ALocalServerIsAProviderOfItsOwnWithoutAKey) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go", "ollama");
    r.account_base_url = "http://ollama.handler.internal:11434";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              concat(concat({"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"},
                            kQuiet),
                     {"-c",
                      R"(model_providers.handler-local={name="Local server", base_url="http://ollama.handler.internal:11434/v1", wire_api="responses"})",
                      "-c", R"(model_provider="handler-local")", "go"}));
    EXPECT_TRUE(spec->secret_env.empty());
    EXPECT_TRUE(spec->allowed_hosts.empty()); // handlerd allows the local server itself
}

// A ChatGPT login is Codex's own, kept in the account's folder as its CODEX_HOME.
TEST_F(CodexPlugin, AChatgptLoginLivesInTheAccountsFolder) {
    auto spec = harness_->launch(request(LaunchMode::interactive, StartMode::guarded, "", "chatgpt-login"));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->account_state_env, "CODEX_HOME");
    EXPECT_TRUE(spec->secret_env.empty());
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"chatgpt.com", 443},
                                                                              {"auth.openai.com", 443}}));
    auto with_key = harness_->launch(request(LaunchMode::interactive, StartMode::guarded, ""));
    ASSERT_TRUE(with_key) << with_key.error().message;
    EXPECT_TRUE(with_key->account_state_env.empty()) << "an API key needs no folder";
}

TEST_F(CodexPlugin, RefusesOtherAccountsAndHeadlessWithoutAPrompt) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "anthropic-api-key"));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "'anthropic-api-key'")) << spec.error().message;
    auto empty = harness_->launch(request(LaunchMode::headless, StartMode::guarded, ""));
    ASSERT_FALSE(empty);
    EXPECT_TRUE(handler::testing::contains(empty.error().message, "needs a prompt")) << empty.error().message;
}

TEST_F(CodexPlugin, ItsEventStreamParsesAcrossFeeds) { expect_plugin_events(kTranscript, parse_all(kTranscript)); }

} // namespace
