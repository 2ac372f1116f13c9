// Claude Code's headless output (`claude -p … --output-format stream-json --verbose`, one
// JSON object per line) turned into Handler's session events. Kept apart from the plugin's
// entry point, and free of the plugin wrappers, so the unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/line_buffer.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace handler::claude_code {

using plugin_common::Event;

class StreamJsonParser {
public:
    StreamJsonParser() = default;
    explicit StreamJsonParser(std::size_t max_line) : lines_(max_line) {}

    // The events completed by this piece of stdout, in order. A piece may split a line or
    // a UTF-8 sequence anywhere; what is incomplete waits for the next piece.
    std::vector<Event> feed(std::string_view bytes);

    // The events of one complete line. Anything that is not a JSON object of a type this
    // parser knows yields none: Claude Code prints about forty message types and adds more,
    // and handlerd keeps the raw output anyway.
    std::vector<Event> parse_line(std::string_view line);

private:
    void on_system(const boost::json::object& message, std::vector<Event>& out);
    void on_assistant(const boost::json::object& message, std::vector<Event>& out);
    void on_user(const boost::json::object& message, std::vector<Event>& out) const;
    void on_control_request(const boost::json::object& message, std::vector<Event>& out) const;
    void on_result(const boost::json::object& message, std::vector<Event>& out) const;

    plugin_common::LineBuffer lines_;
    std::string cwd_; // from system/init: tool titles name files relative to it
};

// What the tool call is about, for a person: "Write hello.txt", "Bash: ls -la".
// `cwd` (may be empty) shortens paths under it.
std::string tool_title(std::string_view name, const boost::json::object& input, std::string_view cwd);
// ACP's ToolKind for one of Claude Code's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::claude_code
