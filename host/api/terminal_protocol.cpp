#include "api/terminal_protocol.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>

namespace handler::api {
namespace json = boost::json;

namespace {

std::string option_name(std::string_view key, OptionSource source) {
    return (source == OptionSource::query ? "query parameter '" : "field '") + std::string(key) + "'";
}

template <class Number>
bool whole_number(std::string_view text, Number& out) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

Error invalid(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

ParsedCommand failed(unsigned channel, std::string message) {
    return ParsedCommand{channel, invalid(std::move(message))};
}

// The message as an object with a string "type", or why not.
const json::object* command_object(const json::value& value, std::string& why) {
    const auto* object = value.if_object();
    const auto* type = object ? object->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string()) {
        why = "a text message must be a JSON object with a \"type\"";
        return nullptr;
    }
    return object;
}

Result<TerminalCommand> resize_command(const json::object& object) {
    const auto* rows = object.if_contains("rows");
    const auto* cols = object.if_contains("cols");
    const auto in_range = [](const json::value* value) {
        return value != nullptr && value->is_int64() && value->as_int64() >= 1 && value->as_int64() <= 10000;
    };
    if (!in_range(rows) || !in_range(cols))
        return invalid("resize needs integer \"rows\" and \"cols\" from 1 to 10000");
    TerminalCommand command;
    command.kind = TerminalCommand::Kind::resize;
    command.rows = static_cast<std::uint16_t>(rows->as_int64());
    command.cols = static_cast<std::uint16_t>(cols->as_int64());
    return command;
}

// An option's JSON value as the query would spell it: a string as it is, anything else as
// it serializes (true, 12), so set_attach_option decides and words the error for both.
std::string option_text(const json::value& value) {
    if (const auto* text = value.if_string()) return std::string(*text);
    return json::serialize(value);
}

Result<TerminalCommand> attach_command(const json::object& object) {
    TerminalCommand command;
    command.kind = TerminalCommand::Kind::attach;
    const auto* session = object.if_contains("session");
    if (session == nullptr || !session->is_string() || session->as_string().empty() ||
        session->as_string().size() > 128)
        return invalid("attach needs \"session\": a session's id (a string of 1 to 128 bytes)");
    command.session = std::string(session->as_string());
    for (const auto& [key, value] : object) {
        if (key == "type" || key == "channel" || key == "session") continue;
        if (auto set = set_attach_option(command.options, key, option_text(value), OptionSource::message); !set)
            return set.take_error();
    }
    return command;
}

} // namespace

Result<void> set_attach_option(AttachOptions& options, std::string_view key, std::string_view value,
                               OptionSource source) {
    const std::string shown(value);
    if (key == "from") {
        std::uint64_t from = 0;
        if (!whole_number(value, from))
            return invalid(option_name(key, source) + " must be a byte offset (a whole number), got '" + shown + "'");
        options.from = from;
    } else if (key == "after") {
        std::int64_t after = 0;
        if (!whole_number(value, after) || after < 0)
            return invalid(option_name(key, source) + " must be an event's seq (a whole number), got '" + shown + "'");
        options.events_after = after;
    } else if (key == "read_only" || key == "events" || key == "output") {
        if (value != "0" && value != "1" && value != "true" && value != "false")
            return invalid(option_name(key, source) + " must be 1 or 0 (true or false), got '" + shown + "'");
        const bool on = value == "1" || value == "true";
        if (key == "events") options.events = on;
        else if (key == "output") options.output = on;
        else options.read_only = on;
    } else {
        // A typo must not pass unnoticed: "readonly" would otherwise attach for writing.
        return invalid("unknown " + option_name(key, source) +
                       (source == OptionSource::query
                            ? " (the terminal takes from, read_only, events, after and output)"
                            : " (attach takes channel, session, from, read_only, events, after and output)"));
    }
    return {};
}

ParsedCommand parse_terminal_command(std::string_view text) {
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    std::string why;
    const auto* object = error ? nullptr : command_object(value, why);
    if (object == nullptr) return failed(kNoChannel, error ? "a text message must be a JSON object with a \"type\"" : why);
    const auto& type = object->at("type").as_string();
    if (type == "resize") return ParsedCommand{kNoChannel, resize_command(*object)};
    if (type == "eof") {
        TerminalCommand eof;
        eof.kind = TerminalCommand::Kind::eof;
        return ParsedCommand{kNoChannel, std::move(eof)};
    }
    return failed(kNoChannel, "unknown message type " + json::serialize(type) + " (expected \"resize\" or \"eof\")");
}

ParsedCommand parse_channel_command(std::string_view text) {
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    if (error) return failed(kNoChannel, "a text message must be JSON: " + error.message());
    std::string why;
    const auto* object = command_object(value, why);
    if (object == nullptr) return failed(kNoChannel, why);
    const auto& type = object->at("type").as_string();
    if (type != "attach" && type != "detach" && type != "resize" && type != "eof")
        return failed(kNoChannel, "unknown message type " + json::serialize(type) +
                                      " (this socket takes \"attach\", \"detach\", \"resize\", \"eof\" and \"follow\")");
    const auto* channel_value = object->if_contains("channel");
    if (channel_value == nullptr || !channel_value->is_int64() || channel_value->as_int64() < 1 ||
        channel_value->as_int64() > kMaxChannel)
        return failed(kNoChannel, std::string(type) + " needs \"channel\": a whole number from 1 to " +
                                      std::to_string(kMaxChannel));
    const auto channel = static_cast<unsigned>(channel_value->as_int64());
    auto command = type == "attach"   ? attach_command(*object)
                   : type == "resize" ? resize_command(*object)
                                      : Result<TerminalCommand>(TerminalCommand{});
    if (!command) return ParsedCommand{channel, command.take_error()};
    if (type == "detach") command->kind = TerminalCommand::Kind::detach;
    if (type == "eof") command->kind = TerminalCommand::Kind::eof;
    command->channel = channel;
    return ParsedCommand{channel, std::move(command)};
}

namespace {

// {"type":"terminal.NAME","channel":N, ...} on a channel, {"type":"NAME", ...} without.
json::object message_head(unsigned channel, std::string_view name) {
    json::object object;
    if (channel == kNoChannel) {
        object["type"] = name;
    } else {
        object["type"] = "terminal." + std::string(name);
        object["channel"] = channel;
    }
    return object;
}

} // namespace

std::string attached_message(unsigned channel, std::string_view session, const Attached& attached) {
    auto object = message_head(channel, "attached");
    object["session"] = session;
    object["tty"] = attached.tty;
    object["produced"] = attached.produced;
    object["state"] = store::to_string(attached.state);
    object["events"] = attached.events;
    return json::serialize(object);
}

std::string event_message(unsigned channel, const store::SessionEvent& event) {
    // The payload was checked to be a JSON object when it was stored, and the kind is one
    // of handlerd's names: the message is put together without parsing the payload again.
    auto head = json::serialize(message_head(channel, "event"));
    head.pop_back();
    return head + R"(,"seq":)" + std::to_string(event.seq) + R"(,"at":)" + std::to_string(event.at) +
           R"(,"kind":)" + json::serialize(json::string(event.kind)) + R"(,"payload":)" + event.payload + "}";
}

std::string exit_message(unsigned channel, std::int64_t code) {
    auto object = message_head(channel, "exit");
    object["code"] = code;
    return json::serialize(object);
}

std::string ended_message(unsigned channel, std::string_view reason) {
    auto object = message_head(channel, "ended");
    object["reason"] = reason;
    return json::serialize(object);
}

std::string detached_message(unsigned channel) { return json::serialize(message_head(channel, "detached")); }

std::string error_message(unsigned channel, ErrorCode code, std::string_view message) {
    auto object = message_head(channel, "error");
    object["code"] = to_string(code);
    object["message"] = message;
    return json::serialize(object);
}

std::string output_message(unsigned channel, OutputStream stream, std::uint64_t end, std::string_view bytes) {
    std::string message;
    message.reserve(bytes.size() + 10);
    if (channel != kNoChannel) message.push_back(static_cast<char>(channel));
    message.push_back(static_cast<char>(stream));
    if (channel != kNoChannel)
        for (int shift = 56; shift >= 0; shift -= 8) message.push_back(static_cast<char>((end >> shift) & 0xff));
    message.append(bytes);
    return message;
}

} // namespace handler::api
