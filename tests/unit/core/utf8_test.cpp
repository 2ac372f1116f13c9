#include "core/utf8.hpp"

#include <gtest/gtest.h>

namespace handler {
namespace {

TEST(Utf8, WellFormedSequencesAreValid) {
    EXPECT_TRUE(is_valid_utf8(""));
    EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"));
    EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);
    EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
}

TEST(Utf8, StrayCutOverlongAndSurrogateBytesAreNot) {
    for (const std::string_view bad : {"\xff", "\x80", "\xc3", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"})
        EXPECT_FALSE(is_valid_utf8(bad)) << ::testing::PrintToString(std::string(bad));
}

TEST(Utf8, EachBadByteBecomesOneReplacementCharacter) {
    EXPECT_EQ(with_valid_utf8("caf\xc3\xa9"), "caf\xc3\xa9");
    EXPECT_EQ(with_valid_utf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
    EXPECT_EQ(with_valid_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
    EXPECT_TRUE(is_valid_utf8(with_valid_utf8("\xc0\xaf\xed\xa0\x80 ok")));
}

} // namespace
} // namespace handler
