// The API token file: made once with mode 0600, refused when others may read it.
#include "api/token.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::api {
namespace {

class ApiToken : public ::testing::Test {
protected:
    void SetUp() override {
        char pattern[] = "/tmp/handler-token-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern), nullptr);
        folder_ = pattern;
        file_ = folder_ / "api-token";
    }
    void TearDown() override { std::filesystem::remove_all(folder_); }

    std::filesystem::path folder_;
    std::filesystem::path file_;
};

TEST_F(ApiToken, IsMadeOnceWithMode0600AndThenReused) {
    auto made = load_or_create_token(file_);
    ASSERT_TRUE(made.ok()) << made.error().message;
    EXPECT_EQ(made->size(), 2 * kTokenBytes);
    EXPECT_EQ(made->find_first_not_of("0123456789abcdef"), std::string::npos);
    struct stat info {};
    ASSERT_EQ(::stat(file_.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);

    auto again = load_or_create_token(file_);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *made);
    // Nothing but the token file is left in the folder.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder_),
                            std::filesystem::directory_iterator()),
              1);
}

TEST_F(ApiToken, TwoFreshTokensDiffer) {
    auto first = load_or_create_token(file_);
    std::filesystem::remove(file_);
    auto second = load_or_create_token(file_);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_NE(*first, *second);
}

TEST_F(ApiToken, FileReadableByOthersIsRefusedWithTheFix) {
    ASSERT_TRUE(load_or_create_token(file_).ok());
    ASSERT_EQ(::chmod(file_.c_str(), 0644), 0);
    auto loaded = load_or_create_token(file_);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::forbidden);
    EXPECT_NE(loaded.error().message.find("chmod 600 " + file_.string()), std::string::npos)
        << loaded.error().message;
    EXPECT_NE(loaded.error().message.find("0644"), std::string::npos);

    ASSERT_EQ(::chmod(file_.c_str(), 0620), 0); // group-writable only is refused too
    EXPECT_FALSE(load_or_create_token(file_).ok());
}

TEST_F(ApiToken, SymbolicLinkIsRefused) {
    const auto target = folder_ / "elsewhere";
    std::ofstream(target) << std::string(64, 'a');
    ::chmod(target.c_str(), 0600);
    std::filesystem::create_symlink(target, file_);
    auto loaded = load_or_create_token(file_);
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message.find("symbolic link"), std::string::npos);
}

TEST_F(ApiToken, HandWrittenTokenWithNewlineIsAcceptedGarbageIsNot) {
    std::ofstream(file_) << std::string(40, 'Z') << "\n";
    ::chmod(file_.c_str(), 0600);
    auto loaded = load_or_create_token(file_);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(*loaded, std::string(40, 'Z'));

    std::ofstream(file_) << "short";
    EXPECT_FALSE(load_or_create_token(file_).ok());
    std::ofstream(file_) << std::string(40, 'a') << " with space";
    EXPECT_FALSE(load_or_create_token(file_).ok());
}

TEST(ApiTokenCompare, IsExact) {
    const std::string token(64, 'a');
    EXPECT_TRUE(token_equals(token, token));
    EXPECT_FALSE(token_equals(std::string(64, 'b'), token));
    EXPECT_FALSE(token_equals(token.substr(1), token));
    EXPECT_FALSE(token_equals(token + "a", token));
    EXPECT_FALSE(token_equals("", ""));
}

} // namespace
} // namespace handler::api
