// The shim's command line: defaults, both value spellings, and a clear refusal for each
// kind of mistake.
#include "options.hpp"

#include <gtest/gtest.h>

namespace handler::shim {
namespace {

ParseResult parse(std::vector<std::string_view> args) { return parse_options(args); }

TEST(ShimOptions, MinimalCommandLineGetsDefaults) {
    auto result = parse({"--connect", "/run/s.sock", "--", "sh", "-c", "echo hi"});
    ASSERT_TRUE(result.ok()) << result.error;
    const auto& options = result.options;
    EXPECT_EQ(options.socket_path, "/run/s.sock");
    EXPECT_FALSE(options.tty);
    EXPECT_EQ(options.rows, 24);
    EXPECT_EQ(options.cols, 80);
    EXPECT_EQ(options.ring_bytes, 1024u * 1024u);
    EXPECT_EQ(options.exit_grace_ms, 30'000u);
    EXPECT_TRUE(options.workdir.empty());
    EXPECT_EQ(options.proxy_port, 0) << "no egress bridge unless asked for";
    EXPECT_TRUE(options.proxy_socket.empty());
    EXPECT_EQ(options.command, (std::vector<std::string>{"sh", "-c", "echo hi"}));
}

TEST(ShimOptions, EveryOptionInBothSpellings) {
    auto result = parse({"--tty", "--connect=/s", "--rows", "50", "--cols=132",
                         "--ring-bytes", "4096", "--exit-grace-ms=0", "--workdir", "/w",
                         "--", "prog", "--rows", "--"});
    ASSERT_TRUE(result.ok()) << result.error;
    const auto& options = result.options;
    EXPECT_TRUE(options.tty);
    EXPECT_EQ(options.socket_path, "/s");
    EXPECT_EQ(options.rows, 50);
    EXPECT_EQ(options.cols, 132);
    EXPECT_EQ(options.ring_bytes, 4096u);
    EXPECT_EQ(options.exit_grace_ms, 0u);
    EXPECT_EQ(options.workdir, "/w");
    // Everything after the first "--" belongs to the program, options included.
    EXPECT_EQ(options.command, (std::vector<std::string>{"prog", "--rows", "--"}));
}

TEST(ShimOptions, HelpIsNotAnError) {
    auto result = parse({"--help"});
    EXPECT_TRUE(result.help);
    EXPECT_TRUE(result.error.empty());
    EXPECT_FALSE(result.ok());
}

void expect_refused(std::vector<std::string_view> args, std::string_view mention) {
    auto result = parse(args);
    EXPECT_FALSE(result.ok());
    EXPECT_NE(result.error.find(mention), std::string::npos)
        << "error was: " << result.error << "; expected it to mention: " << mention;
}

TEST(ShimOptions, RefusesMistakesNamingTheProblem) {
    expect_refused({}, "--connect");
    expect_refused({"--", "sh"}, "--connect");
    expect_refused({"--connect", "/s"}, "no program");
    expect_refused({"--connect", "/s", "--"}, "no program");
    expect_refused({"--connect", "/s", "--", ""}, "empty");
    expect_refused({"--connect", "/s", "sh"}, "unexpected argument 'sh'");
    expect_refused({"--connect", "/s", "--bogus", "--", "sh"}, "unknown option '--bogus'");
    expect_refused({"--connect", "/s", "--bogus=1", "--", "sh"}, "unknown option '--bogus'");
    expect_refused({"--connect"}, "'--connect' needs a value");
    expect_refused({"--connect=", "--", "sh"}, "socket path");
    expect_refused({"--connect", "/s", "--rows"}, "'--rows' needs a value");
    expect_refused({"--connect", "/s", "--rows", "abc", "--", "sh"}, "got 'abc'");
    expect_refused({"--connect", "/s", "--rows", "0", "--", "sh"}, "from 1 to 65535");
    expect_refused({"--connect", "/s", "--cols", "65536", "--", "sh"}, "'--cols'");
    expect_refused({"--connect", "/s", "--cols", "-5", "--", "sh"}, "got '-5'");
    expect_refused({"--connect", "/s", "--rows", "12x", "--", "sh"}, "got '12x'");
    expect_refused({"--connect", "/s", "--rows", "", "--", "sh"}, "got ''");
    expect_refused({"--connect", "/s", "--ring-bytes", "0", "--", "sh"}, "'--ring-bytes'");
    expect_refused({"--connect", "/s", "--ring-bytes", "99999999999999999999999", "--", "sh"},
                   "'--ring-bytes'");
    expect_refused({"--connect", "/s", "--workdir=", "--", "sh"}, "directory");
}

TEST(ShimOptions, RefusesASocketPathTooLongForSunPath) {
    const std::string fits(107, 'a');
    EXPECT_TRUE(parse({"--connect", fits, "--", "sh"}).ok());
    const std::string too_long(108, 'a');
    expect_refused({"--connect", too_long, "--", "sh"}, "longer than 107 bytes");
}

TEST(ShimOptions, EgressBridgeTakesAPortAndAnAbsoluteSocketPath) {
    auto result = parse({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket",
                         "/run/handler/proxy.sock", "--", "sh"});
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.options.proxy_port, 3128);
    EXPECT_EQ(result.options.proxy_socket, "/run/handler/proxy.sock");

    result = parse({"--proxy-socket=/p", "--connect", "/s", "--proxy-port=65535", "--", "sh"});
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.options.proxy_port, 65535);
    EXPECT_EQ(result.options.proxy_socket, "/p");

    result = parse({"--connect", "/s", "--proxy-port", "1", "--proxy-socket", "/p", "--", "sh"});
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.options.proxy_port, 1);
}

TEST(ShimOptions, EgressBridgeRefusesHalfOrBadSettings) {
    // One without the other.
    expect_refused({"--connect", "/s", "--proxy-port", "3128", "--", "sh"}, "go together");
    expect_refused({"--connect", "/s", "--proxy-socket", "/p", "--", "sh"}, "go together");
    // The port.
    expect_refused({"--connect", "/s", "--proxy-port", "0", "--proxy-socket", "/p", "--", "sh"},
                   "'--proxy-port' wants a whole number from 1 to 65535, got '0'");
    expect_refused({"--connect", "/s", "--proxy-port", "65536", "--proxy-socket", "/p", "--",
                    "sh"},
                   "got '65536'");
    expect_refused({"--connect", "/s", "--proxy-port", "http", "--proxy-socket", "/p", "--", "sh"},
                   "got 'http'");
    expect_refused({"--connect", "/s", "--proxy-port=", "--proxy-socket", "/p", "--", "sh"},
                   "got ''");
    expect_refused({"--connect", "/s", "--proxy-port"}, "'--proxy-port' needs a value");
    // The socket path.
    expect_refused({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket", "proxy.sock",
                    "--", "sh"},
                   "absolute socket path, got 'proxy.sock'");
    expect_refused({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket=", "--", "sh"},
                   "absolute socket path");
    expect_refused({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket"},
                   "'--proxy-socket' needs a value");
    const std::string fits = "/" + std::string(106, 'a');
    EXPECT_TRUE(parse({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket", fits, "--",
                       "sh"})
                    .ok());
    const std::string too_long = "/" + std::string(107, 'a');
    expect_refused({"--connect", "/s", "--proxy-port", "3128", "--proxy-socket", too_long, "--",
                    "sh"},
                   "longer than 107 bytes");
}

} // namespace
} // namespace handler::shim
