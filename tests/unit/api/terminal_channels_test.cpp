// The events socket's terminal channels and its follow end to end over a real server, with
// the fake session service behind it: a client that says nothing still gets every event; one
// that follows gets the session events it named and every other message; channels to two
// sessions on one socket each get their own output, and input, resizes and end of input
// reach the right attach; the limits (how many channels, which ids, bad JSON, an unknown
// session, a typo in an option) answer with an error and leave the socket working; a
// detach, an exit and the socket's end let go of the attaches.
#include "api/event_follow.hpp"
#include "api/terminal_protocol.hpp"

#include "unit/api/fake_sessions.hpp"
#include "unit/api/server_test_fixture.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace handler::api {
namespace {

using testing::eventually;
using testing::FakeSessions;
using testing::Frame;
using testing::RawConnection;
using testing::RunningServer;
using testing::websocket_upgrade;
using namespace std::chrono_literals;
using Size = FakeSessions::Size;

boost::json::object json_of(const Frame& frame) {
    EXPECT_EQ(frame.opcode, 1) << frame.payload;
    boost::system::error_code error;
    auto value = boost::json::parse(frame.payload, error);
    if (error || !value.is_object()) {
        ADD_FAILURE() << "not a JSON object: " << frame.payload;
        return {};
    }
    return value.as_object();
}

// A field as text: a string as it is, anything else as JSON ("2", "true").
std::string field(const boost::json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (value == nullptr) return "(missing)";
    return value->is_string() ? std::string(value->as_string()) : boost::json::serialize(*value);
}

std::string attach_message(unsigned channel, const std::string& session, const std::string& extra = "") {
    return R"({"type":"attach","channel":)" + std::to_string(channel) + R"(,"session":")" + session + "\"" +
           extra + "}";
}

std::string channel_bytes(unsigned channel, std::string_view rest) {
    return std::string(1, static_cast<char>(channel)) + std::string(rest);
}

// Output as a channel carries it: channel, stream, the end offset (8 bytes), the bytes.
std::string output_frame(unsigned channel, OutputStream stream, std::uint64_t end, std::string_view text) {
    std::string frame = {static_cast<char>(channel), static_cast<char>(stream)};
    for (int shift = 56; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((end >> shift) & 0xff));
    return frame + std::string(text);
}

class TerminalChannelsTest : public ::testing::Test {
protected:
    TerminalChannelsTest() : server_({}, &sessions_) {}

    RawConnection open_events() {
        auto connection = RawConnection::unix_socket(server_.socket());
        auto reply = connection.exchange(websocket_upgrade("localhost", ""));
        EXPECT_EQ(reply.status, 101u) << reply.head;
        EXPECT_TRUE(eventually([&] { return server_.subscribers() == 1; }));
        return connection;
    }

    // Attaches `channel` to `session` and reads its greeting and replay.
    void attach(RawConnection& connection, unsigned channel, const std::string& session) {
        ASSERT_TRUE(connection.send_text(attach_message(channel, session)));
        auto greeting = json_of(connection.read_frame());
        EXPECT_EQ(field(greeting, "type"), "terminal.attached") << boost::json::serialize(greeting);
        EXPECT_EQ(field(greeting, "channel"), std::to_string(channel));
        EXPECT_EQ(field(greeting, "session"), session);
        auto replay = connection.read_frame();
        EXPECT_EQ(replay.opcode, 2);
        const auto& replayed = sessions_.replays[session];
        EXPECT_EQ(replay.payload, output_frame(channel, OutputStream::terminal, replayed.size(), replayed));
    }

    // The error the next frame carries, with its channel (0: none).
    std::pair<unsigned, std::string> error_of(RawConnection& connection) {
        auto answer = json_of(connection.read_frame());
        const auto* channel = answer.if_contains("channel");
        const auto* message = answer.if_contains("message");
        EXPECT_EQ(field(answer, "type"), channel ? "terminal.error" : "error") << boost::json::serialize(answer);
        return {channel ? static_cast<unsigned>(channel->as_int64()) : 0u,
                message && message->is_string() ? std::string(message->as_string()) : std::string()};
    }

