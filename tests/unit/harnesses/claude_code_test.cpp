// The Claude Code harness (harnesses/claude-code): its stream-json parser driven directly
// with the shapes Claude Code 2.1.328 printed in a real run, and the built plugin loaded
// by the real loader for describe, the image recipe, launch and the events call.
#include "claude-code/stream_json.hpp"

#include "unit/harnesses/harness_test_support.hpp"

#include "support/fakes.hpp"

#include <cstdio>
#include <fstream>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace claude_code_test {
namespace {

namespace json = boost::json;
using handler::claude_code::StreamJsonParser;
using handler::plugin_common::Event;

// ------------------------------------------------------------------ the parser

using handler::testing::harnesses::describe;
using handler::testing::harnesses::payload;

std::vector<Event> parse_all(std::string_view output) {
    return handler::testing::harnesses::parse_all<StreamJsonParser>(output);
}

// A headless run writing hello.txt, as 2.1.328 printed it (fields abbreviated), with
// lines of types the parser must skip in between and non-ASCII text so that splits fall
// inside characters too.
const std::string kTranscript =
    R"({"type":"system","subtype":"init","cwd":"/home/u/project","session_id":"dded16df","tools":["Task","Bash","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.328","uuid":"u1"})"
    "\n"
    R"({"type":"system","subtype":"status","status":"requesting"})"
    "\n"
    R"({"type":"rate_limit_event","rate_limit_info":{"status":"allowed","isUsingOverage":false}})"
    "\n"
    R"({"type":"stream_event","event":{"type":"message_start"},"parent_tool_use_id":null})"
    "\n"
    "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_6621\",\"type\":\"message\",\"role\":\"assistant\","
    "\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"I'll create the file \xe2\x80\x94 "
    "caf\xc3\xa9 \xf0\x9f\x98\x80\"}],\"stop_reason\":null,\"usage\":{\"input_tokens\":3}},"
    "\"parent_tool_use_id\":null,\"session_id\":\"dded16df\",\"uuid\":\"u2\"}\n"
    R"({"type":"assistant","message":{"id":"msg_6621","content":[{"type":"tool_use","id":"toolu_9474","name":"Write","input":{"file_path":"/home/u/project/hello.txt","content":"hello from mock\n"}}]},"parent_tool_use_id":null,"session_id":"dded16df"})"
    "\n"
    "not JSON: a warning Node printed\n"
    "[1,2,3]\n"
    "\n"
    R"({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_9474","type":"tool_result","content":"File created successfully at: /home/u/project/hello.txt"}]},"parent_tool_use_id":null,"session_id":"dded16df","tool_use_result":{"type":"create","filePath":"/home/u/project/hello.txt"},"tool_result_meta":[{"id":"toolu_9474","permission_decision":{"decision":"accept"}}]})"
    "\n"
    R"({"type":"assistant","message":{"id":"msg_7000","content":[{"type":"text","text":"Done: wrote hello.txt"}]},"parent_tool_use_id":null})"
    "\n"
    R"({"type":"result","subtype":"success","is_error":false,"result":"Done: wrote hello.txt","num_turns":2,"stop_reason":"end_turn","session_id":"dded16df","total_cost_usd":0.000777,"usage":{"input_tokens":24,"output_tokens":47},"permission_denials":[],"terminal_reason":"completed","duration_ms":225})"
    "\n";

TEST(ClaudeCodeStreamJson, TurnsARealRunIntoEvents) {
    const std::vector<Event> events = parse_all(kTranscript);
    ASSERT_EQ(events.size(), 8u) << describe(events);

    EXPECT_EQ(events[0].kind, HD_EVENT_SESSION_INFO);
    EXPECT_EQ(events[0].json, R"({"harnessSessionId":"dded16df"})");

    EXPECT_EQ(events[1].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(events[1].json, R"({"modeId":"acceptEdits","model":"claude-sonnet-4-5"})");

    EXPECT_EQ(events[2].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(payload(events[2]).at("content").at("text").as_string(),
              "I'll create the file \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80");
    EXPECT_EQ(payload(events[2]).at("content").at("type").as_string(), "text");

    EXPECT_EQ(events[3].kind, HD_EVENT_TOOL_CALL);
    const json::object tool = payload(events[3]);
    EXPECT_EQ(tool.at("toolCallId").as_string(), "toolu_9474");
    EXPECT_EQ(tool.at("title").as_string(), "Write hello.txt"); // relative to init's cwd
    EXPECT_EQ(tool.at("name").as_string(), "Write");
    EXPECT_EQ(tool.at("kind").as_string(), "edit");
    EXPECT_EQ(tool.at("status").as_string(), "pending");
    EXPECT_EQ(json::serialize(tool.at("rawInput")),
              R"({"file_path":"/home/u/project/hello.txt","content":"hello from mock\n"})");
    EXPECT_EQ(json::serialize(tool.at("locations")), R"([{"path":"/home/u/project/hello.txt"}])");
    EXPECT_EQ(json::serialize(tool.at("content")),
              R"([{"type":"diff","path":"/home/u/project/hello.txt","oldText":null,"newText":"hello from mock\n"}])");

    // No content, so the call's diff stays (ACP: content in an update replaces it).
    EXPECT_EQ(events[4].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[4].json, R"({"toolCallId":"toolu_9474","status":"completed"})");

    EXPECT_EQ(events[5].kind, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(events[5].json, R"({"content":{"type":"text","text":"Done: wrote hello.txt"}})");

    // The context the last model request read (its input tokens, there being no cache), and
    // the run's cost; no window size, since this result names none for the model.
    EXPECT_EQ(events[6].kind, HD_EVENT_USAGE);
    EXPECT_EQ(events[6].json, R"({"used":3,"cost":{"amount":7.77E-4,"currency":"USD"}})");

    EXPECT_EQ(events[7].kind, HD_EVENT_RESULT);
    const json::object result = payload(events[7]);
    EXPECT_EQ(result.at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(result.at("result").as_string(), "Done: wrote hello.txt");
    EXPECT_EQ(result.at("isError").as_bool(), false);
    EXPECT_DOUBLE_EQ(result.at("costUsd").as_double(), 0.000777);
    EXPECT_EQ(result.at("numTurns").as_int64(), 2);
    EXPECT_EQ(json::serialize(result.at("usage")), R"({"input_tokens":24,"output_tokens":47})");
}

TEST(ClaudeCodeStreamJson, GivesTheSameEventsWhereverTheOutputIsSplit) {
    handler::testing::harnesses::expect_same_events_wherever_split<StreamJsonParser>(kTranscript, 8);
}

TEST(ClaudeCodeStreamJson, ThinkingIsAThoughtChunk) {
    const auto events = parse_all(
        R"({"type":"assistant","message":{"content":[{"type":"thinking","thinking":"The user wants a file.","signature":"x"}]},"parent_tool_use_id":null})"
        "\n");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, HD_EVENT_AGENT_THOUGHT_CHUNK);
    EXPECT_EQ(events[0].json, R"({"content":{"type":"text","text":"The user wants a file."}})");
}

json::object tool_call_for(std::string_view name, std::string_view input) {
    const std::string line = R"({"type":"system","subtype":"init","cwd":"/p/","permissionMode":"default"})"
                             "\n"
                             R"({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":")" +
                             std::string(name) + R"(","input":)" + std::string(input) + "}]}}\n";
    const auto events = parse_all(line);
    EXPECT_EQ(events.size(), 2u) << describe(events);
    if (events.size() != 2u || events[1].kind != HD_EVENT_TOOL_CALL) return {};
    return payload(events[1]);
}

