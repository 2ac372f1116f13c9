#include "sessions/turns.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

std::string prompt(const std::string& id) {
    return R"({"promptId":")" + id + R"(","content":{"type":"text","text":"hi"}})";
}

// What the turns are is what the stored events say, so following them again (after a
// restart) gives the same state.
TEST(Turns, FollowTheStoredEvents) {
    Turns turns;
    EXPECT_FALSE(turns.running());
    EXPECT_FALSE(turns.next());
    turns.observe("user_prompt", prompt("p_1"));
    EXPECT_EQ(turns.running_id(), "p_1");
    turns.observe("prompt_queued", prompt("p_2"));
    turns.observe("prompt_queued", prompt("p_3"));
    turns.observe("prompt_queued", prompt("p_3")); // once only
    ASSERT_EQ(turns.queued().size(), 2u);
    EXPECT_FALSE(turns.next()) << "a turn runs";
    turns.observe("agent_message_chunk", R"({"content":{"type":"text","text":"x"}})");
    EXPECT_EQ(turns.running_id(), "p_1");
    turns.observe("prompt_withdrawn", R"({"promptId":"p_2"})");
    EXPECT_FALSE(turns.is_queued("p_2"));
    EXPECT_TRUE(turns.is_queued("p_3"));
    turns.observe("result", R"({"stopReason":"end_turn"})");
    EXPECT_FALSE(turns.running());
    ASSERT_TRUE(turns.next());
    EXPECT_EQ(turns.next()->id, "p_3");
    EXPECT_EQ(turns.next()->payload, prompt("p_3"));
    turns.observe("user_prompt", prompt("p_3"));
    EXPECT_TRUE(turns.queued().empty());
    EXPECT_EQ(turns.running_id(), "p_3");
}

TEST(Turns, AOneShotPromptIsATurnAndOddPayloadsChangeNothingElse) {
    Turns turns;
    turns.observe("user_prompt", R"({"content":{"type":"text","text":"go"}})");
    EXPECT_TRUE(turns.running());
    EXPECT_EQ(turns.running_id(), "");
    turns.observe("prompt_queued", "not json");
    turns.observe("prompt_queued", R"({"promptId":7})");
    EXPECT_TRUE(turns.queued().empty());
    EXPECT_EQ(prompt_id_of(R"({"promptId":"p_9"})"), "p_9");
    EXPECT_EQ(prompt_id_of("[]"), "");
}

} // namespace
} // namespace handler::sessions
