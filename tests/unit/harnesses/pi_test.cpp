// The pi harness (harnesses/pi): its --mode json parser driven directly with the lines
// pi 0.73.1 printed in a real run against the fake model server (each message_update's
// repeated "partial" message left out, as the parser ignores it), and the built plugin
// loaded by the real loader.
#include "pi/json_mode.hpp"

#include "unit/harnesses/harness_test_support.hpp"
#include "support/fakes.hpp"

#include <boost/json/serialize.hpp>

#include <fstream>
#include <iterator>

namespace {

namespace json = boost::json;
using handler::pi::JsonModeParser;
using handler::plugin_common::Event;
using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::StartMode;
using handler::testing::harnesses::describe;
using handler::testing::harnesses::payload;

std::vector<Event> parse_all(std::string_view output) {
    return handler::testing::harnesses::parse_all<JsonModeParser>(output);
}

const std::string kTranscript =
    R"({"type":"session","version":3,"id":"01a22cb0-02e2-725f-a5e6-281c41995357","timestamp":"2026-11-30T13:41:02.306Z","cwd":"/home/u/project"})"
    "\n"
    R"({"type":"agent_start"})"
    "\n"
    R"({"type":"turn_start"})"
    "\n"
    R"({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"create hello.txt containing hi"}],"timestamp":1796046062330}})"
    "\n"
    R"({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11,"cost":{"input":5e-05,"output":2.5e-05,"cacheRead":0,"cacheWrite":0,"total":7.500000000000001e-05}},"stopReason":"stop","timestamp":1796046062382}})"
    "\n"
    R"({"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":0}})"
    "\n"
    "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":"
    "\"I'll create the file \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80\"}}\n"
    R"({"type":"message_update","assistantMessageEvent":{"type":"toolcall_delta","contentIndex":1,"delta":"{\"path\": \"/home/u/project/he"}})"
    "\n"
    R"({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi"}}}})"
    "\n"
    R"({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"I'll create the file."},{"type":"toolCall","id":"toolu_fake","name":"write","arguments":{"path":"/home/u/project/hello.txt","content":"hi"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":30,"cost":{"input":5e-05,"output":0.0005,"cacheRead":0,"cacheWrite":0,"total":0.00055}},"stopReason":"toolUse","timestamp":1796046062382,"responseId":"msg_fake"}})"
    "\n"
    R"({"type":"tool_execution_start","toolCallId":"toolu_fake","toolName":"write","args":{"path":"/home/u/project/hello.txt","content":"hi"}})"
    "\n"
    R"({"type":"tool_execution_end","toolCallId":"toolu_fake","toolName":"write","result":{"content":[{"type":"text","text":"Successfully wrote 2 bytes to /home/u/project/hello.txt"}]},"isError":false})"
    "\n"
    R"({"type":"message_start","message":{"role":"toolResult","toolCallId":"toolu_fake","toolName":"write","content":[{"type":"text","text":"Successfully wrote 2 bytes to /home/u/project/hello.txt"}],"isError":false,"timestamp":1796046062420}})"
    "\n"
    R"({"type":"turn_start"})"
    "\n"
    R"({"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","stopReason":"stop"}})"
    "\n"
    R"({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Done: wrote hello.txt"}})"
    "\n"
    R"({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done: wrote hello.txt"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-7","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":30,"cost":{"input":5e-05,"output":0.0005,"cacheRead":0,"cacheWrite":0,"total":0.00055}},"stopReason":"stop","timestamp":1796046062420,"responseId":"msg_fake"}})"
    "\n"
    R"({"type":"agent_end","messages":[]})"
    "\n";

