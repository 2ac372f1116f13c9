// Codex's headless output (`codex exec --json`, one JSON object per line: thread.*,
// turn.*, item.started|updated|completed and error) turned into Handler's session events.
// Kept apart from the plugin's entry point so the unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>

#include <boost/json/object.hpp>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace handler::codex {

using plugin_common::Event;

class ExecJsonParser final : public plugin_common::JsonLinesParser {
public:
    ExecJsonParser() : JsonLinesParser("Codex") {}
    explicit ExecJsonParser(std::size_t max_line) : JsonLinesParser("Codex", max_line) {}

private:
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_item(std::string_view phase, const boost::json::object& item, std::vector<Event>& out);
    void on_turn_completed(const boost::json::object& message, std::vector<Event>& out);

    std::set<std::string> announced_; // items already shown as tool calls
    std::string last_message_;        // the agent's last message: the turn's answer
};

// What a Codex tool item is about, for a person ("Run: ls -la", "Edit hello.txt").
std::string item_title(const boost::json::object& item);
// ACP's ToolKind for a Codex item type ("command_execution" -> "execute").
std::string_view item_kind(const boost::json::object& item);

} // namespace handler::codex
