// The Mistral Vibe harness (harnesses/vibe): its streaming-output parser driven directly
// with lines shaped as Vibe 2.18.4's source prints them (json.dump of
// LLMMessage.model_dump(mode="json"): every field, Python's ", " and ": " separators,
// raw UTF-8), and the built plugin loaded by the real loader for describe, the image
// recipe, launch and the events call. Vibe itself cannot be installed here, so no line
// below was printed by a real run.
#include "vibe/streaming.hpp"

#include "unit/harnesses/harness_test_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace vibe_test {
namespace {

namespace json = boost::json;
using handler::plugin_common::Event;
using handler::testing::harnesses::describe;
using handler::testing::harnesses::payload;
using handler::vibe::StreamingParser;

// ------------------------------------------------------------------ the parser

std::vector<Event> parse_all(std::string_view output) {
    return handler::testing::harnesses::parse_all<StreamingParser>(output);
}

// The fields every line has after the ones a test sets (LLMMessage's field order).
std::string message_line(std::string_view role, std::string_view fields) {
    std::string line = R"({"role": ")" + std::string(role) + "\", " + std::string(fields);
    return line + "}\n";
}

// A headless run writing hello.txt whose `make test` is refused (no approval headless,
// unlike read-only commands such as ls, which bash's allowlist lets through), with a
// stray line rich printed to stdout, the user's prompt and one of Vibe's own injected
// reminders (both skipped), and non-ASCII text so that splits fall inside characters.
const std::string kTranscript =
    "Could not create default config file: [Errno 13] Permission denied: '/home/u/.vibe/config.toml'\n"
    R"json({"role": "system", "content": "You are Mistral Vibe, a CLI coding agent.\n\nYou are running in headless mode )json"
    "\xe2\x80\x94"
    R"json( no human is available to respond.\n\nAbsolute path: /home/u/project\n\ngitStatus: This is the git status at the start of the conversation.\nCurrent branch: main\n\n## Project instructions (checked into the codebase)\n\nContents of /home/u/project/AGENTS.md:\n\nAbsolute path: /elsewhere", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": null, "tool_call_id": null, "message_id": "5f0c6a8e-3b1d-4f7a-9c2e-1d4b8a7e6f01", "user_display_content": null})json"
    "\n"
    R"json({"role": "user", "content": "Create hello.txt containing hi", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": null, "tool_call_id": null, "message_id": "0b7d3c1a-8e4f-4a2b-b6d9-2c5e7f8a9b02", "user_display_content": null})json"
    "\n"
    R"json({"role": "assistant", "content": "I'll create the file )json"
    "\xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80"
    R"json(", "images": null, "injected": false, "reasoning_content": "The user wants a file.", "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": "9a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c03", "tool_calls": [{"id": "D681PevKs", "index": 0, "function": {"name": "write_file", "arguments": "{\"path\": \"/home/u/project/hello.txt\", \"content\": \"hi\\n\"}"}, "type": "function"}], "name": null, "tool_call_id": null, "message_id": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e04", "user_display_content": null})json"
    "\n"
    R"json({"role": "tool", "content": "path: /home/u/project/hello.txt\nbytes_written: 3\ncontent: hi\n", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": "write_file", "tool_call_id": "D681PevKs", "message_id": null, "user_display_content": null})json"
    "\n"
    R"json({"role": "assistant", "content": "", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": [{"id": "x2Hq7LmPz", "index": 0, "function": {"name": "bash", "arguments": "{\"command\": \"make test\", \"timeout\": null}"}, "type": "function"}], "name": null, "tool_call_id": null, "message_id": "4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f05", "user_display_content": null})json"
    "\n"
    R"json({"role": "tool", "content": "Tool execution not permitted.", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": "bash", "tool_call_id": "x2Hq7LmPz", "message_id": null, "user_display_content": null})json"
    "\n"
    R"json({"role": "user", "content": "<vibe_warning>You have used 51% of your total context (102,400/200,000 tokens)</vibe_warning>", "images": null, "injected": true, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": null, "tool_call_id": null, "message_id": "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a06", "user_display_content": null})json"
    "\n"
    R"json({"role": "assistant", "content": "Done: wrote hello.txt", "images": null, "injected": false, "reasoning_content": null, "reasoning_state": null, "reasoning_signature": null, "reasoning_message_id": null, "tool_calls": null, "name": null, "tool_call_id": null, "message_id": "6f7a8b9c-0d1e-4f2a-9b3c-4d5e6f7a8b07", "user_display_content": null})json"
    "\n";

