// The input of the key targets (fuzz_redactor, fuzz_websocket): a few keys, then the
// bytes on the wire.
//
//   REAL STAND-IN\n      one to three lines: a real key and the session's stand-in for it
//   \n                   an empty line
//   BYTES                the stream (plain bytes, or WebSocket frames)
//
// Input without that header is all stream, with one key of the usual shape. A real key
// whose stand-in has another length is masked with '*'s (KeyRedactor); with the same
// length, with the stand-in.
#pragma once

#include "network/secret_binding.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace handler::fuzz {

struct SecretInput {
    struct Key {
        std::string real;
        std::string stand_in;
    };
    std::vector<Key> keys;
    std::string_view bytes;

    // No mask can read as (part of) a real key: every mask is '*'s, and no real key holds
    // one (read_secret_input). Then the output holds no real key at all, and a stream is
    // redacted the same way however it is cut; otherwise (a stand-in as the mask) a mask
    // may complete a key with bytes that went out before it, and only where the input
    // held a key must it be masked.
    bool masks_are_stars() const {
        return std::all_of(keys.begin(), keys.end(),
                           [](const Key& key) { return key.stand_in.size() != key.real.size(); });
    }

    network::KeyRedactor redactor() const {
        network::KeyRedactor made;
        for (const Key& key : keys) made.add(key.real, key.stand_in);
        return made;
    }

    // The host the stream goes to: the stand-ins of odd keys are bound to it, so they may
    // go there; the others are headed elsewhere.
    static constexpr std::string_view kHost = "upstream.test";
    std::vector<network::SecretBinding> bindings() const {
        std::vector<network::SecretBinding> made;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            network::SecretBinding binding;
            binding.name = "key-" + std::to_string(i);
            binding.stand_in = keys[i].stand_in;
            binding.hosts = {i % 2 == 1 ? std::string(kHost) : "api.anthropic.com"};
            made.push_back(std::move(binding));
        }
        return made;
    }
};

inline SecretInput read_secret_input(std::string_view data) {
    SecretInput input;
    std::string_view rest = data;
    bool header = false;
    for (int line = 0; line < 3 && !header; ++line) {
        const auto end = rest.find('\n');
        const auto space = rest.substr(0, end).find(' ');
        if (end == std::string_view::npos || space == std::string_view::npos || space == 0 || space + 1 == end ||
            end > 512)
            break;
        input.keys.push_back({std::string(rest.substr(0, space)), std::string(rest.substr(space + 1, end - space - 1))});
        rest.remove_prefix(end + 1);
        if (rest.starts_with('\n')) {
            input.bytes = rest.substr(1);
            header = true;
        }
    }
    // A stand-in holding a real key would be masked with that key, and a key holding the
    // mask byte is refused where keys come in (KeyRedactor::can_mask): no session has either.
    const bool sound = std::none_of(input.keys.begin(), input.keys.end(), [&](const SecretInput::Key& key) {
        return !network::KeyRedactor::can_mask(key.real) ||
               std::any_of(input.keys.begin(), input.keys.end(), [&](const SecretInput::Key& other) {
                   return key.stand_in.find(other.real) != std::string::npos;
               });
    });
    if (!header || !sound) {
        input.keys = {{"sk-ant-api03-REALKEY0123456789", "sk-ant-api03-STANDIN012345678"}};
        input.bytes = data;
    }
    return input;
}

// Where `needle` occurs in `text`, overlapping occurrences included.
inline std::vector<std::size_t> occurrences(std::string_view text, std::string_view needle) {
    std::vector<std::size_t> found;
    for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) found.push_back(at);
    return found;
}

} // namespace handler::fuzz
