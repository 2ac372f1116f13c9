// The terminal WebSocket end to end over a real server and the CLI's real client
// (client::attach_terminal), with a fake session service behind it: the greeting comes
// first, replay then live output with its stream, input, resize and end of input reach
// the session, the detach keys end the attach but not the session, and bad input gets a
// clear answer.
#include "api/client.hpp"
#include "api/terminal_target.hpp"
#include "cli/terminal.hpp"

#include "unit/api/fake_sessions.hpp"
#include "unit/api/server_test_fixture.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fcntl.h>

namespace handler::api {
namespace {

using testing::eventually;
using testing::FakeSessions;
using testing::RawConnection;
using testing::RunningServer;
using testing::websocket_upgrade;
using namespace std::chrono_literals;
using Size = std::pair<std::uint16_t, std::uint16_t>;

struct Pipe {
    Pipe() { EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0); }
    ~Pipe() {
        close_write();
        ::close(fds[0]);
    }
    void write(std::string_view text) const { EXPECT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size())); }
    void close_write() {
        if (fds[1] >= 0) ::close(fds[1]);
        fds[1] = -1;
    }
    int fds[2] = {-1, -1};
};

class TerminalTest : public ::testing::Test {
protected:
    TerminalTest() : server_({}, &sessions_) {}

    // attach_terminal on a thread of its own, as the CLI runs it.
    void attach(client::TerminalHooks hooks, const std::string& target = "/api/v1/sessions/s_000001/terminal") {
        hooks_ = std::move(hooks);
        thread_ = std::thread([this, target] { end_ = client::attach_terminal(server_.socket(), target, hooks_); });
    }
    Result<client::TerminalEnd> finish() {
        thread_.join();
        return std::move(*end_);
    }
    bool attached() {
        return eventually([&] { return server_.on_io([&] { return !sessions_.client.expired(); }); });
    }

    FakeSessions sessions_;
    RunningServer server_;
    client::TerminalHooks hooks_;
    std::thread thread_;
    std::optional<Result<client::TerminalEnd>> end_;
};

TEST_F(TerminalTest, GreetingThenReplayThenLiveOutputThenTheExitStatus) {
    std::vector<std::string> seen; // written by the client thread only, read after join
    client::TerminalHooks hooks;
    hooks.attached = [&](bool tty, std::uint64_t produced) {
        seen.push_back("attached tty=" + std::to_string(tty) + " produced=" + std::to_string(produced));
    };
    hooks.output = [&](OutputStream stream, std::string_view bytes) {
        seen.push_back(std::to_string(static_cast<int>(stream)) + ":" + std::string(bytes));
    };
    attach(std::move(hooks));
    ASSERT_TRUE(attached());
    server_.on_io([&] {
        sessions_.say(OutputStream::stdout_, "live");
        sessions_.say(OutputStream::stderr_, "oops");
        sessions_.exit(3);
    });
    auto end = finish();
    ASSERT_TRUE(end.ok()) << end.error().message;
    EXPECT_EQ(end->how, client::TerminalEnd::How::exited);
    EXPECT_EQ(end->exit_code, 3);
    const std::vector<std::string> expected = {"attached tty=1 produced=9", "1:replayed;", "2:live",
                                               "3:oops"};
    EXPECT_EQ(seen, expected);
}

// With ?events=1 the greeting says how output becomes events, and each event arrives as
// a JSON message between the output, in order, before the exit.
TEST_F(TerminalTest, EventsArriveInOrderWithTheirPayloadsBeforeTheExit) {
    std::vector<std::string> seen; // written by the client thread only, read after join
    client::TerminalHooks hooks;
    hooks.output = [&](OutputStream stream, std::string_view bytes) {
        seen.push_back(std::to_string(static_cast<int>(stream)) + ":" + std::string(bytes));
    };
    hooks.events_mode = [&](const std::string& mode) { seen.push_back("events=" + mode); };
    hooks.event = [&](const boost::json::object& event) {
        seen.push_back(std::string(event.at("kind").as_string()) + " #" +
                       std::to_string(event.at("seq").as_int64()) + " " +
                       boost::json::serialize(event.at("payload")));
    };
    attach(std::move(hooks), "/api/v1/sessions/s_000001/terminal?events=1");
    ASSERT_TRUE(attached());
    server_.on_io([&] {
        sessions_.say(OutputStream::stdout_, "{}");
        sessions_.event(1, "agent_message_chunk", R"({"content":{"type":"text","text":"hi"}})");
        sessions_.event(2, "result", R"({"stopReason":"end_turn","result":"hi"})");
        sessions_.exit(0);
    });
    auto end = finish();
    ASSERT_TRUE(end.ok()) << end.error().message;
    const std::vector<std::string> expected = {
        "events=structured", "1:replayed;", "2:{}",
        R"(agent_message_chunk #1 {"content":{"type":"text","text":"hi"}})",
        R"(result #2 {"stopReason":"end_turn","result":"hi"})"};
    EXPECT_EQ(seen, expected);
}

