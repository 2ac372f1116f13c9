// Claude Code's headless output (`claude -p … --output-format stream-json --verbose`, one
// JSON object per line) turned into Handler's session events. Kept apart from the plugin's
// entry point, and free of the plugin wrappers, so the unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace handler::claude_code {

using plugin_common::Event;

class StreamJsonParser final : public plugin_common::JsonLinesParser {
public:
    StreamJsonParser() : JsonLinesParser("Claude Code") {}
    explicit StreamJsonParser(std::size_t max_line) : JsonLinesParser("Claude Code", max_line) {}

private:
    // Claude Code prints about forty message types and adds more; the ones not handled
    // here yield no events.
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_system(const boost::json::object& message, std::vector<Event>& out);
    void on_assistant(const boost::json::object& message, std::vector<Event>& out);
    void on_user(const boost::json::object& message, std::vector<Event>& out) const;
    void on_control_request(const boost::json::object& message, std::vector<Event>& out) const;
    void on_result(const boost::json::object& message, std::vector<Event>& out) const;

    std::string cwd_; // from system/init: tool titles name files relative to it
};

// What the tool call is about, for a person: "Write hello.txt", "Bash: ls -la".
// `cwd` (may be empty) shortens paths under it.
std::string tool_title(std::string_view name, const boost::json::object& input, std::string_view cwd);
// ACP's ToolKind for one of Claude Code's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::claude_code
