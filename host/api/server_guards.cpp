#include "api/server_guards.hpp"

#include "core/text.hpp"
#include "api/token.hpp"
#include "api/ui_login.hpp"
#include "core/utf8.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstdio>

namespace handler::api {

namespace {

using text::iequals;
using text::trim;

// Shown in an error message: cut long values and anything that is not printable ASCII,
// so a hostile header cannot fill a log or forge lines in it.
std::string printable(std::string_view text) {
    constexpr std::size_t kMaximumShown = 80;
    std::string shown;
    for (const char c : text.substr(0, kMaximumShown))
        shown.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    if (text.size() > kMaximumShown) shown += "...";
    return shown;
}

std::string_view cookie_value(std::string_view header, std::string_view name) {
    while (!header.empty()) {
        const std::size_t end = header.find(';');
        const std::string_view pair = trim(header.substr(0, end));
        header = end == std::string_view::npos ? std::string_view{} : header.substr(end + 1);
        const std::size_t equals = pair.find('=');
        if (equals == std::string_view::npos || trim(pair.substr(0, equals)) != name) continue;
        std::string_view value = trim(pair.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        return value;
    }
    return {};
}

constexpr std::string_view kTokenHint =
    "send `Authorization: Bearer TOKEN` with the token from $XDG_DATA_HOME/handler/api-token; "
    "the web page logs in through `handler ui`";

} // namespace

std::string_view presented_token(const GuardHeaders& headers) {
    if (!headers.authorizations.empty()) {
        const std::string_view value = trim(headers.authorizations.front());
        constexpr std::string_view kScheme = "Bearer ";
        if (value.size() > kScheme.size() && iequals(value.substr(0, kScheme.size()), kScheme))
            return trim(value.substr(kScheme.size()));
    }
    return {};
}

std::string_view presented_session(const GuardHeaders& headers) {
    for (const std::string_view header : headers.cookies)
        if (auto value = cookie_value(header, kSessionCookie); !value.empty()) return value;
    return {};
}

bool is_open_route(std::string_view method, std::string_view path) {
    if (method == "GET") return !path.starts_with("/api/");
    return method == "POST" && path == "/api/v1/ui/login";
}

Result<void> check_tcp_guards(const GuardHeaders& headers, std::uint16_t port,
                              const TcpCredentials& credentials, bool open) {
    const std::string suffix = ":" + std::to_string(port);

    // Host first: a page on evil.example that rebinds its name to 127.0.0.1 still sends
    // "Host: evil.example:PORT", so this refuses it before anything else is looked at.
    if (headers.hosts.size() != 1)
        return make_error(ErrorCode::forbidden,
                          "a request over TCP needs exactly one Host header, got " +
                              std::to_string(headers.hosts.size()));
    const std::string_view host = headers.hosts.front();
    bool host_ok = false;
    for (const std::string_view name : {"127.0.0.1", "localhost", "[::1]"})
        host_ok = host_ok || iequals(host, std::string(name) + suffix);
    if (!host_ok)
        return make_error(ErrorCode::forbidden,
                          "Host header \"" + printable(host) +
                              "\" is not handlerd's loopback address; call it as 127.0.0.1" +
                              suffix + ", localhost" + suffix + " or [::1]" + suffix);

    // Origin second: a browser names the page that makes the request, and only pages
    // handlerd serves itself may call it.
    if (headers.origins.size() > 1)
        return make_error(ErrorCode::forbidden, "more than one Origin header");
    if (!headers.origins.empty()) {
        const std::string_view origin = headers.origins.front();
        bool origin_ok = false;
        for (const std::string_view name : {"http://127.0.0.1", "http://localhost", "http://[::1]"})
            origin_ok = origin_ok || iequals(origin, std::string(name) + suffix);
        if (!origin_ok)
            return make_error(ErrorCode::forbidden,
                              "Origin \"" + printable(origin) +
                                  "\" may not call handlerd; only pages served from http://"
                                  "127.0.0.1" + suffix + ", http://localhost" + suffix +
                                  " or http://[::1]" + suffix + " may");
    }

    if (open) return {};
    if (headers.authorizations.size() > 1)
        return make_error(ErrorCode::unauthorized, "more than one Authorization header");
    // A token that is given must be right, whatever cookie comes with it.
    if (const std::string_view presented = presented_token(headers); !presented.empty()) {
        if (token_equals(presented, credentials.token)) return {};
        return make_error(ErrorCode::unauthorized,
                          "wrong API token: " + std::string(kTokenHint) +
                              " (it changes only if that file is deleted)");
    }
    if (const std::string_view session = presented_session(headers); !session.empty()) {
        if (credentials.session_valid && credentials.session_valid(session)) return {};
        return make_error(ErrorCode::unauthorized,
                          "the page's login has ended (handlerd restarted, you logged out, or "
                          "it was unused for a week): run `handler ui` in a terminal to open "
                          "the page again");
    }
    return make_error(ErrorCode::unauthorized, "not logged in: " + std::string(kTokenHint));
}

unsigned status_for(ErrorCode code) {
    switch (code) {
    case ErrorCode::invalid_argument: return 400;
    case ErrorCode::unauthorized: return 401;
    case ErrorCode::forbidden: return 403;
    case ErrorCode::not_found: return 404;
    case ErrorCode::conflict: return 409;
    case ErrorCode::too_large: return 413;
    case ErrorCode::incompatible: return 422;
    case ErrorCode::unavailable: return 503;
    case ErrorCode::internal: return 500;
    }
    return 500;
}

Response error_response(ErrorCode code, std::string_view message) {
    Response response;
    response.status = status_for(code);
    // A message may quote what a client sent (its target, a decoded query parameter),
    // which need not be UTF-8; Boost.JSON writes a string's bytes as they are.
    response.body = boost::json::serialize(boost::json::object{
        {"error", {{"code", to_string(code)}, {"message", with_valid_utf8(message)}}}});
    return response;
}

} // namespace handler::api