TEST(PiJsonMode, TurnsARealRunIntoEvents) {
    const std::vector<Event> events = parse_all(kTranscript);
    ASSERT_EQ(events.size(), 7u) << describe(events);

    EXPECT_EQ(events[0].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(events[0].json, R"({"modeId":"default","model":"anthropic/claude-opus-4-7"})");

    // Chunks come from the deltas, as they stream.
    EXPECT_EQ(events[1].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(payload(events[1]).at("content").at("text").as_string(),
              "I'll create the file \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80");

    EXPECT_EQ(events[2].kind, HD_EVENT_TOOL_CALL);
    const json::object call = payload(events[2]);
    EXPECT_EQ(call.at("toolCallId").as_string(), "toolu_fake");
    EXPECT_EQ(call.at("title").as_string(), "write hello.txt");
    EXPECT_EQ(call.at("kind").as_string(), "edit");
    EXPECT_EQ(call.at("name").as_string(), "write");
    EXPECT_EQ(json::serialize(call.at("rawInput")), R"({"path":"/home/u/project/hello.txt","content":"hi"})");
    EXPECT_EQ(json::serialize(call.at("locations")), R"([{"path":"/home/u/project/hello.txt"}])");

    EXPECT_EQ(events[3].json, R"({"toolCallId":"toolu_fake","status":"in_progress","content":[]})");
    EXPECT_EQ(events[4].json, R"({"toolCallId":"toolu_fake","status":"completed","content":[{"type":"content",)"
                              R"("content":{"type":"text","text":"Successfully wrote 2 bytes to /home/u/project/hello.txt"}}]})");

    EXPECT_EQ(events[5].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(events[5].json, R"({"content":{"type":"text","text":"Done: wrote hello.txt"}})");

    EXPECT_EQ(events[6].kind, HD_EVENT_RESULT);
    const json::object result = payload(events[6]);
    EXPECT_EQ(result.at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(result.at("isError").as_bool(), false);
    EXPECT_EQ(result.at("result").as_string(), "Done: wrote hello.txt");
    EXPECT_DOUBLE_EQ(result.at("costUsd").as_double(), 0.0011);
    EXPECT_EQ(result.at("numTurns").as_int64(), 2);
}

TEST(PiJsonMode, GivesTheSameEventsWhereverTheOutputIsSplit) {
    handler::testing::harnesses::expect_same_events_wherever_split<JsonModeParser>(kTranscript, 7);
}

TEST(PiJsonMode, AModelErrorIsAnErrorAndAFailedResult) {
    const auto events = parse_all(
        R"({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 overloaded"})"
        "\n"
        R"({"type":"auto_retry_end","success":false,"attempt":3,"finalError":"529 overloaded_error: Overloaded"})"
        "\n"
        R"({"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"529 overloaded_error: Overloaded"}})"
        "\n"
        R"({"type":"agent_end","messages":[]})"
        "\n");
    ASSERT_EQ(events.size(), 4u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"retrying after: 529 overloaded"})");
    EXPECT_EQ(events[1].json, R"({"message":"529 overloaded_error: Overloaded"})");
    EXPECT_EQ(events[2].json, R"({"message":"529 overloaded_error: Overloaded"})");
    EXPECT_EQ(events[3].json, R"({"stopReason":"end_turn","isError":true,"result":"529 overloaded_error: Overloaded",)"
                              R"("numTurns":1})");
}

TEST(PiJsonMode, AnEndWithoutAnyAnswerIsAFailureAndAnAbortIsCancelled) {
    const auto none = parse_all(R"({"type":"agent_end","messages":[]})"
                                "\n");
    ASSERT_EQ(none.size(), 2u) << describe(none);
    EXPECT_EQ(none[0].json, R"({"message":"pi ended without an answer from the model"})");
    EXPECT_EQ(payload(none[1]).at("isError").as_bool(), true);

    const auto aborted = parse_all(
        R"({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"partial"}],"stopReason":"aborted"}})"
        "\n"
        R"({"type":"agent_end","messages":[]})"
        "\n");
    ASSERT_EQ(aborted.size(), 1u) << describe(aborted);
    EXPECT_EQ(aborted[0].json, R"({"stopReason":"cancelled","isError":false,"result":"partial","numTurns":1})");
}

