// The account kinds table, provider bindings and stand-ins: the shape a harness checks is
// kept, the value is not.
#include "secrets/account_kinds.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <set>

namespace handler::secrets {
namespace {

using handler::testing::contains;

TEST(SecretProviders, EachKeyKindIsBoundToItsOwnHostsAndHeader) {
    const auto* anthropic = provider_for("anthropic-api-key");
    ASSERT_NE(anthropic, nullptr);
    EXPECT_EQ(anthropic->hosts, std::vector<std::string_view>{"api.anthropic.com"});
    EXPECT_EQ(anthropic->header, "x-api-key");
    const auto* openai = provider_for("openai-api-key");
    ASSERT_NE(openai, nullptr);
    EXPECT_EQ(openai->header, "authorization");
    EXPECT_EQ(openai->value_prefix, "Bearer ");
    EXPECT_EQ(provider_for("chatgpt-login"), nullptr) << "a login file has nothing to swap";
    EXPECT_EQ(provider_for("ollama"), nullptr);
}

TEST(AccountKinds, EachRowHoldsWhatItsKindNeedsAndNamesAreUnique) {
    std::set<std::string_view> kinds;
    std::set<std::string_view> short_names;
    for (const auto& row : account_kinds()) {
        EXPECT_TRUE(kinds.insert(row.kind).second) << row.kind;
        if (!row.short_name.empty()) {
            EXPECT_TRUE(short_names.insert(row.short_name).second) << row.short_name;
        }
        EXPECT_FALSE(row.label.empty()) << row.kind;
        EXPECT_EQ(find_account_kind(row.kind), &row);
        EXPECT_EQ(row.holds == Holds::key, !row.hosts.empty() && !row.header.empty()) << row.kind;
        EXPECT_EQ(row.holds == Holds::local_server, !row.default_base_url.empty()) << row.kind;
        EXPECT_EQ(provider_for(row.kind) != nullptr, row.holds == Holds::key) << row.kind;
    }
    EXPECT_EQ(kinds.size(), 9u);
    EXPECT_EQ(find_account_kind("aws"), nullptr);
}

TEST(AccountKinds, ShortNamesPickTheKindTheCliUsedToMapByHand) {
    const std::pair<std::string_view, std::string_view> expected[] = {
        {"anthropic", "anthropic-api-key"}, {"claude", "claude-subscription"},
        {"openai", "openai-api-key"},       {"openrouter", "openrouter-api-key"},
        {"mistral", "mistral-api-key"},     {"ollama", "ollama"},
        {"llama-cpp", "llama-cpp"},
    };
    for (const auto& [name, kind] : expected) {
        const auto* row = account_kind_for_short_name(name);
        ASSERT_NE(row, nullptr) << name;
        EXPECT_EQ(row->kind, kind);
    }
    EXPECT_EQ(account_kind_for_short_name("chatgpt"), nullptr);
    EXPECT_EQ(account_kind_for_short_name(""), nullptr) << "a kind without a short name is not picked by ''";
    EXPECT_EQ(default_base_url("ollama"), "http://127.0.0.1:11434");
    EXPECT_EQ(default_base_url("llama-cpp"), "http://127.0.0.1:8080");
    EXPECT_EQ(default_base_url("openai-api-key"), "");
    EXPECT_EQ(account_kind_names(Holds::local_server), "llama-cpp and ollama");
    EXPECT_EQ(account_kind_names(Holds::login), "chatgpt-login and mistral-login");
}

TEST(SecretProviders, StandInsKeepThePrefixAndLengthAndDifferEachTime) {
    const std::string real = "sk-ant-api03-" + std::string(95, 'R');
    std::set<std::string> seen;
    for (int i = 0; i < 50; ++i) {
        const auto stand_in = make_stand_in(real, system_random());
        EXPECT_TRUE(stand_in.starts_with("sk-ant-api03-")) << stand_in;
        EXPECT_EQ(stand_in.size(), real.size());
        EXPECT_FALSE(contains(stand_in, "RRRRRRRR")) << "nothing of the secret part is kept";
        seen.insert(stand_in);
    }
    EXPECT_EQ(seen.size(), 50u);
    EXPECT_TRUE(make_stand_in("sk-or-v1-0123456789abcdef", system_random()).starts_with("sk-or-v1-"));
    const auto bare = make_stand_in("abcdefgh12345678", system_random());
    EXPECT_EQ(bare.size(), 16u);
    EXPECT_NE(bare, "abcdefgh12345678");
}

TEST(SecretProviders, AStandInNeverEqualsTheRealValueEvenWithAStuckRandomSource) {
    int calls = 0;
    // First round reproduces the real value exactly; the next must differ.
    const std::string real = "sk-" + std::string(16, 'A');
    const RandomBytes replay = [&](unsigned char* out, std::size_t) { *out = calls++ < 16 ? 0 : 1; };
    const auto stand_in = make_stand_in(real, replay);
    EXPECT_NE(stand_in, real);
    EXPECT_TRUE(stand_in.starts_with("sk-"));
}

TEST(SecretProviders, PastedKeysAreTrimmedAndCheckedWithoutBeingQuoted) {
    EXPECT_EQ(*normalize_secret("  sk-test-12345678\n"), "sk-test-12345678");
    for (const char* bad : {"", " \n", "short", "has space inside", "tab\there-12345", "sk-ant-api03-ab*cdefgh"}) {
        auto refused = normalize_secret(bad);
        ASSERT_FALSE(refused.ok()) << bad;
        if (std::string_view(bad).size() > 8) {
            EXPECT_FALSE(contains(refused.error().message, bad)) << "the message must not echo the key";
        }
    }
}

} // namespace
} // namespace handler::secrets
