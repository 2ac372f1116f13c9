#include "core/paths.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace handler {
namespace {

GetEnv fake_env(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const char* name) -> const char* {
        auto it = values.find(name);
        return it == values.end() ? nullptr : it->second.c_str();
    };
}

TEST(Paths, UsesXdgVariablesWhenSet) {
    auto paths = Paths::from_environment(
        fake_env({{"HOME", "/home/a"}, {"XDG_CONFIG_HOME", "/c"}, {"XDG_DATA_HOME", "/d"},
                  {"XDG_RUNTIME_DIR", "/r"}}),
        1000);
    ASSERT_TRUE(paths.ok());
    EXPECT_EQ(paths->config_file(), "/c/handler/config.toml");
    EXPECT_EQ(paths->database_file(), "/d/handler/handler.db");
    EXPECT_EQ(paths->socket_file(), "/r/handler/handlerd.sock");
}

TEST(Paths, FallsBackToHomeAndIgnoresRelativeXdgValues) {
    auto paths = Paths::from_environment(
        fake_env({{"HOME", "/home/a"}, {"XDG_CONFIG_HOME", "relative"}}), 4242424);
    ASSERT_TRUE(paths.ok());
    EXPECT_EQ(paths->config_dir, "/home/a/.config/handler");
    EXPECT_EQ(paths->data_dir, "/home/a/.local/share/handler");
    EXPECT_EQ(paths->runtime_dir, "/tmp/handler-runtime-4242424/handler");
}

TEST(Paths, RefusesWithoutHome) {
    auto paths = Paths::from_environment(fake_env({}), 1000);
    ASSERT_FALSE(paths.ok());
    EXPECT_NE(paths.error().message.find("HOME"), std::string::npos);
}

TEST(Paths, PrivateDirGetsMode0700AndAtomicWriteMode0600) {
    testing::TempDir temp;
    const std::filesystem::path& root = temp.path();
    ASSERT_TRUE(ensure_private_dir(root / "a" / "b").ok());
    struct stat info {};
    ASSERT_EQ(::stat((root / "a" / "b").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);

    ASSERT_TRUE(write_file_atomic(root / "secret", "x", 0600).ok());
    ASSERT_EQ(::stat((root / "secret").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    EXPECT_EQ(*read_file(root / "secret"), "x");
}

TEST(Paths, PrivateDirRefusesASymlink) {
    testing::TempDir temp;
    const std::filesystem::path& root = temp.path();
    std::filesystem::create_directory(root / "real");
    std::filesystem::create_directory_symlink(root / "real", root / "link");
    auto result = ensure_private_dir(root / "link");
    EXPECT_FALSE(result.ok());
}

} // namespace
} // namespace handler
