#include "claude-code/stream_json.hpp"

#include <plugin_common/json_access.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <stdexcept>
#include <utility>

namespace handler::claude_code {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::bool_at;
using common::display_path;
using common::empty_object;
using common::object_at;
using common::string_at;

namespace {

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

// One line of Claude Code's control protocol, answering its request `request_id`.
std::string control_response(std::string_view request_id, json::object response) {
    response["request_id"] = request_id;
    return json::serialize(json::object{{"type", "control_response"}, {"response", std::move(response)}}) + "\n";
}

// The permission answers Claude Code takes. "Always" adds the rules Claude Code itself
// suggested (permission_suggestions), so it is offered only when there are some.
std::vector<common::PermissionOption> permission_options(bool can_remember) {
    std::vector<common::PermissionOption> options;
    options.push_back({"allow_once", "Allow", "allow_once"});
    if (can_remember) options.push_back({"allow_always", "Allow, and do not ask again this session", "allow_always"});
    options.push_back({"reject_once", "Reject", "reject_once"});
    return options;
}

} // namespace

std::string StreamJsonParser::user_message(std::string_view text) {
    json::object message{{"role", "user"},
                         {"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
    return json::serialize(json::object{{"type", "user"},
                                        {"message", std::move(message)},
                                        {"parent_tool_use_id", nullptr},
                                        {"session_id", ""}}) +
           "\n";
}

std::vector<Event> StreamJsonParser::prompt(std::string_view prompt) {
    reply_.input += user_message(common::prompt_text(prompt, "Claude Code"));
    return {};
}

std::vector<Event> StreamJsonParser::answer(std::string_view request_text, std::string_view answer_text) {
    const common::Answer answer = common::read_answer(request_text, answer_text, "claudeCode", "Claude Code");
    const std::string_view request_id = string_at(answer.meta, "requestId");
    const std::string_view option = answer.option;
    if (request_id.empty()) throw std::invalid_argument("this permission request has no Claude Code request id");
    json::object decision;
    if (option == "allow_once" || option == "allow_always") {
        decision["behavior"] = "allow";
        // Claude Code runs the tool with the input given back here; it is the one it asked about.
        const json::value* input = answer.request.if_contains("rawInput");
        decision["updatedInput"] = input != nullptr && input->is_object() ? *input : json::value(json::object());
        if (const json::array* rules = array_at(answer.meta, "suggestions"); rules && option == "allow_always")
            decision["updatedPermissions"] = *rules;
    } else if (option == "reject_once") {
        decision["behavior"] = "deny";
        decision["message"] = "The user rejected this tool call.";
    } else {
        throw std::invalid_argument("Claude Code takes allow_once, allow_always or reject_once, not '" +
                                    std::string(option) + "'");
    }
    asked_.erase(std::string(request_id));
    reply_.input += control_response(request_id, {{"subtype", "success"}, {"response", std::move(decision)}});
    return {};
}

std::string_view tool_kind(std::string_view name) {
    if (name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit") return "edit";
    if (name == "Bash") return "execute";
    if (name == "Read") return "read";
    if (name == "Grep" || name == "Glob") return "search";
    if (name == "WebFetch" || name == "WebSearch") return "fetch";
    return "other";
}

std::string tool_title(std::string_view name, const json::object& input, std::string_view cwd) {
    const auto with = [&](std::string_view head, std::string_view detail) {
        if (detail.empty()) return std::string(head);
        return std::string(head) + common::truncate_utf8(detail, common::kTitleDetailBytes);
    };
    if (name == "Bash") {
        const std::string line = common::first_line_of(string_at(input, "command"), common::kTitleDetailBytes);
        return line.empty() ? std::string("Bash") : "Bash: " + line;
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

void StreamJsonParser::on_object(const json::object& message, std::vector<Event>& out) {
    const std::string_view type = string_at(message, "type");
    if (type == "system") on_system(message, out);
    else if (type == "assistant") on_assistant(message, out);
    else if (type == "user") on_user(message, out);
    else if (type == "control_request") on_control_request(message, out);
    else if (type == "control_cancel_request") on_control_cancel(message, out);
    else if (type == "result") on_result(message, out);
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
                out.push_back(common::plan(common::plan_from_todos(input->get_object())));
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

void StreamJsonParser::on_control_request(const json::object& message, std::vector<Event>& out) {
    const json::object* request = object_at(message, "request");
    const std::string_view request_id = string_at(message, "request_id");
    const std::string_view subtype = request == nullptr ? std::string_view() : string_at(*request, "subtype");
    if (subtype != "can_use_tool") {
        // Claude Code waits for an answer to each request (hook callbacks, MCP messages:
        // Handler registers none of those), so one it does not know gets a refusal.
        if (!request_id.empty())
            reply_.input += control_response(request_id, {{"subtype", "error"},
                                                          {"error", "Handler does not handle '" +
                                                                        std::string(subtype) + "' requests"}});
        return;
    }
    const json::value* input = request->if_contains("input");
    common::PermissionRequest permission;
    permission.tool_call_id = std::string(string_at(*request, "tool_use_id"));
    permission.title = tool_title(string_at(*request, "tool_name"),
                                  input != nullptr && input->is_object() ? input->get_object() : empty_object(),
                                  cwd_);
    permission.raw_input = input != nullptr ? *input : json::value(json::object());
    const json::array* suggestions = array_at(*request, "permission_suggestions");
    const bool can_remember = suggestions != nullptr && !suggestions->empty();
    permission.options = permission_options(can_remember);
    json::object mine{{"requestId", request_id}};
    if (can_remember) mine["suggestions"] = *suggestions;
    permission.meta["claudeCode"] = std::move(mine);
    asked_[std::string(request_id)] = permission.tool_call_id;
    out.push_back(common::permission_request(permission));
}

// Claude Code withdrew a question (the turn was interrupted): nobody may answer it now.
void StreamJsonParser::on_control_cancel(const json::object& message, std::vector<Event>& out) {
    const auto found = asked_.find(std::string(string_at(message, "request_id")));
    if (found == asked_.end()) return;
    out.push_back(common::make_event(HD_EVENT_PERMISSION_ANSWER,
                                     json::object{{"toolCallId", found->second}, {"kind", "cancelled"}}));
    asked_.erase(found);
}

void StreamJsonParser::on_result(const json::object& message, std::vector<Event>& out) {
    // The turn is over. handlerd ends the input of a one-shot run (Claude Code then
    // exits); a conversation's stays open for the next prompt.
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
