#include "plugin_common/events.hpp"

#include "plugin_common/json_access.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <array>
#include <stdexcept>
#include <utility>

namespace handler::plugin_common {

namespace json = boost::json;

namespace {

json::string_view view(std::string_view text) { return {text.data(), text.size()}; }

Event content_event(hd_event_kind kind, std::string_view text) {
    json::object payload;
    payload["content"] = text_block(text);
    return make_event(kind, payload);
}

} // namespace

Prompt read_prompt(std::string_view payload, std::string_view agent) {
    boost::system::error_code error;
    const json::value value = json::parse(payload, error);
    const json::object* content = error || !value.is_object() ? nullptr : object_at(value.get_object(), "content");
    if (content == nullptr || string_at(*content, "type") != "text")
        throw std::invalid_argument(std::string(agent) + " takes a text prompt ({\"content\":{\"type\":\"text\",...}})");
    Prompt prompt{std::string(string_at(*content, "text")), {}};
    if (const json::value* images = value.get_object().if_contains("images"); images != nullptr) {
        if (!images->is_array()) throw std::invalid_argument("a prompt's \"images\" must be an array");
        for (const json::value& image : images->get_array()) {
            const json::object* fields = image.if_object();
            const std::string_view mime_type = fields != nullptr ? string_at(*fields, "mimeType") : "";
            const std::string_view data = fields != nullptr ? string_at(*fields, "data") : "";
            if (mime_type.empty() || data.empty())
                throw std::invalid_argument("each of a prompt's images needs \"mimeType\" and \"data\" strings");
            prompt.images.push_back({std::string(mime_type), std::string(data)});
        }
    }
    return prompt;
}

std::string prompt_text(std::string_view payload, std::string_view agent) {
    return read_prompt(payload, agent).text;
}

Event make_event(hd_event_kind kind, const json::object& payload) {
    return Event{kind, json::serialize(payload)};
}

json::object text_block(std::string_view text) {
    json::object block;
    block["type"] = "text";
    block["text"] = view(text);
    return block;
}

json::object tool_content(json::object block) {
    json::object content;
    content["type"] = "content";
    content["content"] = std::move(block);
    return content;
}

Event user_prompt(std::string_view text) { return content_event(HD_EVENT_USER_PROMPT, text); }
Event agent_message_chunk(std::string_view text) {
    return content_event(HD_EVENT_AGENT_MESSAGE_CHUNK, text);
}
Event agent_thought_chunk(std::string_view text) {
    return content_event(HD_EVENT_AGENT_THOUGHT_CHUNK, text);
}

std::optional<json::object> diff_content(std::string_view path, std::optional<std::string_view> old_text,
                                         std::string_view new_text) {
    if (path.empty() || new_text.size() > kDiffTextBytes || (old_text && old_text->size() > kDiffTextBytes))
        return std::nullopt;
    json::object diff;
    diff["type"] = "diff";
    diff["path"] = view(path);
    diff["oldText"] = old_text ? json::value(view(*old_text)) : json::value(nullptr);
    diff["newText"] = view(new_text);
    return diff;
}

Event tool_call(const ToolCall& call) {
    json::object payload;
    payload["toolCallId"] = view(call.id);
    payload["title"] = view(call.title);
    payload["kind"] = view(call.kind);
    payload["status"] = "pending";
    if (!call.name.empty()) payload["name"] = view(call.name);
    payload["rawInput"] = call.raw_input;
    if (!call.locations.empty()) {
        json::array locations;
        for (const std::string& path : call.locations) {
            json::object location;
            location["path"] = view(path);
            locations.push_back(std::move(location));
        }
        payload["locations"] = std::move(locations);
    }
    if (!call.content.empty()) payload["content"] = call.content;
    return make_event(HD_EVENT_TOOL_CALL, payload);
}

Event tool_call_update(const ToolCallUpdate& update) {
    json::object payload;
    payload["toolCallId"] = view(update.id);
    payload["status"] = view(update.status);
    if (!update.keep_content) payload["content"] = update.content;
    return make_event(HD_EVENT_TOOL_CALL_UPDATE, payload);
}

Event plan(const std::vector<PlanEntry>& entries) {
    json::array list;
    for (const PlanEntry& entry : entries) {
        json::object item;
        item["content"] = view(entry.content);
        item["status"] = view(entry.status);
        item["priority"] = view(entry.priority);
        list.push_back(std::move(item));
    }
    json::object payload;
    payload["entries"] = std::move(list);
    return make_event(HD_EVENT_PLAN, payload);
}

std::vector<PlanEntry> plan_from_todos(const json::object& input, std::string_view left_out) {
    std::vector<PlanEntry> entries;
    const json::array* todos = array_at(input, "todos");
    if (todos == nullptr) return entries;
    for (const json::value& todo : *todos) {
        const json::object* item = todo.if_object();
        if (item == nullptr) continue;
        const std::string_view status = string_at(*item, "status");
        if (!left_out.empty() && status == left_out) continue;
        const std::string_view priority = string_at(*item, "priority");
        PlanEntry entry;
        entry.content = std::string(string_at(*item, "content"));
        entry.status = status == "in_progress" || status == "completed" ? std::string(status) : "pending";
        entry.priority = priority == "high" || priority == "low" ? std::string(priority) : "medium";
        entries.push_back(std::move(entry));
    }
    return entries;
}

std::vector<PermissionOption> allow_or_reject_once() {
    std::vector<PermissionOption> options(2);
    options[0].id = "allow_once";
    options[0].name = "Allow";
    options[0].kind = "allow_once";
    options[1].id = "reject_once";
    options[1].name = "Reject";
    options[1].kind = "reject_once";
    return options;
}

Event permission_request(const PermissionRequest& request) {
    json::array options;
    for (const PermissionOption& option : request.options) {
        json::object item;
        item["optionId"] = view(option.id);
        item["name"] = view(option.name);
        item["kind"] = view(option.kind);
        options.push_back(std::move(item));
    }
    json::object payload;
    payload["toolCallId"] = view(request.tool_call_id);
    payload["title"] = view(request.title);
    payload["rawInput"] = request.raw_input;
    payload["options"] = std::move(options);
    if (!request.meta.empty()) payload["_meta"] = request.meta;
    return make_event(HD_EVENT_PERMISSION_REQUEST, payload);
}

Answer read_answer(std::string_view request, std::string_view answer, std::string_view meta_key,
                   std::string_view agent) {
    boost::system::error_code error;
    json::value request_value = json::parse(request, error);
    const json::object* meta = error || !request_value.is_object() ? nullptr : object_at(request_value.get_object(), "_meta");
    const json::object* mine = meta == nullptr ? nullptr : object_at(*meta, meta_key);
    if (mine == nullptr)
        throw std::invalid_argument("this permission request was not made by " + std::string(agent) + " (it has no _meta." +
                                    std::string(meta_key) + ")");
    Answer out;
    out.meta = *mine;
    out.request = std::move(request_value.get_object());
    const json::value answer_value = json::parse(answer, error);
    if (!error && answer_value.is_object()) out.option = std::string(string_at(answer_value.get_object(), "optionId"));
    return out;
}

Event mode_changed(std::string_view mode_id, std::string_view model, std::string_view thinking_level) {
    json::object payload;
    payload["modeId"] = view(mode_id);
    if (!model.empty()) payload["model"] = view(model);
    if (!thinking_level.empty()) payload["thinkingLevel"] = view(thinking_level);
    return make_event(HD_EVENT_MODE_CHANGED, payload);
}

Event result(const TurnResult& turn) {
    json::object payload;
    payload["stopReason"] = view(turn.stop_reason);
    payload["isError"] = turn.is_error;
    if (turn.result) payload["result"] = view(*turn.result);
    if (turn.usage) payload["usage"] = *turn.usage;
    if (turn.cost_usd) payload["costUsd"] = *turn.cost_usd;
    if (turn.num_turns) payload["numTurns"] = *turn.num_turns;
    return make_event(HD_EVENT_RESULT, payload);
}

Event error(std::string_view message) {
    json::object payload;
    payload["message"] = view(message);
    return make_event(HD_EVENT_ERROR, payload);
}

bool is_acp_stop_reason(std::string_view reason) {
    static constexpr std::array<std::string_view, 5> kReasons = {
        "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"};
    for (std::string_view known : kReasons)
        if (reason == known) return true;
    return false;
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return std::string(text);
    std::size_t end = max_bytes;
    // Back off over continuation bytes to the start of the sequence the cut falls in.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
    return std::string(text.substr(0, end)) + "\xe2\x80\xa6";
}

} // namespace handler::plugin_common
