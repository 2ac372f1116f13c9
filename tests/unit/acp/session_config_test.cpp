#include "acp/session_config.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace handler::acp {
namespace {
namespace json = boost::json;

HarnessChoices claude() {
    return read_harness_choices("claude-code", json::parse(R"({
        "models":[{"id":"sonnet","label":"Sonnet"},{"id":"opus","label":"Opus"}],
        "modes":[{"id":"default","label":"Ask before acting"},{"id":"plan","label":"Plan only"}],
        "thinking_levels":["low","high"],
        "launch_modes":["headless","conversation"],
        "credentials":[{"kind":"anthropic-api-key"},"claude-subscription"]})").as_object());
}

const json::object& option(const json::array& options, std::string_view id) {
    for (const auto& entry : options)
        if (entry.as_object().at("id").as_string() == id) return entry.as_object();
    throw std::runtime_error("no option " + std::string(id));
}

TEST(AcpSessionConfig, ReadsWhatTheHarnessDeclares) {
    const auto harness = claude();
    ASSERT_EQ(harness.models.size(), 2u);
    EXPECT_EQ(harness.models[1].label, "Opus");
    EXPECT_EQ(harness.thinking_levels, (std::vector<std::string>{"low", "high"}));
    EXPECT_EQ(harness.credentials, (std::vector<std::string>{"anthropic-api-key", "claude-subscription"}));
}

TEST(AcpSessionConfig, OptionsHaveTheirCategoriesAndShowTheCurrentValues) {
    Settings settings;
    settings.mode = "none";
    const auto options = config_options(claude(), settings);
    ASSERT_EQ(options.size(), 3u);

    const auto& model = option(options, "model");
    EXPECT_EQ(model.at("category"), "model");
    EXPECT_EQ(model.at("type"), "select");
    EXPECT_EQ(model.at("currentValue"), json::value(kDefaultValue)); // unknown: the harness's default
    EXPECT_EQ(model.at("options").as_array().size(), 3u);

    const auto& mode = option(options, "mode");
    EXPECT_EQ(mode.at("category"), "mode");
    EXPECT_EQ(mode.at("currentValue"), "none");
    const auto& groups = mode.at("options").as_array();
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].as_object().at("options"),
              json::parse(R"([{"value":"none","name":"Locked down"},{"value":"filtered","name":"Guarded"},{"value":"open","name":"Open"}])"));
    EXPECT_EQ(groups[1].as_object().at("options").as_array().size(), 2u);

    EXPECT_EQ(option(options, "thought_level").at("category"), "thought_level");

    // A model another client chose, which the harness did not declare, is shown as it is.
    settings.model = "claude-sonnet-4-5-20250929";
    settings.thought_level = "high";
    const auto later = config_options(claude(), settings);
    EXPECT_EQ(option(later, "model").at("currentValue"), "claude-sonnet-4-5-20250929");
    EXPECT_EQ(option(later, "model").at("options").as_array().size(), 3u);
    EXPECT_EQ(option(later, "thought_level").at("currentValue"), "high");
}

TEST(AcpSessionConfig, AHarnessWithoutModelsOrLevelsGetsTheModeOnly) {
    const auto shell = read_harness_choices("shell", json::object{});
    const auto options = config_options(shell, Settings{});
    ASSERT_EQ(options.size(), 1u);
    EXPECT_EQ(options[0].as_object().at("id"), "mode");
    EXPECT_EQ(options[0].as_object().at("currentValue"), "filtered");
    EXPECT_EQ(options[0].as_object().at("options").as_array().size(), 3u); // not grouped
    const auto modes = legacy_modes(shell, Settings{});
    EXPECT_EQ(modes.at("currentModeId"), "filtered");
    EXPECT_EQ(modes.at("availableModes").as_array().size(), 3u);
}

TEST(AcpSessionConfig, ChangesAreCheckedAgainstTheChoices) {
    const auto harness = claude();
    auto model = change_for(harness, "model", "opus");
    ASSERT_TRUE(model);
    EXPECT_EQ(model->setting, "model");
    auto level = change_for(harness, "thought_level", "high");
    ASSERT_TRUE(level);
    EXPECT_EQ(level->setting, "thinking_level");
    EXPECT_TRUE(change_for(harness, "mode", "open"));
    EXPECT_TRUE(change_for(harness, "mode", "plan"));

    // A model the harness did not declare is a choice too (a local server's, say).
    EXPECT_TRUE(change_for(harness, "model", "claude-sonnet-4-5"));
    auto wrong = change_for(harness, "model", "");
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("sonnet, opus"), std::string::npos);
    EXPECT_FALSE(change_for(harness, "mode", "yolo"));
    EXPECT_FALSE(change_for(harness, "thought_level", "max"));
    EXPECT_FALSE(change_for(harness, "model", kDefaultValue));
    auto unknown = change_for(harness, "temperature", "1");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("model, mode and thought_level"), std::string::npos);
}

TEST(AcpSessionConfig, AChangeForTheNextResumeSaysSo) {
    Settings settings;
    apply_change(settings, "model", "opus", true);
    auto options = config_options(claude(), settings);
    EXPECT_EQ(option(options, "model").at("currentValue"), "opus");
    EXPECT_TRUE(option(options, "model").contains("description"));
    EXPECT_FALSE(option(options, "mode").contains("description"));
    apply_change(settings, "model", "sonnet", false);
    EXPECT_FALSE(option(config_options(claude(), settings), "model").contains("description"));
    EXPECT_EQ(start_mode_of("learn"), "filtered");
    EXPECT_EQ(start_mode_of("none"), "none");
}

} // namespace
} // namespace handler::acp