TEST(VibeStreaming, TurnsARunIntoEvents) {
    const std::vector<Event> events = parse_all(kTranscript);
    ASSERT_EQ(events.size(), 8u) << describe(events);

    EXPECT_EQ(events[0].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    EXPECT_EQ(events[0].json, R"({"content":{"type":"text","text":"The user wants a file."}})");

    EXPECT_EQ(events[1].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(payload(events[1]).at("content").at("text").as_string(),
              "I'll create the file \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80");

    EXPECT_EQ(events[2].kind, HD_EVENT_TOOL_CALL);
    const json::object write = payload(events[2]);
    EXPECT_EQ(write.at("toolCallId").as_string(), "D681PevKs");
    EXPECT_EQ(write.at("title").as_string(), "Write hello.txt"); // relative to the system prompt's path
    EXPECT_EQ(write.at("name").as_string(), "write_file");
    EXPECT_EQ(write.at("kind").as_string(), "edit");
    EXPECT_EQ(write.at("status").as_string(), "pending");
    // The arguments string is the model's JSON, given as the object it holds.
    EXPECT_EQ(json::serialize(write.at("rawInput")), R"({"path":"/home/u/project/hello.txt","content":"hi\n"})");
    EXPECT_EQ(json::serialize(write.at("locations")), R"([{"path":"/home/u/project/hello.txt"}])");

    EXPECT_EQ(events[3].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[3].json,
              R"({"toolCallId":"D681PevKs","status":"completed","content":[{"type":"content","content":)"
              R"({"type":"text","text":"path: /home/u/project/hello.txt\nbytes_written: 3\ncontent: hi\n"}}]})");

    // An assistant message with only a tool call: no empty message chunk.
    EXPECT_EQ(events[4].kind, HD_EVENT_TOOL_CALL);
    const json::object bash = payload(events[4]);
    EXPECT_EQ(bash.at("title").as_string(), "bash: make test");
    EXPECT_EQ(bash.at("kind").as_string(), "execute");
    EXPECT_EQ(json::serialize(bash.at("rawInput")), R"({"command":"make test","timeout":null})");
    EXPECT_FALSE(bash.contains("locations"));

    // Refused for want of approval: a failed call, with Vibe's words.
    EXPECT_EQ(events[5].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[5].json,
              R"({"toolCallId":"x2Hq7LmPz","status":"failed","content":[{"type":"content","content":)"
              R"({"type":"text","text":"Tool execution not permitted."}}]})");

    EXPECT_EQ(events[6].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(events[6].json, R"({"content":{"type":"text","text":"Done: wrote hello.txt"}})");

    // The answer without a tool call ends Vibe's loop: it is the run's result.
    EXPECT_EQ(events[7].kind, HD_EVENT_RESULT);
    EXPECT_EQ(events[7].json, R"({"stopReason":"end_turn","isError":false,"result":"Done: wrote hello.txt"})");
}

TEST(VibeStreaming, GivesTheSameEventsWhereverTheOutputIsSplit) {
    handler::testing::harnesses::expect_same_events_wherever_split<StreamingParser>(kTranscript, 8);
}

// The tool call event for one call of `name` with `arguments` (a JSON text), after a
// system prompt that puts Vibe in /p.
json::object tool_call_for(std::string_view name, std::string_view arguments) {
    const std::string system = message_line(
        "system", R"json("content": "Intro\nAbsolute path: /p/\n\ngitStatus: (clean)", "images": null, "injected": false)json");
    const std::string assistant = message_line(
        "assistant", R"json("content": "", "tool_calls": [{"id": "call1", "index": 0, "function": {"name": ")json" +
                         std::string(name) + R"json(", "arguments": )json" + json::serialize(json::string_view(arguments.data(), arguments.size())) +
                         R"json(}, "type": "function"}])json");
    const auto events = parse_all(system + assistant);
    EXPECT_GE(events.size(), 1u) << describe(events);
    if (events.empty() || events[0].kind != HD_EVENT_TOOL_CALL) return {};
    return payload(events[0]);
}

TEST(VibeStreaming, ToolCallsGetAKindAndATitle) {
    auto read = tool_call_for("read", R"({"file_path": "/p/src/main.cpp", "offset": null, "limit": 2000})");
    EXPECT_EQ(read.at("kind").as_string(), "read");
    EXPECT_EQ(read.at("title").as_string(), "Read src/main.cpp");
    EXPECT_EQ(json::serialize(read.at("locations")), R"([{"path":"/p/src/main.cpp"}])");

    auto edit = tool_call_for("edit", R"({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"})");
    EXPECT_EQ(edit.at("kind").as_string(), "edit");
    EXPECT_EQ(edit.at("title").as_string(), "Edit /etc/hosts");
    EXPECT_EQ(json::serialize(edit.at("locations")), R"([{"path":"/etc/hosts"}])");

    // A relative path is Vibe's folder's: the location is made absolute.
    auto relative = tool_call_for("write_file", R"({"path": "notes/todo.md", "content": "x"})");
    EXPECT_EQ(relative.at("title").as_string(), "Write notes/todo.md");
    EXPECT_EQ(json::serialize(relative.at("locations")), R"([{"path":"/p/notes/todo.md"}])");

    auto bash = tool_call_for("bash", R"({"command": "make\nmake test"})");
    EXPECT_EQ(bash.at("kind").as_string(), "execute");
    EXPECT_EQ(bash.at("title").as_string(), "bash: make \xe2\x80\xa6");

    auto grep = tool_call_for("grep", R"({"pattern": "TODO", "path": "/p/src"})");
    EXPECT_EQ(grep.at("kind").as_string(), "search");
    EXPECT_EQ(grep.at("title").as_string(), "grep TODO in src");
    EXPECT_FALSE(grep.contains("locations"));
    EXPECT_EQ(tool_call_for("grep", R"({"pattern": "TODO", "path": "."})").at("title").as_string(), "grep TODO");

    auto fetch = tool_call_for("web_fetch", R"({"url": "https://example.com"})");
    EXPECT_EQ(fetch.at("kind").as_string(), "fetch");
    EXPECT_EQ(fetch.at("title").as_string(), "Fetch https://example.com");
    auto search = tool_call_for("web_search", R"({"query": "acp"})");
    EXPECT_EQ(search.at("kind").as_string(), "search");
    EXPECT_EQ(search.at("title").as_string(), "Search the web: acp");

    auto task = tool_call_for("task", R"({"task": "Find the parser", "agent": "explore"})");
    EXPECT_EQ(task.at("kind").as_string(), "other");
    EXPECT_EQ(task.at("title").as_string(), "Task: Find the parser");
    auto skill = tool_call_for("skill", R"({"name": "release"})");
    EXPECT_EQ(skill.at("kind").as_string(), "read");
    EXPECT_EQ(skill.at("title").as_string(), "Load skill release");
    EXPECT_EQ(tool_call_for("todo", R"({"action": "read"})").at("title").as_string(), "Read the plan");

    auto mcp = tool_call_for("github_create_issue", R"({"title": "x"})");
    EXPECT_EQ(mcp.at("kind").as_string(), "other");
    EXPECT_EQ(mcp.at("title").as_string(), "github_create_issue");
    EXPECT_EQ(mcp.at("name").as_string(), "github_create_issue");
}

TEST(VibeStreaming, ArgumentsThatAreNotJsonStayAsTheyCame) {
    auto broken = tool_call_for("bash", R"({"command": "ls)");
    EXPECT_EQ(broken.at("rawInput").as_string(), R"({"command": "ls)");
    EXPECT_EQ(broken.at("title").as_string(), "bash");

    const auto events = parse_all(message_line(
        "assistant",
        R"json("content": null, "tool_calls": [{"id": "c2", "index": 0, "function": {"name": "todo", "arguments": null}, "type": "function"}])json"));
    ASSERT_EQ(events.size(), 1u) << describe(events); // a call, so not the end either
    EXPECT_EQ(json::serialize(payload(events[0]).at("rawInput")), "{}");
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "todo");
}

