#include "settings/settings.hpp"

#include "core/paths.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace handler::settings {
namespace {

namespace fs = std::filesystem;
using handler::testing::TempDir;

std::string read(const fs::path& file) { return read_file(file).value(); }

void write(const fs::path& file, const std::string& text) {
    ASSERT_TRUE(write_file_atomic(file, text, 0600).ok());
}

// Parses `text` as if it came from /home/u/.config/handler/config.toml and returns the
// error message ("" if it parsed).
const char* const kFile = "/home/u/.config/handler/config.toml";
std::string error_of(const std::string& text) {
    auto parsed = parse(text, kFile);
    return parsed ? "" : parsed.error().message;
}

TEST(SettingsParse, EmptyCurrentFileGivesDefaults) {
    auto parsed = parse("format = 2\n", kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->format, 2);
    EXPECT_EQ(parsed->settings.daemon.log_level, LogLevel::info);
    EXPECT_TRUE(parsed->settings.api.tcp);
    EXPECT_EQ(parsed->settings.api.address, "127.0.0.1");
    EXPECT_EQ(parsed->settings.api.port, 7420);
    EXPECT_EQ(parsed->settings.api.body_limit_bytes, 1048576u);
    EXPECT_EQ(parsed->settings.api.read_timeout_ms, 30000u);
    EXPECT_TRUE(parsed->settings.plugins.disabled.empty());
    EXPECT_EQ(parsed->settings.sessions.headless_timeout_minutes, 120u);
    EXPECT_EQ(parsed->settings.sessions.limits.tmp_size_mib, 1024u);
    EXPECT_EQ(parsed->settings.sessions.limits.home_size_mib, 2048u);
    EXPECT_EQ(parsed->settings.sessions.limits.process_limit, 4096u);
    EXPECT_EQ(parsed->settings.sessions.limits.memory_limit_mib, 8192u);
    EXPECT_TRUE(parsed->explicit_keys.empty());
}

TEST(SettingsParse, ReadsEverySetting) {
    auto parsed = parse(R"(format = 2
[daemon]
log_level = "debug"
[api]
tcp = false
address = "::1"
port = 0
body_limit_bytes = 2048
read_timeout_ms = 500
[plugins]
disabled = ["codex", "pi"]
[sessions]
headless_timeout_minutes = 0
tmp_size_mib = 64
home_size_mib = 128
process_limit = 256
memory_limit_mib = 0
)",
                        kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    const Settings& s = parsed->settings;
    EXPECT_EQ(s.daemon.log_level, LogLevel::debug);
    EXPECT_FALSE(s.api.tcp);
    EXPECT_EQ(s.api.address, "::1");
    EXPECT_EQ(s.api.port, 0);
    EXPECT_EQ(s.api.body_limit_bytes, 2048u);
    EXPECT_EQ(s.api.read_timeout_ms, 500u);
    EXPECT_EQ(s.plugins.disabled, (std::vector<std::string>{"codex", "pi"}));
    EXPECT_EQ(s.sessions.headless_timeout_minutes, 0u); // never
    EXPECT_EQ(s.sessions.limits.tmp_size_mib, 64u);
    EXPECT_EQ(s.sessions.limits.home_size_mib, 128u);
    EXPECT_EQ(s.sessions.limits.process_limit, 256u);
    EXPECT_EQ(s.sessions.limits.memory_limit_mib, 0u); // none
    EXPECT_EQ(parsed->explicit_keys.size(), 12u);
}

TEST(SettingsParse, ResolveTakesNamesAndNamePortPairs) {
    auto parsed = parse("format = 2\n[network]\nresolve = { \"a.test\" = \"127.0.0.1\", "
                        "\"api.example.com:443\" = \"127.0.0.1:8443\", \"v6.test:80\" = \"[::1]:8080\" }\n",
                        kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    const auto& resolve = parsed->settings.network.resolve;
    EXPECT_EQ(resolve.at("a.test"), "127.0.0.1");
    EXPECT_EQ(resolve.at("api.example.com:443"), "127.0.0.1:8443");
    EXPECT_EQ(resolve.at("v6.test:80"), "[::1]:8080");

    for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
             {"\"a.test\" = \"127.0.0.1:80\"", "expected an IP address"},
             {"\"a.test:443\" = \"127.0.0.1\"", "expected an address and port"},
             {"\"a.test:443\" = \"name.test:80\"", "expected an address and port"},
             {"\"a.test:0\" = \"127.0.0.1:80\"", "expected a name or name:port"},
             {"\"a.test:443\" = \"::1:80\"", "expected an address and port"}}) {
        auto refused = parse("format = 2\n[network]\nresolve = { " + text + " }\n", kFile);
        ASSERT_FALSE(refused.ok()) << text;
        EXPECT_NE(refused.error().message.find(expected), std::string::npos) << refused.error().message;
    }
}

