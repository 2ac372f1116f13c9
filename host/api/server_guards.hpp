// The TCP guards of docs/api.md as plain functions over header values, free of Beast, so
// the rules are readable in one place and testable without sockets. server.cpp feeds
// them the headers of every TCP request, WebSocket upgrades included.
#pragma once

#include "api/http_types.hpp"
#include "core/result.hpp"

#include <cstdint>
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

// Host, then Origin, then token (docs/api.md). Error{forbidden} for Host or Origin,
// Error{unauthorized} for a missing or wrong token; `port` is the bound TCP port.
Result<void> check_tcp_guards(const GuardHeaders& headers, std::uint16_t port,
                              std::string_view token);

// The token from `Authorization: Bearer X`, else from the cookie handler_token; empty
// when neither is there.
std::string_view presented_token(const GuardHeaders& headers);

// The status that docs/api.md pairs with each error code.
unsigned status_for(ErrorCode code);

// {"error":{"code":"...","message":"..."}} with the matching status.
Response error_response(ErrorCode code, std::string_view message);


} // namespace handler::api