TEST(VibeStreaming, TodoWriteAlsoUpdatesThePlan) {
    const auto events = parse_all(message_line(
        "assistant",
        R"json("content": "", "tool_calls": [{"id": "t1", "index": 0, "function": {"name": "todo", "arguments": "{\"action\": \"write\", \"todos\": [)json"
        R"json({\"id\": \"1\", \"content\": \"Write the test\", \"status\": \"completed\", \"priority\": \"high\"}, )json"
        R"json({\"id\": \"2\", \"content\": \"Fix the bug\", \"status\": \"in_progress\"}, )json"
        R"json({\"id\": \"3\", \"content\": \"Old idea\", \"status\": \"cancelled\", \"priority\": \"low\"}, )json"
        R"json({\"id\": \"4\", \"content\": \"Tidy up\", \"priority\": \"low\"}]}"}, "type": "function"}])json"));
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL);
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "Update the plan");
    EXPECT_EQ(payload(events[0]).at("kind").as_string(), "other");
    EXPECT_EQ(events[1].kind, HD_EVENT_PLAN);
    EXPECT_EQ(events[1].json,
              R"({"entries":[{"content":"Write the test","status":"completed","priority":"high"},)"
              R"({"content":"Fix the bug","status":"in_progress","priority":"medium"},)"
              R"({"content":"Tidy up","status":"pending","priority":"low"}]})");
}

