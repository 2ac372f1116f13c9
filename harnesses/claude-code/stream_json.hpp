// Claude Code's headless output (`claude -p --output-format stream-json --verbose`, one
// JSON object per line) turned into Handler's session events, and its control channel
// (`--input-format stream-json --permission-prompt-tool stdio`): Claude Code asks on
// stdout before it uses a tool, and a client's answer goes back on its stdin. Kept apart
// from the plugin's entry point, and free of the plugin wrappers, so the unit tests drive
// it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::claude_code {

using plugin_common::Event;

class StreamJsonParser final : public plugin_common::JsonLinesParser {
public:
    StreamJsonParser() : JsonLinesParser("Claude Code") {}
    explicit StreamJsonParser(std::size_t max_line) : JsonLinesParser("Claude Code", max_line) {}

    // The user message Claude Code reads first on a stream-json stdin.
    static std::string user_message(std::string_view text);
    // A prompt (the user_prompt payload, {"content":{"type":"text","text":...}}) as that
    // message on its stdin.
    std::vector<Event> prompt(std::string_view prompt);

    // What Claude Code is to read on its stdin since the last call: replies to its control
    // requests, and the end of its input once the turn is over (a headless run is one turn).
    plugin_common::Reply take_reply() { return std::exchange(reply_, {}); }

    // A client's answer (`answer`: {"optionId":...}) to a permission request this parser
    // emitted (`request`: that event's payload) becomes Claude Code's control_response.
    // Throws std::invalid_argument for a request or an option it did not make.
    std::vector<Event> answer(std::string_view request, std::string_view answer);

private:
    // Claude Code prints about forty message types and adds more; the ones not handled
    // here yield no events.
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_system(const boost::json::object& message, std::vector<Event>& out);
    void on_assistant(const boost::json::object& message, std::vector<Event>& out);
    void on_user(const boost::json::object& message, std::vector<Event>& out) const;
    void on_control_request(const boost::json::object& message, std::vector<Event>& out);
    void on_control_cancel(const boost::json::object& message, std::vector<Event>& out);
    void on_result(const boost::json::object& message, std::vector<Event>& out);

    std::string cwd_; // from system/init: tool titles name files relative to it
    plugin_common::Reply reply_;
    std::map<std::string, std::string> asked_; // control request id -> its tool call, while open
};

// What the tool call is about, for a person: "Write hello.txt", "Bash: ls -la".
// `cwd` (may be empty) shortens paths under it.
std::string tool_title(std::string_view name, const boost::json::object& input, std::string_view cwd);
// ACP's ToolKind for one of Claude Code's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::claude_code
