#include "claude-code/stream_json.hpp"

#include <plugin_common/json_line.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <optional>
#include <utility>

namespace handler::claude_code {

namespace json = boost::json;
namespace common = handler::plugin_common;

namespace {

// Claude Code's field names are its own and may change between releases, so every lookup
// tolerates a missing field or one of another type instead of throwing.
std::string_view string_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    if (value == nullptr || !value->is_string()) return {};
    const json::string& text = value->get_string();
    return {text.data(), text.size()};
}

const json::object* object_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value == nullptr ? nullptr : value->if_object();
}

const json::array* array_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value == nullptr ? nullptr : value->if_array();
}

bool bool_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value != nullptr && value->is_bool() && value->get_bool();
}

const json::object& empty_object() {
    static const json::object empty;
    return empty;
}

// A path as a person reads it in a title: relative to the session's folder when under it.
std::string display_path(std::string_view path, std::string_view cwd) {
    while (cwd.size() > 1 && cwd.back() == '/') cwd.remove_suffix(1);
    if (cwd.empty() || cwd == "/") return std::string(path);
    if (path == cwd) return ".";
    if (path.size() > cwd.size() && path.substr(0, cwd.size()) == cwd && path[cwd.size()] == '/')
        return std::string(path.substr(cwd.size() + 1));
    return std::string(path);
}

std::string_view first_line(std::string_view text, bool& cut) {
    const std::size_t end = text.find('\n');
    cut = end != std::string_view::npos;
    return text.substr(0, end);
}

// A tool's file, for both the title and ACP's "locations".
std::string_view file_of(const json::object& input) {
    std::string_view path = string_at(input, "file_path");
    if (path.empty()) path = string_at(input, "notebook_path");
    return path;
}

common::ToolCall make_tool_call(std::string_view id, std::string_view name, const json::value* input,
                                std::string_view cwd) {
    const json::object& input_object =
        input != nullptr && input->is_object() ? input->get_object() : empty_object();
    common::ToolCall call;
    call.id = std::string(id);
    call.name = std::string(name);
    call.title = tool_title(name, input_object, cwd);
    call.kind = std::string(tool_kind(name));
    call.raw_input = input != nullptr ? *input : json::value(json::object());
    const std::string_view path = file_of(input_object);
    if (!path.empty()) call.locations.emplace_back(path);
    return call;
}

std::string plan_status(std::string_view status) {
    if (status == "in_progress" || status == "completed") return std::string(status);
    return "pending";
}

// TodoWrite's input is Claude Code's whole plan, which is what an ACP plan update carries.
std::vector<common::PlanEntry> plan_entries(const json::object& input) {
    std::vector<common::PlanEntry> entries;
    const json::array* todos = array_at(input, "todos");
    if (todos == nullptr) return entries;
    for (const json::value& todo : *todos) {
        const json::object* item = todo.if_object();
        if (item == nullptr) continue;
        common::PlanEntry entry;
        entry.content = std::string(string_at(*item, "content"));
        entry.status = plan_status(string_at(*item, "status"));
        entry.priority = "medium"; // TodoWrite has no priorities
        entries.push_back(std::move(entry));
    }
    return entries;
}

// A tool result's content: a string, or Anthropic content blocks (text, image).
json::array tool_result_content(const json::value* content) {
    json::array out;
    if (content == nullptr) return out;
    if (const json::string* text = content->if_string()) {
        if (!text->empty()) out.push_back(common::tool_content(common::text_block({text->data(), text->size()})));
        return out;
    }
    const json::array* blocks = content->if_array();
    if (blocks == nullptr) return out;
    for (const json::value& entry : *blocks) {
        const json::object* block = entry.if_object();
        if (block == nullptr) continue;
        const std::string_view type = string_at(*block, "type");
        if (type == "text") {
            out.push_back(common::tool_content(common::text_block(string_at(*block, "text"))));
        } else if (type == "image") {
            const json::object* source = object_at(*block, "source");
            if (source == nullptr || string_at(*source, "type") != "base64") continue;
            json::object image;
            image["type"] = "image";
            image["data"] = string_at(*source, "data");
            image["mimeType"] = string_at(*source, "media_type");
            out.push_back(common::tool_content(std::move(image)));
        }
    }
    return out;
}