std::string tool_message(std::string_view content) {
    return message_line("tool", R"json("content": )json" + json::serialize(json::string_view(content.data(), content.size())) +
                                    R"json(, "images": null, "injected": false, "name": "bash", "tool_call_id": "c9", "message_id": null)json");
}

TEST(VibeStreaming, ToolResultsFailAsVibeWordsAFailure) {
    const auto status_and_text = [](std::string_view content) {
        const auto events = parse_all(tool_message(content));
        EXPECT_EQ(events.size(), 1u) << describe(events);
        if (events.size() != 1u) return std::string("(none)");
        const json::object update = payload(events[0]);
        EXPECT_EQ(update.at("toolCallId").as_string(), "c9");
        const json::array& content_list = update.at("content").as_array();
        const std::string text =
            content_list.empty() ? std::string() : std::string(content_list[0].at("content").at("text").as_string());
        return std::string(update.at("status").as_string()) + " | " + text;
    };
    // A tool that raised (here bash's non-zero exit), an unknown tool: tagged, tag removed.
    EXPECT_EQ(status_and_text("<tool_error>bash failed: Command failed: 'false'\nReturn code: 1</tool_error>"),
              "failed | bash failed: Command failed: 'false'\nReturn code: 1");
    EXPECT_EQ(status_and_text("<tool_error>frobnicate: Unknown tool 'frobnicate'</tool_error>"),
              "failed | frobnicate: Unknown tool 'frobnicate'");
    EXPECT_EQ(status_and_text("<user_cancellation>Tool execution interrupted by user.</user_cancellation>"),
              "failed | Tool execution interrupted by user.");
    // Refused: the denylist, a tool set to "never".
    EXPECT_EQ(status_and_text("Command denied: 'python3' is not allowed as a standalone command. Do not attempt to "
                              "run this command."),
              "failed | Command denied: 'python3' is not allowed as a standalone command. Do not attempt to run "
              "this command.");
    EXPECT_EQ(status_and_text("Tool 'web_fetch' is permanently disabled"),
              "failed | Tool 'web_fetch' is permanently disabled");
    // A result that merely mentions a tag, or is empty, succeeded.
    EXPECT_EQ(status_and_text("command: grep -r '<tool_error>' .\nstdout: x\nstderr: \nreturncode: 0"),
              "completed | command: grep -r '<tool_error>' .\nstdout: x\nstderr: \nreturncode: 0");
    EXPECT_EQ(status_and_text(""), "completed | ");
}

