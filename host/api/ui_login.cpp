#include "api/ui_login.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>

namespace handler::api {

namespace {

constexpr std::size_t kSecretBytes = 32;

std::string to_hex(const unsigned char* bytes, std::size_t size) {
    std::string hex(size * 2 + 1, '\0');
    sodium_bin2hex(hex.data(), hex.size(), bytes, size);
    hex.pop_back();
    return hex;
}

Result<std::string> random_secret() {
    if (sodium_init() < 0)
        return make_error(ErrorCode::internal, "libsodium could not start (sodium_init failed)");
    std::array<unsigned char, kSecretBytes> bytes{};
    randombytes_buf(bytes.data(), bytes.size());
    std::string hex = to_hex(bytes.data(), bytes.size());
    sodium_memzero(bytes.data(), bytes.size());
    return hex;
}

// Erases the oldest entry (smallest time) once a map is at its bound.
void make_room(std::map<std::string, std::int64_t>& entries, std::size_t bound) {
    while (entries.size() >= bound) {
        const auto oldest = std::min_element(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
        });
        entries.erase(oldest);
    }
}

} // namespace

UiLogins::UiLogins(const Clock& clock) : clock_(clock) {}

// The maps are keyed by a hash, so a lookup's timing depends on the hash of a guess, not
// on how much of a real secret it matched; and their contents are useless if read.
std::string UiLogins::hash(std::string_view secret) {
    std::array<unsigned char, crypto_generichash_BYTES> digest{};
    crypto_generichash(digest.data(), digest.size(), reinterpret_cast<const unsigned char*>(secret.data()),
                       secret.size(), nullptr, 0);
    return to_hex(digest.data(), digest.size());
}

void UiLogins::prune() {
    const std::int64_t now = clock_.now_ms();
    std::erase_if(tokens_, [now](const auto& entry) { return entry.second <= now; });
    std::erase_if(sessions_, [now](const auto& entry) { return now - entry.second >= kSessionIdleMs; });
}

Result<UiLogins::LoginToken> UiLogins::issue_login_token() {
    prune();
    auto token = random_secret();
    if (!token) return token.take_error();
    make_room(tokens_, kMaxLoginTokens);
    const std::int64_t expires_at = clock_.now_ms() + kLoginTokenLifetimeMs;
    tokens_[hash(*token)] = expires_at;
    return LoginToken{std::move(*token), expires_at};
}

Result<std::string> UiLogins::redeem(std::string_view token) {
    prune();
    const auto found = token.empty() || token.size() > 256 ? tokens_.end() : tokens_.find(hash(token));
    if (found == tokens_.end())
        return make_error(ErrorCode::unauthorized,
                          "this login link was used already, has expired (links work once, for 2 "
                          "minutes) or is not handlerd's; run `handler ui` in a terminal to open "
                          "the page again");
    tokens_.erase(found);
    auto session = random_secret();
    if (!session) return session.take_error();
    make_room(sessions_, kMaxSessions);
    sessions_[hash(*session)] = clock_.now_ms();
    return session;
}

bool UiLogins::session_valid(std::string_view session_id) {
    if (session_id.empty() || session_id.size() > 256) return false;
    prune();
    const auto found = sessions_.find(hash(session_id));
    if (found == sessions_.end()) return false;
    found->second = clock_.now_ms();
    return true;
}

void UiLogins::end_session(std::string_view session_id) {
    if (session_id.empty() || session_id.size() > 256) return;
    sessions_.erase(hash(session_id));
}

std::string session_cookie_header(std::string_view session_id) {
    return std::string(kSessionCookie) + "=" + std::string(session_id) + "; HttpOnly; SameSite=Strict; Path=/";
}

std::string cleared_session_cookie_header() {
    return std::string(kSessionCookie) + "=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/";
}

} // namespace handler::api
