// The web page's login (docs/web-ui.md, "Security"): one-time login tokens that `handler
// ui` asks for over the unix socket, traded by the page for a browser session whose id is
// the handler_session cookie. Both live in memory only, hashed: a handlerd restart logs
// every page out, and nothing on disk or in a core dump's plain strings is a credential.
//
// Transport-free and single-threaded (the io thread, like the routes). The random values
// and the hash come from libsodium (randombytes_buf, crypto_generichash).
#pragma once

#include "core/clock.hpp"
#include "core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace handler::api {

class UiLogins {
public:
    // How long a login link works: long enough to open a browser, short enough that a
    // URL left in a terminal's scrollback or shell history is dead.
    static constexpr std::int64_t kLoginTokenLifetimeMs = 2 * 60 * 1000;
    // A browser session unused this long ends (the page's WebSocket and fetches use it).
    static constexpr std::int64_t kSessionIdleMs = std::int64_t{7} * 24 * 60 * 60 * 1000;
    // Bounds: only the owner (unix socket) makes tokens, and only a token makes a
    // session, but a loop in a script must not grow the daemon. The oldest goes first.
    static constexpr std::size_t kMaxLoginTokens = 32;
    static constexpr std::size_t kMaxSessions = 64;

    explicit UiLogins(const Clock& clock);

    struct LoginToken {
        std::string token; // 64 hex digits, shown once, never stored
        std::int64_t expires_at = 0;
    };
    Result<LoginToken> issue_login_token();

    // A valid, unused, unexpired token: it is spent, and a new session's id is returned
    // (the cookie value). Anything else: Error{unauthorized} saying what to do.
    Result<std::string> redeem(std::string_view token);

    // True for a live session; it counts as use (the idle time starts again).
    bool session_valid(std::string_view session_id);
    // Logout. Unknown ids are ignored.
    void end_session(std::string_view session_id);

    std::size_t session_count() const { return sessions_.size(); }
    std::size_t login_token_count() const { return tokens_.size(); }

private:
    void prune();
    static std::string hash(std::string_view secret);

    const Clock& clock_;
    std::map<std::string, std::int64_t> tokens_;   // hash → expires_at
    std::map<std::string, std::int64_t> sessions_; // hash → last used
};

// The cookie the page's session rides on, and its attributes (docs/web-ui.md): HttpOnly
// so no script, the page's own included, can read it; SameSite=Strict so no other site's
// page makes the browser send it; Path=/ for the API and the WebSockets. No Secure:
// handlerd speaks plain HTTP on loopback (there is no certificate a browser would trust),
// and loopback traffic never leaves the machine.
inline constexpr std::string_view kSessionCookie = "handler_session";
std::string session_cookie_header(std::string_view session_id);
// Set-Cookie that makes the browser forget it.
std::string cleared_session_cookie_header();

} // namespace handler::api
