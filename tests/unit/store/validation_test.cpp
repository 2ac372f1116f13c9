#include "store/validation.hpp"

#include "secrets/account_kinds.hpp"

#include <gtest/gtest.h>

namespace handler::store {
namespace {

TEST(HostPattern, AcceptsHostsWildcardsAndPortsInLowerCase) {
    EXPECT_EQ(*normalize_host_pattern("github.com", "h"), "github.com");
    EXPECT_EQ(*normalize_host_pattern("API.GitHub.com", "h"), "api.github.com");
    EXPECT_EQ(*normalize_host_pattern("*.npmjs.org", "h"), "*.npmjs.org");
    EXPECT_EQ(*normalize_host_pattern("localhost:8080", "h"), "localhost:8080");
    EXPECT_EQ(*normalize_host_pattern("*.example.com:443", "h"), "*.example.com:443");
    EXPECT_EQ(*normalize_host_pattern("10.0.0.5:11434", "h"), "10.0.0.5:11434");
    EXPECT_EQ(*normalize_host_pattern("xn--bcher-kva.example", "h"), "xn--bcher-kva.example");
    // IPv6 literals, in their canonical form (issue 15, defect 2).
    EXPECT_EQ(*normalize_host_pattern("[::1]:80", "h"), "[::1]:80");
    EXPECT_EQ(*normalize_host_pattern("FD00:0::1", "h"), "fd00::1");
}

TEST(HostPattern, RefusesEverythingElseNamingTheField) {
    for (const char* bad :
         {"", "*", "*:443", "https://github.com", "github.com/", "git hub.com", "-a.com", "a-.com",
          "a..com", ".a.com", "a.com..", "*.", "**.a.com", "a.*.com", "a.com:0", "a.com:65536",
          "a.com:", "a.com:http", "a_b.com", "xn--zz.example", "1.2.3", "0x7f.1"}) {
        auto result = normalize_host_pattern(bad, "allowed_hosts[3]");
        ASSERT_FALSE(result.ok()) << bad;
        EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
        EXPECT_EQ(result.error().message.rfind("allowed_hosts[3] '" + std::string(bad) + "'", 0),
                  0u)
            << result.error().message;
    }
    EXPECT_NE(normalize_host_pattern("*", "h").error().message.find("'open'"), std::string::npos);
}

TEST(HostPattern, LabelsOver63CharactersAreRefused) {
    EXPECT_TRUE(normalize_host_pattern(std::string(63, 'a') + ".com", "h").ok());
    EXPECT_FALSE(normalize_host_pattern(std::string(64, 'a') + ".com", "h").ok());
}

TEST(AllowedHosts, RefusesDuplicatesAfterNormalizing) {
    auto result = normalize_allowed_hosts({"github.com", "GitHub.com"});
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().message, "allowed_hosts[1] 'GitHub.com' is listed twice");
}

TEST(AllowedHosts, RefusesTooManyEntries) {
    std::vector<std::string> hosts;
    for (std::size_t i = 0; i <= kMaxAllowedHosts; ++i) hosts.push_back("h" + std::to_string(i) + ".com");
    EXPECT_FALSE(normalize_allowed_hosts(hosts).ok());
    hosts.pop_back();
    EXPECT_TRUE(normalize_allowed_hosts(hosts).ok());
}

TEST(Names, ContextNames) {
    for (const char* good : {"Work", "Client A", "acme-2.0_x", "9"}) EXPECT_TRUE(check_context_name(good).ok()) << good;
    for (const char* bad : {"", " Work", "Work ", "Wörk", "a/b", "tab\there"})
        EXPECT_FALSE(check_context_name(bad).ok()) << bad;
    EXPECT_FALSE(check_context_name(std::string(65, 'a')).ok());
    EXPECT_TRUE(check_context_name(std::string(64, 'a')).ok());
}

TEST(Names, AgentAndAccountNames) {
    for (const char* good : {"reviewer", "claude-perso", "A.1_b", "0day"}) {
        EXPECT_TRUE(check_agent_name(good).ok()) << good;
        EXPECT_TRUE(check_account_name(good).ok()) << good;
    }
    for (const char* bad : {"", "-x", ".x", "has space", "ünï", "a/b"}) {
        EXPECT_FALSE(check_agent_name(bad).ok()) << bad;
        EXPECT_FALSE(check_account_name(bad).ok()) << bad;
    }
    EXPECT_EQ(check_agent_name("has space").error().message,
              "agent name 'has space' is not valid: use 1 to 64 letters, digits, '.', '_' or "
              "'-', starting with a letter or digit");
}

TEST(Names, ProjectNamesAllowFolderNamesButNoControlCharacters) {
    EXPECT_TRUE(check_project_name("my project (old)").ok());
    EXPECT_TRUE(check_project_name("Bücher").ok());
    EXPECT_FALSE(check_project_name("").ok());
    EXPECT_FALSE(check_project_name("a\nb").ok());
    EXPECT_FALSE(check_project_name("\xff\xfe").ok());
    EXPECT_FALSE(check_project_name(std::string(129, 'a')).ok());
}

TEST(Values, AccountKindsAndHarnessIds) {
    EXPECT_TRUE(check_account_kind("claude-subscription").ok());
    auto bad = check_account_kind("aws");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("anthropic-api-key"), std::string::npos);
    EXPECT_TRUE(check_harness("claude-code").ok());
    EXPECT_FALSE(check_harness("Claude").ok());
    EXPECT_FALSE(check_harness("").ok());
}

TEST(Values, ProjectPathsMustBeAbsoluteAndCanonical) {
    EXPECT_TRUE(check_project_path("/home/u/src/app").ok());
    for (const char* bad : {"", "relative", "/", "/a/", "/a//b", "/a/./b", "/a/../b", "/a/.",
                            "/a/..", "/a\nb"})
        EXPECT_FALSE(check_project_path(bad).ok()) << bad;
}