    void publish(const std::string& json, const Topic& topic = {}) {
        server_.on_io([&] { server_.hub().publish(json, topic); });
    }

    // A session.event of `session`, as the session service publishes it.
    void publish_event(const std::string& session, const std::string& kind, int seq) {
        publish(event_text(session, kind, seq), {session, kind});
    }
    static std::string event_text(const std::string& session, const std::string& kind, int seq) {
        return R"({"type":"session.event","data":{"session":")" + session + R"(","seq":)" + std::to_string(seq) +
               R"(,"kind":")" + kind + R"("}})";
    }

    FakeSessions sessions_;
    RunningServer server_;
};

TEST_F(TerminalChannelsTest, AClientThatSaysNothingGetsEveryEventAsBefore) {
    auto connection = open_events();
    publish(R"({"type":"session.updated","data":{"id":"s_000001"}})");
    publish(R"({"type":"agent.created","data":{"id":3}})");
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"session.updated","data":{"id":"s_000001"}})");
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"agent.created","data":{"id":3}})");
    server_.on_io([&] { EXPECT_TRUE(sessions_.attaches.empty()); });
}

TEST_F(TerminalChannelsTest, AFollowerGetsItsSessionsEventsItsKindsFromEveryOneAndAllTheRest) {
    auto connection = open_events();
    ASSERT_TRUE(connection.send_text(R"({"type":"follow","sessions":["s_000002"],"kinds":["result","permission_request"]})"));
    EXPECT_EQ(connection.read_frame().payload,
              R"({"type":"following","sessions":["s_000002"],"kinds":["permission_request","result"]})");
    publish_event("s_000001", "agent_message_chunk", 7); // another session's chunk: not sent
    publish_event("s_000002", "agent_message_chunk", 3);
    publish_event("s_000001", "result", 8);               // a kind it follows everywhere
    publish(R"({"type":"session.updated","data":{"id":"s_000001"}})");
    publish_event("s_000003", "tool_call", 1);            // not sent
    publish(R"({"type":"agent.created","data":{"id":3}})");
    EXPECT_EQ(connection.read_frame().payload, event_text("s_000002", "agent_message_chunk", 3));
    EXPECT_EQ(connection.read_frame().payload, event_text("s_000001", "result", 8));
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"session.updated","data":{"id":"s_000001"}})");
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"agent.created","data":{"id":3}})");

    // Following "*" is the default again; an empty list follows no session's events.
    ASSERT_TRUE(connection.send_text(R"({"type":"follow","sessions":"*"})"));
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"following","sessions":"*","kinds":[]})");
    publish_event("s_000003", "tool_call", 2);
    EXPECT_EQ(connection.read_frame().payload, event_text("s_000003", "tool_call", 2));
    ASSERT_TRUE(connection.send_text(R"({"type":"follow","sessions":[]})"));
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"following","sessions":[],"kinds":[]})");
    publish_event("s_000003", "tool_call", 3);
    publish(R"({"type":"session.removed","data":{"id":"s_000003"}})");
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"session.removed","data":{"id":"s_000003"}})");
}

