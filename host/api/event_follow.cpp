#include "api/event_follow.hpp"

#include "plugins/launch_spec.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>

namespace handler::api {
namespace json = boost::json;

namespace {

Result<EventFilter> refused_follow(std::string message) {
    return make_error(ErrorCode::invalid_argument, "follow: " + std::move(message));
}

bool is_event_kind(std::string_view name) {
    for (auto kind = static_cast<int>(plugins::EventKind::user_prompt);
         kind <= static_cast<int>(plugins::EventKind::prompt_withdrawn); ++kind)
        if (name == plugins::to_string(static_cast<plugins::EventKind>(kind))) return true;
    return false;
}

// An array of at most kFollowLimit strings, each checked by `valid`; a missing field is
// an empty list.
Result<std::set<std::string, std::less<>>> names(const json::object& object, std::string_view field,
                                                 bool (*valid)(std::string_view), std::string_view what) {
    std::set<std::string, std::less<>> out;
    const auto* value = object.if_contains(field);
    if (value == nullptr) return out;
    const auto* list = value->if_array();
    if (list == nullptr)
        return make_error(ErrorCode::invalid_argument, "follow: \"" + std::string(field) + "\" must be an array of " +
                                                           std::string(what) + "s");
    if (list->size() > kFollowLimit)
        return make_error(ErrorCode::invalid_argument, "follow: \"" + std::string(field) + "\" names " +
                                                           std::to_string(list->size()) + "; at most " +
                                                           std::to_string(kFollowLimit));
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto* name = (*list)[i].if_string();
        if (name == nullptr || !valid(*name))
            return make_error(ErrorCode::invalid_argument,
                              "follow: \"" + std::string(field) + "\"[" + std::to_string(i) + "] is not " +
                                  (what.starts_with('e') ? "an " : "a ") + std::string(what) +
                                  (name != nullptr && name->size() <= 64 ? " (" + json::serialize(*name) + ")" : ""));
        out.emplace(*name);
    }
    return out;
}

} // namespace

bool is_session_id_shape(std::string_view id) {
    return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
}

std::optional<Result<EventFilter>> parse_follow(std::string_view text) {
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    const auto* object = error ? nullptr : value.if_object();
    const auto* type = object ? object->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string() || type->as_string() != "follow") return std::nullopt;
    for (const auto& field : *object)
        if (field.key() != "type" && field.key() != "sessions" && field.key() != "kinds")
            return refused_follow("unknown field " + json::serialize(json::string_view(field.key())) +
                           " (it takes \"sessions\" and \"kinds\")");
    const auto* sessions = object->if_contains("sessions");
    if (sessions == nullptr) return refused_follow("needs \"sessions\": an array of session ids, or \"*\" for every session");
    EventFilter filter;
    filter.everything = sessions->is_string() && sessions->as_string() == "*";
    if (!filter.everything) {
        auto ids = names(*object, "sessions", is_session_id_shape, "session id");
        if (!ids) return ids.take_error();
        filter.sessions = std::move(*ids);
    }
    auto kinds = names(*object, "kinds", is_event_kind, "event kind");
    if (!kinds) return kinds.take_error();
    filter.kinds = std::move(*kinds);
    return filter;
}

std::string following_message(const EventFilter& filter) {
    json::object message{{"type", "following"}};
    if (filter.everything) {
        message["sessions"] = "*";
    } else {
        json::array sessions;
        for (const auto& id : filter.sessions) sessions.emplace_back(id);
        message["sessions"] = std::move(sessions);
    }
    json::array kinds;
    for (const auto& kind : filter.kinds) kinds.emplace_back(kind);
    message["kinds"] = std::move(kinds);
    return json::serialize(message);
}

} // namespace handler::api
