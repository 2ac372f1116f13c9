#include "codex/exec_json.hpp"

#include <plugin_common/json_access.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <utility>

namespace handler::codex {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::object_at;
using common::string_at;

namespace {

constexpr std::size_t kMaxTitleDetail = 120;

bool is_tool_item(std::string_view type) {
    return type == "command_execution" || type == "file_change" || type == "mcp_tool_call" ||
           type == "web_search" || type == "collab_tool_call";
}

// The shell Codex runs a command in wraps it: `/bin/bash -lc "printf hi > a"`. A title
// shows what was asked for, not the wrapper.
std::string_view unwrap_shell(std::string_view command) {
    for (std::string_view shell : {"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc "}) {
        if (command.substr(0, shell.size()) != shell) continue;
        std::string_view rest = command.substr(shell.size());
        if (rest.size() >= 2 && (rest.front() == '"' || rest.front() == '\'') && rest.back() == rest.front())
            rest = rest.substr(1, rest.size() - 2);
        return rest;
    }
    return command;
}

std::vector<std::string> changed_paths(const json::object& item) {
    std::vector<std::string> paths;
    if (const json::array* changes = array_at(item, "changes"))
        for (const json::value& entry : *changes)
            if (const json::object* change = entry.if_object()) {
                const std::string_view path = string_at(*change, "path");
                if (!path.empty()) paths.emplace_back(path);
            }
    return paths;
}

common::ToolCall make_call(const json::object& item) {
    common::ToolCall call;
    call.id = std::string(string_at(item, "id"));
    call.name = std::string(string_at(item, "type"));
    call.title = item_title(item);
    call.kind = std::string(item_kind(item));
    // The item as Codex gave it, less what only the result has.
    json::object input = item;
    for (std::string_view key : {"id", "type", "status", "aggregated_output", "exit_code", "result", "error"})
        input.erase(key);
    call.raw_input = std::move(input);
    call.locations = changed_paths(item);
    return call;
}

std::string item_status(const json::object& item) {
    const std::string_view status = string_at(item, "status");
    if (status == "failed" || status == "declined") return "failed";
    if (status == "in_progress") return "in_progress";
    if (const auto code = common::int_at(item, "exit_code"); code && *code != 0) return "failed";
    if (const json::value* error = item.if_contains("error"); error != nullptr && !error->is_null()) return "failed";
    return "completed";
}

// What a finished tool item produced, as ACP tool call content.
json::array item_output(const json::object& item) {
    json::array content;
    auto add = [&](std::string_view text) {
        if (!text.empty()) content.push_back(common::tool_content(common::text_block(text)));
    };
    const std::string_view type = string_at(item, "type");
    if (type == "command_execution") {
        add(string_at(item, "aggregated_output"));
        const std::string_view status = string_at(item, "status");
        if (status == "declined") add("The command was not allowed to run");
    } else if (type == "file_change") {
        std::string summary;
        if (const json::array* changes = array_at(item, "changes"))
            for (const json::value& entry : *changes)
                if (const json::object* change = entry.if_object()) {
                    if (!summary.empty()) summary += '\n';
                    summary += std::string(string_at(*change, "kind")) + " " + std::string(string_at(*change, "path"));
                }
        add(summary);
    } else if (type == "mcp_tool_call") {
        if (const json::object* error = object_at(item, "error")) add(string_at(*error, "message"));
        if (const json::object* result = object_at(item, "result"))
            if (const json::array* blocks = array_at(*result, "content"))
                for (const json::value& entry : *blocks)
                    if (const json::object* block = entry.if_object(); block != nullptr && string_at(*block, "type") == "text")
                        add(string_at(*block, "text"));
    }
    return content;
}

std::vector<common::PlanEntry> todo_entries(const json::object& item) {
    std::vector<common::PlanEntry> entries;
    const json::array* items = array_at(item, "items");
    if (items == nullptr) return entries;
    bool current_found = false;
    for (const json::value& entry : *items) {
        const json::object* todo = entry.if_object();
        if (todo == nullptr) continue;
        common::PlanEntry plan_entry;
        plan_entry.content = std::string(string_at(*todo, "text"));
        // Codex marks items done or not; the first one not done is the one under way.
        if (common::bool_at(*todo, "completed")) {
            plan_entry.status = "completed";
        } else if (!current_found) {
            plan_entry.status = "in_progress";
            current_found = true;
        }
        entries.push_back(std::move(plan_entry));
    }
    return entries;
}

} // namespace

std::string_view item_kind(const json::object& item) {
    const std::string_view type = string_at(item, "type");
    if (type == "command_execution") return "execute";
    if (type == "file_change") {
        const std::vector<std::string> paths = changed_paths(item);
        bool all_deleted = !paths.empty();
        if (const json::array* changes = array_at(item, "changes"))
            for (const json::value& entry : *changes)
                if (const json::object* change = entry.if_object(); change != nullptr && string_at(*change, "kind") != "delete")
                    all_deleted = false;
        return all_deleted ? "delete" : "edit";
    }
    if (type == "web_search") return "fetch";
    return "other";
}

std::string item_title(const json::object& item) {
    const std::string_view type = string_at(item, "type");
    if (type == "command_execution") {
        const std::string line = common::first_line_of(unwrap_shell(string_at(item, "command")), kMaxTitleDetail);
        return line.empty() ? std::string("Run a command") : "Run: " + line;
    }
    if (type == "file_change") {
        const std::vector<std::string> paths = changed_paths(item);
        if (paths.empty()) return "Edit files";
        std::string title = "Edit " + paths.front();
        if (paths.size() > 1) title += " and " + std::to_string(paths.size() - 1) + " more";
        return title;
    }
    if (type == "mcp_tool_call") {
        const std::string_view server = string_at(item, "server");
        const std::string_view tool = string_at(item, "tool");
        return server.empty() ? std::string(tool) : std::string(server) + ": " + std::string(tool);
    }
    if (type == "web_search") {
        const std::string_view query = string_at(item, "query");
        return query.empty() ? std::string("Search the web")
                             : "Search the web: " + common::truncate_utf8(query, kMaxTitleDetail);
    }
    if (type == "collab_tool_call") return "Delegate to another agent";
    return std::string(type);
}

void ExecJsonParser::on_object(const json::object& message, std::vector<Event>& out) {
    const std::string_view type = string_at(message, "type");
    if (type == "item.started" || type == "item.updated" || type == "item.completed") {
        if (const json::object* item = object_at(message, "item")) on_item(type.substr(5), *item, out);
    } else if (type == "turn.completed") {
        on_turn_completed(message, out);
    } else if (type == "turn.failed") {
        const json::object* error = object_at(message, "error");
        const std::string_view text = error == nullptr ? std::string_view() : string_at(*error, "message");
        out.push_back(common::error(text.empty() ? std::string_view("Codex's turn failed") : text));
        common::TurnResult turn;
        turn.is_error = true;
        turn.result = std::string(text);
        out.push_back(common::result(turn));
    } else if (type == "error") {
        // Transport trouble Codex recovers from ("Reconnecting... 2/5 (…)"), or not: either
        // way the person waiting should see why nothing happens.
        const std::string_view text = string_at(message, "message");
        if (!text.empty()) out.push_back(common::error(text));
    }
}

void ExecJsonParser::on_item(std::string_view phase, const json::object& item, std::vector<Event>& out) {
    const std::string_view type = string_at(item, "type");
    const std::string id(string_at(item, "id"));
    if (is_tool_item(type)) {
        // Some items (file changes) arrive completed without having started.
        if (announced_.insert(id).second) out.push_back(common::tool_call(make_call(item)));
        common::ToolCallUpdate update;
        update.id = id;
        update.status = phase == "completed" ? item_status(item) : std::string("in_progress");
        if (phase == "completed") update.content = item_output(item);
        out.push_back(common::tool_call_update(update));
        return;
    }
    if (type == "todo_list") {
        out.push_back(common::plan(todo_entries(item)));
        return;
    }
    // Text items are whole when completed (exec prints no deltas).
    if (phase != "completed") return;
    const std::string_view text = string_at(item, "text");
    if (type == "agent_message") {
        if (!text.empty()) out.push_back(common::agent_message_chunk(text));
        last_message_ = std::string(text);
    } else if (type == "reasoning" || type == "plan") {
        if (!text.empty()) out.push_back(common::agent_thought_chunk(text));
    } else if (type == "error") {
        const std::string_view message = string_at(item, "message");
        if (!message.empty()) out.push_back(common::error(message));
    }
}

void ExecJsonParser::on_turn_completed(const json::object& message, std::vector<Event>& out) {
    common::TurnResult turn;
    turn.result = last_message_;
    if (const json::value* usage = message.if_contains("usage"); usage != nullptr && usage->is_object())
        turn.usage = *usage;
    out.push_back(common::result(turn));
    last_message_.clear();
}

} // namespace handler::codex
