#include "pi/json_mode.hpp"

#include <plugin_common/json_access.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <utility>

namespace handler::pi {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::object_at;
using common::string_at;

namespace {

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

void JsonModeParser::on_object(const json::object& message, std::vector<Event>& out) {
    const std::string_view type = string_at(message, "type");
    if (type == "session") {
        cwd_ = std::string(string_at(message, "cwd"));
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
        const std::string_view text = string_at(message, "errorMessage");
        if (!text.empty()) out.push_back(common::error("retrying after: " + std::string(text)));
    } else if (type == "auto_retry_end") {
        const std::string_view text = string_at(message, "finalError");
        if (!common::bool_at(message, "success") && !text.empty()) out.push_back(common::error(text));
    } else if (type == "extension_error") {
        const std::string_view text = string_at(message, "error");
        if (!text.empty()) out.push_back(common::error("a pi extension failed: " + std::string(text)));
    } else if (type == "agent_end") {
        on_agent_end(out);
    }
}

void JsonModeParser::on_message_start(const json::object& message, std::vector<Event>& out) {
    if (string_at(message, "role") != "assistant") return;
    const std::string_view provider = string_at(message, "provider");
    const std::string_view model = string_at(message, "model");
    if (model.empty()) return;
    std::string full = provider.empty() ? std::string(model) : std::string(provider) + "/" + std::string(model);
    // pi has one mode (it asks before nothing); what changes is the model.
    if (full != model_) {
        model_ = std::move(full);
        out.push_back(common::mode_changed("default", model_));
    }
}

void JsonModeParser::on_message_end(const json::object& message, std::vector<Event>& out) {
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

void JsonModeParser::announce(std::string_view id, std::string_view name, const json::value* arguments,
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

void JsonModeParser::on_agent_end(std::vector<Event>& out) {
    common::TurnResult turn;
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
    if (priced_) turn.cost_usd = cost_usd_;
    if (model_calls_ > 0) turn.num_turns = model_calls_;
    out.push_back(common::result(turn));
    cost_usd_ = 0;
    priced_ = false;
    model_calls_ = 0;
    answered_ = false;
    answer_.clear();
    stop_reason_.clear();
    error_message_.clear();
}

} // namespace handler::pi
