// Provider bindings and stand-ins: the shape a harness checks is kept, the value is not.
#include "secrets/providers.hpp"

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
    for (const char* bad : {"", " \n", "short", "has space inside", "tab\there-12345"}) {
        auto refused = normalize_secret(bad);
        ASSERT_FALSE(refused.ok()) << bad;
        if (std::string_view(bad).size() > 8) {
            EXPECT_FALSE(contains(refused.error().message, bad)) << "the message must not echo the key";
        }
    }
}

} // namespace
} // namespace handler::secrets