TEST(ClaudeCodeStreamJson, ToolCallsGetAKindAndATitle) {
    auto bash = tool_call_for("Bash", R"({"command":"ls -la\necho done","description":"List files"})");
    EXPECT_EQ(bash.at("kind").as_string(), "execute");
    EXPECT_EQ(bash.at("title").as_string(), "Bash: ls -la \xe2\x80\xa6");
    EXPECT_FALSE(bash.contains("locations"));

    auto read = tool_call_for("Read", R"({"file_path":"/p/src/main.cpp"})");
    EXPECT_EQ(read.at("kind").as_string(), "read");
    EXPECT_EQ(read.at("title").as_string(), "Read src/main.cpp");
    EXPECT_EQ(json::serialize(read.at("locations")), R"([{"path":"/p/src/main.cpp"}])");

    auto outside = tool_call_for("Edit", R"({"file_path":"/etc/hosts","old_string":"a","new_string":"b"})");
    EXPECT_EQ(outside.at("kind").as_string(), "edit");
    EXPECT_EQ(outside.at("title").as_string(), "Edit /etc/hosts");

    auto notebook = tool_call_for("NotebookEdit", R"({"notebook_path":"/p/a.ipynb","new_source":"x"})");
    EXPECT_EQ(notebook.at("kind").as_string(), "edit");
    EXPECT_EQ(json::serialize(notebook.at("locations")), R"([{"path":"/p/a.ipynb"}])");

    auto grep = tool_call_for("Grep", R"({"pattern":"TODO","path":"/p/src"})");
    EXPECT_EQ(grep.at("kind").as_string(), "search");
    EXPECT_EQ(grep.at("title").as_string(), "Grep TODO in src");
    EXPECT_EQ(tool_call_for("Glob", R"({"pattern":"**/*.hpp"})").at("title").as_string(), "Glob **/*.hpp");

    auto fetch = tool_call_for("WebFetch", R"({"url":"https://example.com","prompt":"x"})");
    EXPECT_EQ(fetch.at("kind").as_string(), "fetch");
    EXPECT_EQ(fetch.at("title").as_string(), "Fetch https://example.com");
    EXPECT_EQ(tool_call_for("WebSearch", R"({"query":"acp"})").at("kind").as_string(), "fetch");

    auto mcp = tool_call_for("mcp__github__create_issue", R"({"title":"x"})");
    EXPECT_EQ(mcp.at("kind").as_string(), "other");
    EXPECT_EQ(mcp.at("title").as_string(), "mcp__github__create_issue");

    // A long command is cut on a character boundary: the title stays valid UTF-8.
    const std::string long_command = std::string(119, 'a') + "\xc3\xa9" + std::string(50, 'b');
    auto long_bash = tool_call_for("Bash", R"({"command":")" + long_command + R"("})");
    EXPECT_EQ(long_bash.at("title").as_string(), "Bash: " + std::string(119, 'a') + "\xe2\x80\xa6");
}

TEST(ClaudeCodeStreamJson, EditsComeWithTheirDiffs) {
    auto edit = tool_call_for("Edit", R"({"file_path":"/p/a.txt","old_string":"one\n","new_string":"two\n"})");
    EXPECT_EQ(json::serialize(edit.at("content")),
              R"([{"type":"diff","path":"/p/a.txt","oldText":"one\n","newText":"two\n"}])");

    auto multi = tool_call_for("MultiEdit", R"({"file_path":"/p/b.txt","edits":[{"old_string":"a","new_string":"b"},)"
                                            R"(7,{"old_string":"c"},{"old_string":"d","new_string":"e"}]})");
    EXPECT_EQ(json::serialize(multi.at("content")),
              R"([{"type":"diff","path":"/p/b.txt","oldText":"a","newText":"b"},)"
              R"({"type":"diff","path":"/p/b.txt","oldText":"d","newText":"e"}])");

    // A diff too large to draw is left out; the call's rawInput still has it all.
    const std::string big(handler::plugin_common::kDiffTextBytes + 1, 'x');
    auto large = tool_call_for("Write", R"({"file_path":"/p/big.txt","content":")" + big + R"("})");
    EXPECT_FALSE(large.contains("content"));
    EXPECT_EQ(large.at("rawInput").at("content").as_string().size(), big.size());

    // No file named, or not an edit: no diff.
    EXPECT_FALSE(tool_call_for("Write", R"({"content":"x"})").contains("content"));
    EXPECT_FALSE(tool_call_for("Bash", R"({"command":"ls"})").contains("content"));
}

TEST(ClaudeCodeStreamJson, AFailedEditsErrorReplacesItsDiff) {
    const auto events = parse_all(
        R"({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_5","name":"Edit","input":)"
        R"({"file_path":"/p/a.txt","old_string":"x","new_string":"y"}}]}})"
        "\n"
        R"({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_5","type":"tool_result","is_error":true,)"
        R"("content":"String to replace not found in file."}]}})"
        "\n"
        // The same id again (as a resumed transcript may have it): its diff was already
        // settled, so this result is shown as it is.
        R"({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_5","type":"tool_result",)"
        R"("content":"ok"}]}})"
        "\n");
    ASSERT_EQ(events.size(), 3u) << describe(events);
    EXPECT_EQ(events[1].json, R"({"toolCallId":"toolu_5","status":"failed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"String to replace not found in file."}}]})");
    EXPECT_EQ(events[2].json, R"({"toolCallId":"toolu_5","status":"completed","content":[{"type":"content","content":)"
                              R"({"type":"text","text":"ok"}}]})");
}

TEST(ClaudeCodeStreamJson, TodoWriteAlsoUpdatesThePlan) {
    const auto events = parse_all(
        R"({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_2","name":"TodoWrite","input":{"todos":[)"
        R"({"content":"Write the test","status":"completed","activeForm":"Writing the test"},)"
        R"({"content":"Fix the bug","status":"in_progress","activeForm":"Fixing"},)"
        R"({"content":"Tidy up","status":"someday","activeForm":"Tidying"}]}}]},"parent_tool_use_id":null})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL);
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "Update the plan");
    EXPECT_EQ(events[1].kind, HD_EVENT_PLAN);
    EXPECT_EQ(events[1].json,
              R"({"entries":[{"content":"Write the test","status":"completed","priority":"medium"},)"
              R"({"content":"Fix the bug","status":"in_progress","priority":"medium"},)"
              R"({"content":"Tidy up","status":"pending","priority":"medium"}]})");
}

TEST(ClaudeCodeStreamJson, AFailedToolResultWithBlocksIsAFailedUpdate) {
    const auto events = parse_all(
        R"({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_3","type":"tool_result","is_error":true,)"
        R"("content":[{"type":"text","text":"Exit code 1"},{"type":"text","text":"ls: no such file"},)"
        R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}})"
        "\n");
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL_UPDATE);
    EXPECT_EQ(events[0].json,
              R"({"toolCallId":"toolu_3","status":"failed","content":[)"
              R"({"type":"content","content":{"type":"text","text":"Exit code 1"}},)"
              R"({"type":"content","content":{"type":"text","text":"ls: no such file"}},)"
              R"({"type":"content","content":{"type":"image","data":"iVBO","mimeType":"image/png"}}]})");
}

// Claude Code's question before a tool (the control request the research captured), and
// one with nothing to remember, so no "always".
constexpr std::string_view kAskWrite =
    R"({"type":"control_request","request_id":"c5b17cfa","request":{"subtype":"can_use_tool","tool_name":"Write","display_name":"Write",)"
    R"("input":{"file_path":"/p/hello.txt","content":"hi\n"},"description":"hello.txt",)"
    R"("permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}],"tool_use_id":"toolu_d001"}})"
    "\n";
constexpr std::string_view kAskBash =
    R"({"type":"control_request","request_id":"b7","request":{"subtype":"can_use_tool","tool_name":"Bash",)"
    R"("input":{"command":"ls"},"tool_use_id":"toolu_b"}})"
    "\n";

TEST(ClaudeCodeStreamJson, CanUseToolIsAPermissionRequestAndOtherRequestsAreRefused) {
    StreamJsonParser parser;
    const auto events = parser.feed(
        std::string(R"({"type":"system","subtype":"init","cwd":"/p","permissionMode":"default","model":"m"})"
                    "\n") +
        std::string(kAskWrite) +
        R"({"type":"control_request","request_id":"r2","request":{"subtype":"hook_callback","callback_id":"x"}})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[1].kind, HD_EVENT_PERMISSION_REQUEST);
    EXPECT_EQ(events[1].json,
              R"({"toolCallId":"toolu_d001","title":"Write hello.txt","rawInput":{"file_path":"/p/hello.txt","content":"hi\n"},)"
              R"("options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},)"
              R"({"optionId":"allow_always","name":"Allow, and do not ask again this session","kind":"allow_always"},)"
              R"({"optionId":"reject_once","name":"Reject","kind":"reject_once"}],)"
              R"("_meta":{"claudeCode":{"requestId":"c5b17cfa","suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}}})");
    // Claude Code waits for an answer to every request, so the hook callback it should
    // never send (Handler registers none) is refused at once rather than left hanging.
    const auto reply = parser.take_reply();
    EXPECT_EQ(reply.input,
              R"({"type":"control_response","response":{"subtype":"error","error":"Handler does not handle 'hook_callback' requests","request_id":"r2"}})"
              "\n");
    EXPECT_FALSE(reply.close);
    EXPECT_TRUE(parser.take_reply().input.empty()) << "taken once";

    const auto bash = parser.feed(kAskBash);
    ASSERT_EQ(bash.size(), 1u);
    EXPECT_EQ(payload(bash[0]).at("options").as_array().size(), 2u) << "no suggestions: no \"always\"";
}

