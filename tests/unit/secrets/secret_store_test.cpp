// Keys on disk: private files in a private folder, and a file that others could read is
// refused rather than used.
#include "secrets/secret_store.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace handler::secrets {
namespace {

using handler::testing::contains;
using handler::testing::TempDir;

TEST(SecretStore, StoresPrivatelyReadsBackAndRemoves) {
    TempDir dir;
    SecretStore store(dir / "secrets");
    EXPECT_FALSE(store.has(7));
    EXPECT_FALSE(store.get(7)->has_value());
    ASSERT_TRUE(store.put(7, "sk-ant-api03-secret").ok());
    EXPECT_TRUE(store.has(7));
    EXPECT_EQ(store.get(7)->value(), "sk-ant-api03-secret");
    struct stat info {};
    ASSERT_EQ(::stat((dir / "secrets").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((dir / "secrets/7.key").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    ASSERT_TRUE(store.put(7, "sk-ant-api03-replaced").ok());
    EXPECT_EQ(store.get(7)->value(), "sk-ant-api03-replaced");
    ASSERT_TRUE(store.remove(7).ok());
    EXPECT_FALSE(store.has(7));
}

TEST(SecretStore, AFileOthersCanReadIsRefusedWithTheFix) {
    TempDir dir;
    SecretStore store(dir / "secrets");
    ASSERT_TRUE(store.put(3, "sk-test-12345678").ok());
    ASSERT_EQ(::chmod((dir / "secrets/3.key").c_str(), 0644), 0);
    auto read = store.get(3);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().code, ErrorCode::forbidden);
    EXPECT_TRUE(contains(read.error().message, "chmod 600")) << read.error().message;
    EXPECT_FALSE(contains(read.error().message, "sk-test")) << "never the value";
}

} // namespace
} // namespace handler::secrets
