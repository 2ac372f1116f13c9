#include "acp/updates.hpp"

#include <boost/json/serialize.hpp>

#include <array>
#include <cstdio>
#include <utility>
#include <vector>
#include <ctime>
#include <algorithm>

namespace handler::acp {
namespace json = boost::json;

namespace {

// rawInput/rawOutput are shown by editors as they are; beyond this they are left out
// rather than make one update line huge.
constexpr std::size_t kRawLimitBytes = 64 * 1024;

constexpr std::array kToolKinds = {"read", "edit", "delete", "move", "search", "execute",
                                   "think", "fetch", "switch_mode", "other"};
constexpr std::array kToolStatuses = {"pending", "in_progress", "completed", "failed"};
constexpr std::array kPlanPriorities = {"high", "medium", "low"};
constexpr std::array kPlanStatuses = {"pending", "in_progress", "completed"};
constexpr std::array kStopReasons = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"};
constexpr std::array kPermissionKinds = {"allow_once", "allow_always", "reject_once", "reject_always"};

template <std::size_t N>
bool one_of(const std::array<const char*, N>& list, std::string_view value) {
    return std::any_of(list.begin(), list.end(), [value](const char* entry) { return value == entry; });
}

const json::string* string_field(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_string() ? &value->as_string() : nullptr;
}

// The field when it is one of `list`, else `fallback` (empty: none).
template <std::size_t N>
std::string enum_field(const json::object& object, std::string_view key,
                       const std::array<const char*, N>& list, std::string_view fallback) {
    const auto* value = string_field(object, key);
    if (value != nullptr && one_of(list, *value)) return std::string(*value);
    return std::string(fallback);
}

std::optional<std::uint64_t> count_field(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_uint64()) return value->as_uint64();
    if (value->is_int64() && value->as_int64() >= 0) return static_cast<std::uint64_t>(value->as_int64());
    return std::nullopt;
}

bool absolute(std::string_view path) { return !path.empty() && path.front() == '/'; }

// The objects of the list `key` that have a string `name`, each with it; nullopt when
// `key` is not a list. Anything else in the list is skipped.
using Entry = std::pair<const json::object*, const json::string*>;
std::optional<std::vector<Entry>> entries_with(const json::object& payload, std::string_view key, std::string_view name) {
    const auto* list = payload.if_contains(key);
    if (list == nullptr || !list->is_array()) return std::nullopt;
    std::vector<Entry> out;
    for (const auto& entry : list->as_array()) {
        const auto* object = entry.if_object();
        const auto* field = object != nullptr ? string_field(*object, name) : nullptr;
        if (field != nullptr) out.emplace_back(object, field);
    }
    return out;
}

// `value` as an object with its string "type"; nulls when it is not one.
std::pair<const json::object*, const json::string*> typed(const json::value& value) {
    const auto* object = value.if_object();
    const auto* type = object != nullptr ? string_field(*object, "type") : nullptr;
    return {type != nullptr ? object : nullptr, type};
}

// ContentBlock: text, or a link to a resource. Images and other blocks from a harness
// are not passed on.
std::optional<json::object> content_block(const json::value& value) {
    const auto [block, type] = typed(value);
    if (type == nullptr) return std::nullopt;
    if (*type == "text") {
        const auto* text = string_field(*block, "text");
        if (text == nullptr) return std::nullopt;
        return json::object{{"type", "text"}, {"text", *text}};
    }
    if (*type == "resource_link") {
        const auto* uri = string_field(*block, "uri");
        const auto* name = string_field(*block, "name");
        if (uri == nullptr || name == nullptr) return std::nullopt;
        json::object link{{"type", "resource_link"}, {"uri", *uri}, {"name", *name}};
        if (const auto* title = string_field(*block, "title")) link["title"] = *title;
        if (const auto* mime = string_field(*block, "mimeType")) link["mimeType"] = *mime;
        return link;
    }
    return std::nullopt;
}

// ToolCallContent: content or a diff. A "terminal" entry would name one of the editor's
// own terminals, which a container has no business naming, so it is dropped.
std::optional<json::object> tool_content(const json::value& value) {
    const auto [entry, type] = typed(value);
    if (type == nullptr) return std::nullopt;
    if (*type == "content") {
        const auto* inner = entry->if_contains("content");
        auto block = inner != nullptr ? content_block(*inner) : std::nullopt;
        if (!block) return std::nullopt;
        return json::object{{"type", "content"}, {"content", std::move(*block)}};
    }
    if (*type == "diff") {
        const auto* path = string_field(*entry, "path");
        const auto* new_text = string_field(*entry, "newText");
        if (path == nullptr || new_text == nullptr || !absolute(*path)) return std::nullopt;
        json::value old_text = nullptr;
        if (const auto* old = string_field(*entry, "oldText")) old_text = *old;
        return json::object{{"type", "diff"}, {"path", *path}, {"oldText", std::move(old_text)},
                            {"newText", *new_text}};
    }
    return std::nullopt;
}

json::array tool_contents(const json::array& entries) {
    json::array out;
    for (const auto& entry : entries)
        if (auto content = tool_content(entry)) out.push_back(std::move(*content));
    return out;
}

json::array locations(const json::array& entries) {
    json::array out;
    for (const auto& entry : entries) {
        const auto* location = entry.if_object();
        if (location == nullptr) continue;
        const auto* path = string_field(*location, "path");
        if (path == nullptr || !absolute(*path)) continue;
        json::object item{{"path", *path}};
        if (auto line = count_field(*location, "line"); line && *line <= UINT32_MAX) item["line"] = *line;
        out.push_back(std::move(item));
    }
    return out;
}

// rawInput and rawOutput are opaque data to the editor: copied when not too large.
void copy_raw(const json::object& from, json::object& to, std::string_view key) {
    const auto* value = from.if_contains(key);
    if (value == nullptr || value->is_null()) return;
    if (json::serialize(*value).size() > kRawLimitBytes) return;
    to[key] = *value;
}

// The fields a tool_call and a tool_call_update share, each when usable.
void tool_fields(const json::object& payload, json::object& update) {
    if (const auto* content = payload.if_contains("content"); content && content->is_array())
        update["content"] = tool_contents(content->as_array());
    if (const auto* where = payload.if_contains("locations"); where && where->is_array())
        update["locations"] = locations(where->as_array());
    copy_raw(payload, update, "rawInput");
    copy_raw(payload, update, "rawOutput");
}

std::optional<json::object> tool_call(const json::object& payload) {
    const auto* id = string_field(payload, "toolCallId");
    if (id == nullptr) return std::nullopt;
    std::string title = "Tool call";
    if (const auto* given = string_field(payload, "title"); given && !given->empty()) title = *given;
    else if (const auto* name = string_field(payload, "name"); name && !name->empty()) title = *name;
    json::object update{{"sessionUpdate", "tool_call"},
                        {"toolCallId", *id},
                        {"title", title},
                        {"kind", enum_field(payload, "kind", kToolKinds, "other")},
                        {"status", enum_field(payload, "status", kToolStatuses, "pending")}};
    tool_fields(payload, update);
    return update;
}

std::optional<json::object> tool_call_update(const json::object& payload) {
    const auto* id = string_field(payload, "toolCallId");
    if (id == nullptr) return std::nullopt;
    json::object update{{"sessionUpdate", "tool_call_update"}, {"toolCallId", *id}};
    if (auto status = enum_field(payload, "status", kToolStatuses, ""); !status.empty()) update["status"] = status;
    if (auto kind = enum_field(payload, "kind", kToolKinds, ""); !kind.empty()) update["kind"] = kind;
    if (const auto* title = string_field(payload, "title")) update["title"] = *title;
    tool_fields(payload, update);
    return update;
}

std::optional<json::object> plan(const json::object& payload) {
    const auto entries = entries_with(payload, "entries", "content");
    if (!entries) return std::nullopt;
    json::array out;
    for (const auto& [item, content] : *entries)
        out.push_back(json::object{{"content", *content},
                                   {"priority", enum_field(*item, "priority", kPlanPriorities, "medium")},
                                   {"status", enum_field(*item, "status", kPlanStatuses, "pending")}});
    return json::object{{"sessionUpdate", "plan"}, {"entries", std::move(out)}};
}

std::optional<json::object> available_commands(const json::object& payload) {
    const auto commands = entries_with(payload, "availableCommands", "name");
    if (!commands) return std::nullopt;
    json::array out;
    for (const auto& [command, name] : *commands) {
        if (name->empty()) continue;
        const auto* description = string_field(*command, "description");
        json::object item{{"name", *name}, {"description", description ? json::string(*description) : json::string()}};
        if (const auto* input = command->if_contains("input"); input && input->is_object())
            if (const auto* hint = string_field(input->as_object(), "hint"))
                item["input"] = json::object{{"hint", *hint}};
        out.push_back(std::move(item));
    }
    return json::object{{"sessionUpdate", "available_commands_update"}, {"availableCommands", std::move(out)}};
}

std::optional<json::object> usage(const json::object& payload) {
    const auto used = count_field(payload, "used");
    const auto size = count_field(payload, "size");
    if (!used || !size) return std::nullopt;
    json::object update{{"sessionUpdate", "usage_update"}, {"used", *used}, {"size", *size}};
    if (const auto* cost = payload.if_contains("cost"); cost && cost->is_object()) {
        const auto* amount = cost->as_object().if_contains("amount");
        const auto* currency = string_field(cost->as_object(), "currency");
        if (amount != nullptr && amount->is_number() && currency != nullptr)
            update["cost"] = json::object{{"amount", amount->to_number<double>()}, {"currency", *currency}};
    }
    return update;
}

std::optional<json::object> chunk(const ConversationEvent& event, MessageRun& run) {
    const auto* content = event.payload.if_contains("content");
    auto block = content != nullptr ? content_block(*content) : std::nullopt;
    if (!block) return std::nullopt;
    if (run.kind != event.kind) run = MessageRun{event.kind, "m" + std::to_string(event.seq)};
    return json::object{{"sessionUpdate", event.kind}, {"content", std::move(*block)}, {"messageId", run.id}};
}

// Kinds that leave the current message: what the agent says after them is a new one.
bool ends_message(std::string_view kind) {
    return kind == "user_prompt" || kind == "tool_call" || kind == "tool_call_update" || kind == "plan" ||
           kind == "permission_request" || kind == "permission_answer" || kind == "result" || kind == "error";
}

} // namespace

