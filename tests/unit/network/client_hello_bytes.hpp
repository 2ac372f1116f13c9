// Real TLS ClientHellos for the proxy's tests (tests/fixtures/tls), and the means to
// take one apart and put it back together changed: another server name, one more
// extension, other record sizes, with every length right.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace handler::network::testing {

inline std::string fixture(const std::string& name) {
    std::ifstream file(std::string(HANDLER_FIXTURE_TLS_DIR) + "/" + name, std::ios::binary);
    EXPECT_TRUE(file.good()) << name;
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

inline std::string big_endian(std::size_t value, std::size_t width) {
    std::string out(width, '\0');
    for (std::size_t i = 0; i < width; ++i) out[width - 1 - i] = static_cast<char>((value >> (8 * i)) & 0xff);
    return out;
}

inline std::size_t number(const std::string& bytes, std::size_t at, std::size_t width) {
    std::size_t value = 0;
    for (std::size_t i = 0; i < width; ++i) value = value << 8 | static_cast<unsigned char>(bytes.at(at + i));
    return value;
}

// A real hello taken apart: what comes before its extensions, and each extension, so a
// test can change one and put it back together with every length right.
struct Parts {
    std::string before; // version, random, session id, cipher suites, compression methods
    std::vector<std::pair<std::size_t, std::string>> extensions;
};

inline Parts split(const std::string& records) {
    std::string message; // the handshake message, from however many records
    for (std::size_t at = 0; at < records.size();) {
        const std::size_t length = number(records, at + 3, 2);
        message += records.substr(at + 5, length);
        at += 5 + length;
    }
    const std::string body = message.substr(4);
    std::size_t at = 2 + 32;
    at += 1 + number(body, at, 1);
    at += 2 + number(body, at, 2);
    at += 1 + number(body, at, 1);
    Parts parts{body.substr(0, at), {}};
    const std::size_t end = at + 2 + number(body, at, 2);
    for (at += 2; at < end;) {
        const std::size_t length = number(body, at + 2, 2);
        parts.extensions.emplace_back(number(body, at, 2), body.substr(at + 4, length));
        at += 4 + length;
    }
    return parts;
}

inline std::string handshake(const Parts& parts) {
    std::string extensions;
    for (const auto& [type, data] : parts.extensions) extensions += big_endian(type, 2) + big_endian(data.size(), 2) + data;
    const std::string body = parts.before + big_endian(extensions.size(), 2) + extensions;
    return "\x01" + big_endian(body.size(), 3) + body;
}

// The handshake message in records of at most `fragment` bytes each.
inline std::string records(const std::string& message, std::size_t fragment = 16384) {
    std::string out;
    for (std::size_t at = 0; at < message.size(); at += fragment) {
        const std::string piece = message.substr(at, fragment);
        out += "\x16\x03\x01" + big_endian(piece.size(), 2) + piece;
    }
    return out;
}

inline std::string join(const Parts& parts) { return records(handshake(parts)); }

inline std::string server_name_extension(const std::string& name) {
    const std::string entry = std::string(1, '\0') + big_endian(name.size(), 2) + name;
    return big_endian(entry.size(), 2) + entry;
}

inline Parts with_server_name(Parts parts, const std::string& name) {
    for (auto& [type, data] : parts.extensions)
        if (type == 0) data = server_name_extension(name);
    return parts;
}

} // namespace handler::network::testing
