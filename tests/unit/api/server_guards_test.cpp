// The TCP guard rules on their own, without sockets (docs/api.md, "TCP guards").
#include "api/server_guards.hpp"

#include <gtest/gtest.h>

#include <string>

namespace handler::api {
namespace {

const std::string kToken(64, 'a');
constexpr std::uint16_t kPort = 7420;
// The API token only: no page cookie is taken.
const TcpCredentials kCredentials{kToken, {}};

GuardHeaders with_bearer(std::string_view host, std::string_view authorization) {
    GuardHeaders headers;
    headers.hosts = {host};
    headers.authorizations = {authorization};
    return headers;
}

TEST(ApiGuards, LoopbackHostsWithTheRightPortPass) {
    const std::string authorization = "Bearer " + kToken;
    for (std::string_view host :
         {"127.0.0.1:7420", "localhost:7420", "LocalHost:7420", "[::1]:7420"})
        EXPECT_TRUE(check_tcp_guards(with_bearer(host, authorization), kPort, kCredentials).ok()) << host;
}

TEST(ApiGuards, OtherHostsAreForbidden) {
    const std::string authorization = "Bearer " + kToken;
    for (std::string_view host :
         {"evil.example:7420", "127.0.0.1", "127.0.0.1:7421", "localhost:74200", "127.0.0.2:7420",
          "localhost.evil.example:7420", ""}) {
        auto result = check_tcp_guards(with_bearer(host, authorization), kPort, kCredentials);
        ASSERT_FALSE(result.ok()) << host;
        EXPECT_EQ(result.error().code, ErrorCode::forbidden) << host;
    }
}

TEST(ApiGuards, TwoHostHeadersAreForbidden) {
    const std::string authorization = "Bearer " + kToken;
    GuardHeaders headers = with_bearer("127.0.0.1:7420", authorization);
    headers.hosts.push_back("evil.example:7420");
    auto result = check_tcp_guards(headers, kPort, kCredentials);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ErrorCode::forbidden);
}

TEST(ApiGuards, OriginMustBeHandlerdItself) {
    const std::string authorization = "Bearer " + kToken;
    GuardHeaders headers = with_bearer("127.0.0.1:7420", authorization);
    for (std::string_view origin :
         {"http://127.0.0.1:7420", "http://localhost:7420", "http://[::1]:7420"}) {
        headers.origins = {origin};
        EXPECT_TRUE(check_tcp_guards(headers, kPort, kCredentials).ok()) << origin;
    }
    for (std::string_view origin :
         {"http://evil.example", "https://127.0.0.1:7420", "null", "http://127.0.0.1:7421",
          "http://localhost:7420.evil.example"}) {
        headers.origins = {origin};
        auto result = check_tcp_guards(headers, kPort, kCredentials);
        ASSERT_FALSE(result.ok()) << origin;
        EXPECT_EQ(result.error().code, ErrorCode::forbidden) << origin;
    }
}

TEST(ApiGuards, OrderIsHostThenOriginThenToken) {
    GuardHeaders headers;
    headers.hosts = {"evil.example:7420"};
    headers.origins = {"http://evil.example"};
    auto result = check_tcp_guards(headers, kPort, kCredentials);
    EXPECT_NE(result.error().message.find("Host"), std::string::npos);
    headers.hosts = {"127.0.0.1:7420"};
    result = check_tcp_guards(headers, kPort, kCredentials);
    EXPECT_NE(result.error().message.find("Origin"), std::string::npos);
    headers.origins.clear();
    result = check_tcp_guards(headers, kPort, kCredentials);
    EXPECT_EQ(result.error().code, ErrorCode::unauthorized);
}

TEST(ApiGuards, TokenFromBearerOnly) {
    GuardHeaders headers;
    headers.hosts = {"127.0.0.1:7420"};
    EXPECT_EQ(check_tcp_guards(headers, kPort, kCredentials).error().code, ErrorCode::unauthorized);

    const std::string lower_scheme = "bearer " + kToken;
    headers.authorizations = {lower_scheme};
    EXPECT_TRUE(check_tcp_guards(headers, kPort, kCredentials).ok());

    headers.authorizations = {"Basic dXNlcjpwYXNz"};
    EXPECT_EQ(check_tcp_guards(headers, kPort, kCredentials).error().code, ErrorCode::unauthorized);

    // The raw API token as a cookie is no longer a credential: the page never holds it.
    const std::string cookie = "a=1; handler_token=" + kToken + "; b=2";
    headers.authorizations.clear();
    headers.cookies = {cookie};
    EXPECT_EQ(check_tcp_guards(headers, kPort, kCredentials).error().code, ErrorCode::unauthorized);
}

TcpCredentials with_session(std::string_view live) {
    return {kToken, [live](std::string_view session) { return session == live; }};
}

TEST(ApiGuards, ALiveSessionCookiePassesAndAnyOtherIsUnauthorized) {
    GuardHeaders headers;
    headers.hosts = {"127.0.0.1:7420"};
    const std::string live = "a=1; handler_session=live-one; b=2";
    headers.cookies = {live};
    EXPECT_TRUE(check_tcp_guards(headers, kPort, with_session("live-one")).ok());

    const std::string ended = "handler_session=ended-one";
    headers.cookies = {ended};
    auto refused = check_tcp_guards(headers, kPort, with_session("live-one"));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::unauthorized);
    EXPECT_NE(refused.error().message.find("handler ui"), std::string::npos) << refused.error().message;

