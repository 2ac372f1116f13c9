// The TCP guards of docs/api.md as plain functions over header values, free of Beast, so
// the rules are readable in one place and testable without sockets. server.cpp feeds
// them the headers of every TCP request, WebSocket upgrades included.
#pragma once

#include "api/http_types.hpp"
#include "core/result.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::api {

// The headers the guards look at. Vectors, because a header sent twice is suspicious
// (two Host headers are a classic request-smuggling trick) and is refused.
struct GuardHeaders {
    std::vector<std::string_view> hosts;
    std::vector<std::string_view> origins;
    std::vector<std::string_view> authorizations;
    std::vector<std::string_view> cookies; // each a whole "Cookie:" header value
};

// What a TCP caller may present: the API token (`Authorization: Bearer`, the CLI and
// scripts) or a browser session (the handler_session cookie of api/ui_login.hpp).
struct TcpCredentials {
    std::string_view token;
    // True when the cookie names a live browser session; unset: no cookie is accepted.
    std::function<bool(std::string_view)> session_valid;
};

// The requests that need no credential (Host and Origin are still checked): GET of the
// page's files, which hold no data (anything outside /api/: the page files or a 404),
// and POST /api/v1/ui/login, where the page trades its one-time token for the cookie.
// The page's own code has to load and run before it can log in.
bool is_open_route(std::string_view method, std::string_view path);

// Host, then Origin, then the credential unless `open` (docs/api.md). Error{forbidden}
// for Host or Origin, Error{unauthorized} for a missing or wrong credential; `port` is
// the bound TCP port.
Result<void> check_tcp_guards(const GuardHeaders& headers, std::uint16_t port,
                              const TcpCredentials& credentials, bool open = false);

// The token from `Authorization: Bearer X`; empty when there is none. (The raw API
// token as a cookie, handler_token, is no longer taken: the page never holds the token.)
std::string_view presented_token(const GuardHeaders& headers);
// The handler_session cookie's value; empty when there is none.
std::string_view presented_session(const GuardHeaders& headers);

// The status that docs/api.md pairs with each error code.
unsigned status_for(ErrorCode code);

// {"error":{"code":"...","message":"..."}} with the matching status.
Response error_response(ErrorCode code, std::string_view message);


} // namespace handler::api