TEST_F(TerminalTest, InputResizeAndEndOfInputReachTheSession) {
    Pipe input;
    client::TerminalHooks hooks;
    hooks.input_fd = input.fds[0];
    hooks.eof_on_input_end = true;
    hooks.window_size = [] { return std::make_optional((Size{30, 90})); };
    attach(std::move(hooks));
    ASSERT_TRUE(attached());
    input.write("make test\r");
    input.close_write();
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.eofs == 1; }); }));
    server_.on_io([&] {
        EXPECT_EQ(sessions_.typed, "make test\r");
        ASSERT_FALSE(sessions_.sizes.empty());
        EXPECT_EQ(sessions_.sizes.front(), (Size{30, 90}));
        sessions_.exit(0);
    });
    auto end = finish();
    ASSERT_TRUE(end.ok()) << end.error().message;
    EXPECT_EQ(end->exit_code, 0);
}

TEST_F(TerminalTest, TheDetachKeysEndTheAttachAndNeverReachTheSession) {
    Pipe input;
    auto keys = cli::DetachKeys::parse("ctrl-p,ctrl-q");
    ASSERT_TRUE(keys.ok());
    client::TerminalHooks hooks;
    hooks.input_fd = input.fds[0];
    hooks.filter = [&keys](std::string& bytes) { return keys->filter(bytes); };
    attach(std::move(hooks));
    ASSERT_TRUE(attached());
    input.write("ls\x10");
    input.write("\x11");
    auto end = finish();
    ASSERT_TRUE(end.ok()) << end.error().message;
    EXPECT_EQ(end->how, client::TerminalEnd::How::detached);
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.detached.size() == 1; }); }));
    server_.on_io([&] { EXPECT_EQ(sessions_.typed, "ls"); });
}

TEST_F(TerminalTest, AnUnknownSessionIsAnErrorThatSaysSo) {
    attach({}, "/api/v1/sessions/s_999999/terminal");
    auto end = finish();
    ASSERT_FALSE(end.ok());
    EXPECT_EQ(end.error().code, ErrorCode::not_found);
    EXPECT_NE(end.error().message.find("s_999999"), std::string::npos) << end.error().message;
}

TEST_F(TerminalTest, QueryOptionsReachTheSessionAndBadOnesAreRefusedBeforeTheUpgrade) {
    attach({}, "/api/v1/sessions/s_000001/terminal?from=5&read_only=1&events=1");
    ASSERT_TRUE(attached());
    server_.on_io([&] {
        EXPECT_EQ(sessions_.last_options.from, 5u);
        EXPECT_TRUE(sessions_.last_options.read_only);
        EXPECT_TRUE(sessions_.last_options.events);
        sessions_.exit(0);
    });
    ASSERT_TRUE(finish().ok());

    auto connection = RawConnection::unix_socket(server_.socket());
    auto reply = connection.exchange(
        websocket_upgrade("localhost", "", "/api/v1/sessions/s_000001/terminal?from=soon"));
    EXPECT_EQ(reply.status, 400u);
    EXPECT_NE(reply.body.find("'from' must be a byte offset"), std::string::npos) << reply.body;
}

