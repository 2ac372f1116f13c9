#include "claude-code/stream_json.hpp"

#include <plugin_common/json_access.hpp>
#include <plugin_common/launch.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

namespace handler::claude_code {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::as_object;
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
    // The edit as a diff, as claude-agent-acp shows it: Write gives the whole new file,
    // Edit one replacement, MultiEdit one per replacement.
    const auto add_diff = [&](std::optional<std::string_view> old_text, std::string_view new_text) {
        if (auto diff = common::diff_content(path, old_text, new_text)) call.content.push_back(std::move(*diff));
    };
    if (name == "Write" && input_object.contains("content")) {
        add_diff(std::nullopt, string_at(input_object, "content"));
    } else if (name == "Edit" && input_object.contains("new_string")) {
        add_diff(string_at(input_object, "old_string"), string_at(input_object, "new_string"));
    } else if (name == "MultiEdit") {
        if (const json::array* edits = array_at(input_object, "edits"))
            for (const json::value& entry : *edits)
                if (const json::object* edit = entry.if_object(); edit != nullptr && edit->contains("new_string"))
                    add_diff(string_at(*edit, "old_string"), string_at(*edit, "new_string"));
    }
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

// The id of the initialize request a conversation's launch writes; ours count from 1
// under another prefix, so neither is taken for the other, nor for one of Claude Code's.
constexpr std::string_view kInitializeId = "handler-initialize";

std::string control_request(std::string_view request_id, json::object request) {
    return json::serialize(json::object{
               {"type", "control_request"}, {"request_id", request_id}, {"request", std::move(request)}}) +
           "\n";
}

std::string joined(std::initializer_list<std::string_view> words) {
    std::string list;
    for (std::string_view word : words) list += (list.empty() ? "" : ", ") + std::string(word);
    return list;
}

// The context in use, in ACP's usage_update sense: what the turn's last model request
// read (its input, and the cache it wrote and read), out of the model's window as Claude
// Code knows it (the result's modelUsage), and what the session has cost so far.
Event usage_event(std::int64_t context_tokens, std::string_view model, const json::object& result) {
    json::object usage{{"used", context_tokens}};
    if (const json::object* models = object_at(result, "modelUsage"))
        if (const json::object* entry = object_at(*models, model))
            if (const std::optional<std::int64_t> size = common::int_at(*entry, "contextWindow"); size && *size > 0)
                usage["size"] = *size;
    if (const json::value* cost = result.if_contains("total_cost_usd"); cost != nullptr && cost->is_number())
        usage["cost"] = json::object{{"amount", cost->to_number<double>()}, {"currency", "USD"}};
    return common::make_event(HD_EVENT_USAGE, usage);
}

} // namespace

std::string StreamJsonParser::initialize_request() {
    return control_request(kInitializeId, {{"subtype", "initialize"}});
}

std::string StreamJsonParser::user_message(std::string_view text, const std::vector<common::PromptImage>& images) {
    // Images first, as Anthropic's guide to vision puts them; Claude Code passes a user
    // message's content blocks on to the Messages API as they are.
    json::array content;
    for (const auto& image : images)
        content.push_back(json::object{
            {"type", "image"},
            {"source", json::object{{"type", "base64"}, {"media_type", image.mime_type}, {"data", image.data}}}});
    if (!text.empty() || images.empty()) content.push_back(json::object{{"type", "text"}, {"text", text}});
    json::object message{{"role", "user"}, {"content", std::move(content)}};
    return json::serialize(json::object{{"type", "user"},
                                        {"message", std::move(message)},
                                        {"parent_tool_use_id", nullptr},
                                        {"session_id", ""}}) +
           "\n";
}

std::vector<Event> StreamJsonParser::prompt(std::string_view prompt) {
    const auto read = common::read_prompt(prompt, "Claude Code");
    reply_.input += user_message(read.text, read.images);
    ++open_turns_;
    return {};
}

std::vector<Event> StreamJsonParser::cancel() {
    // Claude Code answers an interrupt with no turn running, and prints nothing more (seen
    // with 2.1.328), so one is harmless then; but only an open turn's result is the
    // cancelled one, never the next turn's.
    if (open_turns_ > 0 || turn_may_run_) cancelling_ = true;
    send_control(Control::interrupt, {}, {{"subtype", "interrupt"}});
    return {};
}

