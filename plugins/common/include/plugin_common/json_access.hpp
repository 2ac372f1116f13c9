// Reading an agent's JSON without trusting its shape. Agents rename and retype fields
// between releases, so every lookup tolerates a missing field or one of another type
// (an empty view, a null pointer, false) instead of throwing.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace handler::plugin_common {

inline std::string_view string_at(const boost::json::object& object, std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    if (value == nullptr || !value->is_string()) return {};
    const boost::json::string& text = value->get_string();
    return {text.data(), text.size()};
}

inline const boost::json::object* object_at(const boost::json::object& object, std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    return value == nullptr ? nullptr : value->if_object();
}

inline const boost::json::array* array_at(const boost::json::object& object, std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    return value == nullptr ? nullptr : value->if_array();
}

inline bool bool_at(const boost::json::object& object, std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    return value != nullptr && value->is_bool() && value->get_bool();
}

// An integer field, whichever of Boost.JSON's integer kinds it was read as.
inline std::optional<std::int64_t> int_at(const boost::json::object& object, std::string_view key) {
    const boost::json::value* value = object.if_contains(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_int64()) return value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(value->get_uint64());
    return std::nullopt;
}

inline const boost::json::object& empty_object() {
    static const boost::json::object empty;
    return empty;
}

// `value` when it is an object, else an empty one.
inline const boost::json::object& as_object(const boost::json::value* value) {
    return value != nullptr && value->is_object() ? value->get_object() : empty_object();
}

// A path as a person reads it in a title: relative to the session's folder when under it.
std::string display_path(std::string_view path, std::string_view cwd);

// How much of a command, path or query a tool call's title shows, in bytes.
inline constexpr std::size_t kTitleDetailBytes = 120;

// The first line of `text`, with " …" appended when more lines followed, at most
// `max_bytes` (cut as truncate_utf8 cuts): a command as a title shows it.
std::string first_line_of(std::string_view text, std::size_t max_bytes = kTitleDetailBytes);

} // namespace handler::plugin_common