std::optional<ConversationEvent> read_event(const json::object& message) {
    const auto* seq = message.if_contains("seq");
    const auto* kind = string_field(message, "kind");
    const auto* payload = message.if_contains("payload");
    if (seq == nullptr || !seq->is_int64() || kind == nullptr || payload == nullptr || !payload->is_object())
        return std::nullopt;
    ConversationEvent event;
    event.seq = seq->as_int64();
    if (const auto* at = message.if_contains("at"); at && at->is_int64()) event.at_ms = at->as_int64();
    event.kind = std::string(*kind);
    event.payload = payload->as_object();
    return event;
}

std::optional<json::object> to_update(const ConversationEvent& event, MessageRun& run) {
    const auto& payload = event.payload;
    const std::string_view kind = event.kind;
    if (ends_message(kind)) run = MessageRun{};
    if (kind == "agent_message_chunk" || kind == "agent_thought_chunk") return chunk(event, run);
    if (kind == "user_prompt") {
        const auto* content = payload.if_contains("content");
        auto block = content != nullptr ? content_block(*content) : std::nullopt;
        if (!block) return std::nullopt;
        json::object update{{"sessionUpdate", "user_message_chunk"}, {"content", std::move(*block)}};
        if (const auto* prompt = string_field(payload, "promptId")) update["messageId"] = *prompt;
        return update;
    }
    if (kind == "tool_call") return tool_call(payload);
    if (kind == "tool_call_update") return tool_call_update(payload);
    if (kind == "plan") return plan(payload);
    if (kind == "available_commands") return available_commands(payload);
    if (kind == "usage") return usage(payload);
    if (kind == "session_info") {
        const auto* title = string_field(payload, "title");
        if (title == nullptr) return std::nullopt;
        json::object update{{"sessionUpdate", "session_info_update"}, {"title", *title}};
        if (event.at_ms > 0) update["updatedAt"] = iso8601(event.at_ms);
        return update;
    }
    if (kind == "error") {
        const auto* message = string_field(payload, "message");
        if (message == nullptr) return std::nullopt;
        return json::object{{"sessionUpdate", "agent_message_chunk"},
                            {"content", json::object{{"type", "text"}, {"text", "\n\nError: " + std::string(*message) + "\n\n"}}},
                            {"messageId", "e" + std::to_string(event.seq)}};
    }
    return std::nullopt;
}

