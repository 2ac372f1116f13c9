// The one host:port reader: what CONNECT, rules and [network] resolve accept.
#include "network/authority.hpp"

#include "network/policy.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::network {
namespace {

using handler::testing::contains;

TEST(Authority, SplitsHostAndPortWithoutBrackets) {
    auto name = parse_authority("Upstream.test:8443", PortPresence::required);
    ASSERT_TRUE(name.ok());
    EXPECT_EQ(name->host, "Upstream.test");
    EXPECT_EQ(name->port, 8443);
    EXPECT_FALSE(name->ipv6 || name->ipv4);
    auto v6 = parse_authority("[fd00::1]:443", PortPresence::required);
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->host, "fd00::1");
    EXPECT_TRUE(v6->ipv6);
    auto v4 = parse_authority("10.0.0.5:08080", PortPresence::required);
    ASSERT_TRUE(v4.ok());
    EXPECT_TRUE(v4->ipv4);
    EXPECT_EQ(v4->port, 8080);
    auto bare = parse_authority("fd00::1", PortPresence::optional);
    ASSERT_TRUE(bare.ok());
    EXPECT_TRUE(bare->ipv6);
    EXPECT_EQ(bare->port, 0);
    EXPECT_EQ(parse_authority("github.com", PortPresence::optional)->port, 0);
}

TEST(Authority, RefusesWhatIsNotHostPort) {
    const std::pair<const char*, const char*> cases[] = {
        {"upstream.test", "host:port"},     {"upstream.test:99999", "1 to 65535"},
        {"upstream.test:0", "1 to 65535"},  {"upstream.test:", "1 to 65535"},
        {"upstream.test:000443", "1 to 65535"}, {"upstream.test:+443", ""},
        {"fd00::1:443", "brackets"},        {"[::1", ""},
        {"[::1]x:1", ""},                   {"user@upstream.test:1", "user"},
        {"[v1.x]:1", "IPv6"},               {"a b:1", ""},
    };
    for (const auto& [text, expected] : cases) {
        auto parsed = parse_authority(text, PortPresence::required);
        ASSERT_FALSE(parsed.ok()) << text;
        EXPECT_TRUE(contains(parsed.error().message, expected)) << text << ": " << parsed.error().message;
    }
    EXPECT_FALSE(parse_port("65536").has_value());
    EXPECT_EQ(parse_port("00001"), 1);
}

TEST(Authority, EndpointsOfResolveAreReadWithIt) {
    EXPECT_EQ(parse_endpoint("127.0.0.1:8443", false)->port, 8443);
    EXPECT_EQ(parse_endpoint("[::1]:8443", false)->host, "::1");
    EXPECT_EQ(parse_endpoint("api.example.test:443", true)->host, "api.example.test");
    for (const char* bad : {"api.example.test:443", "::1:8443", "127.0.0.1", "[127.0.0.1]:1", "2130706433:1"})
        EXPECT_FALSE(parse_endpoint(bad, false).has_value()) << bad;
    EXPECT_FALSE(parse_endpoint("2130706433:1", true).has_value());
    EXPECT_FALSE(parse_endpoint("a.test:70000", true).has_value());
}

} // namespace
} // namespace handler::network
