// What a page sends as text on the events socket (docs/api.md, "Terminal channels" and
// "Following"), read as WebSocketSession reads it: parse_follow first, then
// parse_channel_command; and the binary output header a channel's bytes go out under.
// Input: one text message.
//
// Properties: a follow is taken only from a JSON object whose type is "follow"; a taken
// filter names at most 256 sessions of a session id's shape and known kinds, and its
// `following` answer, sent back as a follow, is taken as the same filter; a refused one
// says "follow:" and is invalid_argument. A channel command is on channel 1 to 255, an
// attach names a session, a resize is 1 to 10000 each way, and the command written back in
// the documented shape parses to the same one; an error names a channel only when the
// message named a valid one. An output message starts with its channel, its stream and
// its end offset (8 bytes, most significant first), then the bytes as given.
#include "api/event_follow.hpp"
#include "api/terminal_protocol.hpp"

#include "fuzz/fuzz_support.hpp"
#include "fuzz/terminal_commands.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

namespace {

namespace json = boost::json;
using handler::fuzz::check;
using handler::fuzz::same;
using handler::fuzz::written_back;
using namespace handler::api;

bool is_follow_object(std::string_view text) {
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    const auto* object = error ? nullptr : value.if_object();
    const auto* type = object ? object->if_contains("type") : nullptr;
    return type != nullptr && type->is_string() && type->as_string() == "follow";
}

bool same(const EventFilter& a, const EventFilter& b) {
    return a.everything == b.everything && a.sessions == b.sessions && a.kinds == b.kinds;
}

void check_follow(std::string_view text, const std::optional<handler::Result<EventFilter>>& follow) {
    check(follow.has_value() == is_follow_object(text), "a follow is taken exactly from a follow message");
    if (!follow) return;
    if (!*follow) {
        const auto& error = follow->error();
        check(error.code == handler::ErrorCode::invalid_argument, "a refused follow is invalid_argument", error.message);
        check(error.message.starts_with("follow: "), "a refused follow says it was the follow", error.message);
        return;
    }
    const EventFilter& filter = **follow;
    check(filter.sessions.size() <= kFollowLimit && filter.kinds.size() <= kFollowLimit, "at most 256 of each");
    check(!filter.everything || filter.sessions.empty(), "every session or a list, never both");
    for (const auto& id : filter.sessions) check(is_session_id_shape(id), "a followed session has an id's shape", id);
    // The answer as a follow: the same filter again.
    auto answer = json::parse(following_message(filter)).as_object();
    check(answer.at("type").as_string() == "following", "the answer is a following");
    answer["type"] = "follow";
    const auto again = parse_follow(json::serialize(answer));
    check(again.has_value() && again->ok() && same(**again, filter), "the answer, sent back, is the same filter",
          json::serialize(answer));
}

void check_channel_command(std::string_view text) {
    const ParsedCommand parsed = parse_channel_command(text);
    check(parsed.channel <= kMaxChannel, "an error names a channel of 0 to 255");
    if (!parsed.command) {
        check(!parsed.command.error().message.empty(), "an error says what is wrong");
        return;
    }
    const TerminalCommand& command = *parsed.command;
    check(command.channel >= 1 && command.channel <= kMaxChannel, "a command is on channel 1 to 255");
    check(parsed.channel == command.channel, "the channel named is the command's");
    if (command.kind == TerminalCommand::Kind::attach) check(!command.session.empty(), "an attach names a session");
    if (command.kind == TerminalCommand::Kind::resize)
        check(command.rows >= 1 && command.rows <= 10000 && command.cols >= 1 && command.cols <= 10000,
              "a resize is 1 to 10000 each way");
    const std::string back = written_back(command);
    const ParsedCommand again = parse_channel_command(back);
    check(again.command.ok() && same(*again.command, command), "the command written back parses the same", back);
}

void check_output(std::string_view data) {
    if (data.size() < 10) return;
    const unsigned channel = 1 + static_cast<unsigned char>(data[0]) % kMaxChannel;
    const auto stream = static_cast<OutputStream>(1 + static_cast<unsigned char>(data[1]) % 3);
    std::uint64_t end = 0;
    for (std::size_t i = 2; i < 10; ++i) end = (end << 8) | static_cast<unsigned char>(data[i]);
    const std::string_view bytes = data.substr(10);
    const std::string message = output_message(channel, stream, end, bytes);
    check(message.size() == 10 + bytes.size(), "the header is 10 bytes");
    check(static_cast<unsigned char>(message[0]) == channel, "the first byte is the channel");
    check(static_cast<unsigned char>(message[1]) == static_cast<unsigned>(stream), "the second the stream");
    std::uint64_t read = 0;
    for (std::size_t i = 2; i < 10; ++i) read = (read << 8) | static_cast<unsigned char>(message[i]);
    check(read == end, "then the end offset, most significant byte first");
    check(message.compare(10, std::string::npos, bytes) == 0, "then the bytes as given");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = handler::fuzz::as_text(data, size);
    const auto follow = parse_follow(text);
    check_follow(text, follow);
    if (!follow) check_channel_command(text);
    check_output(text);
    return 0;
}