TEST(Values, TextLimits) {
    EXPECT_TRUE(check_text("goal", std::string(kMaxGoalBytes, 'x'), kMaxGoalBytes).ok());
    auto long_goal = check_text("goal", std::string(kMaxGoalBytes + 1, 'x'), kMaxGoalBytes);
    ASSERT_FALSE(long_goal.ok());
    EXPECT_EQ(long_goal.error().message.rfind("goal is 4097 bytes long", 0), 0u);
    EXPECT_FALSE(check_text("goal", std::string("a\0b", 3), 10).ok());
}

TEST(BaseUrl, NormalizesSchemeHostPortAndTrailingSlash) {
    const std::pair<const char*, const char*> cases[] = {
        {"http://127.0.0.1:11434", "http://127.0.0.1:11434"},
        {"HTTP://LocalHost:8080/", "http://localhost:8080"},
        {"https://GPU.Example.com/v1/", "https://gpu.example.com/v1"},
        {"http://gpu.example.com/Models//", "http://gpu.example.com/Models"},
        {"http://[::1]:11434", "http://[::1]:11434"},
        {"http://[0:0:0:0:0:0:0:1]/", "http://[::1]"},
        {"http://[FE80::1]", "http://[fe80::1]"},
        {"http://host:08080", "http://host:8080"},
        {"http://host:65535/a%20b", "http://host:65535/a%20b"},
    };
    for (const auto& [given, expected] : cases) {
        auto normalized = normalize_base_url(given);
        ASSERT_TRUE(normalized.ok()) << given << ": " << normalized.error().message;
        EXPECT_EQ(*normalized, expected) << given;
    }
}

TEST(BaseUrl, RefusesWhatIsNotAServerAddressSayingWhy) {
    const std::pair<const char*, const char*> cases[] = {
        {"", "it does not start with http:// or https://"},
        {"127.0.0.1:11434", "it does not start with http:// or https://"},
        {"localhost:11434", "it does not start with http:// or https://"},
        {"ftp://host", "the scheme must be http or https, not 'ftp'"},
        {"ws://host", "the scheme must be http or https"},
        {"http:host", "it has no host"},
        {"http://", "it has no host"},
        {"http:///path", "it has no host"},
        {"http://user:pw@host", "user:password@"},
        {"http://@host", "user:password@"},
        {"http://host/?x=1", "it has a query"},
        {"http://host?", "it has a query"},
        {"http://host/#top", "it has a fragment"},
        {"http://host:0", "the port must be a number from 1 to 65535"},
        {"http://host:65536", "the port must be a number from 1 to 65535"},
        {"http://host:", "the port must be a number from 1 to 65535"},
        {"http://ho_st", "is not a host name"},
        {"http://-host", "is not a host name"},
        {"http://a..b", "is not a host name"},
        {"http://h%41st", "is not a host name"},
        {"http://xn--zz.example", "not valid IDNA"}, // an A-label that is none
        {"http://300.1.1.1", "is not a valid IPv4 address"},
        {"http://[v1.x]", "IPv6"},
        {"http://host name", "not a well-formed URL"},
        {" http://host", "not a well-formed URL"},
    };
    for (const auto& [given, why] : cases) {
        auto result = normalize_base_url(given);
        ASSERT_FALSE(result.ok()) << given;
        EXPECT_EQ(result.error().code, ErrorCode::invalid_argument);
        const auto& message = result.error().message;
        EXPECT_EQ(message.rfind("base_url '" + std::string(given) + "' is not valid: ", 0), 0u)
            << message;
        EXPECT_NE(message.find(why), std::string::npos) << given << ": " << message;
        EXPECT_NE(message.find("like 'http://127.0.0.1:11434'"), std::string::npos) << message;
    }
}

TEST(BaseUrl, AtMost2048Bytes) {
    const std::string prefix = "http://host/";
    EXPECT_TRUE(normalize_base_url(prefix + std::string(kMaxBaseUrlBytes - prefix.size(), 'a')).ok());
    auto long_url = normalize_base_url(prefix + std::string(kMaxBaseUrlBytes + 1 - prefix.size(), 'a'));
    ASSERT_FALSE(long_url.ok());
    EXPECT_EQ(long_url.error().message, "base_url is 2049 bytes long; at most 2048 are allowed");
}

TEST(BaseUrl, OnlyLocalKindsHaveOneAndTheyGetTheirDefault) {
    EXPECT_TRUE(secrets::is_local_server("ollama"));
    EXPECT_TRUE(secrets::is_local_server("llama-cpp"));
    EXPECT_FALSE(secrets::is_local_server("anthropic-api-key"));
    for (const auto& row : secrets::account_kinds()) {
        const std::string_view kind = row.kind;
        if (secrets::is_local_server(kind)) continue;
        EXPECT_EQ(*account_base_url(kind, std::nullopt), std::nullopt) << kind;
        auto refused = account_base_url(kind, std::string("http://127.0.0.1:1"));
        ASSERT_FALSE(refused.ok()) << kind;
        EXPECT_EQ(refused.error().message,
                  "base_url is only for llama-cpp and ollama accounts; " + std::string(kind) +
                      " accounts have none");
    }
    EXPECT_EQ(*account_base_url("ollama", std::nullopt), "http://127.0.0.1:11434");
    EXPECT_EQ(*account_base_url("llama-cpp", std::nullopt), "http://127.0.0.1:8080");
    EXPECT_EQ(*account_base_url("ollama", std::string("http://Box:1/")), "http://box:1");
    EXPECT_FALSE(account_base_url("ollama", std::string("box:1")).ok());
}

} // namespace
} // namespace handler::store