json::object session_notification(std::string_view session_id, json::object update) {
    return json::object{{"sessionId", session_id}, {"update", std::move(update)}};
}

std::optional<json::object> permission_params(std::string_view session_id, const json::object& payload) {
    const auto* id = string_field(payload, "toolCallId");
    const auto given = entries_with(payload, "options", "optionId");
    if (id == nullptr || !given) return std::nullopt;
    json::array options;
    for (const auto& [option, option_id] : *given) {
        const std::string kind = enum_field(*option, "kind", kPermissionKinds, "");
        if (kind.empty()) continue;
        const auto* name = string_field(*option, "name");
        options.push_back(json::object{{"optionId", *option_id}, {"name", name ? *name : *option_id}, {"kind", kind}});
    }
    if (options.empty()) return std::nullopt;
    json::object tool{{"toolCallId", *id}, {"status", "pending"}};
    if (const auto* title = string_field(payload, "title")) tool["title"] = *title;
    if (auto kind = enum_field(payload, "kind", kToolKinds, ""); !kind.empty()) tool["kind"] = kind;
    copy_raw(payload, tool, "rawInput");
    return json::object{{"sessionId", session_id}, {"toolCall", std::move(tool)}, {"options", std::move(options)}};
}

std::string stop_reason(const json::object& payload) {
    return enum_field(payload, "stopReason", kStopReasons, "end_turn");
}