TEST_F(TerminalChannelsTest, AFollowThatIsWrongSaysWhereAndKeepsTheFilterItHad) {
    auto connection = open_events();
    ASSERT_TRUE(connection.send_text(R"({"type":"follow","sessions":["s_000001"]})"));
    EXPECT_EQ(field(json_of(connection.read_frame()), "type"), "following");
    const std::string many = [] {
        std::string list;
        for (int i = 0; i < 257; ++i) list += std::string(i ? "," : "") + "\"s_" + std::to_string(i) + "\"";
        return R"({"type":"follow","sessions":[)" + list + "]}";
    }();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"type":"follow"})", "follow: needs \"sessions\""},
        {R"({"type":"follow","sessions":"s_000001"})", "follow: \"sessions\" must be an array of session ids"},
        {R"({"type":"follow","sessions":["s_000001",7]})", "follow: \"sessions\"[1] is not a session id"},
        {R"({"type":"follow","sessions":["../etc"]})", "follow: \"sessions\"[0] is not a session id (\"../etc\")"},
        {R"({"type":"follow","sessions":[],"kinds":["chunk"]})", "follow: \"kinds\"[0] is not an event kind (\"chunk\")"},
        {R"({"type":"follow","sessions":[],"kind":["result"]})", "follow: unknown field \"kind\""},
        {many, "follow: \"sessions\" names 257; at most 256"},
    };
    for (const auto& [message, says] : cases) {
        ASSERT_TRUE(connection.send_text(message));
        auto [channel, said] = error_of(connection);
        EXPECT_EQ(channel, 0u) << message;
        EXPECT_NE(said.find(says), std::string::npos) << message << " → " << said;
    }
    publish_event("s_000002", "agent_message_chunk", 1);
    publish_event("s_000001", "agent_message_chunk", 1);
    EXPECT_EQ(connection.read_frame().payload, event_text("s_000001", "agent_message_chunk", 1))
        << "the filter is still the last one that was taken";
}

TEST(EventFollow, OnlyAFollowMessageIsTaken) {
    EXPECT_FALSE(parse_follow("not json").has_value());
    EXPECT_FALSE(parse_follow(R"({"type":"attach","channel":1})").has_value());
    EXPECT_FALSE(parse_follow(R"(["follow"])").has_value());
    auto taken = parse_follow(R"({"type":"follow","sessions":["s_00000a","s_00000a"],"kinds":["tool_call"]})");
    ASSERT_TRUE(taken.has_value() && taken->ok());
    const EventFilter& filter = **taken;
    EXPECT_FALSE(filter.everything);
    EXPECT_TRUE(filter.wants({"s_00000a", "plan"}));
    EXPECT_TRUE(filter.wants({"s_00000b", "tool_call"}));
    EXPECT_FALSE(filter.wants({"s_00000b", "plan"}));
    EXPECT_TRUE(filter.wants({}));
    EXPECT_TRUE(EventFilter{}.wants({"s_00000b", "plan"})) << "a client that never followed gets everything";
}

TEST_F(TerminalChannelsTest, TwoChannelsToTwoSessionsGetTheirOwnOutputBetweenTheEvents) {
    auto connection = open_events();
    attach(connection, 1, "s_000001");
    attach(connection, 2, "s_000002");
    server_.on_io([&] {
        sessions_.say_to("s_000002", OutputStream::stdout_, "two");
        server_.hub().publish(R"({"type":"session.updated","data":{"id":"s_000002"}})");
        sessions_.say_to("s_000001", OutputStream::terminal, "one");
        sessions_.exit_of("s_000002", 4);
    });
    auto two = connection.read_frame();
    EXPECT_EQ(two.opcode, 2);
    EXPECT_EQ(two.payload, output_frame(2, OutputStream::stdout_, 12, "two"));
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"session.updated","data":{"id":"s_000002"}})");
    EXPECT_EQ(connection.read_frame().payload, output_frame(1, OutputStream::terminal, 12, "one"));
    auto exit = json_of(connection.read_frame());
    EXPECT_EQ(field(exit, "type"), "terminal.exit");
    EXPECT_EQ(field(exit, "channel"), "2");
    EXPECT_EQ(field(exit, "code"), "4");
    // The exit freed channel 2: it attaches again, and input to it is refused meanwhile.
    ASSERT_TRUE(connection.send_binary(channel_bytes(2, "late")));
    EXPECT_EQ(error_of(connection).first, 2u);
    attach(connection, 2, "s_000001");
    server_.on_io([&] {
        EXPECT_EQ(sessions_.of("s_000001").size(), 2u);
        EXPECT_TRUE(sessions_.typed.empty()) << sessions_.typed;
    });
}