// A client that reconnects asks for the events after the last it saw, and an editor
// (which reads events, not output) for no output at all.
TEST_F(TerminalTest, AfterAndOutputReachTheSessionAndBadOnesAreRefused) {
    attach({}, "/api/v1/sessions/s_000001/terminal?events=1&after=41&output=0");
    ASSERT_TRUE(attached());
    server_.on_io([&] {
        EXPECT_EQ(sessions_.last_options.events_after, 41);
        EXPECT_FALSE(sessions_.last_options.output);
        sessions_.exit(0);
    });
    ASSERT_TRUE(finish().ok());
    for (const char* query : {"after=-1", "after=soon", "output=maybe"}) {
        auto connection = RawConnection::unix_socket(server_.socket());
        auto reply = connection.exchange(
            websocket_upgrade("localhost", "", std::string("/api/v1/sessions/s_000001/terminal?") + query));
        EXPECT_EQ(reply.status, 400u) << query;
    }
}

TEST_F(TerminalTest, AMalformedMessageGetsAnErrorAndTheTerminalStaysOpen) {
    auto connection = RawConnection::unix_socket(server_.socket());
    auto reply = connection.exchange(
        websocket_upgrade("localhost", "", "/api/v1/sessions/s_000001/terminal"));
    ASSERT_EQ(reply.status, 101u) << reply.head;
    auto greeting = connection.read_frame();
    EXPECT_EQ(greeting.opcode, 1);
    EXPECT_NE(greeting.payload.find("\"attached\""), std::string::npos);
    auto replay = connection.read_frame();
    EXPECT_EQ(replay.opcode, 2);
    EXPECT_EQ(replay.payload, std::string("\x01replayed;"));
    for (const char* bad : {"not json", R"({"type":"resize","rows":0,"cols":80})", R"({"type":"dance"})"}) {
        ASSERT_TRUE(connection.send_text(bad));
        auto answer = connection.read_frame();
        EXPECT_EQ(answer.opcode, 1) << bad;
        EXPECT_NE(answer.payload.find("\"error\""), std::string::npos) << answer.payload;
    }
    ASSERT_TRUE(connection.send_text(R"({"type":"resize","rows":40,"cols":120})"));
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return !sessions_.sizes.empty(); }); }));
    server_.on_io([&] { EXPECT_EQ(sessions_.sizes.back(), (Size{40, 120})); });
}

TEST(TerminalTarget, ParsesOnlyTheTerminalPath) {
    EXPECT_FALSE(parse_terminal_target("/api/v1/events").has_value());
    EXPECT_FALSE(parse_terminal_target("/api/v1/sessions/s_1").has_value());
    auto plain = parse_terminal_target("/api/v1/sessions/s_1/terminal");
    ASSERT_TRUE(plain && *plain);
    EXPECT_EQ((*plain)->session_id, "s_1");
    EXPECT_FALSE((*plain)->options.from.has_value());
    auto unknown = parse_terminal_target("/api/v1/sessions/s_1/terminal?evil=1");
    ASSERT_TRUE(unknown && !*unknown);
    EXPECT_NE(unknown->error().message.find("unknown query parameter 'evil'"), std::string::npos);
}

TEST(DetachKeys, HoldsBackAStartThatMayBecomeTheSequenceAndPassesItOnOtherwise) {
    auto keys = cli::DetachKeys::parse("ctrl-p,ctrl-q");
    ASSERT_TRUE(keys.ok());
    std::string bytes = "a\x10";
    EXPECT_TRUE(keys->filter(bytes));
    EXPECT_EQ(bytes, "a"); // ctrl-p held back
    bytes = "b";
    EXPECT_TRUE(keys->filter(bytes));
    EXPECT_EQ(bytes, "\x10" "b"); // not the sequence after all: ctrl-p reaches the program
    bytes = "x\x10\x10\x11y";
    EXPECT_FALSE(keys->filter(bytes));
    EXPECT_EQ(bytes, "x\x10"); // the first ctrl-p was a real one; detach, y is dropped
    EXPECT_FALSE(cli::DetachKeys::parse("ctrl-1").ok());
    auto none = cli::DetachKeys::parse("");
    std::string anything = "\x10\x11";
    EXPECT_TRUE(none->filter(anything));
    EXPECT_EQ(anything, "\x10\x11");
}

} // namespace
} // namespace handler::api
