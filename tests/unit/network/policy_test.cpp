// The egress decisions: by name before resolution, by address after, in every mode, and
// the tricks an agent would try (numeric host names, wildcards onto loopback, IPv4
// hidden in IPv6, trailing dots, case).
#include "network/policy.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::network {
// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace policy_test {
namespace {

using handler::testing::contains;

HostRule rule(std::string_view text) {
    auto parsed = parse_rule(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed ? "" : parsed.error().message);
    return parsed ? *parsed : HostRule{};
}

Target target(std::string_view host, std::uint16_t port = 443) {
    auto parsed = parse_target(host, port);
    EXPECT_TRUE(parsed.ok()) << host << ": " << (parsed ? "" : parsed.error().message);
    return parsed ? *parsed : Target{};
}

Policy policy(Mode mode) {
    Policy p;
    p.mode = mode;
    p.agent = "reviewer";
    p.model_hosts = {rule("api.anthropic.com")};
    p.allow = {rule("github.com"), rule("*.npmjs.org:443"), rule("10.0.0.5"), rule("[fd00::7]:8443")};
    return p;
}

Address address(std::string_view text) {
    auto parsed = parse_address(text);
    EXPECT_TRUE(parsed.has_value()) << text;
    return parsed.value_or(Address{});
}

TEST(NetworkPolicy, NoneAllowsOnlyTheModelHosts) {
    const auto p = policy(Mode::none);
    EXPECT_EQ(decide(p, target("api.anthropic.com"), 0).verdict, Verdict::allow);
    auto refused = decide(p, target("github.com"), 0);
    EXPECT_EQ(refused.verdict, Verdict::deny);
    EXPECT_TRUE(contains(refused.reason, "github.com:443")) << refused.reason;
    EXPECT_TRUE(contains(refused.reason, "handler network allow reviewer github.com")) << refused.reason;
}

TEST(NetworkPolicy, FilteredMatchesExactNamesWildcardsPortsAndIps) {
    const auto p = policy(Mode::filtered);
    EXPECT_EQ(decide(p, target("github.com"), 0).rule, "github.com");
    EXPECT_EQ(decide(p, target("GitHub.COM."), 0).verdict, Verdict::allow) << "case and the root dot";
    EXPECT_EQ(decide(p, target("api.github.com"), 0).verdict, Verdict::deny) << "exact is exact";
    EXPECT_EQ(decide(p, target("registry.npmjs.org"), 0).rule, "*.npmjs.org:443");
    EXPECT_EQ(decide(p, target("a.b.npmjs.org"), 0).verdict, Verdict::allow);
    EXPECT_EQ(decide(p, target("npmjs.org"), 0).verdict, Verdict::deny) << "a wildcard is subdomains";
    EXPECT_EQ(decide(p, target("evilnpmjs.org"), 0).verdict, Verdict::deny);
    EXPECT_EQ(decide(p, target("registry.npmjs.org", 80), 0).verdict, Verdict::deny) << "port-bound";
    EXPECT_EQ(decide(p, target("10.0.0.5", 5432), 0).verdict, Verdict::allow);
    EXPECT_EQ(decide(p, target("10.0.0.6"), 0).verdict, Verdict::deny);
    EXPECT_EQ(decide(p, target("[FD00:0::7]", 8443), 0).verdict, Verdict::allow) << "v6, any spelling";
    EXPECT_EQ(decide(p, target("[fd00::7]", 443), 0).verdict, Verdict::deny);
}

TEST(NetworkPolicy, OpenAllowsNamesButNotSpecialAddressesWithoutAnExactRule) {
    const auto p = policy(Mode::open);
    auto anywhere = decide(p, target("example.org"), 0);
    EXPECT_EQ(anywhere.verdict, Verdict::allow);
    EXPECT_EQ(check_address(anywhere, target("example.org"), address("93.184.216.34"), {}), std::nullopt);
    // A public-looking name that resolves to loopback (DNS rebinding, 127.0.0.1.nip.io).
    auto rebound = check_address(anywhere, target("127.0.0.1.nip.io"), address("127.0.0.1"), {});
    ASSERT_TRUE(rebound.has_value());
    EXPECT_TRUE(contains(*rebound, "127.0.0.1")) << *rebound;
    // The same through an allowed wildcard: still refused.
    auto via_wildcard = decide(p, target("x.npmjs.org"), 0);
    EXPECT_TRUE(check_address(via_wildcard, target("x.npmjs.org"), address("10.1.1.1"), {}).has_value());
    // An exact rule for the private address licenses it.
    auto exact = decide(p, target("10.0.0.5", 5432), 0);
    EXPECT_EQ(check_address(exact, target("10.0.0.5", 5432), address("10.0.0.5"), {}), std::nullopt);
    // The same rule asked for by an addon does not: only the user opens their network.
    auto from_addon = policy(Mode::filtered);
    from_addon.allow.clear();
    auto addon_rule = *parse_rule("10.0.0.5");
    addon_rule.from_plugin = true;
    from_addon.allow.push_back(addon_rule);
    const auto asked = decide(from_addon, target("10.0.0.5", 5432), 0);
    EXPECT_EQ(asked.verdict, Verdict::allow);
    auto refused = check_address(asked, target("10.0.0.5", 5432), address("10.0.0.5"), {});
    ASSERT_TRUE(refused.has_value());
    EXPECT_TRUE(contains(*refused, "not an addon's")) << *refused;
    // The machine's own public address is special too.
    const std::vector<Address> own = {address("203.0.113.9")};
    EXPECT_TRUE(check_address(anywhere, target("me.example"), address("203.0.113.9"), own).has_value());
}

TEST(NetworkPolicy, LearnModeLetsThroughUntilItEndsThenFilters) {
    auto p = policy(Mode::learn);
    p.learn_until_ms = 1000;
    auto learning = decide(p, target("pypi.org"), 999);
    EXPECT_EQ(learning.verdict, Verdict::learned);
    EXPECT_EQ(decide(p, target("github.com"), 999).verdict, Verdict::allow) << "listed hosts are plain allows";
    auto ended = decide(p, target("pypi.org"), 1000);
    EXPECT_EQ(ended.verdict, Verdict::deny);
    EXPECT_TRUE(contains(ended.reason, "learning has ended")) << ended.reason;
}

TEST(NetworkPolicy, SpecialAddressesIncludeTheDisguisedOnes) {
    for (const char* special : {"127.0.0.1", "127.255.0.1", "0.0.0.0", "10.2.3.4", "172.16.0.1",
                                "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                                "224.0.0.1", "255.255.255.255", "::1", "::", "::ffff:127.0.0.1",
                                "::ffff:10.0.0.1", "::127.0.0.1", "fe80::1", "fd12::1", "fc00::1",
                                "ff02::1", "64:ff9b::7f00:1", "2002:7f00:1::1"})
        EXPECT_TRUE(is_special(address(special))) << special;
    for (const char* normal : {"93.184.216.34", "172.32.0.1", "100.128.0.1", "8.8.8.8",
                               "2606:4700::1111", "::ffff:8.8.8.8"})
        EXPECT_FALSE(is_special(address(normal))) << normal;
}

TEST(NetworkPolicy, HostsAResolverWouldReadAsNumbersAreRefused) {
    for (const char* tricky : {"2130706433", "0x7f.1", "127.1", "0177.0.0.1", "1.2.3", "", "a..b",
                               "-bad.com", "exa mple.com", "ex%41mple.com", "[::1%lo]", "xn--zz.com",
                               "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1"}) // fullwidth digits: a number still
        EXPECT_FALSE(parse_target(tricky, 443).ok()) << tricky;
    EXPECT_FALSE(parse_target("example.com", 0).ok());
    EXPECT_TRUE(parse_target("1password.com", 443).ok()) << "digits first are fine";
    EXPECT_TRUE(parse_target("[::1]", 443)->ip);
}

// An IPv4 target keeps the text it was given (parse_target does not write it again), so
// that text must be the address's one form: what inet_ntop writes, which a rule for the
// address compares equal to. Every other spelling is refused, never kept as given.
TEST(NetworkPolicy, AnIpv4TargetIsInTheFormItsAddressWritesAndNoOther) {
    for (const char* text : {"127.0.0.1", "0.0.0.0", "8.8.8.8", "10.20.30.40", "255.255.255.255", "[1.2.3.4]"}) {
        const auto parsed = parse_target(text, 443);
        ASSERT_TRUE(parsed.ok()) << text;
        EXPECT_TRUE(parsed->ip);
        EXPECT_EQ(parsed->host, to_string(*parse_address(parsed->host))) << text;
    }
    EXPECT_EQ(parse_target("[1.2.3.4]", 443)->host, "1.2.3.4");
    for (const char* other : {"127.000.0.1", "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.4.5", " 1.2.3.4", "1.2.3.4 "})
        EXPECT_FALSE(parse_target(other, 443).ok()) << other;
    EXPECT_EQ(parse_target("[0:0::FFFF:7F00:1]", 443)->host, "::ffff:127.0.0.1") << "IPv6 is written again";
}

TEST(NetworkPolicy, RulesAreParsedOrRefusedWithTheReason) {
    auto r = rule("*.Example.com:8443");
    EXPECT_TRUE(r.wildcard);
    EXPECT_EQ(r.host, "example.com");
    EXPECT_EQ(r.port, 8443);
    EXPECT_TRUE(rule("[::1]:8080").ip);
    for (const char* bad : {"*", "*.", "host:0", "host:99999", "[::1", "a b", "2130706433"}) {
        auto parsed = parse_rule(bad);
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_TRUE(contains(parsed.error().message, bad)) << parsed.error().message;
    }
}

TEST(NetworkPolicy, ModesRoundTrip) {
    for (Mode mode : {Mode::none, Mode::filtered, Mode::open, Mode::learn})
        EXPECT_EQ(parse_mode(to_string(mode)), mode);
    EXPECT_FALSE(parse_mode("closed").has_value());
}

} // namespace
} // namespace policy_test
} // namespace handler::network
