#include "secrets/providers.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace handler::secrets {

const std::vector<Provider>& providers() {
    static const std::vector<Provider> kProviders = {
        {"anthropic-api-key", {"api.anthropic.com"}, "x-api-key", ""},
        // The token `claude setup-token` prints: a bearer token for the same API.
        {"claude-subscription", {"api.anthropic.com"}, "authorization", "Bearer "},
        {"openai-api-key", {"api.openai.com"}, "authorization", "Bearer "},
        {"openrouter-api-key", {"openrouter.ai"}, "authorization", "Bearer "},
        {"mistral-api-key", {"api.mistral.ai", "codestral.mistral.ai"}, "authorization", "Bearer "},
    };
    return kProviders;
}

const Provider* provider_for(std::string_view kind) {
    for (const auto& provider : providers())
        if (provider.kind == kind) return &provider;
    return nullptr;
}

Result<std::string> normalize_secret(std::string_view value) {
    const auto first = value.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return make_error(ErrorCode::invalid_argument, "the key is empty (nothing was read from stdin)");
    value = value.substr(first, value.find_last_not_of(" \t\r\n") - first + 1);
    if (value.size() < 8 || value.size() > 4096)
        return make_error(ErrorCode::invalid_argument,
                          "the key is " + std::to_string(value.size()) +
                              " characters long; keys are 8 to 4096 characters");
    const bool printable = std::all_of(value.begin(), value.end(), [](char c) { return c > ' ' && c < 127; });
    if (!printable)
        return make_error(ErrorCode::invalid_argument,
                          "the key holds spaces, control characters or non-ASCII bytes; paste only the key");
    return std::string(value);
}

RandomBytes system_random() {
    return [](unsigned char* out, std::size_t size) {
        if (RAND_bytes(out, static_cast<int>(size)) != 1)
            throw std::runtime_error("OpenSSL RAND_bytes failed"); // never expected
    };
}

std::string make_stand_in(std::string_view real, const RandomBytes& random) {
    static constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const auto dash = real.substr(0, std::min<std::size_t>(real.size(), 24)).rfind('-');
    std::string stand_in(dash == std::string_view::npos ? std::string_view() : real.substr(0, dash + 1));
    const std::size_t length = std::max<std::size_t>(real.size(), stand_in.size() + 16);
    do {
        stand_in.resize(dash == std::string_view::npos ? 0 : dash + 1);
        // Rejection sampling keeps the letters uniform (256 is not a multiple of 62).
        while (stand_in.size() < length) {
            unsigned char byte = 0;
            random(&byte, 1);
            if (byte < 248) stand_in.push_back(kAlphabet[byte % kAlphabet.size()]);
        }
    } while (stand_in == real);
    return stand_in;
}

} // namespace handler::secrets