std::string stop_reason(const json::object& message) {
    // The turn limit shows in the subtype; the API's stop_reason then is the last
    // message's (often "tool_use"), which says nothing about why the run ended.
    if (string_at(message, "subtype") == "error_max_turns") return "max_turn_requests";
    const std::string_view reason = string_at(message, "stop_reason");
    if (common::is_acp_stop_reason(reason)) return std::string(reason);
    return "end_turn";
}

// Why a run failed, for the ERROR event: Claude Code's own words when it gave any.
std::string error_message(const json::object& message) {
    const std::string_view text = string_at(message, "result");
    if (!text.empty()) return std::string(text);
    std::string joined;
    if (const json::array* errors = array_at(message, "errors")) {
        for (const json::value& entry : *errors) {
            if (!entry.is_string()) continue;
            if (!joined.empty()) joined += "; ";
            joined.append(entry.get_string().data(), entry.get_string().size());
        }
    }
    if (!joined.empty()) return joined;
    const std::string_view subtype = string_at(message, "subtype");
    if (subtype == "error_max_turns") return "Claude Code stopped at its turn limit";
    if (subtype == "error_max_budget_usd") return "Claude Code stopped at its spending limit";
    if (subtype == "error_during_execution") return "Claude Code failed during the run";
    return "Claude Code reported an error (result subtype '" + std::string(subtype) + "')";
}

} // namespace