std::string iso8601(std::int64_t ms) {
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char text[32];
    const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(((ms % 1000) + 1000) % 1000));
    return std::string(text, length) + millis;
}

bool path_within(std::string_view path, std::string_view folder) {
    while (folder.size() > 1 && folder.back() == '/') folder.remove_suffix(1);
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    if (!absolute(path) || !absolute(folder)) return false;
    if (folder == "/") return true;
    return path == folder || (path.size() > folder.size() && path.starts_with(folder) && path[folder.size()] == '/');
}

Result<api::Prompt> prompt_content(const json::array& blocks, std::size_t limit_bytes) {
    api::Prompt prompt;
    std::string& text = prompt.text;
    for (std::size_t index = 0; index < blocks.size(); ++index) {
        const std::string where = "params.prompt[" + std::to_string(index) + "]";
        const auto* block = blocks[index].if_object();
        const auto* type = block != nullptr ? string_field(*block, "type") : nullptr;
        if (type == nullptr)
            return make_error(ErrorCode::invalid_argument, where + " must be a content block with a \"type\"");
        if (*type == "text") {
            const auto* piece = string_field(*block, "text");
            if (piece == nullptr) return make_error(ErrorCode::invalid_argument, where + ".text must be a string");
            text.append(*piece);
        } else if (*type == "resource_link") {
            const auto* uri = string_field(*block, "uri");
            const auto* name = string_field(*block, "name");
            if (uri == nullptr || name == nullptr)
                return make_error(ErrorCode::invalid_argument, where + " (a resource_link) needs \"uri\" and \"name\" strings");
            text.append("[@" + std::string(*name) + "](" + std::string(*uri) + ")");
        } else if (*type == "resource") {
            const auto* resource = block->if_contains("resource");
            const auto* contents = resource != nullptr ? resource->if_object() : nullptr;
            const auto* uri = contents != nullptr ? string_field(*contents, "uri") : nullptr;
            const auto* body = contents != nullptr ? string_field(*contents, "text") : nullptr;
            if (uri == nullptr || body == nullptr)
                return make_error(ErrorCode::invalid_argument,
                                  where + " (a resource) must embed text with a uri; binary resources are not taken");
            text.append("\n<context ref=\"" + std::string(*uri) + "\">\n" + std::string(*body) + "\n</context>\n");
        } else if (*type == "image") {
            const auto* mime_type = string_field(*block, "mimeType");
            const auto* data = string_field(*block, "data");
            if (mime_type == nullptr || data == nullptr)
                return make_error(ErrorCode::invalid_argument,
                                  where + " (an image) needs \"mimeType\" and \"data\" strings; an image by uri "
                                          "alone is not fetched");
            prompt.images.push_back({std::string(*mime_type), std::string(*data)});
        } else {
            return make_error(ErrorCode::invalid_argument,
                              where + " is of type '" + std::string(*type) +
                                  "'; handler acp takes text, resource_link, resource and image blocks "
                                  "(its promptCapabilities offer no audio)");
        }
        if (text.size() > limit_bytes)
            return make_error(ErrorCode::too_large,
                              "the prompt is more than " + std::to_string(limit_bytes) +
                                  " bytes, the most handler acp takes; mention large files (the agent reads "
                                  "them in the project) rather than embedding them");
    }
    if (text.empty() && prompt.images.empty())
        return make_error(ErrorCode::invalid_argument, "params.prompt has no text and no image");
    return prompt;
}

