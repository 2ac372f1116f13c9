// The web page's one-time login tokens and browser sessions (api/ui_login.hpp).
#include "api/ui_login.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <set>

namespace handler::api {
namespace {

using handler::testing::FakeClock;

TEST(UiLogins, ATokenWorksOnceAndGivesASession) {
    FakeClock clock;
    UiLogins logins(clock);
    auto token = logins.issue_login_token();
    ASSERT_TRUE(token.ok()) << token.error().message;
    EXPECT_EQ(token->token.size(), 64u);
    EXPECT_EQ(token->expires_at, clock.now_ms() + UiLogins::kLoginTokenLifetimeMs);

    auto session = logins.redeem(token->token);
    ASSERT_TRUE(session.ok()) << session.error().message;
    EXPECT_EQ(session->size(), 64u);
    EXPECT_NE(*session, token->token);
    EXPECT_TRUE(logins.session_valid(*session));

    auto again = logins.redeem(token->token);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, ErrorCode::unauthorized);
    EXPECT_NE(again.error().message.find("handler ui"), std::string::npos);
    EXPECT_EQ(logins.session_count(), 1u);
}

TEST(UiLogins, AnExpiredOrUnknownTokenIsRefused) {
    FakeClock clock;
    UiLogins logins(clock);
    auto token = logins.issue_login_token();
    ASSERT_TRUE(token.ok());
    EXPECT_FALSE(logins.redeem(std::string(64, '0')).ok());
    EXPECT_FALSE(logins.redeem("").ok());
    EXPECT_FALSE(logins.redeem(token->token.substr(1)).ok());
    clock.advance(UiLogins::kLoginTokenLifetimeMs);
    EXPECT_FALSE(logins.redeem(token->token).ok());
    EXPECT_EQ(logins.login_token_count(), 0u);
}

TEST(UiLogins, ASessionEndsAtLogoutOrWhenIdleForAWeek) {
    FakeClock clock;
    UiLogins logins(clock);
    auto first = logins.redeem(logins.issue_login_token()->token);
    auto second = logins.redeem(logins.issue_login_token()->token);
    ASSERT_TRUE(first.ok() && second.ok());
    logins.end_session(*first);
    EXPECT_FALSE(logins.session_valid(*first));
    EXPECT_TRUE(logins.session_valid(*second));

    clock.advance(UiLogins::kSessionIdleMs - 1);
    EXPECT_TRUE(logins.session_valid(*second)) << "use restarts the idle time";
    clock.advance(UiLogins::kSessionIdleMs - 1);
    EXPECT_TRUE(logins.session_valid(*second));
    clock.advance(UiLogins::kSessionIdleMs);
    EXPECT_FALSE(logins.session_valid(*second));
    EXPECT_FALSE(logins.session_valid(""));
}

TEST(UiLogins, TokensAndSessionsAreBoundedOldestFirst) {
    FakeClock clock;
    UiLogins logins(clock);
    auto oldest = logins.issue_login_token();
    ASSERT_TRUE(oldest.ok());
    std::set<std::string> seen{oldest->token};
    for (std::size_t i = 0; i < UiLogins::kMaxLoginTokens; ++i) {
        clock.advance(1);
        auto token = logins.issue_login_token();
        ASSERT_TRUE(token.ok());
        EXPECT_TRUE(seen.insert(token->token).second) << "tokens are random";
    }
    EXPECT_EQ(logins.login_token_count(), UiLogins::kMaxLoginTokens);
    EXPECT_FALSE(logins.redeem(oldest->token).ok()) << "the oldest made room";

    auto first_session = logins.redeem(logins.issue_login_token()->token);
    ASSERT_TRUE(first_session.ok());
    for (std::size_t i = 0; i < UiLogins::kMaxSessions; ++i) {
        clock.advance(1);
        ASSERT_TRUE(logins.redeem(logins.issue_login_token()->token).ok());
    }
    EXPECT_EQ(logins.session_count(), UiLogins::kMaxSessions);
    EXPECT_FALSE(logins.session_valid(*first_session));
}

TEST(UiLogins, TheCookieIsHttpOnlyAndSameSiteStrict) {
    EXPECT_EQ(session_cookie_header("abc"), "handler_session=abc; HttpOnly; SameSite=Strict; Path=/");
    EXPECT_EQ(cleared_session_cookie_header(), "handler_session=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/");
}

} // namespace
} // namespace handler::api
