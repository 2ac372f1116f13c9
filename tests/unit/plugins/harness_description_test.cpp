// A harness's describe() as handlerd reads it: every documented field, the plain-string
// shorthand, what an empty list means, and a clear refusal naming the plugin for a key
// of the wrong shape.
#include "plugins/harness_description.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace {

using handler::ErrorCode;
using handler::plugins::HarnessCredential;
using handler::plugins::HarnessDescription;
using handler::plugins::HarnessMode;
using handler::plugins::HarnessModel;
using handler::plugins::parse_harness_description;
using handler::testing::contains;

TEST(HarnessDescription, ReadsEveryDocumentedField) {
    auto parsed = parse_harness_description(
        "claude-code",
        R"({"default_hosts":["api.anthropic.com"],)"
        R"("credentials":[{"kind":"anthropic-api-key","env":"ANTHROPIC_API_KEY","label":"Anthropic API key"},)"
        R"({"kind":"ollama","label":"Ollama server"}],)"
        R"j("models":[{"id":"sonnet","label":"Sonnet (latest)"}],"modes":[{"id":"plan","label":"Plan only"}],)j"
        R"("thinking_levels":["low","high"],"launch_modes":["interactive","headless"],)"
        R"("events":"structured","stdin":"protocol","future_key":{"ignored":true}})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->default_hosts, std::vector<std::string>{"api.anthropic.com"});
    EXPECT_EQ(parsed->credentials, (std::vector<HarnessCredential>{
                                       {"anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic API key"},
                                       {"ollama", "", "Ollama server"}}));
    EXPECT_EQ(parsed->models, (std::vector<HarnessModel>{{"sonnet", "Sonnet (latest)"}}));
    EXPECT_EQ(parsed->modes, (std::vector<HarnessMode>{{"plan", "Plan only"}}));
    EXPECT_EQ(parsed->thinking_levels, (std::vector<std::string>{"low", "high"}));
    EXPECT_EQ(parsed->launch_modes, (std::vector<std::string>{"interactive", "headless"}));
    EXPECT_EQ(parsed->events, "structured");
    EXPECT_TRUE(parsed->stdin_protocol);
    EXPECT_EQ(parsed->credentials_text(), "Anthropic API key (anthropic-api-key), Ollama server (ollama)");
}

TEST(HarnessDescription, AnEmptyOrMissingListDeclaresNothingAndSoLimitsNothing) {
    auto parsed = parse_harness_description("shell", R"({"credentials":[],"models":[]})");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, HarnessDescription{});
    EXPECT_TRUE(parsed->takes_credential("anthropic-api-key"));
    EXPECT_TRUE(parsed->takes_thinking_level("anything"));
    EXPECT_EQ(parsed->events, "text") << "what the host assumed before it read descriptions";
    EXPECT_FALSE(parsed->stdin_protocol);

    auto declared = parse_harness_description("codex", R"({"credentials":["openai-api-key"],"thinking_levels":["low"]})");
    ASSERT_TRUE(declared) << declared.error().message;
    EXPECT_TRUE(declared->takes_credential("openai-api-key"));
    EXPECT_FALSE(declared->takes_credential("anthropic-api-key"));
    EXPECT_TRUE(declared->takes_thinking_level("low"));
    EXPECT_FALSE(declared->takes_thinking_level("max"));
}

TEST(HarnessDescription, AKeyOfTheWrongShapeIsRefusedNamingThePluginAndTheKey) {
    for (const char* json : {R"({"models":"sonnet"})", R"({"models":[3]})", R"({"models":[{"label":"no id"}]})",
                             R"({"credentials":[{"kind":7}]})", R"({"thinking_levels":["low",2]})",
                             R"({"events":true})", R"({"stdin":["protocol"]})"}) {
        auto parsed = parse_harness_description("third-party", json);
        ASSERT_FALSE(parsed) << json;
        EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
        EXPECT_TRUE(contains(parsed.error().message, "plugin 'third-party': describe: \"")) << parsed.error().message;
    }
    auto not_json = parse_harness_description("third-party", "{not json");
    ASSERT_FALSE(not_json);
    EXPECT_TRUE(contains(not_json.error().message, "plugin 'third-party'")) << not_json.error().message;
}

} // namespace