void show_as_terminal(json::object& update, std::set<std::string>& terminals) {
    const auto* kind = string_field(update, "sessionUpdate");
    const auto* id = string_field(update, "toolCallId");
    if (kind == nullptr || id == nullptr) return;
    const std::string terminal(*id);
    const json::object terminal_content{{"type", "terminal"}, {"terminalId", terminal}};
    if (*kind == "tool_call") {
        const auto* tool_kind = string_field(update, "kind");
        if (tool_kind == nullptr || *tool_kind != "execute") return;
        terminals.insert(terminal);
        update["_meta"] = json::object{{"terminal_info", json::object{{"terminal_id", terminal}}}};
        update["content"] = json::array{terminal_content};
        return;
    }
    if (*kind != "tool_call_update" || !terminals.contains(terminal)) return;
    json::object meta;
    // The whole output so far: each harness reports a command's output once, whole.
    std::string output;
    if (const auto* content = update.if_contains("content"); content != nullptr && content->is_array()) {
        for (const auto& entry : content->as_array()) {
            const auto* inner = entry.is_object() ? entry.as_object().if_contains("content") : nullptr;
            const auto* text = inner != nullptr && inner->is_object() ? string_field(inner->as_object(), "text") : nullptr;
            if (text != nullptr) output += std::string(*text);
        }
        update["content"] = json::array{terminal_content};
    }
    if (!output.empty())
        meta["terminal_output"] = json::object{{"terminal_id", terminal}, {"data", output}};
    const auto* status = string_field(update, "status");
    if (status != nullptr && (*status == "completed" || *status == "failed")) {
        json::value exit_code = nullptr;
        if (const auto* raw = update.if_contains("rawOutput"); raw != nullptr && raw->is_object())
            if (const auto* code = raw->as_object().if_contains("exitCode"); code != nullptr && code->is_int64())
                exit_code = code->as_int64();
        meta["terminal_exit"] = json::object{{"terminal_id", terminal}, {"exit_code", exit_code}, {"signal", nullptr}};
        terminals.erase(terminal);
    }
    if (!meta.empty()) update["_meta"] = std::move(meta);
}

std::vector<json::object> prompt_image_updates(const json::object& payload) {
    std::vector<json::object> updates;
    const auto* images = payload.if_contains("images");
    if (images == nullptr || !images->is_array()) return updates;
    const auto* prompt_id = string_field(payload, "promptId");
    for (const auto& image : images->as_array()) {
        const auto* fields = image.if_object();
        const auto* mime_type = fields != nullptr ? string_field(*fields, "mimeType") : nullptr;
        const auto* data = fields != nullptr ? string_field(*fields, "data") : nullptr;
        if (mime_type == nullptr || data == nullptr) continue;
        json::object update{{"sessionUpdate", "user_message_chunk"},
                            {"content", json::object{{"type", "image"}, {"mimeType", *mime_type}, {"data", *data}}}};
        if (prompt_id != nullptr) update["messageId"] = *prompt_id;
        updates.push_back(std::move(update));
    }
    return updates;
}

} // namespace handler::acp