// The answers become Claude Code's control responses: allow runs the tool with the input it
// asked about, always adds the rules it suggested, reject denies with a reason.
TEST(ClaudeCodeStreamJson, AnAnswerIsAControlResponseOnItsStdin) {
    StreamJsonParser parser;
    const auto asked = parser.feed(std::string(kAskWrite) + std::string(kAskBash));
    ASSERT_EQ(asked.size(), 2u);
    EXPECT_TRUE(parser.answer(asked[0].json, R"({"optionId":"allow_always"})").empty());
    EXPECT_EQ(parser.take_reply().input,
              R"({"type":"control_response","response":{"subtype":"success","response":{"behavior":"allow",)"
              R"("updatedInput":{"file_path":"/p/hello.txt","content":"hi\n"},)"
              R"("updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]},"request_id":"c5b17cfa"}})"
              "\n");
    parser.answer(asked[1].json, R"({"optionId":"allow_once"})");
    EXPECT_EQ(parser.take_reply().input,
              R"({"type":"control_response","response":{"subtype":"success","response":{"behavior":"allow",)"
              R"("updatedInput":{"command":"ls"}},"request_id":"b7"}})"
              "\n");
    parser.answer(asked[1].json, R"({"optionId":"reject_once"})");
    EXPECT_EQ(parser.take_reply().input,
              R"({"type":"control_response","response":{"subtype":"success","response":{"behavior":"deny",)"
              R"("message":"The user rejected this tool call."},"request_id":"b7"}})"
              "\n");

    EXPECT_THROW(parser.answer(asked[1].json, R"({"optionId":"reject_always"})"), std::invalid_argument);
    EXPECT_THROW(parser.answer(R"({"toolCallId":"toolu_b","options":[]})", R"({"optionId":"allow_once"})"),
                 std::invalid_argument);
    EXPECT_TRUE(parser.take_reply().input.empty()) << "a refused answer writes nothing";
}

TEST(ClaudeCodeStreamJson, TheResultLeavesItsInputOpenAndAWithdrawnQuestionIsClosed) {
    StreamJsonParser parser;
    parser.feed(kAskBash);
    const auto cancelled = parser.feed(R"({"type":"control_cancel_request","request_id":"b7"})"
                                       "\n");
    ASSERT_EQ(cancelled.size(), 1u) << describe(cancelled);
    EXPECT_EQ(cancelled[0].kind, HD_EVENT_PERMISSION_ANSWER);
    EXPECT_EQ(cancelled[0].json, R"({"toolCallId":"toolu_b","kind":"cancelled"})");
    EXPECT_FALSE(parser.take_reply().close);
    parser.feed(R"({"type":"result","subtype":"success","is_error":false,"result":"done"})"
                "\n");
    // handlerd ends a one-shot run's input itself; a conversation's stays open.
    EXPECT_FALSE(parser.take_reply().close);
}

TEST(ClaudeCodeStreamJson, AnApiErrorIsAnErrorAndAFailedResult) {
    const auto events = parse_all(
        R"({"type":"result","subtype":"success","is_error":true,"result":"API Error: Connection refused - ECONNREFUSED",)"
        R"("num_turns":1,"stop_reason":null,"total_cost_usd":0,"usage":{"input_tokens":0},"terminal_reason":"api_error"})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_ERROR);
    EXPECT_EQ(events[0].json, R"({"message":"API Error: Connection refused - ECONNREFUSED"})");
    EXPECT_EQ(events[1].kind, HD_EVENT_RESULT);
    const auto result = payload(events[1]);
    EXPECT_EQ(result.at("stopReason").as_string(), "end_turn");
    EXPECT_EQ(result.at("isError").as_bool(), true);
    EXPECT_EQ(result.at("result").as_string(), "API Error: Connection refused - ECONNREFUSED");
    EXPECT_EQ(result.at("numTurns").as_int64(), 1);
}

TEST(ClaudeCodeStreamJson, TheTurnLimitIsMaxTurnRequests) {
    const auto events = parse_all(
        R"({"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"stop_reason":"tool_use","errors":[]})"
        "\n");
    ASSERT_EQ(events.size(), 2u) << describe(events);
    EXPECT_EQ(events[0].json, R"({"message":"Claude Code stopped at its turn limit"})");
    const auto result = payload(events[1]);
    EXPECT_EQ(result.at("stopReason").as_string(), "max_turn_requests");
    EXPECT_FALSE(result.contains("result"));
    EXPECT_FALSE(result.contains("costUsd"));

    // An error subtype counts as a failure even without is_error, and its errors explain it.
    const auto during = parse_all(
        R"({"type":"result","subtype":"error_during_execution","errors":["tool crashed","gave up"]})"
        "\n");
    ASSERT_EQ(during.size(), 2u) << describe(during);
    EXPECT_EQ(during[0].json, R"({"message":"tool crashed; gave up"})");
    EXPECT_EQ(payload(during[1]).at("isError").as_bool(), true);
}

TEST(ClaudeCodeStreamJson, StopReasonsOutsideAcpBecomeEndTurn) {
    const auto refusal = parse_all(R"({"type":"result","subtype":"success","is_error":false,"stop_reason":"refusal"})"
                                   "\n");
    ASSERT_EQ(refusal.size(), 1u);
    EXPECT_EQ(payload(refusal[0]).at("stopReason").as_string(), "refusal");
    const auto sequence = parse_all(R"({"type":"result","subtype":"success","stop_reason":"stop_sequence"})"
                                    "\n");
    ASSERT_EQ(sequence.size(), 1u);
    EXPECT_EQ(payload(sequence[0]).at("stopReason").as_string(), "end_turn");
}

TEST(ClaudeCodeStreamJson, ASubagentsTextIsNotTheSessionsButItsToolCallsAre) {
    const auto events = parse_all(
        R"({"type":"assistant","message":{"content":[{"type":"text","text":"subagent thinking aloud"}]},"parent_tool_use_id":"toolu_task"})"
        "\n"
        R"({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_sub","name":"Glob","input":{"pattern":"*"}}]},"parent_tool_use_id":"toolu_task"})"
        "\n");
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL);
    EXPECT_EQ(payload(events[0]).at("toolCallId").as_string(), "toolu_sub");
}

TEST(ClaudeCodeStreamJson, FieldsOfTheWrongTypeYieldNothingAndDoNotStopTheStream) {
    const auto events = parse_all(
        R"({"type":"assistant","message":null})"
        "\n"
        R"({"type":"assistant","message":{"content":"just a string"}})"
        "\n"
        R"({"type":"assistant","message":{"content":[42,{"type":"text","text":7},{"type":"tool_use","id":1,"name":null,"input":"x"}]}})"
        "\n"
        R"({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":{"odd":true}}]}})"
        "\n"
        R"({"type":"result","subtype":7,"usage":"lots","num_turns":"two","total_cost_usd":"free"})"
        "\n"
        R"({"type":42})"
        "\n"
        R"({"type":"assistant","message":{"content":[{"type":"text","text":"still here"}]}})"
        "\n");
    ASSERT_EQ(events.size(), 4u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_TOOL_CALL); // the id and name were not strings
    EXPECT_EQ(payload(events[0]).at("title").as_string(), "");
    EXPECT_EQ(payload(events[0]).at("rawInput").as_string(), "x");
    EXPECT_EQ(events[1].json, R"({"toolCallId":"t","status":"completed","content":[]})");
    EXPECT_EQ(events[2].json, R"({"stopReason":"end_turn","isError":false})");
    EXPECT_EQ(events[3].json, R"({"content":{"type":"text","text":"still here"}})");
}

TEST(ClaudeCodeStreamJson, AnUnpairedSurrogateBecomesAReplacementCharacter) {
    const auto events = parse_all(
        R"({"type":"assistant","message":{"content":[{"type":"text","text":"cut \ud83d here"}]},"parent_tool_use_id":null})"
        "\n");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(payload(events[0]).at("content").at("text").as_string(), "cut \xef\xbf\xbd here");
}