TEST_F(TerminalChannelsTest, InputResizeAndEndOfInputReachTheAttachOfTheirChannel) {
    auto connection = open_events();
    attach(connection, 3, "s_000001");
    attach(connection, 9, "s_000002");
    ASSERT_TRUE(connection.send_binary(channel_bytes(9, "make test\r")));
    ASSERT_TRUE(connection.send_binary(channel_bytes(3, "ls\r")));
    ASSERT_TRUE(connection.send_text(R"({"type":"resize","channel":3,"rows":40,"cols":120})"));
    ASSERT_TRUE(connection.send_text(R"({"type":"eof","channel":9})"));
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.eofs == 1; }); }));
    server_.on_io([&] {
        const auto first = sessions_.of("s_000001");
        const auto second = sessions_.of("s_000002");
        ASSERT_EQ(first.size(), 1u);
        ASSERT_EQ(second.size(), 1u);
        EXPECT_EQ(first[0].typed, "ls\r");
        EXPECT_EQ(second[0].typed, "make test\r");
        EXPECT_EQ(first[0].sizes, (std::vector<Size>{{40, 120}}));
        EXPECT_TRUE(second[0].sizes.empty());
        EXPECT_EQ(first[0].eofs, 0);
        EXPECT_EQ(second[0].eofs, 1);
    });
}

TEST_F(TerminalChannelsTest, AttachOptionsAreTakenAsTheTerminalRouteTakesThem) {
    auto connection = open_events();
    ASSERT_TRUE(connection.send_text(
        attach_message(1, "s_000001", R"(,"from":5,"read_only":true,"events":1,"after":41,"output":false)")));
    EXPECT_EQ(field(json_of(connection.read_frame()), "events"), "structured");
    server_.on_io([&] {
        EXPECT_EQ(sessions_.last_options.from, 5u);
        EXPECT_TRUE(sessions_.last_options.read_only);
        EXPECT_TRUE(sessions_.last_options.events);
        EXPECT_EQ(sessions_.last_options.events_after, 41);
        EXPECT_FALSE(sessions_.last_options.output);
    });
    EXPECT_EQ(connection.read_frame().payload, output_frame(1, OutputStream::terminal, 9, "replayed;"));
    server_.on_io([&] { sessions_.event(2, "result", R"({"stopReason":"end_turn"})"); });
    auto event = json_of(connection.read_frame());
    EXPECT_EQ(field(event, "type"), "terminal.event");
    EXPECT_EQ(field(event, "channel"), "1");
    EXPECT_EQ(field(event, "seq"), "2");
    EXPECT_EQ(field(event, "payload"), R"({"stopReason":"end_turn"})");
}

TEST_F(TerminalChannelsTest, MistakesGetAnErrorThatSaysWhatAndTheSocketGoesOn) {
    auto connection = open_events();
    attach(connection, 1, "s_000001");
    struct Case {
        std::string message;
        unsigned channel; // which the error names (0: none)
        std::string says;
    };
    const std::vector<Case> cases = {
        {"not json", 0, "must be JSON"},
        {"[1,2]", 0, "JSON object with a \"type\""},
        {R"({"type":"dance","channel":1})", 0, "unknown message type \"dance\""},
        {attach_message(0, "s_000001"), 0, "a whole number from 1 to 255"},
        {attach_message(256, "s_000001"), 0, "a whole number from 1 to 255"},
        {R"({"type":"attach","channel":"2","session":"s_000001"})", 0, "a whole number from 1 to 255"},
        {attach_message(1, "s_000002"), 1, "channel 1 is open already"},
        {attach_message(2, "s_999999"), 2, "session 's_999999' does not exist"},
        {R"({"type":"attach","channel":2})", 2, "attach needs \"session\""},
        {attach_message(2, "s_000001", R"(,"readonly":true)"), 2, "unknown field 'readonly'"},
        {attach_message(2, "s_000001", R"(,"from":-3)"), 2, "field 'from' must be a byte offset"},
        {attach_message(2, "s_000001", R"(,"output":"maybe")"), 2, "field 'output' must be 1 or 0"},
        {R"({"type":"resize","channel":1,"rows":0,"cols":80})", 1, "from 1 to 10000"},
        {R"({"type":"resize","channel":5,"rows":24,"cols":80})", 5, "channel 5 is not open"},
        {R"({"type":"detach","channel":6})", 6, "channel 6 is not open"},
    };
    for (const auto& one : cases) {
        ASSERT_TRUE(connection.send_text(one.message));
        auto [channel, says] = error_of(connection);
        EXPECT_EQ(channel, one.channel) << one.message;
        EXPECT_NE(says.find(one.says), std::string::npos) << one.message << " → " << says;
    }
    ASSERT_TRUE(connection.send_binary(""));
    EXPECT_NE(error_of(connection).second.find("channel's byte"), std::string::npos);
    ASSERT_TRUE(connection.send_binary(channel_bytes(7, "x")));
    EXPECT_EQ(error_of(connection), (std::pair<unsigned, std::string>{7, "input for channel 7, which is not open (attach it first)"}));
    // None of it reached a session, and the socket still carries events and channel 1.
    server_.on_io([&] {
        EXPECT_EQ(sessions_.attaches.size(), 1u);
        EXPECT_TRUE(sessions_.typed.empty());
        EXPECT_TRUE(sessions_.sizes.empty());
    });
    publish(R"({"type":"agent.created","data":{}})");
    EXPECT_EQ(connection.read_frame().payload, R"({"type":"agent.created","data":{}})");
    ASSERT_TRUE(connection.send_binary(channel_bytes(1, "ok")));
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.typed == "ok"; }); }));
}

