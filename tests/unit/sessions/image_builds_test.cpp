#include "sessions/image_builds.hpp"

#include <gtest/gtest.h>

#include <string>

namespace handler::sessions {
namespace {

TEST(ImageBuilds, ABuildGoesFromBuildingToReadyWithItsLog) {
    ImageBuilds builds;
    const auto id = builds.started("pi", "s_000001", 100);
    EXPECT_EQ(id, 1);
    builds.line(id, "STEP 1/2: FROM localhost/handler-base:abc");
    builds.line(id, "added 12 packages");
    auto during = builds.get(id);
    EXPECT_EQ(during.state, "building");
    EXPECT_EQ(during.harness, "pi");
    EXPECT_EQ(during.session, "s_000001");
    EXPECT_EQ(during.log, "STEP 1/2: FROM localhost/handler-base:abc\nadded 12 packages\n");
    EXPECT_FALSE(during.ended_at);
    builds.ended(id, true, "localhost/handler-pi:123", "", 900);
    const auto after = builds.get(id);
    EXPECT_EQ(after.state, "ready");
    EXPECT_EQ(after.image, "localhost/handler-pi:123");
    EXPECT_EQ(after.ended_at, 900);
    EXPECT_EQ(builds.list().size(), 1u);
}

TEST(ImageBuilds, AFailedBuildKeepsWhyAndTheEndOfItsLogFromALineStart) {
    ImageBuilds builds(16, 100);
    const auto id = builds.started("codex", "s_000002", 0);
    for (int i = 0; i < 50; ++i) builds.line(id, "line " + std::to_string(i));
    builds.line(id, "npm ERR! 404 Not Found");
    builds.ended(id, false, "", "building the codex image failed: exit 1", 5);
    const auto failed = builds.get(id);
    EXPECT_EQ(failed.state, "failed");
    EXPECT_EQ(failed.message, "building the codex image failed: exit 1");
    EXPECT_TRUE(failed.log_truncated);
    EXPECT_LE(failed.log.size(), 100u);
    EXPECT_EQ(failed.log.rfind("line ", 0), 0u) << failed.log; // starts at a whole line
    EXPECT_NE(failed.log.find("npm ERR! 404 Not Found\n"), std::string::npos);
    EXPECT_EQ(failed.log.substr(failed.log.size() - 23), "npm ERR! 404 Not Found\n");
}

TEST(ImageBuilds, OnlyTheLastFinishedOnesAreKeptAndBuildsUnderWayAlways) {
    ImageBuilds builds(2);
    const auto running = builds.started("pi", "s_1", 0);
    for (int i = 0; i < 4; ++i) {
        const auto id = builds.started("codex", "s_x" + std::to_string(i), i);
        builds.ended(id, true, "img", "", i);
    }
    const auto list = builds.list();
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0].id, running);
    EXPECT_EQ(list[1].id, 4);
    EXPECT_EQ(list[2].id, 5);
    EXPECT_EQ(builds.get(2).id, 0); // dropped
    builds.line(2, "ignored: not kept");
    builds.ended(2, true, "", "", 0);
    EXPECT_EQ(builds.list().size(), 3u);
}

} // namespace
} // namespace handler::sessions
