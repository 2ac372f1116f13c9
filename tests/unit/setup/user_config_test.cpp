#include "setup/user_config.hpp"

#include "core/paths.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::setup {
namespace {
using testing::contains;
using testing::TempDir;

std::string text_of(const std::filesystem::path& file) { return read_file(file).value(); }

TEST(SetupUserConfig, CreatesAMissingFileAndItsFolders) {
    TempDir dir;
    const auto file = dir / "config/containers/containers.conf";
    auto change = set_toml_string(file, "engine", "runtime", "runc");
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_TRUE(change->changed);
    EXPECT_TRUE(change->backup.empty());
    EXPECT_EQ(change->what, "[engine] runtime = \"runc\"");
    EXPECT_EQ(text_of(file), "[engine]\nruntime = \"runc\"\n");
}

TEST(SetupUserConfig, KeepsTheUsersSettingsAndCommentsAndBacksUpTheOriginal) {
    TempDir dir;
    const std::string original = "# my podman settings\n"
                                 "[containers]\n"
                                 "log_size_max = 1000000 # keep logs small\n"
                                 "\n"
                                 "[engine]\n"
                                 "# which runtime\n"
                                 "runtime = \"crun\"\n"
                                 "events_logger = \"file\"\n";
    const auto file = dir.write("containers.conf", original);
    auto change = set_toml_string(file, "engine", "runtime", "runc");
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_TRUE(change->changed);
    EXPECT_EQ(change->backup, dir / "containers.conf.bak");
    EXPECT_EQ(text_of(change->backup), original);
    EXPECT_EQ(text_of(file), "# my podman settings\n"
                             "[containers]\n"
                             "log_size_max = 1000000 # keep logs small\n"
                             "\n"
                             "[engine]\n"
                             "# which runtime\n"
                             "runtime = \"runc\"\n"
                             "events_logger = \"file\"\n");
}

TEST(SetupUserConfig, AddsTheKeyUnderAnExistingTableOrAppendsTheTable) {
    TempDir dir;
    auto file = dir.write("a.conf", "[storage]\nrunroot = \"/r\"\n[storage.options]\nsize = \"\"\n");
    ASSERT_TRUE(set_toml_string(file, "storage", "driver", "overlay"));
    EXPECT_EQ(text_of(file),
              "[storage]\ndriver = \"overlay\"\nrunroot = \"/r\"\n[storage.options]\nsize = \"\"\n");

    file = dir.write("b.conf", "[network]\nnetwork_backend = \"netavark\"");
    ASSERT_TRUE(set_toml_string(file, "engine", "runtime", "runc"));
    EXPECT_EQ(text_of(file),
              "[network]\nnetwork_backend = \"netavark\"\n\n[engine]\nruntime = \"runc\"\n");
}

TEST(SetupUserConfig, RunningTwiceChangesNothingTheSecondTime) {
    TempDir dir;
    const auto file = dir.write("storage.conf", "[storage]\ndriver = \"vfs\"\n");
    ASSERT_TRUE(set_toml_string(file, "storage", "driver", "overlay"));
    const std::string once = text_of(file);
    auto again = set_toml_string(file, "storage", "driver", "overlay");
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->changed);
    EXPECT_EQ(text_of(file), once);
    // The backup still holds the user's original, not our first result.
    EXPECT_EQ(text_of(dir / "storage.conf.bak"), "[storage]\ndriver = \"vfs\"\n");
}

TEST(SetupUserConfig, UnparsableFileIsLeftUntouchedAndTheErrorSaysWhere) {
    TempDir dir;
    const std::string broken = "[engine\nruntime = crun\n";
    const auto file = dir.write("containers.conf", broken);
    auto change = set_toml_string(file, "engine", "runtime", "runc");
    ASSERT_FALSE(change);
    EXPECT_TRUE(contains(change.error().message, file.string() + ":1:")) << change.error().message;
    EXPECT_TRUE(contains(change.error().message, "left unchanged"));
    EXPECT_EQ(text_of(file), broken);
    EXPECT_FALSE(std::filesystem::exists(dir / "containers.conf.bak"));
}

TEST(SetupUserConfig, UnusualLayoutFallsBackToAFullRewriteThatKeepsTheValues) {
    TempDir dir;
    // An inline table: no "[engine]" line to edit under.
    const auto file = dir.write("containers.conf",
                                "engine = { runtime = \"crun\", events_logger = \"file\" }\n");
    ASSERT_TRUE(set_toml_string(file, "engine", "runtime", "runc"));
    const std::string text = text_of(file);
    EXPECT_TRUE(contains(text, "runtime = 'runc'") || contains(text, "runtime = \"runc\""))
        << text;
    EXPECT_TRUE(contains(text, "events_logger")) << text;
    EXPECT_FALSE(contains(text, "crun")) << text;
}

TEST(SetupUserConfig, TextFileWriterBacksUpADifferentFileAndSkipsAnEqualOne) {
    TempDir dir;
    const auto file = dir / "systemd/user/handlerd.service";
    auto first = write_text_file(file, "new\n", "unit");
    ASSERT_TRUE(first);
    EXPECT_TRUE(first->changed);
    auto same = write_text_file(file, "new\n", "unit");
    ASSERT_TRUE(same);
    EXPECT_FALSE(same->changed);
    dir.write("systemd/user/handlerd.service", "mine\n");
    auto replaced = write_text_file(file, "new\n", "unit");
    ASSERT_TRUE(replaced);
    EXPECT_EQ(text_of(replaced->backup), "mine\n");
    EXPECT_EQ(text_of(file), "new\n");
}

} // namespace
} // namespace handler::setup