    const std::string lookalike = "xhandler_session=live-one";
    headers.cookies = {lookalike};
    EXPECT_FALSE(check_tcp_guards(headers, kPort, with_session("live-one")).ok());

    // No session checker (a server without the page's logins): no cookie is taken.
    headers.cookies = {live};
    EXPECT_FALSE(check_tcp_guards(headers, kPort, kCredentials).ok());
}

TEST(ApiGuards, AWrongTokenIsRefusedEvenWithALiveSession) {
    const std::string wrong = "Bearer " + std::string(64, 'b');
    GuardHeaders headers = with_bearer("127.0.0.1:7420", wrong);
    const std::string live = "handler_session=live-one";
    headers.cookies = {live};
    EXPECT_EQ(check_tcp_guards(headers, kPort, with_session("live-one")).error().code,
              ErrorCode::unauthorized);
}

TEST(ApiGuards, OpenRoutesAreThePageFilesAndTheLoginOnly) {
    EXPECT_TRUE(is_open_route("GET", "/"));
    EXPECT_TRUE(is_open_route("GET", "/app.js"));
    EXPECT_TRUE(is_open_route("GET", "/index.html"));
    EXPECT_TRUE(is_open_route("POST", "/api/v1/ui/login"));
    EXPECT_FALSE(is_open_route("POST", "/"));
    EXPECT_FALSE(is_open_route("GET", "/api/v1/status"));
    EXPECT_FALSE(is_open_route("GET", "/api/v1/ui/login"));
    EXPECT_FALSE(is_open_route("POST", "/api/v1/ui/login-tokens"));
    EXPECT_FALSE(is_open_route("POST", "/api/v1/ui/logout"));
    EXPECT_FALSE(is_open_route("GET", "/api/v1/events"));
}

TEST(ApiGuards, AnOpenRouteStillHasItsHostAndOriginChecked) {
    GuardHeaders headers;
    headers.hosts = {"evil.example:7420"};
    EXPECT_EQ(check_tcp_guards(headers, kPort, kCredentials, true).error().code, ErrorCode::forbidden);
    headers.hosts = {"127.0.0.1:7420"};
    headers.origins = {"http://evil.example"};
    EXPECT_EQ(check_tcp_guards(headers, kPort, kCredentials, true).error().code, ErrorCode::forbidden);
    headers.origins = {"http://127.0.0.1:7420"};
    EXPECT_TRUE(check_tcp_guards(headers, kPort, kCredentials, true).ok());
}

TEST(ApiGuards, WrongOrTruncatedTokenIsUnauthorized) {
    for (const std::string& token : {std::string(64, 'b'), std::string(63, 'a'), kToken + "a"}) {
        const std::string authorization = "Bearer " + token;
        auto result = check_tcp_guards(with_bearer("127.0.0.1:7420", authorization), kPort, kCredentials);
        ASSERT_FALSE(result.ok());
        EXPECT_EQ(result.error().code, ErrorCode::unauthorized);
        EXPECT_EQ(result.error().message.find(token), std::string::npos) << "never echo a token";
    }
}

TEST(ApiGuards, ErrorResponseIsTheDocumentedJson) {
    const Response response = error_response(ErrorCode::too_large, "body \"x\" is\nbig");
    EXPECT_EQ(response.status, 413u);
    EXPECT_EQ(response.content_type, "application/json");
    EXPECT_EQ(response.body,
              R"({"error":{"code":"too_large","message":"body \"x\" is\nbig"}})");
    EXPECT_EQ(status_for(ErrorCode::unauthorized), 401u);
    EXPECT_EQ(status_for(ErrorCode::incompatible), 422u);
    EXPECT_EQ(error_response(ErrorCode::internal, std::string_view("\x01", 1)).body,
              R"({"error":{"code":"internal","message":"\u0001"}})");
}

} // namespace
} // namespace handler::api