TEST_F(TerminalChannelsTest, AtMostSixteenChannelsAreOpenAtOnce) {
    auto connection = open_events();
    for (unsigned channel = 1; channel <= 16; ++channel) attach(connection, channel, "s_000001");
    ASSERT_TRUE(connection.send_text(attach_message(17, "s_000002")));
    auto [channel, says] = error_of(connection);
    EXPECT_EQ(channel, 17u);
    EXPECT_NE(says.find("16 channels open"), std::string::npos) << says;
    server_.on_io([&] { EXPECT_TRUE(sessions_.of("s_000002").empty()); });
    // One detached makes room again.
    ASSERT_TRUE(connection.send_text(R"({"type":"detach","channel":4})"));
    auto detached = json_of(connection.read_frame());
    EXPECT_EQ(field(detached, "type"), "terminal.detached");
    EXPECT_EQ(field(detached, "channel"), "4");
    attach(connection, 17, "s_000002");
}

TEST_F(TerminalChannelsTest, ADetachAndTheSocketsEndLetGoOfTheAttaches) {
    auto connection = open_events();
    attach(connection, 1, "s_000001");
    attach(connection, 2, "s_000002");
    attach(connection, 3, "s_000002");
    ASSERT_TRUE(connection.send_text(R"({"type":"detach","channel":2})"));
    EXPECT_EQ(field(json_of(connection.read_frame()), "type"), "terminal.detached");
    server_.on_io([&] {
        const auto second = sessions_.of("s_000002");
        ASSERT_EQ(second.size(), 2u);
        EXPECT_TRUE(second[0].detached);
        EXPECT_FALSE(second[1].detached);
        EXPECT_FALSE(sessions_.of("s_000001")[0].detached);
        // Output of the detached attach goes nowhere; the other channel of that session gets it.
        sessions_.say_to("s_000002", OutputStream::terminal, "still");
    });
    EXPECT_EQ(connection.read_frame().payload, output_frame(3, OutputStream::terminal, 14, "still"));
    ASSERT_TRUE(connection.send_close(1000));
    connection.shutdown_write();
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.detached.size() == 3; }); }));
    server_.on_io([&] {
        for (const auto& [id, attach] : sessions_.attaches) EXPECT_TRUE(attach.detached) << id;
    });
    EXPECT_TRUE(eventually([&] { return server_.subscribers() == 0; }));
}

// A client that vanishes without a close frame is detached too.
TEST_F(TerminalChannelsTest, AClientThatVanishesIsDetached) {
    {
        auto connection = open_events();
        attach(connection, 1, "s_000001");
    }
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return sessions_.detached.size() == 1; }); }));
}

