#include "sessions/network_change.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

using namespace std::chrono_literals;
constexpr std::int64_t kNow = 1'700'000'000'000;

store::Session running(store::SessionState state = store::SessionState::running) {
    store::Session session;
    session.id = "s_1a2b3c";
    session.state = state;
    return session;
}

TEST(NetworkChangeTest, StricterModesClearTheLearningWindow) {
    for (const auto* mode : {"filtered", "none"}) {
        auto session = running();
        session.network_mode = network::Mode::learn;
        session.learn_until = kNow + 1000;
        auto changes = plan_network_change(session, {mode, std::nullopt}, kNow, 15min);
        ASSERT_TRUE(changes.ok()) << changes.error().message;
        ASSERT_TRUE(changes->network_mode.has_value());
        EXPECT_EQ(*changes->network_mode, network::parse_mode(mode));
        ASSERT_TRUE(changes->learn_until.has_value());
        EXPECT_FALSE(changes->learn_until->has_value()) << mode;
    }
}

TEST(NetworkChangeTest, LearnLastsTheWindowOrTheMinutesGiven) {
    auto standard = plan_network_change(running(), {"learn", std::nullopt}, kNow, 15min);
    ASSERT_TRUE(standard.ok()) << standard.error().message;
    EXPECT_EQ(**standard->network_mode, network::Mode::learn);
    EXPECT_EQ(**standard->learn_until, kNow + 15 * 60 * 1000);
    auto five = plan_network_change(running(store::SessionState::starting), {"learn", 5}, kNow, 15min);
    ASSERT_TRUE(five.ok()) << five.error().message;
    EXPECT_EQ(**five->learn_until, kNow + 5 * 60 * 1000);
    EXPECT_TRUE(plan_network_change(running(), {"learn", kMaxLearnMinutes}, kNow, 15min).ok());
}

TEST(NetworkChangeTest, OpenUnknownModesAndBadMinutesAreRefusedWithWhy) {
    const struct {
        const char* mode;
        std::optional<std::int64_t> minutes;
        const char* says;
    } cases[] = {
        {"open", std::nullopt, "cannot be made open"},
        {"Open", std::nullopt, "is not one of"},
        {"wide", std::nullopt, "is not one of 'none', 'filtered', 'open' or 'learn'"},
        {"", std::nullopt, "is not one of"},
        {"learn", 0, "from 1 to 120"},
        {"learn", -5, "from 1 to 120"},
        {"learn", kMaxLearnMinutes + 1, "from 1 to 120"},
        {"filtered", 5, "for mode learn only"},
    };
    for (const auto& c : cases) {
        auto changes = plan_network_change(running(), {c.mode, c.minutes}, kNow, 15min);
        ASSERT_FALSE(changes.ok()) << c.mode;
        EXPECT_EQ(changes.error().code, ErrorCode::invalid_argument) << c.mode;
        EXPECT_NE(changes.error().message.find(c.says), std::string::npos) << changes.error().message;
    }
}

TEST(NetworkChangeTest, OnlyALiveSessionChanges) {
    for (const auto state : {store::SessionState::exited, store::SessionState::failed, store::SessionState::lost}) {
        auto changes = plan_network_change(running(state), {"filtered", std::nullopt}, kNow, 15min);
        ASSERT_FALSE(changes.ok());
        EXPECT_EQ(changes.error().code, ErrorCode::conflict);
        EXPECT_NE(changes.error().message.find("only while it runs"), std::string::npos) << changes.error().message;
    }
}

} // namespace
} // namespace handler::sessions