TEST(ClaudeCodeStreamJson, AnOverLongLineIsAnErrorAndTheNextLinesStillCount) {
    StreamJsonParser parser(64);
    const std::string huge = R"({"type":"assistant","message":{"content":[{"type":"text","text":")" +
                             std::string(100, 'x') + "\"}]}}\n";
    auto events = parser.feed(huge);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, HD_EVENT_ERROR);
    EXPECT_TRUE(handler::testing::contains(events[0].json, std::to_string(huge.size() - 1) + " bytes"))
        << events[0].json;
    events = parser.feed(R"({"type":"system","subtype":"init","permissionMode":"plan"})"
                         "\n");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].json, R"({"modeId":"plan"})");
}

// ------------------------------------------------------------------ conversations

// A conversation as Claude Code 2.1.328 printed it against the fake model server (trimmed:
// fewer tools and commands, shorter descriptions, fewer fields). The initialize answer
// comes before any prompt, system/init at the start of every turn.
constexpr std::string_view kInitializeAnswer =
    R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-initialize","response":{"commands":[)"
    R"({"name":"code-review","description":"Review the current changes","argumentHint":"","builtin":true},)"
    R"({"name":"compact","description":"Clear conversation history but keep a summary in context","argumentHint":"<optional custom summarization instructions>"}],)"
    R"("current_permission_mode":"acceptEdits","claude_code_version":"2.1.328","pid":28884}}})"
    "\n";
constexpr std::string_view kInit =
    R"({"type":"system","subtype":"init","cwd":"/home/u/project","session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684",)"
    R"("tools":["Task","Bash","Write"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"acceptEdits",)"
    R"("slash_commands":["code-review","compact","context"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.328",)"
    R"("uuid":"056f398e-a635-49c9-b4e3-da46d399a7eb"})"
    "\n";
constexpr std::string_view kAnswer =
    R"({"type":"assistant","message":{"id":"msg_fake_3","type":"message","role":"assistant","model":"claude-opus-5-5",)"
    R"("content":[{"type":"text","text":"Done: wrote the file."}],"stop_reason":null,"usage":{"input_tokens":10,)"
    R"("output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"parent_tool_use_id":null,)"
    R"("session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684"})"
    "\n";
constexpr std::string_view kSuccess =
    R"({"duration_api_ms":32,"stop_reason":"end_turn","session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684","total_cost_usd":0.00088,)"
    R"("usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40},)"
    R"("modelUsage":{"claude-opus-5-5":{"inputTokens":20,"outputTokens":40,"costUSD":0.00088,"contextWindow":1000000,"maxOutputTokens":128000}},)"
    R"("permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success",)"
    R"("result":"Done: wrote the file.","type":"result"})"
    "\n";
// An interrupt while the model request was still unanswered (the fake server held it).
constexpr std::string_view kInterruptedWhileWaiting =
    R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-1","response":{"still_queued":[]}}})"
    "\n"
    R"({"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"parent_tool_use_id":null,"session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684"})"
    "\n"
    R"({"duration_api_ms":0,"stop_reason":null,"session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684","total_cost_usd":0,)"
    R"("usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},)"
    R"("permission_denials":[],"terminal_reason":"aborted_streaming","is_error":true,"num_turns":2,"subtype":"error_during_execution",)"
    R"("errors":["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"],"type":"result"})"
    "\n";

std::vector<hd_event_kind> kinds(const std::vector<Event>& events) {
    std::vector<hd_event_kind> out;
    for (const Event& event : events) out.push_back(event.kind);
    return out;
}

TEST(ClaudeCodeConversation, TheSessionIdCommandsAndModeComeFromInitializeAndInit) {
    StreamJsonParser parser;
    const auto before = parser.feed(kInitializeAnswer);
    ASSERT_EQ(before.size(), 2u) << describe(before);
    EXPECT_EQ(before[0].kind, HD_EVENT_AVAILABLE_COMMANDS);
    EXPECT_EQ(before[0].json, R"({"availableCommands":[{"name":"code-review","description":"Review the current changes"},)"
                              R"({"name":"compact","description":"Clear conversation history but keep a summary in context"}]})");
    EXPECT_EQ(before[1].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(before[1].json, R"({"modeId":"acceptEdits"})");

    // init names one command more: the list is sent again, keeping the descriptions.
    const auto first_turn = parser.feed(kInit);
    ASSERT_EQ(first_turn.size(), 3u) << describe(first_turn);
    EXPECT_EQ(first_turn[0].kind, HD_EVENT_SESSION_INFO);
    EXPECT_EQ(first_turn[0].json, R"({"harnessSessionId":"0a221ba9-5a37-43e1-9bda-487914d4a684"})");
    EXPECT_EQ(first_turn[1].kind, HD_EVENT_AVAILABLE_COMMANDS);
    EXPECT_EQ(first_turn[1].json,
              R"({"availableCommands":[{"name":"code-review","description":"Review the current changes"},)"
              R"({"name":"compact","description":"Clear conversation history but keep a summary in context"},)"
              R"({"name":"context","description":""}]})");
    EXPECT_EQ(first_turn[2].json, R"({"modeId":"acceptEdits","model":"claude-opus-5-5"})");

    // Every later turn starts with the same init: nothing new to say.
    EXPECT_TRUE(parser.feed(kInit).empty());
    // Without an initialize answer (a one-shot run), init's names alone.
    StreamJsonParser one_shot;
    const auto names = one_shot.feed(kInit);
    ASSERT_EQ(names.size(), 3u) << describe(names);
    EXPECT_EQ(payload(names[1]).at("availableCommands").at(0).at("description").as_string(), "");
}

TEST(ClaudeCodeConversation, UsageIsTheLastRequestsContextInTheModelsWindow) {
    // Shapes from the real run; the token counts are set so that each one counts.
    StreamJsonParser parser;
    const auto events = parser.feed(
        std::string(kInit) +
        R"({"type":"assistant","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"Looking."}],)"
        R"("usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":100}},"parent_tool_use_id":null})"
        "\n"
        R"({"type":"assistant","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"Done."}],)"
        R"("usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":7,"cache_read_input_tokens":200}},"parent_tool_use_id":null})"
        "\n"
        R"({"type":"assistant","message":{"model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_s","name":"Glob","input":{}}],)"
        R"("usage":{"input_tokens":9000,"output_tokens":1}},"parent_tool_use_id":"toolu_task"})"
        "\n" +
        std::string(kSuccess));
    ASSERT_GE(events.size(), 2u) << describe(events);
    const Event& usage = events[events.size() - 2];
    EXPECT_EQ(usage.kind, HD_EVENT_USAGE) << describe(events);
    EXPECT_EQ(usage.json, R"({"used":212,"size":1000000,"cost":{"amount":8.8E-4,"currency":"USD"}})")
        << "input and cache tokens of the session's own last request, not the subagent's";
    EXPECT_EQ(events.back().kind, HD_EVENT_RESULT);

    // A turn interrupted before the model answered read nothing: no usage to report.
    parser.prompt(R"({"content":{"type":"text","text":"again"}})");
    parser.cancel();
    EXPECT_EQ(kinds(parser.feed(kInterruptedWhileWaiting)), (std::vector<hd_event_kind>{HD_EVENT_RESULT}));
}

TEST(ClaudeCodeConversation, ACancelIsAnInterruptAndItsTurnEndsCancelledNotFailed) {
    StreamJsonParser parser;
    parser.feed(std::string(kInitializeAnswer) + std::string(kInit));
    parser.prompt(R"({"content":{"type":"text","text":"create hello.txt"}})");
    parser.take_reply();
    EXPECT_TRUE(parser.cancel().empty());
    const auto reply = parser.take_reply();
    EXPECT_EQ(reply.input, R"({"type":"control_request","request_id":"handler-1","request":{"subtype":"interrupt"}})"
                           "\n");
    EXPECT_FALSE(reply.close);
    // Claude Code's own error_during_execution result is the cancelled turn's, once.
    const auto events = parser.feed(kInterruptedWhileWaiting);
    ASSERT_EQ(events.size(), 1u) << describe(events);
    EXPECT_EQ(events[0].kind, HD_EVENT_RESULT);
    EXPECT_EQ(payload(events[0]).at("stopReason").as_string(), "cancelled");
    EXPECT_EQ(payload(events[0]).at("isError").as_bool(), false);

    // The conversation goes on, and its next turn is not taken for a cancelled one.
    parser.prompt(R"({"content":{"type":"text","text":"after the cancel"}})");
    const auto next = parser.feed(std::string(kAnswer) + std::string(kSuccess));
    ASSERT_FALSE(next.empty());
    EXPECT_EQ(payload(next.back()).at("stopReason").as_string(), "end_turn");
}