// A client that reads nothing while its channel's program prints is closed (1008) rather
// than let the queue grow, and its attach goes with it.
TEST_F(TerminalChannelsTest, AClientThatStopsReadingIsClosedAndDetached) {
    auto connection = RawConnection::unix_socket(server_.socket());
    ASSERT_EQ(connection.exchange(websocket_upgrade("localhost", "")).status, 101u);
    ASSERT_TRUE(connection.send_text(attach_message(1, "s_000001")));
    ASSERT_TRUE(eventually([&] { return server_.on_io([&] { return !sessions_.attaches.empty(); }); }));
    const std::string block(1 << 20, 'y');
    server_.on_io([&] {
        for (int i = 0; i < 40 && sessions_.detached.empty(); ++i)
            sessions_.say_to("s_000001", OutputStream::terminal, block);
    });
    server_.on_io([&] { EXPECT_EQ(sessions_.detached.size(), 1u); });
    // What was sent before the close frame is read past; the close says why.
    Frame frame;
    do frame = connection.read_frame(5000ms);
    while (frame.opcode != 8 && frame.opcode != -1);
    EXPECT_EQ(frame.close_code(), 1008u);
}

TEST(TerminalProtocol, ParsesChannelCommandsAndNamesTheChannelOfAnError) {
    auto attach = parse_channel_command(R"({"type":"attach","channel":3,"session":"s_1","from":"12","read_only":1})");
    ASSERT_TRUE(attach.command) << attach.command.error().message;
    EXPECT_EQ(attach.command->kind, TerminalCommand::Kind::attach);
    EXPECT_EQ(attach.command->channel, 3u);
    EXPECT_EQ(attach.command->session, "s_1");
    EXPECT_EQ(attach.command->options.from, 12u);
    EXPECT_TRUE(attach.command->options.read_only);
    auto resize = parse_channel_command(R"({"type":"resize","channel":255,"rows":2,"cols":3})");
    ASSERT_TRUE(resize.command);
    EXPECT_EQ(resize.command->rows, 2);
    EXPECT_EQ(resize.command->cols, 3);
    auto bad = parse_channel_command(R"({"type":"attach","channel":8,"session":"s_1","after":true})");
    EXPECT_EQ(bad.channel, 8u);
    ASSERT_FALSE(bad.command);
    EXPECT_EQ(bad.command.error().message, "field 'after' must be an event's seq (a whole number), got 'true'");
    // The terminal route takes no channels and keeps its own two types.
    EXPECT_FALSE(parse_terminal_command(R"({"type":"attach","channel":1,"session":"s_1"})").command);
    EXPECT_TRUE(parse_terminal_command(R"({"type":"eof"})").command);
}

TEST(TerminalProtocol, ChannelMessagesCarryTheirChannelAndTheRoutesDoNot) {
    Attached attached;
    attached.produced = 3;
    EXPECT_EQ(attached_message(kNoChannel, "s_1", attached),
              R"({"type":"attached","session":"s_1","tty":true,"produced":3,"state":"starting","events":"none"})");
    EXPECT_EQ(attached_message(2, "s_1", attached),
              R"({"type":"terminal.attached","channel":2,"session":"s_1","tty":true,"produced":3,"state":"starting","events":"none"})");
    EXPECT_EQ(exit_message(kNoChannel, 1), R"({"type":"exit","code":1})");
    EXPECT_EQ(ended_message(4, "lost"), R"({"type":"terminal.ended","channel":4,"reason":"lost"})");
    EXPECT_EQ(event_message(5, store::SessionEvent{"s_1", 1, 2, "plan", "{}"}),
              R"({"type":"terminal.event","channel":5,"seq":1,"at":2,"kind":"plan","payload":{}})");
    EXPECT_EQ(output_message(kNoChannel, OutputStream::stderr_, 5, "x"), "\x03x");
    EXPECT_EQ(output_message(7, OutputStream::stdout_, 0x0102, "x"), std::string("\x07\x02\0\0\0\0\0\0\x01\x02x", 11));
}

} // namespace
} // namespace handler::api
