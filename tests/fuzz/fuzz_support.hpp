// What the fuzz targets share (docs/fuzzing.md): a property check that stops the run
// with a message, so libFuzzer keeps the input as a crash, and the pieces a stream is cut
// into, since bytes from a socket or a pipe arrive split anywhere.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace handler::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// A property that must hold for every input. `detail` says what was seen.
inline void check(bool holds, const char* property, std::string_view detail = {}) {
    if (holds) return;
    std::fprintf(stderr, "\nfuzz property does not hold: %s\n%.*s\n", property,
                 static_cast<int>(detail.size()), detail.data());
    std::abort();
}

// FNV-1a: the input decides how it is cut, so a crash found replays the same way.
inline std::uint64_t hash_of(std::string_view data) {
    std::uint64_t hash = 14695981039346656037ull;
    for (const char byte : data) hash = (hash ^ static_cast<unsigned char>(byte)) * 1099511628211ull;
    return hash;
}

// `data` cut into pieces of 1 to 16 bytes, now and then a longer one, as the input's hash
// decides. The pieces point into `data`.
inline std::vector<std::string_view> pieces_of(std::string_view data) {
    std::vector<std::string_view> pieces;
    std::uint64_t state = hash_of(data) | 1;
    while (!data.empty()) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const std::size_t size = (state % 8 == 0) ? 64 + state % 512 : 1 + state % 16;
        pieces.push_back(data.substr(0, size));
        data.remove_prefix(pieces.back().size());
    }
    return pieces;
}

} // namespace handler::fuzz