TEST(SettingsParse, AcceptsAnyAddressIn127Slash8) {
    EXPECT_EQ(error_of("format = 2\n[api]\naddress = \"127.3.2.1\"\n"), "");
}

TEST(SettingsParse, SyntaxErrorNamesFileLineAndColumn) {
    const auto message = error_of("format = 2\n[api]\nport = = 7\n");
    EXPECT_EQ(message.rfind(std::string(kFile) + ":3:", 0), 0u) << message;
    EXPECT_NE(message.find("not valid TOML"), std::string::npos) << message;
}

TEST(SettingsParse, WrongTypeNamesFileLineColumnAndKey) {
    EXPECT_EQ(error_of("format = 2\n[api]\nport = \"abc\"\n"),
              std::string(kFile) +
                  ":3:8: [api] port: expected an integer from 0 to 65535, got \"abc\"");
}

struct ErrorCase {
    const char* text;
    const char* expected; // after "FILE:"
};

class SettingsErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SettingsErrors, NameFileLineColumnAndKey) {
    const auto message = error_of(GetParam().text);
    EXPECT_EQ(message.rfind(std::string(kFile) + ":" + GetParam().expected, 0), 0u)
        << "got: " << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SettingsErrors,
    ::testing::Values(
        ErrorCase{"format = 2\n[api]\nport = 70000\n",
                  "3:8: [api] port: expected an integer from 0 to 65535, got 70000"},
        ErrorCase{"format = 2\n[api]\nport = -1\n", "3:8: [api] port: expected an integer"},
        ErrorCase{"format = 2\n[api]\nport = 1.5\n", "3:8: [api] port: expected an integer"},
        ErrorCase{"format = 2\n[api]\ntcp = \"yes\"\n",
                  "3:7: [api] tcp: expected true or false, got \"yes\""},
        ErrorCase{"format = 2\n[api]\naddress = \"0.0.0.0\"\n",
                  "3:11: [api] address: expected a loopback address (127.0.0.0/8 or ::1), got "
                  "\"0.0.0.0\""},
        ErrorCase{"format = 2\n[api]\naddress = \"localhost\"\n",
                  "3:11: [api] address: expected a loopback address"},
        ErrorCase{"format = 2\n[api]\naddress = 127\n",
                  "3:11: [api] address: expected a loopback address"},
        ErrorCase{"format = 2\n[api]\nbody_limit_bytes = 10\n",
                  "3:20: [api] body_limit_bytes: expected an integer from 1024 to 1073741824"},
        ErrorCase{"format = 2\n[api]\nread_timeout_ms = 0\n",
                  "3:19: [api] read_timeout_ms: expected an integer from 100 to 3600000"},
        ErrorCase{"format = 2\n[sessions]\nheadless_timeout_minutes = 10081\n",
                  "3:28: [sessions] headless_timeout_minutes: expected an integer from 0 to 10080"},
        ErrorCase{"format = 2\n[sessions]\ntmp_size_mib = 8\n",
                  "3:16: [sessions] tmp_size_mib: expected an integer from 16 to 1048576, got 8"},
        ErrorCase{"format = 2\n[sessions]\nhome_size_mib = \"2G\"\n",
                  "3:17: [sessions] home_size_mib: expected an integer from 16 to 1048576, got \"2G\""},
        ErrorCase{"format = 2\n[sessions]\nprocess_limit = 10\n",
                  "3:17: [sessions] process_limit: expected an integer from 64 to 4194304, got 10"},
        ErrorCase{"format = 2\n[sessions]\nmemory_limit_mib = -1\n",
                  "3:20: [sessions] memory_limit_mib: expected an integer from 0 to 16777216, got -1"},
        ErrorCase{"format = 2\n[api]\n  prot = 7420\n", "3:3: [api] prot: unknown setting"},
        ErrorCase{"format = 2\n[daemon]\nlog_level = \"loud\"\n",
                  "3:13: [daemon] log_level: expected one of \"trace\", \"debug\", \"info\", "
                  "\"warn\", \"error\", got \"loud\""},
        ErrorCase{"format = 2\n[plugins]\ndisabled = \"codex\"\n",
                  "3:12: [plugins] disabled: expected a list of plugin ids"},
        ErrorCase{"format = 2\n[plugins]\ndisabled = [\"a\", 1]\n",
                  "3:18: [plugins] disabled[1]: expected a plugin id"},
        ErrorCase{"format = 2\napi = 5\n", "2:7: [api]: expected a section (a table), got 5"},
        ErrorCase{"format = 2\n[apii]\n", "2:2: apii: unknown setting"},
        ErrorCase{"format = 2\nlog_level = \"info\"\n",
                  "2:1: log_level: this is a format 1 setting; in format 2 it is [daemon] "
                  "log_level"},
        ErrorCase{"format = \"2\"\n", "1:10: format: expected a positive integer, got \"2\""},
        ErrorCase{"format = 0\n", "1:10: format: expected a positive integer, got 0"},
        ErrorCase{"log_level = \"info\"\n[api]\nport = 1\n",
                  "2:2: [api]: this file has no `format` key, so it is read as the format 1 "
                  "layout"},
        ErrorCase{"api_port = \"x\"\n", "1:12: api_port: expected an integer from 0 to 65535"},
        ErrorCase{"api_address = \"x\"\n", "1:1: api_address: unknown setting in a format 1"}));

