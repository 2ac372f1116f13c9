#include "plugin_common/json_line.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>

#include <cstdint>

namespace handler::plugin_common {

namespace {

constexpr const char* kReplacement = "\xef\xbf\xbd";

std::optional<boost::json::value> try_parse(std::string_view text) {
    boost::json::parse_options options;
    options.max_depth = 1024; // Boost's parser keeps its own stack: depth costs heap, not frames
    boost::json::error_code ec;
    boost::json::value value = boost::json::parse({text.data(), text.size()}, ec, {}, options);
    if (ec) return std::nullopt;
    return value;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The code unit of the \uXXXX escape at `at` (text[at] == '\\'), or -1.
std::int32_t escape_unit(std::string_view text, std::size_t at) {
    if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return -1;
    std::int32_t unit = 0;
    for (std::size_t k = 2; k < 6; ++k) {
        const int digit = hex_digit(text[at + k]);
        if (digit < 0) return -1;
        unit = unit * 16 + digit;
    }
    return unit;
}

// The length of the well-formed UTF-8 sequence at `at`, or 0.
std::size_t utf8_length(std::string_view text, std::size_t at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte < 0x80) return 1;
    std::size_t length = 0;
    std::uint32_t min_code = 0;
    if ((byte & 0xe0) == 0xc0) { length = 2; min_code = 0x80; }
    else if ((byte & 0xf0) == 0xe0) { length = 3; min_code = 0x800; }
    else if ((byte & 0xf8) == 0xf0) { length = 4; min_code = 0x10000; }
    if (length == 0 || at + length > text.size()) return 0;
    std::uint32_t code = byte & (0x7fu >> length);
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[at + k]);
        if ((next & 0xc0) != 0x80) return 0;
        code = (code << 6) | (next & 0x3fu);
    }
    if (code < min_code || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
    return length;
}

} // namespace

std::string sanitize_json_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '\\' && i + 1 < text.size()) {
            const std::int32_t unit = escape_unit(text, i);
            if (unit >= 0xd800 && unit <= 0xdbff) {
                const std::int32_t low = escape_unit(text, i + 6);
                if (low >= 0xdc00 && low <= 0xdfff) {
                    out.append(text.substr(i, 12));
                    i += 12;
                } else {
                    out += "\\ufffd";
                    i += 6;
                }
            } else if (unit >= 0xdc00 && unit <= 0xdfff) {
                out += "\\ufffd";
                i += 6;
            } else {
                // Any other escape, copied whole so that an escaped backslash before a
                // "u" is not mistaken for the start of a \u escape.
                out.append(text.substr(i, 2));
                i += 2;
            }
            continue;
        }
        const std::size_t length = utf8_length(text, i);
        if (length == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    return out;
}

std::optional<boost::json::value> parse_json_line(std::string_view line) {
    if (std::optional<boost::json::value> value = try_parse(line)) return value;
    const std::string repaired = sanitize_json_text(line);
    if (repaired == line) return std::nullopt;
    return try_parse(repaired);
}

} // namespace handler::plugin_common
