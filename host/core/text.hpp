// Small pieces of ASCII text handling that several parts of host/ need alike (header-only).
#pragma once

#include <algorithm>
#include <string_view>

namespace handler::text {

// TEXT without the BLANKS at either end (HTTP's optional whitespace by default).
constexpr std::string_view trim(std::string_view text, std::string_view blanks = " \t") {
    const auto first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// Equal but for the case of ASCII letters, as HTTP compares header names and tokens.
constexpr bool iequals(std::string_view a, std::string_view b) {
    constexpr auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; };
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

// A name a shell takes for an environment variable: letters, digits and '_', not starting
// with a digit. What handlerd sets in a container or an image build is checked against it.
constexpr bool valid_env_name(std::string_view name) {
    if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

} // namespace handler::text