std::vector<Event> StreamJsonParser::set(std::string_view name, std::string_view value) {
    if (name == "model") {
        if (value.empty()) throw std::invalid_argument("Claude Code needs the name of the model to switch to");
        send_control(Control::model, value, {{"subtype", "set_model"}, {"model", value}});
    } else if (name == "mode") {
        if (std::find(kPermissionModes.begin(), kPermissionModes.end(), value) == kPermissionModes.end())
            throw std::invalid_argument("Claude Code has no mode '" + std::string(value) + "'; its modes are " +
                                        joined(kPermissionModes));
        send_control(Control::mode, value, {{"subtype", "set_permission_mode"}, {"mode", value}});
    } else if (name == "thinking_level") {
        common::thinking_level("Claude Code", value, kEffortLevels);
        send_control(Control::thinking_level, value,
                     {{"subtype", "apply_flag_settings"}, {"settings", {{"effortLevel", value}}}});
    } else {
        throw handler::sdk::PluginError(HD_STATUS_UNSUPPORTED, "Claude Code cannot change its " + std::string(name) +
                                                                   " while it runs (it changes its model, mode "
                                                                   "and thinking_level)");
    }
    return {};
}

void StreamJsonParser::send_control(Control control, std::string_view value, json::object request) {
    const std::string id = "handler-" + std::to_string(next_control_++);
    controls_[id] = Asked{control, std::string(value)};
    reply_.input += control_request(id, std::move(request));
}

void StreamJsonParser::note_settings(std::string_view mode, std::string_view model, std::string_view thinking_level,
                                     std::vector<Event>& out) {
    if (!mode.empty()) mode_ = std::string(mode);
    if (!model.empty()) model_ = std::string(model);
    if (!thinking_level.empty()) thinking_level_ = std::string(thinking_level);
    // MODE_CHANGED names a mode: until Claude Code has said which, the rest waits.
    if (mode_.empty()) return;
    Event event = common::mode_changed(mode_, model_, thinking_level_);
    if (event.json == reported_settings_) return;
    reported_settings_ = event.json;
    out.push_back(std::move(event));
}

void StreamJsonParser::note_commands(std::vector<Command> commands, std::vector<Event>& out) {
    if (commands_reported_ && commands == commands_) return;
    commands_ = std::move(commands);
    commands_reported_ = true;
    json::array listed;
    for (const Command& command : commands_)
        listed.push_back(json::object{{"name", command.name}, {"description", command.description}});
    out.push_back(common::make_event(HD_EVENT_AVAILABLE_COMMANDS, json::object{{"availableCommands", std::move(listed)}}));
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
    else if (type == "control_response") on_control_response(message, out);
    else if (type == "result") on_result(message, out);
}

// Claude Code prints system/init at the start of every turn, and system/status with the
// permission mode when it changes (a set_permission_mode, or the model leaving plan mode).
void StreamJsonParser::on_system(const json::object& message, std::vector<Event>& out) {
    const std::string_view subtype = string_at(message, "subtype");
    if (subtype == "status") note_settings(string_at(message, "permissionMode"), {}, {}, out);
    if (subtype != "init") return;
    cwd_ = std::string(string_at(message, "cwd"));
    // The id `--resume` takes; a resumed conversation keeps it.
    const std::string_view session_id = string_at(message, "session_id");
    if (!session_id.empty() && session_id != session_id_) {
        session_id_ = std::string(session_id);
        out.push_back(common::make_event(HD_EVENT_SESSION_INFO, json::object{{"harnessSessionId", session_id}}));
    }
    // Only names here; the initialize answer gave their descriptions, which are kept.
    if (const json::array* names = array_at(message, "slash_commands")) {
        std::vector<Command> commands;
        for (const json::value& entry : *names) {
            if (!entry.is_string() || entry.get_string().empty()) continue;
            Command command{std::string(entry.get_string()), {}};
            const auto known = std::find_if(commands_.begin(), commands_.end(),
                                            [&](const Command& old) { return old.name == command.name; });
            if (known != commands_.end()) command.description = known->description;
            commands.push_back(std::move(command));
        }
        note_commands(std::move(commands), out);
    }
    note_settings(string_at(message, "permissionMode"), string_at(message, "model"), {}, out);
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
    // Each of the session's own model requests says what it read, for the turn's USAGE.
    if (const json::object* usage = object_at(*body, "usage"); usage != nullptr && top_level) {
        std::optional<std::int64_t> tokens;
        for (std::string_view key : {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"})
            if (const std::optional<std::int64_t> count = common::int_at(*usage, key)) tokens = tokens.value_or(0) + *count;
        if (tokens) {
            context_tokens_ = tokens;
            context_model_ = std::string(string_at(*body, "model"));
        }
    }
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
            common::ToolCall call = make_tool_call(string_at(*block, "id"), name, input, cwd_);
            // Its result ("The file … has been updated") would replace the diff; one that
            // failed replaces it with the error. Bounded: a result that never comes must
            // not grow the set for ever.
            if (!call.content.empty()) {
                if (diff_calls_.size() >= kMaxDiffCalls) diff_calls_.erase(diff_calls_.begin());
                diff_calls_.insert(call.id);
            }
            out.push_back(common::tool_call(call));
            if (name == "TodoWrite" && input != nullptr && input->is_object())
                out.push_back(common::plan(common::plan_from_todos(input->get_object())));
        }
    }
}

