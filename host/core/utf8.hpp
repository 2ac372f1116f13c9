// UTF-8 as JSON needs it. Everything handlerd serves is JSON, which must be valid UTF-8,
// and some of what it quotes was never checked: a request's target, a decoded query
// parameter, a path on disk.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace handler {

// The length (1 to 4) of the well-formed UTF-8 sequence that starts at `at`, or 0: a
// stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

bool is_valid_utf8(std::string_view text);

// `text` with each byte that is not part of a well-formed sequence replaced by U+FFFD.
std::string with_valid_utf8(std::string_view text);

} // namespace handler