TEST(SettingsParse, ReportsEveryProblemInFileOrder) {
    const auto message = error_of("format = 2\n[daemon]\nlog_level = 1\n[api]\nport = \"x\"\n");
    EXPECT_EQ(message, std::string(kFile) +
                           ":3:13: [daemon] log_level: expected one of \"trace\", \"debug\", "
                           "\"info\", \"warn\", \"error\", got 1\n" +
                           kFile +
                           ":5:8: [api] port: expected an integer from 0 to 65535, got \"x\"");
}

TEST(SettingsParse, NewerFormatAsksToUpgradeHandlerd) {
    auto parsed = parse("format = 3\n[daemon]\nshiny = true\n", kFile);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().code, ErrorCode::incompatible);
    EXPECT_EQ(parsed.error().message.rfind(std::string(kFile) + ":1:10: format: this file is "
                                                                 "format 3",
                                           0),
              0u)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("Upgrade handlerd"), std::string::npos);
}

TEST(SettingsParse, Format1IsTheFlatLayout) {
    auto parsed = parse("log_level = \"warn\"\napi_port = 9000\napi_tcp = false\n", kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->format, 1);
    EXPECT_EQ(parsed->settings.daemon.log_level, LogLevel::warn);
    EXPECT_EQ(parsed->settings.api.port, 9000);
    EXPECT_FALSE(parsed->settings.api.tcp);
    // An explicit `format = 1` reads the same way.
    auto explicit_one = parse("format = 1\napi_port = 9000\n", kFile);
    ASSERT_TRUE(explicit_one.ok());
    EXPECT_EQ(explicit_one->format, 1);
}