TEST(ClaudeCodeConversation, ACancelAtAQuestionWithdrawsItAndEndsTheTurnCancelled) {
    StreamJsonParser parser;
    parser.prompt(R"({"content":{"type":"text","text":"create hello.txt"}})");
    const auto asked = parser.feed(
        R"({"type":"control_request","request_id":"9826fbe1-d86f-4ad9-a485-7fe472568bd2","request":{"subtype":"can_use_tool","tool_name":"Write",)"
        R"("display_name":"Write","input":{"file_path":"/home/u/project/hello.txt","content":"hi\n"},"description":"hello.txt",)"
        R"("permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}],"tool_use_id":"toolu_fake_17"}})"
        "\n");
    ASSERT_EQ(kinds(asked), (std::vector<hd_event_kind>{HD_EVENT_PERMISSION_REQUEST}));
    parser.cancel();
    const auto events = parser.feed(
        R"({"type":"control_cancel_request","request_id":"9826fbe1-d86f-4ad9-a485-7fe472568bd2"})"
        "\n"
        R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-1","response":{"still_queued":[]}}})"
        "\n"
        R"({"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"The user doesn't want to proceed with this tool use.",)"
        R"("is_error":true,"tool_use_id":"toolu_fake_17"}]},"parent_tool_use_id":null,"tool_use_result":"User rejected tool use"})"
        "\n"
        R"({"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"parent_tool_use_id":null})"
        "\n"
        R"({"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":3,"stop_reason":"tool_use","total_cost_usd":0.00044,)"
        R"("usage":{"input_tokens":10,"output_tokens":20},"terminal_reason":"aborted_tools",)"
        R"("errors":["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"]})"
        "\n");
    ASSERT_EQ(kinds(events), (std::vector<hd_event_kind>{HD_EVENT_PERMISSION_ANSWER, HD_EVENT_TOOL_CALL_UPDATE,
                                                         HD_EVENT_RESULT}))
        << describe(events);
    EXPECT_EQ(events[0].json, R"({"toolCallId":"toolu_fake_17","kind":"cancelled"})");
    EXPECT_EQ(payload(events[1]).at("status").as_string(), "failed");
    EXPECT_EQ(payload(events[2]).at("stopReason").as_string(), "cancelled");
    EXPECT_EQ(payload(events[2]).at("isError").as_bool(), false);
}

// Claude Code answers an interrupt with no turn running and prints nothing else; a cancel
// that arrives once the turn's result was read leaves the next turn's result as it is.
TEST(ClaudeCodeConversation, ACancelAfterTheTurnEndedDoesNotMarkTheNextTurn) {
    StreamJsonParser parser;
    parser.prompt(R"({"content":{"type":"text","text":"first"}})");
    parser.feed(std::string(kInit) + std::string(kAnswer) + std::string(kSuccess));
    parser.take_reply();
    parser.cancel();
    EXPECT_TRUE(parser.take_reply().input.find(R"("subtype":"interrupt")") != std::string::npos);
    EXPECT_TRUE(parser.feed(R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-1","response":{"still_queued":[]}}})"
                            "\n")
                    .empty());
    parser.prompt(R"({"content":{"type":"text","text":"second"}})");
    const auto next = parser.feed(std::string(kInit) + std::string(kAnswer) + std::string(kSuccess));
    ASSERT_FALSE(next.empty());
    EXPECT_EQ(payload(next.back()).at("stopReason").as_string(), "end_turn");
}

TEST(ClaudeCodeConversation, SettingsAreControlRequestsThatChangeWhenClaudeCodeConfirms) {
    StreamJsonParser parser;
    parser.feed(kInit);
    const auto sent = [&] { return parser.take_reply().input; };

    EXPECT_TRUE(parser.set("model", "haiku").empty());
    EXPECT_EQ(sent(), R"({"type":"control_request","request_id":"handler-1","request":{"subtype":"set_model","model":"haiku"}})"
                      "\n");
    // The answer names the model the alias resolved to.
    auto confirmed = parser.feed(
        R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-1","response":{"model":"claude-haiku-5-5"}}})"
        "\n");
    ASSERT_EQ(confirmed.size(), 1u) << describe(confirmed);
    EXPECT_EQ(confirmed[0].kind, HD_EVENT_MODE_CHANGED);
    EXPECT_EQ(confirmed[0].json, R"({"modeId":"acceptEdits","model":"claude-haiku-5-5"})");

    parser.set("thinking_level", "high");
    EXPECT_EQ(sent(), R"({"type":"control_request","request_id":"handler-2","request":{"subtype":"apply_flag_settings","settings":{"effortLevel":"high"}}})"
                      "\n");
    confirmed = parser.feed(R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-2"}})"
                            "\n");
    ASSERT_EQ(confirmed.size(), 1u) << describe(confirmed);
    EXPECT_EQ(confirmed[0].json, R"({"modeId":"acceptEdits","model":"claude-haiku-5-5","thinkingLevel":"high"})");

    parser.set("mode", "plan");
    EXPECT_EQ(sent(), R"({"type":"control_request","request_id":"handler-3","request":{"subtype":"set_permission_mode","mode":"plan"}})"
                      "\n");
    confirmed = parser.feed(
        R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-3","response":{"mode":"plan"}}})"
        "\n"
        R"({"type":"system","subtype":"status","status":null,"permissionMode":"plan","session_id":"0a221ba9-5a37-43e1-9bda-487914d4a684"})"
        "\n");
    ASSERT_EQ(confirmed.size(), 1u) << "the status line says what the answer said: " << describe(confirmed);
    EXPECT_EQ(confirmed[0].json, R"({"modeId":"plan","model":"claude-haiku-5-5","thinkingLevel":"high"})");
    // Claude Code's own change (the model leaving plan mode) shows the same way.
    EXPECT_EQ(payload(parser.feed(R"({"type":"system","subtype":"status","status":null,"permissionMode":"default"})"
                                  "\n")
                          .at(0))
                  .at("modeId")
                  .as_string(),
              "default");

    // A refusal is Claude Code's reason, and nothing changes.
    parser.set("mode", "bypassPermissions");
    sent();
    const auto refused = parser.feed(
        R"({"type":"control_response","response":{"subtype":"error","request_id":"handler-4","error":"Cannot set permission mode to )"
        R"(bypassPermissions because the session was not launched with --dangerously-skip-permissions","error_code":"bypass_not_launched"}})"
        "\n");
    ASSERT_EQ(refused.size(), 1u) << describe(refused);
    EXPECT_EQ(refused[0].kind, HD_EVENT_ERROR);
    EXPECT_EQ(refused[0].json, R"({"message":"Claude Code did not change to mode 'bypassPermissions': Cannot set permission mode )"
                               R"(to bypassPermissions because the session was not launched with --dangerously-skip-permissions"})");
    // An answer to a request that is not ours (or answered already) is nobody's.
    EXPECT_TRUE(parser.feed(R"({"type":"control_response","response":{"subtype":"success","request_id":"handler-4"}})"
                            "\n")
                    .empty());

    // What Claude Code does not have is refused before anything is written.
    EXPECT_THROW(parser.set("mode", "dontAsk"), std::invalid_argument);
    EXPECT_THROW(parser.set("thinking_level", "minimal"), std::invalid_argument);
    EXPECT_THROW(parser.set("model", ""), std::invalid_argument);
    try {
        parser.set("color", "red");
        ADD_FAILURE() << "a setting Claude Code cannot change live";
    } catch (const handler::sdk::PluginError& error) {
        EXPECT_EQ(error.status(), HD_STATUS_UNSUPPORTED);
        EXPECT_TRUE(handler::testing::contains(error.what(), "cannot change its color")) << error.what();
    }
    EXPECT_TRUE(sent().empty());
}

// ------------------------------------------------------------------ the loaded plugin

using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::LoadedHarness;
using handler::plugins::StartMode;

