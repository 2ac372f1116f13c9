// A session's output log: offsets across rotations and reopening, skipped (lost) output,
// and the tail a late client is replayed from.
#include "sessions/output_log.hpp"

#include "core/paths.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace handler::sessions {
namespace {

using handler::testing::TempDir;

TEST(OutputLog, AppendsPrivatelyAndReopensAtTheSameEnd) {
    TempDir dir;
    {
        auto log = OutputLog::open(dir / "s_1", 1024);
        ASSERT_TRUE(log.ok()) << log.error().message;
        ASSERT_TRUE(log->append("hello ").ok());
        ASSERT_TRUE(log->append("world").ok());
        EXPECT_EQ(log->end(), 11u);
    }
    struct stat info {};
    ASSERT_EQ(::stat((dir / "s_1/output.log").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    auto again = OutputLog::open(dir / "s_1", 1024);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->end(), 11u);
    EXPECT_EQ(*again->read_all(), "hello world");
    auto tail = again->tail(5);
    ASSERT_TRUE(tail.ok());
    EXPECT_EQ(tail->first, 6u);
    EXPECT_EQ(tail->second, "world");
}

TEST(OutputLog, RotatesAtTheLimitKeepingOneOlderPartAndTheOffsets) {
    TempDir dir;
    auto log = OutputLog::open(dir / "s_2", 10);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(log->append("0123456789").ok());
    ASSERT_TRUE(log->append("abcdef").ok()); // over the limit: rotates first
    ASSERT_TRUE(log->append("ghij").ok());
    ASSERT_TRUE(log->append("KLMNO").ok()); // rotates again; 0123456789 is dropped
    EXPECT_EQ(log->end(), 25u);
    EXPECT_EQ(log->oldest(), 10u);
    EXPECT_EQ(*log->read_all(), "abcdefghijKLMNO");
    auto tail = log->tail(100);
    EXPECT_EQ(tail->first, 20u);
    EXPECT_EQ(tail->second, "KLMNO");

    auto reopened = OutputLog::open(dir / "s_2", 10);
    ASSERT_TRUE(reopened.ok());
    EXPECT_EQ(reopened->end(), 25u);
    EXPECT_EQ(reopened->oldest(), 10u);
}

TEST(OutputLog, SkippedOutputMovesTheEndAndSurvivesReopening) {
    TempDir dir;
    auto log = OutputLog::open(dir / "s_3", 1024);
    ASSERT_TRUE(log->append("abc").ok());
    ASSERT_TRUE(log->skip(100).ok());
    ASSERT_TRUE(log->append("xyz").ok());
    EXPECT_EQ(log->end(), 106u);
    auto reopened = OutputLog::open(dir / "s_3", 1024);
    EXPECT_EQ(reopened->end(), 106u);
}

TEST(OutputLog, ACorruptBaseFileIsAnErrorNotAGuess) {
    TempDir dir;
    ASSERT_TRUE(ensure_private_dir(dir / "s_4").ok());
    ASSERT_TRUE(write_file_atomic(dir / "s_4/output.base", "twelve\n", 0600).ok());
    auto log = OutputLog::open(dir / "s_4", 1024);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.error().message.find("output.base"), std::string::npos);
}

} // namespace
} // namespace handler::sessions
