// Which tool call explains a connection's process chain, and what an origin says when
// nothing does. The tool calls' events are the harness's output and the command lines the
// processes' own, so the hostile shapes are here too.
#include "sessions/connection_origin.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

template <std::size_t N> std::string bytes(const char (&text)[N]) { return std::string(text, N - 1); }

shim::OwnerProcess process(std::uint32_t pid, std::string command, bool truncated = false) {
    return {pid, std::move(command), truncated};
}

std::string execute(const std::string& id, const std::string& command_json, const std::string& kind = "execute") {
    return R"({"toolCallId":")" + id + R"(","title":"Run )" + id + R"(","kind":")" + kind +
           R"(","status":"pending","rawInput":{"command":)" + command_json + "}}";
}

TEST(OpenToolCalls, OpensExecuteCallsWithACommandAndClosesThemAtTheirEnd) {
    OpenToolCalls calls;
    calls.observe("tool_call", execute("a", R"("curl -s http://x")"));
    calls.observe("tool_call", execute("b", R"(["bash","-lc","ls"])"));
    calls.observe("tool_call", execute("c", R"("cat f")", "read"));  // not a command
    calls.observe("tool_call", R"({"toolCallId":"d","kind":"execute","rawInput":{}})"); // no command
    calls.observe("tool_call", "not json");
    ASSERT_EQ(calls.open().size(), 2u);
    EXPECT_EQ(calls.open().at("b").command, "bash -lc ls");
    calls.observe("tool_call_update", R"({"toolCallId":"a","status":"in_progress"})");
    EXPECT_EQ(calls.open().size(), 2u);
    calls.observe("tool_call_update", R"({"toolCallId":"a","status":"completed"})");
    calls.observe("tool_call_update", R"({"toolCallId":"zz","status":"failed"})");
    ASSERT_EQ(calls.open().size(), 1u);
    calls.observe("result", R"({"stopReason":"end_turn"})");
    EXPECT_TRUE(calls.open().empty());
}

TEST(OpenToolCalls, AHarnessThatNeverEndsItsCallsFillsNothing) {
    OpenToolCalls calls;
    for (std::size_t i = 0; i < OpenToolCalls::kMaxOpen + 50; ++i)
        calls.observe("tool_call", execute("t" + std::to_string(i), R"("echo )" + std::to_string(i) + R"(")"));
    EXPECT_EQ(calls.open().size(), OpenToolCalls::kMaxOpen);
    EXPECT_FALSE(calls.open().contains("t0"));
    EXPECT_TRUE(calls.open().contains("t" + std::to_string(OpenToolCalls::kMaxOpen + 49)));
    calls.observe("tool_call", execute("huge", "\"" + std::string(OpenToolCalls::kMaxCommandBytes + 1, 'x') + "\""));
    EXPECT_FALSE(calls.open().contains("huge"));
}

// The three shapes the harnesses run commands in: Claude Code's snapshot-and-eval shell
// line, pi's bash -c, and Codex's reported `bash -lc '…'` with the shell given the inner
// script.
TEST(OpenToolCalls, MatchesTheShellThatRanTheCommand) {
    OpenToolCalls calls;
    calls.observe("tool_call", execute("claude", R"("curl -s https://api.example/v1")"));
    const std::vector<shim::OwnerProcess> claude_chain = {
        process(30, bytes("curl\0-s\0https://api.example/v1")),
        process(29, bytes("/bin/bash\0-c\0-l\0source /home/u/.claude/shell-snapshots/snapshot-bash-1.sh && eval "
                          "'curl -s https://api.example/v1' < /dev/null && pwd -P >| /tmp/claude-1-cwd")),
        process(10, bytes("claude\0-p\0do it"))};
    auto found = calls.match(claude_chain);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, "claude");

    OpenToolCalls codex;
    codex.observe("tool_call", execute("codex", R"("/bin/bash -lc 'npm install left-pad'")"));
    const std::vector<shim::OwnerProcess> codex_chain = {
        process(51, bytes("node\0/usr/bin/npm\0install\0left-pad")),
        process(50, bytes("/bin/bash\0-lc\0npm install left-pad")), process(12, bytes("codex\0app-server"))};
    found = codex.match(codex_chain);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, "codex");
}

TEST(OpenToolCalls, TheHarnessItselfOrAnUnrelatedProcessIsNoToolCall) {
    OpenToolCalls calls;
    calls.observe("tool_call", execute("ls", R"("ls")"));
    // "ls" inside a word of the harness's command line is not the command.
    EXPECT_FALSE(calls.match({process(10, bytes("node\0/usr/lib/node_modules/claude/cli.js\0--tools"))}));
    EXPECT_FALSE(calls.match({process(10, bytes("falls"))}));
    EXPECT_FALSE(calls.match({}));
    EXPECT_TRUE(calls.match({process(11, bytes("bash\0-c\0ls")), process(10, bytes("node"))}));
}

TEST(OpenToolCalls, TheNearestProcessAndTheClosestCommandWin) {
    OpenToolCalls calls;
    calls.observe("tool_call", execute("outer", R"("make test")"));
    calls.observe("tool_call", execute("inner", R"("curl http://x")"));
    calls.observe("tool_call", execute("inner-again", R"("curl http://x")"));
    const std::vector<shim::OwnerProcess> chain = {process(40, bytes("curl\0http://x")),
                                                   process(39, bytes("bash\0-c\0make test"))};
    auto found = calls.match(chain);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, "inner-again"); // nearest process; of two equal matches the later
}

TEST(ConnectionOrigin, FoundProcessesAreShownAndAnUnknownOneSaysWhy) {
    OpenToolCalls calls;
    calls.observe("tool_call", execute("t1", R"("curl http://x")"));
    shim::OwnerAnswer answer;
    answer.status = shim::OwnerStatus::found;
    answer.processes = {process(40, bytes("curl\0http://x\0\xff\xfe")),
                        process(39, bytes("bash\0-c\0curl http://x"), true)};
    const auto origin = origin_of("s_1", 7, answer, calls, true);
    EXPECT_EQ(origin.connection, 7);
    ASSERT_TRUE(origin.pid);
    EXPECT_EQ(*origin.pid, 40);
    EXPECT_EQ(origin.command, "curl http://x \xef\xbf\xbd\xef\xbf\xbd"); // invalid UTF-8 replaced
    EXPECT_EQ(origin.parents, R"([{"pid":39,"command":"bash -c curl http://x…"}])");
    EXPECT_EQ(origin.tool_call_id, "t1");
    EXPECT_EQ(origin.tool_call_title, "Run t1");
    EXPECT_EQ(origin.note, "");

    calls.observe("tool_call_update", R"({"toolCallId":"t1","status":"completed"})");
    const auto later = origin_of("s_1", 8, answer, calls, true);
    EXPECT_EQ(later.tool_call_id, "");
    EXPECT_NE(later.note.find("no tool call"), std::string::npos) << later.note;
    const auto terminal = origin_of("s_1", 8, answer, calls, false);
    EXPECT_NE(terminal.note.find("reports no tool calls"), std::string::npos) << terminal.note;

    for (auto status : {shim::OwnerStatus::no_connection, shim::OwnerStatus::no_process, shim::OwnerStatus::unreadable}) {
        shim::OwnerAnswer none;
        none.status = status;
        const auto unknown = origin_of("s_1", 9, none, calls, true);
        EXPECT_FALSE(unknown.pid);
        EXPECT_EQ(unknown.note.rfind("unknown: ", 0), 0u) << unknown.note;
        EXPECT_EQ(unknown.parents, "[]");
    }
}

} // namespace
} // namespace handler::sessions
