#include "pi/rpc_mode.hpp"

#include <plugin_common/json_access.hpp>
#include <plugin_common/launch.hpp>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <stdexcept>
#include <utility>

namespace handler::pi {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::object_at;
using common::string_at;

namespace {

// The ids of the opening's two requests; the first ends in the folder pi runs in.
constexpr std::string_view kOpeningState = "handler-opening-state:";
constexpr std::string_view kOpeningCommands = "handler-opening-commands";

std::string line(const json::object& command) { return json::serialize(command) + "\n"; }

json::string_view view(std::string_view text) { return {text.data(), text.size()}; }

json::array result_content(const json::object* result) {
    json::array content;
    const json::array* blocks = result == nullptr ? nullptr : array_at(*result, "content");
    if (blocks == nullptr) return content;
    for (const json::value& entry : *blocks) {
        const json::object* block = entry.if_object();
        if (block == nullptr) continue;
        if (string_at(*block, "type") == "text") {
            const std::string_view text = string_at(*block, "text");
            if (!text.empty()) content.push_back(common::tool_content(common::text_block(text)));
        } else if (string_at(*block, "type") == "image") {
            // An image a tool read: ACP's image block takes the same fields.
            json::object image;
            image["type"] = "image";
            image["data"] = string_at(*block, "data");
            image["mimeType"] = string_at(*block, "mimeType");
            content.push_back(common::tool_content(std::move(image)));
        }
    }
    return content;
}

// pi's stop reasons (stop, length, toolUse, error, aborted) as ACP's.
std::string acp_stop_reason(std::string_view reason) {
    if (reason == "length") return "max_tokens";
    if (reason == "aborted") return "cancelled";
    return "end_turn";
}

} // namespace

std::string_view thinking_level(std::string_view level) {
    return common::thinking_level("pi", level, {"off", "minimal", "low", "medium", "high", "xhigh"});
}

std::string_view tool_kind(std::string_view name) {
    if (name == "write" || name == "edit") return "edit";
    if (name == "bash") return "execute";
    if (name == "read") return "read";
    if (name == "grep" || name == "find" || name == "ls") return "search";
    return "other";
}

std::string tool_title(std::string_view name, const json::object& arguments, std::string_view cwd) {
    if (name == "bash") {
        const std::string line = common::first_line_of(string_at(arguments, "command"), common::kTitleDetailBytes);
        return line.empty() ? std::string("bash") : "bash: " + line;
    }
    if (name == "grep" || name == "find") {
        std::string title(name);
        const std::string_view pattern = string_at(arguments, "pattern");
        if (!pattern.empty()) title += " " + common::truncate_utf8(pattern, common::kTitleDetailBytes);
        const std::string_view where = string_at(arguments, "path");
        if (!where.empty()) title += " in " + common::display_path(where, cwd);
        return title;
    }
    const std::string_view path = string_at(arguments, "path");
    if (!path.empty()) return std::string(name) + " " + common::display_path(path, cwd);
    return std::string(name);
}

std::string RpcModeParser::opening(std::string_view cwd) {
    const std::string state_id = std::string(kOpeningState) + std::string(cwd);
    return line(json::object{{"id", state_id}, {"type", "get_state"}}) +
           line(json::object{{"id", kOpeningCommands}, {"type", "get_commands"}});
}

std::vector<Event> RpcModeParser::prompt(std::string_view prompt) {
    const auto read = common::read_prompt(prompt, "pi");
    if (read.text.empty() && read.images.empty()) return {}; // a conversation opened without a first prompt
    // pi refuses a prompt while it runs, and its error would end the turn that runs.
    if (turn_open_)
        throw std::invalid_argument("pi is in the middle of a turn: a prompt waits for its result");
    reset_turn();
    turn_open_ = true;
    prompt_unanswered_ = true;
    json::object command{{"type", "prompt"}, {"message", read.text}};
    if (!read.images.empty()) {
        json::array images;
        for (const auto& image : read.images)
            images.push_back(json::object{{"type", "image"}, {"data", image.data}, {"mimeType", image.mime_type}});
        command["images"] = std::move(images);
    }
    send(Request::prompt, std::move(command));
    return {};
}

std::vector<Event> RpcModeParser::cancel() {
    // Sent even when no turn of this parser's runs: after a handlerd restart pi may be in
    // the middle of one, and an abort of nothing does nothing.
    cancelled_ = true;
    // An abort that reaches pi before it has taken the prompt finds no run, and the run
    // that starts next would go on: wait for pi to take it.
    if (prompt_unanswered_) abort_deferred_ = true;
    else send(Request::abort, json::object{{"type", "abort"}});
    return {};
}

std::vector<Event> RpcModeParser::set(std::string_view name, std::string_view value) {
    if (name == "model") {
        // "provider/id" as --model takes it; an id alone is one of the current provider's.
        const std::size_t slash = value.find('/');
        const std::string_view provider =
            slash == std::string_view::npos ? std::string_view(provider_) : value.substr(0, slash);
        const std::string_view id = slash == std::string_view::npos ? value : value.substr(slash + 1);
        if (provider.empty() || id.empty())
            throw std::invalid_argument("pi takes a model as provider/id (anthropic/claude-sonnet-4-5), not '" +
                                        common::truncate_utf8(value, common::kTitleDetailBytes) + "'");
        send(Request::set_model,
             json::object{{"type", "set_model"}, {"provider", view(provider)}, {"modelId", view(id)}});
        return {};
    }
    if (name == "thinking_level") {
        // pi would take any word and quietly fall back to "off".
        const std::string_view level = thinking_level(value);
        send(Request::set_thinking_level, json::object{{"type", "set_thinking_level"}, {"level", view(level)}});
        return {};
    }
    if (name == "mode") {
        if (value != "default")
            throw std::invalid_argument("pi has one mode, 'default' (it asks before nothing), not '" +
                                        common::truncate_utf8(value, common::kTitleDetailBytes) + "'");
        return {common::mode_changed("default", model_, thinking_level_)};
    }
    throw std::invalid_argument("pi cannot change its '" + common::truncate_utf8(name, common::kTitleDetailBytes) +
                                "' (it changes model, thinking_level and mode)");
}

std::vector<Event> RpcModeParser::answer(std::string_view, std::string_view) {
    throw std::invalid_argument("pi asks before nothing: it has no question to answer");
}

void RpcModeParser::send(Request request, json::object command) {
    const std::string id = "handler-" + std::to_string(next_id_++);
    command["id"] = id;
    sent_[id] = request;
    reply_.input += line(command);
}

void RpcModeParser::on_object(const json::object& message, std::vector<Event>& out) {
    const std::string_view type = string_at(message, "type");
    if (type == "response") {
        on_response(message, out);
    } else if (type == "agent_start") {
        // A new run of the turn: its own, or pi's retry of a failed model call.
        turn_open_ = true;
        run_started_ = true;
        run_ended_ = false;
        held_ = false;
    } else if (type == "message_start") {
        if (const json::object* body = object_at(message, "message")) on_message_start(*body, out);
    } else if (type == "message_update") {
        // Deltas, not the whole message every update carries along: chunks as they come.
        const json::object* update = object_at(message, "assistantMessageEvent");
        if (update == nullptr) return;
        const std::string_view kind = string_at(*update, "type");
        const std::string_view delta = string_at(*update, "delta");
        if (delta.empty()) return;
        if (kind == "text_delta") out.push_back(common::agent_message_chunk(delta));
        else if (kind == "thinking_delta") out.push_back(common::agent_thought_chunk(delta));
    } else if (type == "message_end") {
        if (const json::object* body = object_at(message, "message")) on_message_end(*body, out);
    } else if (type == "tool_execution_start") {
        const std::string_view id = string_at(message, "toolCallId");
        if (id.empty()) return; // an update nobody could match to its call
        announce(id, string_at(message, "toolName"), message.if_contains("args"), out);
        common::ToolCallUpdate update;
        update.id = std::string(id);
        update.status = "in_progress";
        out.push_back(common::tool_call_update(update));
    } else if (type == "tool_execution_end") {
        const std::string_view id = string_at(message, "toolCallId");
        if (id.empty()) return;
        announce(id, string_at(message, "toolName"), message.if_contains("args"), out);
        common::ToolCallUpdate update;
        update.id = std::string(id);
        update.status = common::bool_at(message, "isError") ? "failed" : "completed";
        update.content = result_content(object_at(message, "result"));
        out.push_back(common::tool_call_update(update));
    } else if (type == "auto_retry_start") {
        // The person waiting should see why nothing happens; pi retries on its own.
        held_ = true;
        const std::string_view text = string_at(message, "errorMessage");
        if (!text.empty()) out.push_back(common::error("retrying after: " + std::string(text)));
    } else if (type == "auto_retry_end") {
        const std::string_view text = string_at(message, "finalError");
        if (common::bool_at(message, "success")) return;
        // pi's "Retry cancelled" after a client's cancel is no news.
        if (!text.empty() && !cancelled_) out.push_back(common::error(text));
        held_ = false; // no retry comes: the turn is over (also when cancelled while pi waited to retry)
        finish_if_over(out);
    } else if (type == "compaction_start") {
        held_ = true;
    } else if (type == "compaction_end") {
        // After a context overflow pi compacts and runs again; otherwise the turn is over.
        if (common::bool_at(message, "willRetry")) return;
        held_ = false;
        finish_if_over(out);
    } else if (type == "thinking_level_changed") {
        thinking_level_ = std::string(string_at(message, "level"));
    } else if (type == "extension_ui_request") {
        on_extension_ui(message, out);
    } else if (type == "extension_error") {
        const std::string_view text = string_at(message, "error");
        if (!text.empty()) out.push_back(common::error("a pi extension failed: " + std::string(text)));
    } else if (type == "agent_end") {
        // What pi says next (a retry, a compaction) comes before its answer to this.
        run_ended_ = true;
        ++end_checks_;
        send(Request::turn_end, json::object{{"type", "get_session_stats"}});
    }
}

void RpcModeParser::on_response(const json::object& message, std::vector<Event>& out) {
    const std::string_view id = string_at(message, "id");
    const bool success = common::bool_at(message, "success");
    const json::object* data = object_at(message, "data");
    if (id.starts_with(kOpeningState)) {
        cwd_ = std::string(id.substr(kOpeningState.size()));
        if (data != nullptr) on_state(*data, false, out);
        return;
    }
    if (id == kOpeningCommands) {
        const json::array* commands = data == nullptr ? nullptr : array_at(*data, "commands");
        if (commands == nullptr) return;
        json::array available;
        for (const json::value& entry : *commands) {
            const json::object* command = entry.if_object();
            if (command == nullptr || string_at(*command, "name").empty()) continue;
            available.push_back(json::object{{"name", string_at(*command, "name")},
                                             {"description", string_at(*command, "description")}});
        }
        out.push_back(
            common::make_event(HD_EVENT_AVAILABLE_COMMANDS, json::object{{"availableCommands", std::move(available)}}));
        return;
    }
    const auto found = sent_.find(std::string(id));
    if (found == sent_.end()) {
        // Not ours, or an error pi answers without the id (an unknown command).
        if (!success && !string_at(message, "error").empty())
            out.push_back(common::error("pi: " + std::string(string_at(message, "error"))));
        return;
    }
    const Request request = found->second;
    sent_.erase(found);
    const std::string why(string_at(message, "error"));
    switch (request) {
    case Request::prompt:
        prompt_unanswered_ = false;
        if (!success) {
            // Refused before it ran (no key, no model): no run, so this is the turn's end.
            error_message_ = why.empty() ? std::string("pi refused the prompt") : why;
            finish_turn(out);
            return;
        }
        if (abort_deferred_) {
            abort_deferred_ = false;
            send(Request::abort, json::object{{"type", "abort"}});
        }
        // A prompt that names an extension's command runs it and no agent: ask whether pi runs.
        send(Request::prompt_check, json::object{{"type", "get_state"}});
        return;
    case Request::prompt_check:
        if (data != nullptr) on_state(*data, false, out);
        if (turn_open_ && !run_started_ && data != nullptr && !common::bool_at(*data, "isStreaming")) {
            answered_ = true; // handled: there is no answer to wait for
            finish_turn(out);
        }
        return;
    case Request::turn_end:
        --end_checks_;
        if (data != nullptr) on_turn_stats(*data, out);
        finish_if_over(out);
        return;
    case Request::set_model:
    case Request::set_thinking_level:
        if (!success) {
            out.push_back(common::error("pi did not change its " +
                                        std::string(request == Request::set_model ? "model" : "thinking level") +
                                        (why.empty() ? std::string() : ": " + why)));
            return;
        }
        // pi may have chosen otherwise (a level the model lacks): what it runs now.
        send(Request::confirm, json::object{{"type", "get_state"}});
        return;
    case Request::confirm:
        if (data != nullptr) on_state(*data, true, out);
        return;
    case Request::abort:
        if (!success && !why.empty()) out.push_back(common::error("pi did not stop: " + why));
        return;
    }
}

void RpcModeParser::on_state(const json::object& state, bool confirm, std::vector<Event>& out) {
    // An ephemeral session (--no-session) has no file, and nothing to resume.
    const std::string_view session_id = string_at(state, "sessionId");
    if (!session_id.empty() && !string_at(state, "sessionFile").empty() && session_id != session_id_) {
        session_id_ = std::string(session_id);
        json::object info{{"harnessSessionId", session_id_}};
        const std::string_view title = string_at(state, "sessionName");
        if (!title.empty()) info["title"] = title;
        out.push_back(common::make_event(HD_EVENT_SESSION_INFO, info));
    }
    const std::string_view level = string_at(state, "thinkingLevel");
    const bool level_changed = !level.empty() && level != thinking_level_;
    if (!level.empty()) thinking_level_ = std::string(level);
    const json::object* model = object_at(state, "model");
    const bool model_changed = model != nullptr && note_model(string_at(*model, "provider"), string_at(*model, "id"));
    if (confirm || model_changed || level_changed)
        out.push_back(common::mode_changed("default", model_, thinking_level_));
}

void RpcModeParser::on_turn_stats(const json::object& stats, std::vector<Event>& out) {
    const json::object* context = object_at(stats, "contextUsage");
    if (context == nullptr) return;
    // Unknown right after a compaction, until the model answers again.
    const auto used = common::int_at(*context, "tokens");
    const auto size = common::int_at(*context, "contextWindow");
    if (!used || !size) return;
    json::object usage{{"used", *used}, {"size", *size}};
    if (const json::value* cost = stats.if_contains("cost"); cost != nullptr && cost->is_number())
        usage["cost"] = json::object{{"amount", cost->to_number<double>()}, {"currency", "USD"}};
    out.push_back(common::make_event(HD_EVENT_USAGE, usage));
}

// An extension's dialog would hold pi until someone answers it, and no client can:
// dismissed at once, and said.
void RpcModeParser::on_extension_ui(const json::object& message, std::vector<Event>& out) {
    const std::string_view method = string_at(message, "method");
    if (method != "select" && method != "confirm" && method != "input" && method != "editor") return;
    const json::value* id = message.if_contains("id");
    if (id == nullptr || !id->is_string()) return;
    reply_.input += line(json::object{{"type", "extension_ui_response"}, {"id", *id}, {"cancelled", true}});
    out.push_back(common::error("a pi extension asked \"" +
                                common::truncate_utf8(string_at(message, "title"), common::kTitleDetailBytes) +
                                "\"; Handler cannot show its questions, so it was dismissed"));
}

void RpcModeParser::on_message_start(const json::object& message, std::vector<Event>& out) {
    if (string_at(message, "role") != "assistant") return;
    // pi has one mode (it asks before nothing); what changes is the model.
    if (note_model(string_at(message, "provider"), string_at(message, "model")))
        out.push_back(common::mode_changed("default", model_, thinking_level_));
}

// Whether provider/model is news.
bool RpcModeParser::note_model(std::string_view provider, std::string_view model) {
    if (model.empty()) return false;
    std::string full = provider.empty() ? std::string(model) : std::string(provider) + "/" + std::string(model);
    if (full == model_) return false;
    provider_ = std::string(provider);
    model_ = std::move(full);
    return true;
}

void RpcModeParser::on_message_end(const json::object& message, std::vector<Event>& out) {
    if (string_at(message, "role") != "assistant") return;
    answered_ = true;
    ++model_calls_;
    if (const json::object* usage = object_at(message, "usage"))
        if (const json::object* cost = object_at(*usage, "cost"))
            if (const json::value* total = cost->if_contains("total"); total != nullptr && total->is_number()) {
                cost_usd_ += total->to_number<double>();
                priced_ = true;
            }
    answer_.clear();
    stop_reason_ = std::string(string_at(message, "stopReason"));
    error_message_ = std::string(string_at(message, "errorMessage"));
    const json::array* content = array_at(message, "content");
    if (content == nullptr) return;
    for (const json::value& entry : *content) {
        const json::object* block = entry.if_object();
        if (block == nullptr) continue;
        const std::string_view type = string_at(*block, "type");
        if (type == "text") {
            answer_ += string_at(*block, "text");
        } else if (type == "toolCall") {
            // Shown once the model has finished writing the call, with its arguments.
            announce(string_at(*block, "id"), string_at(*block, "name"), block->if_contains("arguments"), out);
        }
    }
}

void RpcModeParser::announce(std::string_view id, std::string_view name, const json::value* arguments,
                             std::vector<Event>& out) {
    if (id.empty() || !announced_.insert(std::string(id)).second) return;
    const json::object& input = common::as_object(arguments);
    common::ToolCall call;
    call.id = std::string(id);
    call.name = std::string(name);
    call.title = tool_title(name, input, cwd_);
    call.kind = std::string(tool_kind(name));
    call.raw_input = arguments != nullptr ? *arguments : json::value(json::object());
    const std::string_view path = string_at(input, "path");
    if (!path.empty() && (call.kind == "edit" || call.kind == "read")) call.locations.emplace_back(path);
    out.push_back(common::tool_call(call));
}

void RpcModeParser::finish_if_over(std::vector<Event>& out) {
    if (run_ended_ && end_checks_ == 0 && !held_) finish_turn(out);
}

void RpcModeParser::finish_turn(std::vector<Event>& out) {
    common::TurnResult turn;
    if (cancelled_) {
        // Whatever pi made of the abort (an "aborted" message, or none before the request
        // was cut), the client asked for it.
        turn.stop_reason = "cancelled";
        turn.result = answer_;
    } else {
        turn.stop_reason = acp_stop_reason(stop_reason_);
        turn.is_error = stop_reason_ == "error" || !answered_;
        if (turn.is_error) {
            const std::string why = !error_message_.empty() ? error_message_
                                    : answered_             ? std::string("pi's model request failed")
                                                            : std::string("pi ended without an answer from the model");
            out.push_back(common::error(why));
            turn.result = why;
        } else {
            turn.result = answer_;
        }
    }
    if (priced_) turn.cost_usd = cost_usd_;
    if (model_calls_ > 0) turn.num_turns = model_calls_;
    out.push_back(common::result(turn));
    reset_turn();
}

void RpcModeParser::reset_turn() {
    announced_.clear(); // a tool call is a turn's
    turn_open_ = false;
    prompt_unanswered_ = false;
    run_started_ = false;
    run_ended_ = false;
    held_ = false;
    cancelled_ = false;
    abort_deferred_ = false;
    cost_usd_ = 0;
    priced_ = false;
    model_calls_ = 0;
    answered_ = false;
    answer_.clear();
    stop_reason_.clear();
    error_message_.clear();
}

} // namespace handler::pi