class ClaudeCodePlugin : public handler::testing::harnesses::HarnessPluginTest {
protected:
    ClaudeCodePlugin() : HarnessPluginTest("claude-code") {}

    static LaunchRequest request(LaunchMode mode, StartMode start, std::string prompt,
                                 std::string account_kind = "anthropic-api-key") {
        return HarnessPluginTest::request(mode, start, std::move(prompt), std::move(account_kind));
    }

    // The launch is refused as the caller's mistake, with a message that says `why`.
    void expect_refused(const LaunchRequest& r, const std::string& why) {
        auto spec = harness_->launch(r);
        ASSERT_FALSE(spec) << why;
        EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
        EXPECT_TRUE(handler::testing::contains(spec.error().message, why)) << spec.error().message;
    }
};

TEST_F(ClaudeCodePlugin, IsListedAsABuiltinHarness) {
    const auto record = registry_.record("claude-code");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->kind, "harness");
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_EQ(record->name, "Claude Code");
    EXPECT_EQ(record->source, "builtin");
    EXPECT_TRUE(handler::testing::contains(record->library, "libclaude-code.so"));
}

TEST_F(ClaudeCodePlugin, DescribesItsHostCredentialsModesAndStructuredEvents) {
    auto text = harness_->describe();
    ASSERT_TRUE(text) << text.error().message;
    const auto value = json::parse(*text).as_object();
    EXPECT_EQ(json::serialize(value.at("default_hosts")), R"(["api.anthropic.com"])");
    std::vector<std::string> kinds;
    for (const auto& credential : value.at("credentials").as_array()) kinds.emplace_back(credential.at("kind").as_string());
    EXPECT_EQ(kinds, (std::vector<std::string>{"anthropic-api-key", "claude-subscription", "openrouter-api-key", "ollama",
                                               "llama-cpp"}));
    EXPECT_EQ(value.at("credentials").at(0).at("env").as_string(), "ANTHROPIC_API_KEY");
    EXPECT_EQ(value.at("stdin").as_string(), "protocol");
    std::vector<std::string> modes;
    for (const auto& mode : value.at("modes").as_array()) modes.emplace_back(mode.at("id").as_string());
    EXPECT_EQ(modes, (std::vector<std::string>{"default", "acceptEdits", "bypassPermissions", "plan"}));
    std::vector<std::string> models;
    for (const auto& model : value.at("models").as_array()) models.emplace_back(model.at("id").as_string());
    EXPECT_EQ(models, (std::vector<std::string>{"sonnet", "opus", "haiku"}));
    EXPECT_EQ(json::serialize(value.at("launch_modes")), R"(["interactive","headless","conversation"])");
    EXPECT_EQ(value.at("events").as_string(), "structured");
}

TEST_F(ClaudeCodePlugin, ItsImageInstallsThePinnedCliAndChecksIt) {
    auto recipe = harness_->image_recipe();
    ASSERT_TRUE(recipe) << recipe.error().message;
    EXPECT_EQ(recipe->run_steps,
              (std::vector<std::string>{"npm install -g --no-fund --no-audit @anthropic-ai/claude-code@2.1.328",
                                        "claude --version"}));
}

TEST_F(ClaudeCodePlugin, HeadlessRunsPrintModeWithStreamJsonBothWays) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "Create hello.txt");
    r.model = "sonnet";
    r.extra_args = {"--max-budget-usd", "1"};
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              (std::vector<std::string>{"claude", "-p", "--input-format", "stream-json", "--output-format",
                                        "stream-json", "--verbose", "--permission-prompt-tool", "stdio",
                                        "--permission-mode", "acceptEdits", "--model", "sonnet",
                                        "--max-budget-usd", "1"}));
    EXPECT_TRUE(spec->input.empty()) << "the prompt is the parser's to write";
    auto stream = harness_->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    auto prompted = (*stream)->prompt(R"({"content":{"type":"text","text":"Create hello.txt"}})");
    ASSERT_TRUE(prompted) << prompted.error().message;
    EXPECT_EQ(prompted->input, R"({"type":"user","message":{"role":"user","content":[{"type":"text",)"
                               R"("text":"Create hello.txt"}]},"parent_tool_use_id":null,"session_id":""})"
                               "\n");
    auto odd = (*stream)->prompt(R"({"content":{"type":"image","data":"x"}})");
    ASSERT_FALSE(odd);
    EXPECT_TRUE(handler::testing::contains(odd.error().message, "text prompt")) << odd.error().message;
    EXPECT_EQ(spec->image, ""); // the image handlerd builds from the recipe
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->secret_env,
              (std::vector<handler::plugins::SecretEnv>{{"ANTHROPIC_API_KEY", "anthropic-api-key"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.anthropic.com", 443}}));
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
                                                                 {"DISABLE_AUTOUPDATER", "1"},
                                                                 {"DISABLE_TELEMETRY", "1"},
                                                                 {"DISABLE_ERROR_REPORTING", "1"},
                                                                 {"IS_SANDBOX", "1"}}));
}

TEST_F(ClaudeCodePlugin, StartModesPickThePermissionMode) {
    const auto mode_of = [&](StartMode start) {
        const auto argv = arguments(request(LaunchMode::headless, start, "go"));
        const auto at = std::find(argv.begin(), argv.end(), "--permission-mode");
        return at == argv.end() || at + 1 == argv.end() ? std::string("(none)") : *(at + 1);
    };
    EXPECT_EQ(mode_of(StartMode::locked_down), "default");
    EXPECT_EQ(mode_of(StartMode::guarded), "acceptEdits");
    EXPECT_EQ(mode_of(StartMode::open), "bypassPermissions");
}

TEST_F(ClaudeCodePlugin, InteractiveIsTheTuiWithTheUsersArguments) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::open, "");
    r.extra_args = {"--resume"};
    auto argv = arguments(r);
    ASSERT_EQ(argv.size(), 8u);
    EXPECT_EQ(argv[0], "sh");
    EXPECT_EQ(argv[3], "claude");
    const json::object config = json::parse(argv[4]).as_object();
    EXPECT_TRUE(config.at("hasCompletedOnboarding").as_bool());
    EXPECT_TRUE(config.at("bypassPermissionsModeAccepted").as_bool()); // open: the mode the user chose
    EXPECT_TRUE(config.at("projects").at("/home/u/project").at("hasTrustDialogAccepted").as_bool());
    EXPECT_EQ(std::vector<std::string>(argv.begin() + 5, argv.end()),
              (std::vector<std::string>{"--permission-mode", "bypassPermissions", "--resume"}));
    r.prompt = "look around";
    EXPECT_EQ(arguments(r).back(), "look around");
    r.start_mode = StartMode::guarded;
    EXPECT_FALSE(json::parse(arguments(r).at(4)).as_object().contains("bypassPermissionsModeAccepted"));
}

// The script that answers the TUI's first-run screens, run for real by /bin/sh with `echo`
// standing in for claude: it writes ~/.claude.json once, approving the stand-in by its
// last 20 characters, and passes every argument on.
TEST_F(ClaudeCodePlugin, TheFirstRunAnswersAreWrittenOnceWithTheStandInsTail) {
    auto argv = arguments(request(LaunchMode::interactive, StartMode::guarded, "hi there"));
    ASSERT_GE(argv.size(), 5u);
    std::string script = argv[2];
    const auto at = script.find("exec claude");
    ASSERT_NE(at, std::string::npos);
    script.replace(at, 11, "exec echo");
    handler::testing::TempDir home;
    const auto read_config = [&] {
        std::ifstream file(home.path() / ".claude.json");
        return std::string(std::istreambuf_iterator<char>(file), {});
    };
    const auto run = [&] {
        std::string command = "HOME=" + home.path().string() + " ANTHROPIC_API_KEY=sk-ant-api03-abcdefghij0123456789XYZ /bin/sh -c '" +
                              script + "' claude '" + argv[4] + "'";
        for (std::size_t i = 5; i < argv.size(); ++i) command += " '" + argv[i] + "'";
        FILE* pipe = ::popen(command.c_str(), "r");
        std::string out;
        char buffer[256];
        while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
        if (pipe != nullptr) ::pclose(pipe);
        return out;
    };
    EXPECT_EQ(run(), "--permission-mode acceptEdits hi there\n");
    const json::object written = json::parse(read_config()).as_object();
    EXPECT_EQ(json::serialize(written.at("customApiKeyResponses").at("approved")), R"(["defghij0123456789XYZ"])"
              ) << "the last 20 characters";
    // A second start leaves what the TUI has since written alone.
    std::ofstream(home.path() / ".claude.json") << "{\"theme\":\"light\"}";
    run();
    EXPECT_EQ(read_config(), "{\"theme\":\"light\"}");
}

