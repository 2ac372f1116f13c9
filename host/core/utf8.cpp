#include "core/utf8.hpp"

#include <cstdint>

namespace handler {

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = 0;
    std::uint32_t code_point = 0;
    if (lead < 0x80) return 1;
    if ((lead & 0xe0) == 0xc0) { length = 2; code_point = lead & 0x1f; }
    else if ((lead & 0xf0) == 0xe0) { length = 3; code_point = lead & 0x0f; }
    else if ((lead & 0xf8) == 0xf0) { length = 4; code_point = lead & 0x07; }
    else return 0;
    if (text.size() - at < length) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[at + k]);
        if ((next & 0xc0) != 0x80) return 0;
        code_point = (code_point << 6) | (next & 0x3f);
    }
    const bool overlong = (length == 2 && code_point < 0x80) || (length == 3 && code_point < 0x800) ||
                          (length == 4 && code_point < 0x10000);
    if (overlong || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff)) return 0;
    return length;
}

bool is_valid_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_sequence_length(text, at);
        if (length == 0) return false;
        at += length;
    }
    return true;
}

std::string with_valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t length = utf8_sequence_length(text, at);
        if (length == 0) {
            out += "\xef\xbf\xbd";
            ++at;
        } else {
            out.append(text, at, length);
            at += length;
        }
    }
    return out;
}

} // namespace handler
