// The one network-mode type: an agent holds none, filtered or open; a session may learn.
#include "network/network_mode.hpp"

#include <gtest/gtest.h>

namespace handler::network {
namespace {

TEST(NetworkMode, LearnIsASessionsModeNotAnAgents) {
    for (const Mode mode : {Mode::none, Mode::filtered, Mode::open, Mode::learn}) {
        EXPECT_EQ(parse_mode(to_string(mode), ModeHolder::session), mode);
        EXPECT_TRUE(may_hold(ModeHolder::session, mode));
    }
    EXPECT_FALSE(parse_mode("learn", ModeHolder::agent).has_value());
    EXPECT_FALSE(may_hold(ModeHolder::agent, Mode::learn));
    EXPECT_FALSE(may_hold(ModeHolder::session, Mode{})) << "a zero-filled mode is none of them";
    EXPECT_EQ(parse_mode("open", ModeHolder::agent), Mode::open);
    EXPECT_FALSE(parse_mode("Open").has_value());
    EXPECT_EQ(mode_names(ModeHolder::agent), (std::vector<std::string>{"none", "filtered", "open"}));
    EXPECT_EQ(mode_names(ModeHolder::session), (std::vector<std::string>{"none", "filtered", "open", "learn"}));
    EXPECT_EQ(mode_list(ModeHolder::agent), "'none', 'filtered' or 'open'");
}

} // namespace
} // namespace handler::network