std::string_view tool_kind(std::string_view name) {
    if (name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit") return "edit";
    if (name == "Bash") return "execute";
    if (name == "Read") return "read";
    if (name == "Grep" || name == "Glob") return "search";
    if (name == "WebFetch" || name == "WebSearch") return "fetch";
    return "other";
}

std::string tool_title(std::string_view name, const json::object& input, std::string_view cwd) {
    constexpr std::size_t kMaxDetail = 120;
    const auto with = [&](std::string_view head, std::string_view detail) {
        if (detail.empty()) return std::string(head);
        return std::string(head) + common::truncate_utf8(detail, kMaxDetail);
    };
    if (name == "Bash") {
        bool cut = false;
        std::string line(first_line(string_at(input, "command"), cut));
        if (cut) line += " \xe2\x80\xa6";
        return with("Bash: ", line);
    }
    if (name == "Task") return with("Task: ", string_at(input, "description"));
    if (name == "TodoWrite") return "Update the plan";
    if (name == "WebFetch") return with("Fetch ", string_at(input, "url"));
    if (name == "WebSearch") return with("Search the web: ", string_at(input, "query"));
    if (name == "Grep" || name == "Glob") {
        std::string title = with(std::string(name) + " ", string_at(input, "pattern"));
        const std::string_view where = string_at(input, "path");
        if (!where.empty()) title += " in " + display_path(where, cwd);
        return title;
    }
    const std::string_view path = file_of(input);
    if (!path.empty()) return std::string(name) + " " + display_path(path, cwd);
    return std::string(name);
}

std::vector<Event> StreamJsonParser::feed(std::string_view bytes) {
    std::vector<Event> out;
    lines_.feed(
        bytes,
        [&](std::string_view line) {
            std::vector<Event> events = parse_line(line);
            for (Event& event : events) out.push_back(std::move(event));
        },
        [&](std::size_t length) {
            out.push_back(common::error(
                "Claude Code printed a line of " + std::to_string(length) + " bytes, more than the " +
                std::to_string(lines_.max_line()) +
                " this parser reads, so its events are missing (the session's raw output has it)"));
        });
    return out;
}

std::vector<Event> StreamJsonParser::parse_line(std::string_view line) {
    std::vector<Event> out;
    const std::optional<json::value> value = common::parse_json_line(line);
    if (!value || !value->is_object()) return out;
    const json::object& message = value->get_object();
    const std::string_view type = string_at(message, "type");
    // One odd line must not cost the events of the lines after it (nor escape as a
    // failed feed call): its own half-built events are dropped instead.
    try {
        if (type == "system") on_system(message, out);
        else if (type == "assistant") on_assistant(message, out);
        else if (type == "user") on_user(message, out);
        else if (type == "control_request") on_control_request(message, out);
        else if (type == "result") on_result(message, out);
    } catch (const std::exception&) {
        out.clear();
    }
    return out;
}

void StreamJsonParser::on_system(const json::object& message, std::vector<Event>& out) {
    if (string_at(message, "subtype") != "init") return;
    cwd_ = std::string(string_at(message, "cwd"));
    const std::string_view mode = string_at(message, "permissionMode");
    if (!mode.empty()) out.push_back(common::mode_changed(mode, string_at(message, "model")));
}

void StreamJsonParser::on_assistant(const json::object& message, std::vector<Event>& out) {
    const json::object* body = object_at(message, "message");
    const json::array* content = body == nullptr ? nullptr : array_at(*body, "content");
    if (content == nullptr) return;
    // A subagent's (Task's) text reaches the main agent as that Task's tool result, so
    // only its tool calls are shown, not its thoughts and messages as if they were the
    // session's own.
    const json::value* parent = message.if_contains("parent_tool_use_id");
    const bool top_level = parent == nullptr || parent->is_null();
    for (const json::value& entry : *content) {
        const json::object* block = entry.if_object();
        if (block == nullptr) continue;
        const std::string_view type = string_at(*block, "type");
        if (type == "text" && top_level) {
            const std::string_view text = string_at(*block, "text");
            if (!text.empty()) out.push_back(common::agent_message_chunk(text));
        } else if (type == "thinking" && top_level) {
            const std::string_view text = string_at(*block, "thinking");
            if (!text.empty()) out.push_back(common::agent_thought_chunk(text));
        } else if (type == "tool_use") {
            const std::string_view name = string_at(*block, "name");
            const json::value* input = block->if_contains("input");
            out.push_back(common::tool_call(make_tool_call(string_at(*block, "id"), name, input, cwd_)));
            if (name == "TodoWrite" && input != nullptr && input->is_object())
                out.push_back(common::plan(plan_entries(input->get_object())));
        }
    }
}

void StreamJsonParser::on_user(const json::object& message, std::vector<Event>& out) const {
    const json::object* body = object_at(message, "message");
    const json::array* content = body == nullptr ? nullptr : array_at(*body, "content");
    if (content == nullptr) return;
    for (const json::value& entry : *content) {
        const json::object* block = entry.if_object();
        if (block == nullptr || string_at(*block, "type") != "tool_result") continue;
        common::ToolCallUpdate update;
        update.id = std::string(string_at(*block, "tool_use_id"));
        update.status = bool_at(*block, "is_error") ? "failed" : "completed";
        update.content = tool_result_content(block->if_contains("content"));
        out.push_back(common::tool_call_update(update));
    }
}

void StreamJsonParser::on_control_request(const json::object& message, std::vector<Event>& out) const {
    const json::object* request = object_at(message, "request");
    if (request == nullptr || string_at(*request, "subtype") != "can_use_tool") return;
    const json::value* input = request->if_contains("input");
    common::PermissionRequest permission;
    permission.tool_call_id = std::string(string_at(*request, "tool_use_id"));
    permission.title = tool_title(string_at(*request, "tool_name"),
                                  input != nullptr && input->is_object() ? input->get_object() : empty_object(),
                                  cwd_);
    permission.raw_input = input != nullptr ? *input : json::value(json::object());
    permission.options = common::allow_or_reject_once();
    out.push_back(common::permission_request(permission));
}

void StreamJsonParser::on_result(const json::object& message, std::vector<Event>& out) const {
    common::TurnResult turn;
    turn.stop_reason = stop_reason(message);
    // API failures arrive as subtype "success" with is_error set; the error_* subtypes
    // are failures whatever is_error says.
    turn.is_error = bool_at(message, "is_error") || string_at(message, "subtype").substr(0, 6) == "error_";
    if (const json::value* text = message.if_contains("result"); text != nullptr && text->is_string())
        turn.result = std::string(text->get_string().data(), text->get_string().size());
    if (const json::value* usage = message.if_contains("usage"); usage != nullptr && usage->is_object())
        turn.usage = *usage;
    if (const json::value* cost = message.if_contains("total_cost_usd"); cost != nullptr && cost->is_number())
        turn.cost_usd = cost->to_number<double>();
    if (const json::value* turns = message.if_contains("num_turns"); turns != nullptr) {
        if (turns->is_int64()) turn.num_turns = turns->get_int64();
        else if (turns->is_uint64()) turn.num_turns = static_cast<std::int64_t>(turns->get_uint64());
    }
    if (turn.is_error) out.push_back(common::error(error_message(message)));
    out.push_back(common::result(turn));
}

} // namespace handler::claude_code