TEST(PiJsonMode, ThinkingToolTitlesAndFailedTools) {
    const auto events = parse_all(
        R"({"type":"session","cwd":"/p"})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"Let me look"}})"
        "\n"
        R"({"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{"command":"ls -la\necho done"}})"
        "\n"
        R"({"type":"tool_execution_end","toolCallId":"t1","toolName":"bash","result":{"content":[{"type":"text","text":"exit 2"}]},"isError":true})"
        "\n"
        R"({"type":"tool_execution_start","toolCallId":"t2","toolName":"grep","args":{"pattern":"TODO","path":"/p/src"}})"
        "\n");
    ASSERT_EQ(events.size(), 6u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    // A call pi starts without the message that made it having ended is announced first.
    EXPECT_EQ(payload(events[1]).at("title").as_string(), "bash: ls -la \xe2\x80\xa6");
    EXPECT_EQ(payload(events[1]).at("kind").as_string(), "execute");
    EXPECT_EQ(payload(events[3]).at("status").as_string(), "failed");
    EXPECT_EQ(payload(events[4]).at("title").as_string(), "grep TODO in src");
    EXPECT_EQ(payload(events[4]).at("kind").as_string(), "search");
}

TEST(PiJsonMode, FieldsOfTheWrongTypeYieldNothingAndDoNotStopTheStream) {
    const auto events = parse_all(
        R"({"type":"message_end","message":"gone"})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":7}})"
        "\n"
        R"({"type":"tool_execution_end","toolCallId":3,"result":"x"})"
        "\n"
        R"({"type":"message_end","message":{"role":"assistant","content":[1,{"type":"toolCall","id":"c","name":5,"arguments":"x"}],"usage":{"cost":{"total":"free"}}}})"
        "\n"
        R"({"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"still here"}})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(payload(events[0]).at("toolCallId").as_string(), "c");
    EXPECT_EQ(payload(events[0]).at("rawInput").as_string(), "x");
    EXPECT_EQ(events[1].json, R"({"content":{"type":"text","text":"still here"}})");
}

// ------------------------------------------------------------------ the loaded plugin

class PiPlugin : public handler::testing::harnesses::HarnessPluginTest {
protected:
    PiPlugin() : HarnessPluginTest("pi") {}

    static LaunchRequest request(LaunchMode mode, StartMode start, std::string prompt,
                                 std::string account_kind = "anthropic-api-key") {
        return HarnessPluginTest::request(mode, start, std::move(prompt), std::move(account_kind));
    }
};

TEST_F(PiPlugin, IsListedAndItsImageInstallsThePinnedCli) {
    const auto record = registry_.record("pi");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_TRUE(handler::testing::contains(record->library, "libpi.so"));
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    EXPECT_EQ(recipe->run_steps,
              (std::vector<std::string>{"npm install -g --no-fund --no-audit @mariozechner/pi-coding-agent@0.73.1",
                                        "pi --version"}));
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    EXPECT_EQ(json::parse(*text).at("credentials").as_array().size(), 7u);
}

TEST_F(PiPlugin, HeadlessRunsJsonModeWithTheProviderOfTheAccount) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "Create hello.txt"));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              (std::vector<std::string>{"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "pi", "-p", "--mode", "json",
                                        "--no-session", "--provider", "anthropic", "--tools", "read,bash,edit,write",
                                        "Create hello.txt"}));
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->secret_env,
              (std::vector<handler::plugins::SecretEnv>{{"ANTHROPIC_API_KEY", "anthropic-api-key"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.anthropic.com", 443}}));
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{
                             {"PI_OFFLINE", "1"}, {"PI_SKIP_VERSION_CHECK", "1"}, {"PI_TELEMETRY", "0"}}));
}

TEST_F(PiPlugin, EachAccountKindHasItsVariableAndHost) {
    const std::vector<std::array<std::string, 4>> cases = {
        {"claude-subscription", "ANTHROPIC_OAUTH_TOKEN", "api.anthropic.com", "anthropic"},
        {"openai-api-key", "OPENAI_API_KEY", "api.openai.com", "openai"},
        {"openrouter-api-key", "OPENROUTER_API_KEY", "openrouter.ai", "openrouter"},
        {"mistral-api-key", "MISTRAL_API_KEY", "api.mistral.ai", "mistral"},
    };
    for (const auto& [kind, variable, host, provider] : cases) {
        auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", kind));
        ASSERT_TRUE(spec) << kind << ": " << spec.error().message;
        EXPECT_EQ(spec->secret_env, (std::vector<handler::plugins::SecretEnv>{{variable, kind}})) << kind;
        EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{host, 443}})) << kind;
        const auto at = std::find(spec->arguments.begin(), spec->arguments.end(), "--provider");
        ASSERT_LT(at + 1, spec->arguments.end()) << kind;
        EXPECT_EQ(*(at + 1), provider) << kind;
    }
}