TEST(SettingsRender, RoundTripsEveryValue) {
    Settings settings;
    settings.daemon.log_level = LogLevel::trace;
    settings.api.tcp = false;
    settings.api.address = "::1";
    settings.api.port = 1234;
    settings.api.body_limit_bytes = 4096;
    settings.api.read_timeout_ms = 1000;
    settings.plugins.disabled = {"a\"b", "c"};
    settings.sessions.headless_timeout_minutes = 30;
    settings.sessions.limits = {32, 48, 100, 512};
    const std::vector<std::string> all = {"daemon.log_level",     "api.tcp",
                                          "api.address",          "api.port",
                                          "api.body_limit_bytes", "api.read_timeout_ms",
                                          "plugins.disabled",     "sessions.headless_timeout_minutes",
                                          "sessions.tmp_size_mib", "sessions.home_size_mib",
                                          "sessions.process_limit", "sessions.memory_limit_mib"};
    auto parsed = parse(render(settings, all), kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->settings.daemon.log_level, LogLevel::trace);
    EXPECT_FALSE(parsed->settings.api.tcp);
    EXPECT_EQ(parsed->settings.api.address, "::1");
    EXPECT_EQ(parsed->settings.api.port, 1234);
    EXPECT_EQ(parsed->settings.api.body_limit_bytes, 4096u);
    EXPECT_EQ(parsed->settings.api.read_timeout_ms, 1000u);
    EXPECT_EQ(parsed->settings.plugins.disabled, settings.plugins.disabled);
    EXPECT_EQ(parsed->settings.sessions.headless_timeout_minutes, 30u);
    EXPECT_EQ(parsed->settings.sessions.limits.tmp_size_mib, 32u);
    EXPECT_EQ(parsed->settings.sessions.limits.home_size_mib, 48u);
    EXPECT_EQ(parsed->settings.sessions.limits.process_limit, 100u);
    EXPECT_EQ(parsed->settings.sessions.limits.memory_limit_mib, 512u);
}

TEST(SettingsRender, DefaultFileSetsNothingButTheFormat) {
    Settings changed;
    changed.api.port = 1;
    auto parsed = parse(render(changed, {}), kFile);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->format, kCurrentFormat);
    EXPECT_TRUE(parsed->explicit_keys.empty());
    EXPECT_EQ(parsed->settings.api.port, 7420);
}

TEST(SettingsLoad, MissingFileWritesACommentedDefaultFile) {
    TempDir dir;
    const auto file = dir / "handler/config.toml";
    auto loaded = load(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_TRUE(loaded->wrote_default);
    EXPECT_EQ(loaded->settings.api.port, 7420);
    const auto text = read(file);
    EXPECT_NE(text.find("format = 2\n"), std::string::npos);
    EXPECT_NE(text.find("# port = 7420\n"), std::string::npos);
    // And the written file loads as current, changing nothing.
    auto again = load(file);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->wrote_default);
    EXPECT_EQ(read(file), text);
}

TEST(SettingsLoad, MissingFileCanBeLeftAlone) {
    TempDir dir;
    auto loaded = load(dir / "config.toml", MissingFile::leave_alone);
    ASSERT_TRUE(loaded.ok());
    EXPECT_FALSE(loaded->wrote_default);
    EXPECT_FALSE(fs::exists(dir / "config.toml"));
}

TEST(SettingsLoad, ErrorNamesTheRealPathAndLeavesTheFileAlone) {
    TempDir dir;
    const auto file = dir / "config.toml";
    write(file, "format = 2\n[api]\nport = \"abc\"\n");
    auto loaded = load(file);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(loaded.error().message,
              file.string() + ":3:8: [api] port: expected an integer from 0 to 65535, got \"abc\"");
    EXPECT_EQ(read(file), "format = 2\n[api]\nport = \"abc\"\n");
}