TEST(VibeStreaming, AnAnswerWithoutTextIsAResultWithoutText) {
    const auto events = parse_all(message_line(
        "assistant",
        R"json("content": null, "images": null, "injected": false, "reasoning_content": "Nothing to add.", "tool_calls": null)json"));
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    EXPECT_EQ(events[1].kind, HD_EVENT_RESULT);
    EXPECT_EQ(events[1].json, R"({"stopReason":"end_turn","isError":false})");
}

TEST(VibeStreaming, TheWorkingDirectoryIsTheSystemPromptsFirstAbsolutePathLine) {
    using handler::vibe::working_directory_of;
    EXPECT_EQ(working_directory_of("Absolute path: /a\n\nAbsolute path: /b"), "/a");
    EXPECT_EQ(working_directory_of("x\nAbsolute path: /home/u/my project \r\ngitStatus"), "/home/u/my project");
    EXPECT_EQ(working_directory_of("Say Absolute path: /no\nAbsolute path: /yes"), "/yes");
    EXPECT_EQ(working_directory_of("no project context"), "");

    // Without one, titles keep absolute paths.
    const auto events = parse_all(
        message_line("system", R"json("content": "Be brief.")json") +
        message_line("assistant", R"json("content": "", "tool_calls": [{"id": "r", "index": 0, "function": {"name": "read", "arguments": "{\"file_path\": \"/p/a.txt\"}"}, "type": "function"}])json"));
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "Read /p/a.txt");
}

TEST(VibeStreaming, FieldsOfTheWrongTypeYieldNothingAndDoNotStopTheStream) {
    const auto events = parse_all(
        R"({"role": 42})"
        "\n"
        R"({"role": "assistant", "content": 7, "reasoning_content": ["x"], "tool_calls": [42, {"id": 1, "function": "f"}]})"
        "\n"
        R"({"role": "assistant", "content": 7, "tool_calls": "x"})"
        "\n"
        R"({"role": "tool", "content": {"odd": true}, "tool_call_id": null})"
        "\n"
        R"({"role": "system", "content": null})"
        "\n"
        R"({"role": "assistant", "content": "still here", "tool_calls": null})"
        "\n");
    ASSERT_EQ(events.size(), 5u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL); // the second entry: no id, no function
    EXPECT_EQ(events[0].json, R"({"toolCallId":"","title":"","kind":"other","status":"pending","rawInput":{}})");
    EXPECT_EQ(events[1].json, R"({"stopReason":"end_turn","isError":false})"); // tool_calls not a list: none
    EXPECT_EQ(events[2].json, R"({"toolCallId":"","status":"completed","content":[]})");
    EXPECT_EQ(events[3].json, R"({"content":{"type":"text","text":"still here"}})");
    EXPECT_EQ(events[4].kind, HD_EVENT_RESULT);
    EXPECT_EQ(payload(events[4]).at("result").as_string(), "still here");
}