TEST_F(PiPlugin, StartModesPickItsTools) {
    const auto tools_of = [&](StartMode start) {
        const auto argv = arguments(request(LaunchMode::headless, start, "go"));
        const auto at = std::find(argv.begin(), argv.end(), "--tools");
        return at == argv.end() || at + 1 == argv.end() ? std::string("(none)") : *(at + 1);
    };
    EXPECT_EQ(tools_of(StartMode::locked_down), "read,grep,find,ls");
    EXPECT_EQ(tools_of(StartMode::guarded), "read,bash,edit,write");
    EXPECT_EQ(tools_of(StartMode::open), "read,bash,edit,write,grep,find,ls");
}

TEST_F(PiPlugin, AModelWithItsProviderAndAnOptionLikePrompt) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::guarded, "-v is broken");
    r.model = "openrouter/qwen/qwen3-coder";
    // pi takes no "--": a leading space keeps the prompt from being read as an option.
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"pi", "--model", "openrouter/qwen/qwen3-coder", "--tools",
                                                      "read,bash,edit,write", " -v is broken"}));
}

// A local server is a provider of pi's own models.json, written into the session's home
// before pi starts (the script run here for real by /bin/sh, with echo standing in for pi).
TEST_F(PiPlugin, ALocalServerIsAProviderInItsModelsFile) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go", "ollama");
    r.account_base_url = "http://ollama.handler.internal:11434";
    r.model = "qwen3-coder";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_GE(spec->arguments.size(), 5u);
    EXPECT_EQ(std::vector<std::string>(spec->arguments.begin() + 5, spec->arguments.end()),
              (std::vector<std::string>{"-p", "--mode", "json", "--no-session", "--provider", "handler-local",
                                        "--model", "qwen3-coder", "--tools", "read,bash,edit,write", "go"}));
    EXPECT_TRUE(spec->secret_env.empty());
    EXPECT_TRUE(spec->allowed_hosts.empty()) << "handlerd adds the server's own rule";

    handler::testing::TempDir home;
    auto argv = spec->arguments;
    argv[3] = "echo";
    EXPECT_EQ(handler::testing::harnesses::run_argv(argv, home.path().string()),
              "-p --mode json --no-session --provider handler-local --model qwen3-coder --tools read,bash,edit,write go\n");
    std::ifstream file(home.path() / ".pi/agent/models.json");
    const auto models = json::parse(std::string(std::istreambuf_iterator<char>(file), {}));
    EXPECT_EQ(models, json::parse(R"({"providers":{"handler-local":{"baseUrl":"http://ollama.handler.internal:11434/v1",)"
                                  R"("api":"openai-completions","apiKey":"handler-local","models":[{"id":"qwen3-coder"}]}}})"));

    r.model.clear();
    auto unnamed = harness_->launch(r);
    ASSERT_FALSE(unnamed);
    EXPECT_TRUE(handler::testing::contains(unnamed.error().message, "--model NAME")) << unnamed.error().message;
}

TEST_F(PiPlugin, AThinkingLevelIsItsThinking) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::guarded, "");
    r.thinking_level = "off";
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"pi", "--provider", "anthropic", "--thinking", "off", "--tools",
                                                      "read,bash,edit,write"}));
    r.thinking_level = "max";
    auto refused = harness_->launch(r);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, handler::ErrorCode::invalid_argument);
}

TEST_F(PiPlugin, RefusesOtherAccountsAndHeadlessWithoutAPrompt) {
    auto other = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "chatgpt-login"));
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(other.error().message, "'chatgpt-login'")) << other.error().message;
    auto empty = harness_->launch(request(LaunchMode::headless, StartMode::guarded, ""));
    ASSERT_FALSE(empty);
    EXPECT_TRUE(handler::testing::contains(empty.error().message, "needs a prompt")) << empty.error().message;
}

TEST_F(PiPlugin, ItsEventStreamParsesAcrossFeeds) { expect_plugin_events(kTranscript, parse_all(kTranscript)); }

} // namespace
