// Parsing one line of an agent's JSON output without losing the line to a detail.
#pragma once

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace handler::plugin_common {

// The JSON value in `line`, or std::nullopt when it is not JSON.
//
// Boost.JSON refuses invalid UTF-8 and unpaired UTF-16 surrogate escapes, which Node's
// JSON.stringify writes for a string that holds half a surrogate pair (a tool output cut
// mid-emoji). Dropping a whole event for one such character would be worse than showing
// U+FFFD, so a line that fails is retried once after sanitize_json_text. Nesting is
// allowed far deeper than Boost's default of 32, since tool inputs are the model's JSON.
std::optional<boost::json::value> parse_json_line(std::string_view line);

// `text` with every byte that is not part of well-formed UTF-8, and every \uXXXX escape of
// an unpaired surrogate, replaced by U+FFFD (as raw bytes or as \ufffd respectively).
std::string sanitize_json_text(std::string_view text);

} // namespace handler::plugin_common