TEST(SettingsLoad, ConvertsFormat1AfterBackingItUpAndIsIdempotent) {
    TempDir dir;
    const auto file = dir / "config.toml";
    const std::string original = "# mine\nlog_level = \"debug\"\napi_port = 8080\napi_tcp = false\n";
    write(file, original);
    ::chmod(file.c_str(), 0640);

    auto loaded = load(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->file_format, 1);
    ASSERT_TRUE(loaded->backup.has_value());
    EXPECT_EQ(*loaded->backup, dir / "config.toml.v1.bak");
    EXPECT_EQ(read(dir / "config.toml.v1.bak"), original);
    ASSERT_EQ(loaded->notes.size(), 1u);
    EXPECT_NE(loaded->notes[0].find("config.toml.v1.bak"), std::string::npos);
    EXPECT_EQ(loaded->settings.daemon.log_level, LogLevel::debug);
    EXPECT_EQ(loaded->settings.api.port, 8080);
    EXPECT_FALSE(loaded->settings.api.tcp);

    // The new file is format 2, holds the same values, and only those are set.
    const auto converted = read(file);
    auto reparsed = parse(converted, file);
    ASSERT_TRUE(reparsed.ok()) << reparsed.error().message;
    EXPECT_EQ(reparsed->format, 2);
    EXPECT_EQ(reparsed->settings.daemon.log_level, LogLevel::debug);
    EXPECT_EQ(reparsed->settings.api.port, 8080);
    EXPECT_FALSE(reparsed->settings.api.tcp);
    EXPECT_NE(converted.find("\nport = 8080\n"), std::string::npos);
    EXPECT_NE(converted.find("# address = \"127.0.0.1\"\n"), std::string::npos);
    struct stat info {};
    ASSERT_EQ(::stat(file.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u);
    ASSERT_EQ(::stat((dir / "config.toml.v1.bak").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u);

    // A second load changes nothing and makes no second backup.
    auto second = load(file);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->file_format, 2);
    EXPECT_FALSE(second->backup.has_value());
    EXPECT_TRUE(second->notes.empty());
    EXPECT_EQ(read(file), converted);
    EXPECT_FALSE(fs::exists(dir / "config.toml.v1.2.bak"));
}

TEST(SettingsLoad, ConversionNeverOverwritesAnEarlierBackup) {
    TempDir dir;
    const auto file = dir / "config.toml";
    write(dir / "config.toml.v1.bak", "older backup");
    write(file, "api_port = 9001\n");
    auto loaded = load(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(*loaded->backup, dir / "config.toml.v1.2.bak");
    EXPECT_EQ(read(dir / "config.toml.v1.bak"), "older backup");
    EXPECT_EQ(read(dir / "config.toml.v1.2.bak"), "api_port = 9001\n");
    EXPECT_EQ(load(file)->settings.api.port, 9001);
}

TEST(SettingsLoad, InvalidFormat1FileIsNotConverted) {
    TempDir dir;
    const auto file = dir / "config.toml";
    write(file, "api_port = \"x\"\n");
    auto loaded = load(file);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().message.rfind(file.string() + ":1:12: api_port:", 0), 0u)
        << loaded.error().message;
    EXPECT_EQ(read(file), "api_port = \"x\"\n");
    EXPECT_FALSE(fs::exists(dir / "config.toml.v1.bak"));
}

TEST(SettingsLoad, ConversionWritesThroughASymbolicLink) {
    TempDir dir;
    fs::create_directories(dir / "dotfiles");
    const auto real = dir / "dotfiles/handler.toml";
    write(real, "api_port = 9002\n");
    fs::create_symlink(real, dir / "config.toml");
    auto loaded = load(dir / "config.toml");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_TRUE(fs::is_symlink(dir / "config.toml"));
    EXPECT_NE(read(real).find("format = 2"), std::string::npos);
    EXPECT_EQ(read(dir / "config.toml.v1.bak"), "api_port = 9002\n");
}

TEST(SettingsLoad, NewerFileIsRefusedAndLeftAlone) {
    TempDir dir;
    const auto file = dir / "config.toml";
    write(file, "format = 7\n");
    auto loaded = load(file);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::incompatible);
    EXPECT_EQ(read(file), "format = 7\n");
}

} // namespace
} // namespace handler::settings