TEST(VibeStreaming, AnOverLongLineIsAnErrorAndTheNextLinesStillCount) {
    StreamingParser parser(64);
    const std::string huge = message_line("assistant", R"("content": ")" + std::string(100, 'x') + "\"");
    auto events = parser.feed(huge);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, HD_EVENT_ERROR);
    EXPECT_TRUE(handler::testing::contains(events[0].json, "Mistral Vibe printed a line of " +
                                                               std::to_string(huge.size() - 1) + " bytes"))
        << events[0].json;
    events = parser.feed(R"({"role": "tool", "content": "ok", "tool_call_id": "a"})"
                         "\n");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL_UPDATE);
}

// ------------------------------------------------------------------ the loaded plugin

using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::StartMode;

class VibePlugin : public handler::testing::harnesses::HarnessPluginTest {
protected:
    VibePlugin() : HarnessPluginTest("vibe") {}

    static LaunchRequest request(LaunchMode mode, StartMode start, std::string prompt,
                                 std::string account_kind = "mistral-api-key") {
        return HarnessPluginTest::request(mode, start, std::move(prompt), std::move(account_kind));
    }
};

// What a headless launch runs: Vibe, its stdin closed, through sh.
const std::vector<std::string> kHeadlessPrefix = {"sh", "-c", "exec \"$0\" \"$@\" </dev/null", "vibe"};

std::vector<std::string> headless(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), kHeadlessPrefix.begin(), kHeadlessPrefix.end());
    return arguments;
}

TEST_F(VibePlugin, IsListedAsABuiltinHarness) {
    const auto record = registry_.record("vibe");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->kind, "harness");
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_EQ(record->name, "Mistral Vibe");
    EXPECT_EQ(record->source, "builtin");
    EXPECT_TRUE(handler::testing::contains(record->library, "libvibe.so"));
}

TEST_F(VibePlugin, DescribesItsHostCredentialsModesAndStructuredEvents) {
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    const auto value = json::parse(*text).as_object();
    EXPECT_EQ(json::serialize(value.at("default_hosts")), R"(["api.mistral.ai"])");
    EXPECT_EQ(json::serialize(value.at("credentials")),
              R"([{"kind":"mistral-api-key","env":"MISTRAL_API_KEY","label":"Mistral API key"}])");
    std::vector<std::string> modes;
    for (const auto& mode : value.at("modes").as_array()) modes.emplace_back(mode.at("id").as_string());
    EXPECT_EQ(modes, (std::vector<std::string>{"default", "accept-edits", "auto-approve", "plan"}));
    std::vector<std::string> models;
    for (const auto& model : value.at("models").as_array()) models.emplace_back(model.at("id").as_string());
    EXPECT_EQ(models, (std::vector<std::string>{"mistral-medium-3.5", "devstral-small"}));
    EXPECT_EQ(json::serialize(value.at("launch_modes")), R"(["interactive","headless"])");
    EXPECT_EQ(value.at("events").as_string(), "structured");
}