void StreamJsonParser::on_user(const json::object& message, std::vector<Event>& out) {
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
        update.keep_content = diff_calls_.erase(update.id) > 0 && update.status == "completed";
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

// Our control requests' answers. The initialize one lists the slash commands with their
// descriptions and says the permission mode; the others confirm or refuse a change, and
// a refusal is Claude Code's own words in an ERROR.
void StreamJsonParser::on_control_response(const json::object& message, std::vector<Event>& out) {
    const json::object& response = as_object(message.if_contains("response"));
    const std::string_view request_id = string_at(response, "request_id");
    const bool success = string_at(response, "subtype") == "success";
    const json::object& answer = as_object(response.if_contains("response"));
    if (request_id == kInitializeId) {
        if (!success) return; // system/init names the commands anyway
        std::vector<Command> commands;
        if (const json::array* listed = array_at(answer, "commands")) {
            for (const json::value& entry : *listed) {
                const json::object& command = as_object(&entry);
                if (!string_at(command, "name").empty())
                    commands.push_back({std::string(string_at(command, "name")),
                                        std::string(string_at(command, "description"))});
            }
        }
        note_commands(std::move(commands), out);
        note_settings(string_at(answer, "current_permission_mode"), {}, {}, out);
        return;
    }
    const auto found = controls_.find(std::string(request_id));
    if (found == controls_.end()) return; // not one of ours
    const Asked asked = std::move(found->second);
    controls_.erase(found);
    if (!success) {
        std::string reason(string_at(response, "error"));
        if (reason.empty()) reason = "it gave no reason";
        switch (asked.control) {
        case Control::interrupt: out.push_back(common::error("Claude Code did not interrupt the turn: " + reason)); break;
        case Control::model:
            out.push_back(common::error("Claude Code did not switch to model '" + asked.value + "': " + reason));
            break;
        case Control::mode:
            out.push_back(common::error("Claude Code did not change to mode '" + asked.value + "': " + reason));
            break;
        case Control::thinking_level:
            out.push_back(common::error("Claude Code did not change to effort '" + asked.value + "': " + reason));
            break;
        }
        return;
    }
    switch (asked.control) {
    case Control::interrupt: break; // the turn's result follows
    case Control::model: {
        // The answer names the model the alias resolved to ("haiku" -> claude-haiku-...).
        const std::string_view model = string_at(answer, "model");
        note_settings({}, model.empty() ? std::string_view(asked.value) : model, {}, out);
        break;
    }
    case Control::mode: {
        const std::string_view mode = string_at(answer, "mode");
        note_settings(mode.empty() ? std::string_view(asked.value) : mode, {}, {}, out);
        break;
    }
    case Control::thinking_level: note_settings({}, {}, asked.value, out); break;
    }
}

void StreamJsonParser::on_result(const json::object& message, std::vector<Event>& out) {
    // The turn is over. handlerd ends the input of a one-shot run (Claude Code then
    // exits); a conversation's stays open for the next prompt.
    common::TurnResult turn;
    turn.stop_reason = stop_reason(message);
    // API failures arrive as subtype "success" with is_error set; the error_* subtypes
    // are failures whatever is_error says.
    turn.is_error = bool_at(message, "is_error") || string_at(message, "subtype").substr(0, 6) == "error_";
    // An interrupted turn ends in error_during_execution ("aborted_streaming" while the
    // model answered, "aborted_tools" at a tool or a question): a client's cancel, which
    // ACP reports as the stop reason, not as a failure.
    if (cancelling_) {
        turn.stop_reason = "cancelled";
        turn.is_error = false;
    }
    cancelling_ = false;
    turn_may_run_ = false;
    if (open_turns_ > 0) --open_turns_;
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
    if (context_tokens_) out.push_back(usage_event(*context_tokens_, context_model_, message));
    context_tokens_.reset();
    out.push_back(common::result(turn));
}

} // namespace handler::claude_code
