#include "secrets/account_kinds.hpp"

#include "network/secret_binding.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace handler::secrets {

const std::vector<AccountKind>& account_kinds() {
    static const std::vector<AccountKind> kKinds = {
        {"anthropic-api-key", "anthropic", "Anthropic API key", Holds::key,
         {"api.anthropic.com"}, "x-api-key", "", ""},
        // The token `claude setup-token` prints: a bearer token for the same API.
        {"claude-subscription", "claude", "Claude subscription token", Holds::key,
         {"api.anthropic.com"}, "authorization", "Bearer ", ""},
        {"openai-api-key", "openai", "OpenAI API key", Holds::key,
         {"api.openai.com"}, "authorization", "Bearer ", ""},
        {"chatgpt-login", "", "ChatGPT login", Holds::login, {}, "", "", ""},
        {"openrouter-api-key", "openrouter", "OpenRouter API key", Holds::key,
         {"openrouter.ai"}, "authorization", "Bearer ", ""},
        {"mistral-api-key", "mistral", "Mistral API key", Holds::key,
         {"api.mistral.ai", "codestral.mistral.ai"}, "authorization", "Bearer ", ""},
        {"mistral-login", "", "Mistral login", Holds::login, {}, "", "", ""},
        // Where each server listens when started without options: llama.cpp's
        // `llama-server` on 8080, `ollama serve` on 11434, both on the loopback address.
        {"llama-cpp", "llama-cpp", "llama.cpp server", Holds::local_server, {}, "", "",
         "http://127.0.0.1:8080"},
        {"ollama", "ollama", "Ollama server", Holds::local_server, {}, "", "",
         "http://127.0.0.1:11434"},
    };
    return kKinds;
}

const AccountKind* find_account_kind(std::string_view kind) {
    for (const auto& row : account_kinds())
        if (row.kind == kind) return &row;
    return nullptr;
}

const AccountKind* account_kind_for_short_name(std::string_view name) {
    for (const auto& row : account_kinds())
        if (!row.short_name.empty() && row.short_name == name) return &row;
    return nullptr;
}

namespace {

// "a", "a and b", "a, b and c".
std::string join_words(const std::vector<std::string_view>& names) {
    std::string joined;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) joined += i + 1 == names.size() ? " and " : ", ";
        joined += names[i];
    }
    return joined;
}

} // namespace

std::string account_kind_names(std::optional<Holds> holds) {
    std::vector<std::string_view> names;
    for (const auto& row : account_kinds())
        if (!holds || row.holds == *holds) names.push_back(row.kind);
    return join_words(names);
}

std::string account_short_names() {
    std::vector<std::string_view> names;
    for (const auto& row : account_kinds())
        if (!row.short_name.empty()) names.push_back(row.short_name);
    return join_words(names);
}

std::string local_server_defaults() {
    std::vector<std::string> texts;
    for (const auto& row : account_kinds())
        if (row.holds == Holds::local_server)
            texts.push_back(std::string(row.kind) + " at " + std::string(row.default_base_url));
    return join_words({texts.begin(), texts.end()});
}

const AccountKind* provider_for(std::string_view kind) {
    const auto* row = find_account_kind(kind);
    return row != nullptr && row->holds == Holds::key ? row : nullptr;
}

bool is_local_server(std::string_view kind) {
    const auto* row = find_account_kind(kind);
    return row != nullptr && row->holds == Holds::local_server;
}

std::string_view default_base_url(std::string_view kind) {
    const auto* row = find_account_kind(kind);
    return row != nullptr ? row->default_base_url : std::string_view();
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
    if (!network::KeyRedactor::can_mask(value))
        return make_error(ErrorCode::invalid_argument,
                          std::string("the key holds a '") + network::KeyRedactor::kMaskByte +
                              "', which no provider's keys do and which Handler masks keys with on their way back "
                              "to the agent; check that the whole key was copied and nothing else");
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