TEST_F(VibePlugin, ItsImageInstallsThePinnedCliInAVenvAndChecksIt) {
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    EXPECT_EQ(recipe->run_steps,
              (std::vector<std::string>{
                  "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                  "python3-venv && rm -rf /var/lib/apt/lists/*",
                  "python3 -m venv /opt/mistral-vibe && /opt/mistral-vibe/bin/pip install --no-cache-dir "
                  "--disable-pip-version-check mistral-vibe==2.18.4",
                  "ln -s /opt/mistral-vibe/bin/vibe /usr/local/bin/vibe", "vibe --version"}));
    EXPECT_TRUE(recipe->env.empty());
}

TEST_F(VibePlugin, HeadlessRunsProgrammaticModeWithStreamingOutput) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "Create hello.txt");
    r.extra_args = {"--max-turns", "5"};
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments, headless({"--prompt", "Create hello.txt", "--output", "streaming", "--agent",
                                         "accept-edits", "--max-turns", "5"}));
    EXPECT_EQ(spec->image, ""); // the image handlerd builds from the recipe
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->secret_env, (std::vector<handler::plugins::SecretEnv>{{"MISTRAL_API_KEY", "mistral-api-key"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.mistral.ai", 443}}));
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{{"VIBE_ENABLE_TELEMETRY", "false"},
                                                                 {"VIBE_ENABLE_UPDATE_CHECKS", "false"}}));
    EXPECT_TRUE(spec->files.empty());
}

TEST_F(VibePlugin, StartModesPickTheAgentAndOnlyOpenTrustsTheProject) {
    const auto tail_of = [&](StartMode start) {
        const auto argv = arguments(request(LaunchMode::headless, start, "go"));
        const auto at = std::find(argv.begin(), argv.end(), "--agent");
        return at == argv.end() ? std::vector<std::string>{} : std::vector<std::string>(at, argv.end());
    };
    EXPECT_EQ(tail_of(StartMode::locked_down), (std::vector<std::string>{"--agent", "default"}));
    EXPECT_EQ(tail_of(StartMode::guarded), (std::vector<std::string>{"--agent", "accept-edits"}));
    EXPECT_EQ(tail_of(StartMode::open), (std::vector<std::string>{"--agent", "auto-approve", "--trust"}));
}

TEST_F(VibePlugin, InteractiveIsTheTuiWithTheUsersArguments) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::open, "");
    r.extra_args = {"--continue"};
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"vibe", "--agent", "auto-approve", "--trust", "--continue"}));
    r.prompt = "look around";
    r.start_mode = StartMode::locked_down;
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"vibe", "--agent", "default", "--continue", "look around"}));
}

TEST_F(VibePlugin, APromptThatLooksLikeAnOptionStaysWhole) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "-v is broken, fix it");
    EXPECT_EQ(arguments(r), headless({"--prompt=-v is broken, fix it", "--output", "streaming", "--agent",
                                      "accept-edits"}));
    r.mode = LaunchMode::interactive;
    r.extra_args = {"--max-turns", "3"};
    EXPECT_EQ(arguments(r), (std::vector<std::string>{"vibe", "--agent", "accept-edits", "--max-turns", "3", "--",
                                                      "-v is broken, fix it"}));
}

TEST_F(VibePlugin, AModelIsVibesActiveModel) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go");
    r.model = "devstral-small";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{{"VIBE_ENABLE_TELEMETRY", "false"},
                                                                 {"VIBE_ENABLE_UPDATE_CHECKS", "false"},
                                                                 {"VIBE_ACTIVE_MODEL", "devstral-small"}}));
    EXPECT_EQ(std::count(spec->arguments.begin(), spec->arguments.end(), "--model"), 0);
}

TEST_F(VibePlugin, WithoutAnAccountNoKeyIsPassed) {
    auto spec = harness_->launch(request(LaunchMode::interactive, StartMode::guarded, "", ""));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_TRUE(spec->secret_env.empty());
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.mistral.ai", 443}}));
}

TEST_F(VibePlugin, RefusesAMistralLoginAndSaysToUseAnApiKey) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "mistral-login"));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "cannot use a Mistral login")) << spec.error().message;
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "--kind mistral-api-key")) << spec.error().message;
}

TEST_F(VibePlugin, RefusesAnotherProvidersAccount) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "anthropic-api-key"));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "Mistral API key (mistral-api-key)"))
        << spec.error().message;
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "'anthropic-api-key'")) << spec.error().message;
}

TEST_F(VibePlugin, HeadlessWithoutAPromptIsAnInvalidArgument) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, ""));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "needs a prompt")) << spec.error().message;
}

TEST_F(VibePlugin, ItsEventStreamParsesAcrossFeeds) {
    expect_plugin_events(kTranscript, parse_all(kTranscript));
}

} // namespace
} // namespace vibe_test
