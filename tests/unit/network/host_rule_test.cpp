// The one host-rule grammar: every rule the store accepts is a rule the policy decides
// with (issue 15, defect 2: "1.2.3" was stored and then silently dropped), IPv6 literals
// can be written, and what was refused before still is.
#include "network/host_rule.hpp"

#include "network/policy.hpp"
#include "store/validation.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::network {
// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace host_rule_test {
namespace {

using handler::testing::contains;

Target target(std::string_view host, std::uint16_t port) {
    auto parsed = parse_target(host, port);
    EXPECT_TRUE(parsed.ok()) << host;
    return parsed ? *parsed : Target{};
}

TEST(HostRule, EveryRuleTheStoreAcceptsDecidesInThePolicy) {
    const struct {
        std::string_view text;      // as a user types it
        std::string_view stored;    // what the store keeps
        std::string_view reaches;   // a host:port it allows
        std::uint16_t reaches_port;
        std::string_view misses;    // one it does not
        std::uint16_t misses_port;
    } cases[] = {
        {"github.com", "github.com", "github.com", 443, "api.github.com", 443},
        {"API.GitHub.com", "api.github.com", "api.github.com", 443, "github.com", 443},
        {"*.npmjs.org", "*.npmjs.org", "registry.npmjs.org", 443, "npmjs.org", 443},
        {"*.example.com:443", "*.example.com:443", "a.b.example.com", 443, "a.example.com", 80},
        {"localhost:08080", "localhost:8080", "localhost", 8080, "localhost", 8081},
        {"10.0.0.5", "10.0.0.5", "10.0.0.5", 22, "10.0.0.6", 22},
        {"10.0.0.5:11434", "10.0.0.5:11434", "10.0.0.5", 11434, "10.0.0.5", 443},
        {"fd00::1", "fd00::1", "[fd00::1]", 443, "[fd00::2]", 443},
        {"FD00:0:0::1", "fd00::1", "[fd00::1]", 80, "10.0.0.5", 80},
        {"[fd00::1]:443", "[fd00::1]:443", "[fd00::1]", 443, "[fd00::1]", 80},
        {"[::1]:80", "[::1]:80", "[::1]", 80, "127.0.0.1", 80},
        {"xn--bcher-kva.example", "xn--bcher-kva.example", "xn--bcher-kva.example", 443, "example", 443},
        {"1password.com", "1password.com", "1password.com", 443, "password.com", 443},
        // The canonical form: the root's dot goes, Unicode becomes A-labels (and a CONNECT
        // in either form reaches the rule), what is ASCII is never put through IDNA.
        {"github.com.", "github.com", "github.com", 443, "github.co", 443},
        {"Bücher.Example", "xn--bcher-kva.example", "xn--bcher-kva.example", 443, "bucher.example", 443},
        {"*.bücher.example", "*.xn--bcher-kva.example", "a.bücher.example", 443, "xn--bcher-kva.example", 443},
        {"XN--BCHER-KVA.example:8443", "xn--bcher-kva.example:8443", "BÜCHER.example", 8443, "bücher.example", 443},
        {"r3---sn-4g5e6nsz.googlevideo.com", "r3---sn-4g5e6nsz.googlevideo.com", "r3---sn-4g5e6nsz.googlevideo.com.",
         443, "r3--sn-4g5e6nsz.googlevideo.com", 443},
    };
    for (const auto& c : cases) {
        auto stored = store::normalize_host_pattern(c.text, "allowed_hosts[0]");
        ASSERT_TRUE(stored.ok()) << c.text << ": " << stored.error().message;
        EXPECT_EQ(*stored, c.stored) << c.text;
        auto rule = parse_rule(*stored);
        ASSERT_TRUE(rule.ok()) << *stored << ": " << rule.error().message;
        EXPECT_EQ(rule->text, *stored) << "the stored form reads back as itself";
        Policy policy;
        policy.mode = Mode::filtered;
        policy.allow = {*rule};
        const auto allowed = decide(policy, target(c.reaches, c.reaches_port), 0);
        EXPECT_EQ(allowed.verdict, Verdict::allow) << c.text << " should allow " << c.reaches;
        EXPECT_EQ(allowed.rule, *stored);
        EXPECT_EQ(decide(policy, target(c.misses, c.misses_port), 0).verdict, Verdict::deny)
            << c.text << " should not allow " << c.misses << ":" << c.misses_port;
    }
}

TEST(HostRule, WhatEitherGrammarRefusedBeforeIsRefusedByBoth) {
    for (const char* bad :
         {// the store's refusals
          "", "*", "*:443", "https://github.com", "github.com/", "git hub.com", "-a.com", "a-.com", "a..com",
          ".a.com", "a.com..", "*.", "**.a.com", "a.*.com", "a.com:0", "a.com:65536", "a.com:", "a.com:http",
          "a_b.com", "a.com:000080",
          // labels IDNA refuses: not punycode, not an A-label of anything, not allowed
          "xn--zz.example", "xn--abc", "xn--.example", "\xe2\x80\x8b.example", "ex\xc3.com",
          // the policy's: names a resolver reads as numbers, and malformed literals
          "2130706433", "0x7f.1", "127.1", "0177.0.0.1", "1.2.3", "*.1.2.3", "a.0x1f", "host:99999", "[::1",
          "[::1]x", "[::1]:", "[::1%25lo]", "fe80::1%lo", "[10.0.0.1]:80", "[v1.x]:80", "a:b:c", "user@host",
          "ex%41mple.com"}) {
        auto stored = store::normalize_host_pattern(bad, "allowed_hosts[3]");
        ASSERT_FALSE(stored.ok()) << bad;
        EXPECT_EQ(stored.error().code, ErrorCode::invalid_argument);
        EXPECT_EQ(stored.error().message.rfind("allowed_hosts[3] '" + std::string(bad) + "' is not a host pattern", 0),
                  0u)
            << stored.error().message;
        EXPECT_FALSE(parse_rule(bad).ok()) << bad;
    }
    EXPECT_TRUE(contains(parse_rule("*").error().message, "'open'"));
    EXPECT_TRUE(contains(parse_rule("1.2.3").error().message, "read as a number"));
    EXPECT_TRUE(contains(parse_rule("a.com:0").error().message, "1 to 65535"));
    EXPECT_TRUE(contains(parse_rule("xn--zz.example").error().message, "not valid IDNA"))
        << parse_rule("xn--zz.example").error().message;
}

// One form for the policy, the SNI and Host checks and the leaf: every spelling of a name
// comes out the same, and each refusal says why without quoting what was given.
TEST(HostRule, CanonicalNamesAreLowerCaseWithoutTheRootDotInALabels) {
    const std::pair<std::string_view, std::string_view> same[] = {
        {"API.Example.COM", "api.example.com"},
        {"api.example.com.", "api.example.com"},
        {"bücher.example", "xn--bcher-kva.example"},
        {"BÜCHER.example.", "xn--bcher-kva.example"},
        {"xn--BCHER-kva.Example", "xn--bcher-kva.example"},
        {"stra\xc3\x9f" "e.de", "xn--strae-oqa.de"}, // UTS #46 non-transitional: ß stays ß
        {"\xef\xbd\x85xample.com", "example.com"},   // fullwidth e, mapped as browsers map it
        {"a_b.example", "a_b.example"},
    };
    for (const auto& [given, canonical] : same) {
        auto name = canonical_name(given, Underscores::allowed);
        ASSERT_TRUE(name.ok()) << given << ": " << name.error().message;
        EXPECT_EQ(*name, canonical) << given;
    }
    EXPECT_FALSE(canonical_name("a_b.example", Underscores::refused).ok());
    const std::string_view refused[] = {"", ".", "a..b", "a.b..", "-a.com", "xn--zz.example", "1.2.3", "\xef\xbc\x91.1",
                                       std::string_view("a\0b.com", 7), "exa mple.com"};
    for (const std::string_view bad : refused) {
        auto name = canonical_name(bad, Underscores::allowed);
        ASSERT_FALSE(name.ok()) << bad;
        if (bad.size() > 3) {
            EXPECT_FALSE(contains(name.error().message, std::string(bad)))
                << "the refusal quotes the name: " << name.error().message;
        }
    }
}

TEST(HostRule, RequestNamesMayCarryUnderscoresButRulesMayNot) {
    EXPECT_TRUE(is_host_name("a_b.example", Underscores::allowed));
    EXPECT_FALSE(is_host_name("a_b.example", Underscores::refused));
    EXPECT_FALSE(is_host_name(std::string(64, 'a') + ".com", Underscores::allowed));
    EXPECT_TRUE(is_host_name(std::string(63, 'a') + ".com", Underscores::refused));
    EXPECT_FALSE(is_host_name("a.123", Underscores::allowed));
}

} // namespace
} // namespace host_rule_test
} // namespace handler::network