TEST_F(ClaudeCodePlugin, APromptThatLooksLikeAnOptionIsNeverReadAsOne) {
    LaunchRequest r = request(LaunchMode::interactive, StartMode::guarded, "-v is broken, fix it");
    r.extra_args = {"--max-turns", "3"};
    const auto tui = arguments(r);
    ASSERT_GE(tui.size(), 7u);
    EXPECT_EQ(std::vector<std::string>(tui.end() - 6, tui.end()),
              (std::vector<std::string>{"--permission-mode", "acceptEdits", "--max-turns", "3", "--",
                                        "-v is broken, fix it"}));
    // Headless, the prompt is a message on stdin, never an argument.
    r.mode = LaunchMode::headless;
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(std::count(spec->arguments.begin(), spec->arguments.end(), "-v is broken, fix it"), 0);
}

// Through the plugin's waist, as handlerd drives it: the question is an event, the answer
// goes to Claude Code's stdin, and the result leaves the input to handlerd.
TEST_F(ClaudeCodePlugin, ThePluginsParserAsksAndPassesTheAnswerOn) {
    auto stream = harness_->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    auto asked = (*stream)->feed(kAskBash);
    ASSERT_TRUE(asked) << asked.error().message;
    ASSERT_EQ(asked->events.size(), 1u);
    EXPECT_EQ(asked->events[0].kind, handler::plugins::EventKind::permission_request);
    EXPECT_TRUE(asked->input.empty());
    auto answered = (*stream)->answer(asked->events[0].json, R"({"optionId":"reject_once"})");
    ASSERT_TRUE(answered) << answered.error().message;
    EXPECT_TRUE(answered->input.starts_with(R"({"type":"control_response")")) << answered->input;
    EXPECT_NE(answered->input.find(R"("behavior":"deny")"), std::string::npos);
    auto odd = (*stream)->answer(asked->events[0].json, R"({"optionId":"sometimes"})");
    ASSERT_FALSE(odd);
    EXPECT_TRUE(handler::testing::contains(odd.error().message, "not 'sometimes'")) << odd.error().message;
    auto ended = (*stream)->feed(R"({"type":"result","subtype":"success","is_error":false,"result":"ok"})"
                                 "\n");
    ASSERT_TRUE(ended);
    ASSERT_EQ(ended->events.size(), 1u);
    EXPECT_EQ(ended->events[0].kind, handler::plugins::EventKind::result);
    EXPECT_FALSE(ended->close_input);
}

TEST_F(ClaudeCodePlugin, ASubscriptionTokenGoesToItsOwnVariable) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "claude-subscription"));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->secret_env,
              (std::vector<handler::plugins::SecretEnv>{{"CLAUDE_CODE_OAUTH_TOKEN", "claude-subscription"}}));

    auto without = harness_->launch(request(LaunchMode::interactive, StartMode::guarded, "", ""));
    ASSERT_TRUE(without) << without.error().message;
    EXPECT_TRUE(without->secret_env.empty());
}

// OpenRouter and local servers speak Anthropic's API at a base URL of their own.
TEST_F(ClaudeCodePlugin, OpenRouterAndLocalServersThroughItsBaseUrl) {
    const auto env_of = [](const handler::plugins::LaunchSpec& spec, const std::string& name) {
        std::string value = "(unset)";
        for (const auto& variable : spec.env)
            if (variable.name == name) value = variable.value;
        return value;
    };
    auto routed = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "openrouter-api-key"));
    ASSERT_TRUE(routed) << routed.error().message;
    EXPECT_EQ(routed->secret_env,
              (std::vector<handler::plugins::SecretEnv>{{"ANTHROPIC_AUTH_TOKEN", "openrouter-api-key"}}));
    EXPECT_EQ(env_of(*routed, "ANTHROPIC_BASE_URL"), "https://openrouter.ai/api");
    EXPECT_EQ(routed->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"openrouter.ai", 443}}));

    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go", "llama-cpp");
    r.account_base_url = "http://llama-cpp.handler.internal:8080";
    r.model = "qwen3-coder";
    auto local = harness_->launch(r);
    ASSERT_TRUE(local) << local.error().message;
    EXPECT_TRUE(local->secret_env.empty());
    EXPECT_TRUE(local->allowed_hosts.empty()) << "handlerd adds the server's own rule";
    EXPECT_EQ(env_of(*local, "ANTHROPIC_BASE_URL"), "http://llama-cpp.handler.internal:8080");
    EXPECT_EQ(env_of(*local, "ANTHROPIC_AUTH_TOKEN"), "handler-local");
    EXPECT_EQ(env_of(*local, "ANTHROPIC_SMALL_FAST_MODEL"), "qwen3-coder");
    const auto at = std::find(local->arguments.begin(), local->arguments.end(), "--model");
    ASSERT_NE(at, local->arguments.end());
    EXPECT_EQ(*(at + 1), "qwen3-coder");

    r.model.clear();
    auto unnamed = harness_->launch(r);
    ASSERT_FALSE(unnamed);
    EXPECT_TRUE(handler::testing::contains(unnamed.error().message, "--model NAME")) << unnamed.error().message;
}

TEST_F(ClaudeCodePlugin, AThinkingLevelIsItsEffort) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "go");
    r.thinking_level = "xhigh";
    const auto argv = arguments(r);
    const auto at = std::find(argv.begin(), argv.end(), "--effort");
    ASSERT_NE(at, argv.end());
    EXPECT_EQ(*(at + 1), "xhigh");
    r.thinking_level = "minimal";
    auto refused = harness_->launch(r);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(refused.error().message, "its levels are low, medium, high, xhigh, max"))
        << refused.error().message;
}

TEST_F(ClaudeCodePlugin, RefusesAnotherProvidersAccount) {
    auto spec = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go", "openai-api-key"));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "Anthropic API key")) << spec.error().message;
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "'openai-api-key'")) << spec.error().message;
}

TEST_F(ClaudeCodePlugin, HeadlessWithoutAPromptIsAnInvalidArgument) {
    expect_refused(request(LaunchMode::headless, StartMode::guarded, ""), "needs a prompt");
}

// A conversation may start empty: no prompt on the command line or stdin, only the
// initialize request; its prompts come later through the parser.
TEST_F(ClaudeCodePlugin, AConversationStartsWithoutAPromptAndKeepsItsStateInTheSessionsFolder) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "");
    r.conversation = true;
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->arguments,
              (std::vector<std::string>{"claude", "-p", "--input-format", "stream-json", "--output-format",
                                        "stream-json", "--verbose", "--permission-prompt-tool", "stdio",
                                        "--permission-mode", "acceptEdits"}));
    EXPECT_EQ(spec->session_state_env, "CLAUDE_CONFIG_DIR");
    EXPECT_EQ(spec->input, R"({"type":"control_request","request_id":"handler-initialize","request":{"subtype":"initialize"}})"
                           "\n");
    EXPECT_TRUE(spec->account_state_env.empty());
    // A one-shot run keeps Claude Code's state in the session's home, gone with its container.
    auto one_shot = harness_->launch(request(LaunchMode::headless, StartMode::guarded, "go"));
    ASSERT_TRUE(one_shot) << one_shot.error().message;
    EXPECT_TRUE(one_shot->session_state_env.empty());

    r.mode = LaunchMode::interactive;
    expect_refused(r, "runs headless");
}

