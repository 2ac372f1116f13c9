// The shape every event a harness plugin emits must have (docs/contracts.md, "Event
// payloads"): handlerd stores it, the API serves it and `handler acp` builds ACP updates
// from it, so a payload out of shape is a bug of the parser that emitted it, whatever the
// harness printed.
#pragma once

#include "fuzz/fuzz_support.hpp"

#include <handler/sdk.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace handler::fuzz {

namespace contract_detail {

inline bool is_string(const boost::json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_string();
}

inline bool is_one_of(const boost::json::object& object, std::string_view key,
                      std::initializer_list<std::string_view> allowed) {
    if (!is_string(object, key)) return false;
    const std::string_view value = object.at(key).as_string();
    for (const auto candidate : allowed)
        if (value == candidate) return true;
    return false;
}

inline bool is_text_content(const boost::json::object& payload) {
    const auto* content = payload.if_contains("content");
    return content != nullptr && content->is_object() && is_one_of(content->as_object(), "type", {"text"}) &&
           is_string(content->as_object(), "text");
}

inline bool every_object(const boost::json::object& payload, std::string_view key,
                         bool (*good)(const boost::json::object&)) {
    const auto* list = payload.if_contains(key);
    if (list == nullptr || !list->is_array()) return false;
    for (const auto& entry : list->as_array())
        if (!entry.is_object() || !good(entry.as_object())) return false;
    return true;
}

inline bool is_option(const boost::json::object& option) {
    return is_string(option, "optionId") && is_string(option, "name") &&
           is_one_of(option, "kind", {"allow_once", "allow_always", "reject_once", "reject_always"});
}

inline bool is_plan_entry(const boost::json::object& entry) {
    return is_string(entry, "content") && is_one_of(entry, "status", {"pending", "in_progress", "completed"}) &&
           is_one_of(entry, "priority", {"high", "medium", "low"});
}

inline bool is_command(const boost::json::object& command) {
    return is_string(command, "name") && is_string(command, "description");
}

inline bool is_location(const boost::json::object& location) { return is_string(location, "path"); }

inline bool has_shape(hd_event_kind kind, const boost::json::object& payload) {
    switch (kind) {
    case HD_EVENT_USER_PROMPT:
    case HD_EVENT_AGENT_MESSAGE_CHUNK:
    case HD_EVENT_AGENT_THOUGHT_CHUNK:
        return is_text_content(payload);
    case HD_EVENT_TOOL_CALL:
        return is_string(payload, "toolCallId") && is_string(payload, "title") &&
               is_one_of(payload, "kind",
                         {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}) &&
               is_one_of(payload, "status", {"pending"}) &&
               (!payload.contains("locations") || every_object(payload, "locations", is_location));
    case HD_EVENT_TOOL_CALL_UPDATE:
        return is_string(payload, "toolCallId") &&
               is_one_of(payload, "status", {"in_progress", "completed", "failed"}) &&
               (!payload.contains("content") || payload.at("content").is_array());
    case HD_EVENT_PLAN:
        return every_object(payload, "entries", is_plan_entry);
    case HD_EVENT_PERMISSION_REQUEST:
        return is_string(payload, "toolCallId") && every_object(payload, "options", is_option) &&
               !payload.at("options").as_array().empty();
    case HD_EVENT_PERMISSION_ANSWER:
        return is_string(payload, "toolCallId") &&
               is_one_of(payload, "kind", {"allow_once", "allow_always", "reject_once", "reject_always", "cancelled"});
    case HD_EVENT_MODE_CHANGED:
        return is_string(payload, "modeId");
    case HD_EVENT_RESULT:
        return is_one_of(payload, "stopReason", {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}) &&
               (!payload.contains("isError") || payload.at("isError").is_bool()) &&
               (!payload.contains("numTurns") || payload.at("numTurns").is_int64());
    case HD_EVENT_ERROR:
        return is_string(payload, "message");
    case HD_EVENT_SESSION_INFO:
        return is_string(payload, "harnessSessionId") || is_string(payload, "title");
    case HD_EVENT_AVAILABLE_COMMANDS:
        return every_object(payload, "availableCommands", is_command);
    case HD_EVENT_USAGE:
        // The window is left out when the harness does not know it.
        return payload.contains("used") && payload.at("used").is_number() &&
               (!payload.contains("size") || payload.at("size").is_number());
    }
    return false;
}

} // namespace contract_detail

// Stops the run when an event is not of a known kind or its payload is out of shape.
inline void check_event(hd_event_kind kind, std::string_view json) {
    check(kind >= HD_EVENT_USER_PROMPT && kind <= HD_EVENT_USAGE, "an event is of a known kind", json);
    boost::system::error_code error;
    const boost::json::value payload = boost::json::parse(json, error);
    check(!error && payload.is_object(), "an event's payload is a JSON object", json);
    check(contract_detail::has_shape(kind, payload.as_object()), "an event's payload has its kind's shape", json);
}

} // namespace handler::fuzz