// An editor's MCP servers become Claude Code's --mcp-config (and only those: strict), a
// stdio one to run in the container, an HTTP one to reach through the proxy.
TEST_F(ClaudeCodePlugin, AnEditorsMcpServersAreItsMcpConfig) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::guarded, "");
    r.conversation = true;
    r.mcp_servers = R"([{"name":"files","command":"/usr/bin/mcp-files","args":["--root","/srv"],)"
                    R"("env":[{"name":"LEVEL","value":"2"}]},)"
                    R"({"type":"http","name":"docs","url":"https://docs.example/mcp","headers":[{"name":"X-A","value":"b"}]}])";
    auto spec = harness_->launch(r);
    ASSERT_TRUE(spec) << spec.error().message;
    const auto at = std::find(spec->arguments.begin(), spec->arguments.end(), "--mcp-config");
    ASSERT_NE(at, spec->arguments.end());
    ASSERT_NE(std::next(at), spec->arguments.end());
    EXPECT_EQ(boost::json::parse(*std::next(at)),
              boost::json::parse(R"({"mcpServers":{"files":{"type":"stdio","command":"/usr/bin/mcp-files",)"
                                 R"("args":["--root","/srv"],"env":{"LEVEL":"2"}},)"
                                 R"("docs":{"type":"http","url":"https://docs.example/mcp","headers":{"X-A":"b"}}}})"));
    EXPECT_NE(std::find(spec->arguments.begin(), spec->arguments.end(), "--strict-mcp-config"), spec->arguments.end());
    r.mcp_servers = R"([{"name":"odd","type":"carrier-pigeon"}])";
    expect_refused(r, "not stdio, http or sse");
    r.mcp_servers.clear();
    auto none = harness_->launch(r);
    ASSERT_TRUE(none);
    EXPECT_EQ(std::find(none->arguments.begin(), none->arguments.end(), "--mcp-config"), none->arguments.end());
}

TEST_F(ClaudeCodePlugin, AResumeNamesTheSessionAndOnlyAUuidIsTaken) {
    LaunchRequest r = request(LaunchMode::headless, StartMode::locked_down, "");
    r.conversation = true;
    r.resume = "a7876dd3-a227-4a63-ab8d-742ed07e9947";
    r.model = "opus";
    const auto argv = arguments(r);
    EXPECT_EQ(std::vector<std::string>(argv.end() - 6, argv.end()),
              (std::vector<std::string>{"--permission-mode", "default", "--resume", "a7876dd3-a227-4a63-ab8d-742ed07e9947",
                                        "--model", "opus"}));
    r.resume = "A7876DD3-A227-4A63-AB8D-742ED07E9947";
    EXPECT_FALSE(arguments(r).empty());

    // The id came out of the container: anything but a UUID could be an option, a name
    // Claude Code would look up, or worse.
    for (const std::string& hostile : std::vector<std::string>{
             "--dangerously-skip-permissions", "-p", "a7876dd3-a227-4a63-ab8d-742ed07e994", "a7876dd3-a227-4a63-ab8d-742ed07e99470",
          "a7876dd3a227-4a63-ab8d-742ed07e9947-", "a7876dd3-a227-4a63-ab8d-742ed07e994g", "../../etc/passwd",
          "a7876dd3-a227-4a63-ab8d-742ed07e9947\n", std::string("a7876dd3-a227-4a63-ab8d-742ed07e994") + '\0', "my session"}) {
        r.resume = hostile;
        expect_refused(r, "is a UUID");
    }
    // The refusal quotes the id as JSON, so that none of its bytes reach a log or a terminal raw.
    r.resume = "\x1b[2J--x\n";
    expect_refused(r, R"(cannot resume "\u001b[2J--x\n")");
}

// Through the plugin's waist, as handlerd drives a conversation: two prompts on one open
// stdin, each turn ending in its one result; a cancel and a setting reach Claude Code's
// stdin, and what it cannot change is refused as unsupported.
TEST_F(ClaudeCodePlugin, AConversationsTurnsCancelsAndSettingsGoThroughThePlugin) {
    auto stream = harness_->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    std::vector<handler::plugins::SessionEvent> events;
    std::string input;
    bool closed = false;
    const auto take = [&](auto result) {
        ASSERT_TRUE(result) << result.error().message;
        events.insert(events.end(), result->events.begin(), result->events.end());
        input += result->input;
        closed = closed || result->close_input;
    };
    take((*stream)->feed(kInitializeAnswer));
    take((*stream)->prompt(R"({"promptId":"p_1","content":{"type":"text","text":"create hello.txt"}})"));
    take((*stream)->feed(std::string(kInit) + std::string(kAnswer) + std::string(kSuccess)));
    take((*stream)->prompt(R"({"promptId":"p_2","content":{"type":"text","text":"and now?"}})"));
    take((*stream)->cancel());
    take((*stream)->feed(std::string(kInit) + std::string(kInterruptedWhileWaiting)));
    take((*stream)->set("model", "sonnet"));
    EXPECT_FALSE(closed) << "a conversation's stdin stays open";
    EXPECT_EQ(input, StreamJsonParser::user_message("create hello.txt") + StreamJsonParser::user_message("and now?") +
                         R"({"type":"control_request","request_id":"handler-1","request":{"subtype":"interrupt"}})"
                         "\n"
                         R"({"type":"control_request","request_id":"handler-2","request":{"subtype":"set_model","model":"sonnet"}})"
                         "\n");
    std::vector<std::string> results;
    std::size_t session_infos = 0;
    for (const auto& event : events) {
        if (event.kind == handler::plugins::EventKind::result)
            results.emplace_back(json::parse(event.json).at("stopReason").as_string());
        session_infos += event.kind == handler::plugins::EventKind::session_info;
    }
    EXPECT_EQ(results, (std::vector<std::string>{"end_turn", "cancelled"}));
    EXPECT_EQ(session_infos, 1u) << "the second turn's init names the same session";

    auto unsupported = (*stream)->set("color", "red");
    ASSERT_FALSE(unsupported);
    EXPECT_EQ(unsupported.error().code, handler::ErrorCode::unavailable);
    auto unknown_mode = (*stream)->set("mode", "yolo");
    ASSERT_FALSE(unknown_mode);
    EXPECT_EQ(unknown_mode.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(unknown_mode.error().message, "its modes are default, acceptEdits"))
        << unknown_mode.error().message;
}

// After a handlerd restart the parser is reopened on a Claude Code that runs, maybe in the
// middle of a turn no prompt of the new parser's started: a cancel still makes that
// turn's result the cancelled one, and the session id it was told is not reported again.
TEST_F(ClaudeCodePlugin, AReopenedParserCancelsTheTurnThatRunsAndKnowsItsSession) {
    auto stream = harness_->open_events("s_1", std::string_view("0a221ba9-5a37-43e1-9bda-487914d4a684"));
    ASSERT_TRUE(stream) << stream.error().message;
    auto cancelled = (*stream)->cancel();
    ASSERT_TRUE(cancelled) << cancelled.error().message;
    EXPECT_EQ(cancelled->input, R"({"type":"control_request","request_id":"handler-1","request":{"subtype":"interrupt"}})"
                                "\n");
    auto ended = (*stream)->feed(kInterruptedWhileWaiting);
    ASSERT_TRUE(ended) << ended.error().message;
    ASSERT_EQ(ended->events.size(), 1u);
    EXPECT_EQ(json::parse(ended->events[0].json).at("stopReason").as_string(), "cancelled");

    auto next = (*stream)->prompt(R"({"promptId":"p_8","content":{"type":"text","text":"go on"}})");
    ASSERT_TRUE(next) << next.error().message;
    auto turn = (*stream)->feed(std::string(kInit) + std::string(kAnswer) + std::string(kSuccess));
    ASSERT_TRUE(turn) << turn.error().message;
    for (const auto& event : turn->events)
        EXPECT_NE(event.kind, handler::plugins::EventKind::session_info) << event.json;
    ASSERT_FALSE(turn->events.empty());
    EXPECT_EQ(json::parse(turn->events.back().json).at("stopReason").as_string(), "end_turn");
}

TEST_F(ClaudeCodePlugin, ItsEventStreamParsesAcrossFeeds) {
    expect_plugin_events(kTranscript, parse_all(kTranscript));
}

TEST(ClaudeCodeStreamJson, APromptsImagesAreImageBlocksBeforeItsText) {
    StreamJsonParser parser;
    parser.prompt(R"({"promptId":"p_1","content":{"type":"text","text":"what is it?"},)"
                  R"("images":[{"mimeType":"image/png","data":"iVBORw0KGgo="}]})");
    const auto message = json::parse(parser.take_reply().input);
    EXPECT_EQ(message.at("message").at("content"),
              json::parse(R"([{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
                              {"type":"text","text":"what is it?"}])"));
    EXPECT_EQ(StreamJsonParser::user_message("", {{"image/gif", "R0lG"}}),
              R"({"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64",)"
              R"("media_type":"image/gif","data":"R0lG"}}]},"parent_tool_use_id":null,"session_id":""})"
              "\n")
        << "an image alone has no empty text block";
}

} // namespace
} // namespace claude_code_test
