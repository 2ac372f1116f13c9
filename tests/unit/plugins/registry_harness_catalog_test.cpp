// The session service's port to the plugins as handlerd has it, over the real fixture
// plugins (tests/fixtures/plugins) and the built-in shell harness: descriptions parsed
// once at load, launches, addons, event parsers and image recipes, and the errors for
// what is not there.
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "plugins/registry_harness_catalog.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <gtest/gtest.h>

namespace {

using handler::ErrorCode;
using handler::plugins::HarnessCredential;
using handler::plugins::HarnessModel;
using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::PluginDir;
using handler::plugins::RegistryHarnessCatalog;
using handler::testing::contains;
using handler::testing::fixture_plugin_dir;

class RegistryCatalog : public ::testing::Test {
protected:
    void SetUp() override {
        registry_.load({PluginDir{fixture_plugin_dir(), "builtin"}, PluginDir{HANDLER_BUILTIN_PLUGIN_DIR, "builtin"}});
    }

    LaunchRequest request(LaunchMode mode, std::string prompt) {
        LaunchRequest r;
        r.mode = mode;
        r.session_id = "s_7f3a2c";
        r.project_path = "/home/u/project";
        r.prompt = std::move(prompt);
        return r;
    }

    handler::plugins::MemoryPluginStorage storage_;
    handler::plugins::HostServices services_{storage_, handler::testing::quiet_logger()};
    handler::plugins::PluginRegistry registry_{services_};
    RegistryHarnessCatalog catalog_{registry_};
};

TEST_F(RegistryCatalog, TellsHarnessesFromAddonsAndFromWhatIsNotLoaded) {
    EXPECT_TRUE(catalog_.has_harness("good"));
    EXPECT_TRUE(catalog_.has_harness("shell"));
    EXPECT_FALSE(catalog_.has_harness("good-addon")) << "an addon is not a harness";
    EXPECT_FALSE(catalog_.has_harness("wrong-major")) << "a refused plugin is not usable";
    EXPECT_FALSE(catalog_.has_harness("nope"));
}

TEST_F(RegistryCatalog, DescribesEachHarnessFromItsOwnDescribe) {
    auto good = catalog_.describe("good");
    ASSERT_TRUE(good) << good.error().message;
    // The fixture writes its lists as plain strings: each is taken as an id (a kind).
    EXPECT_EQ(good->default_hosts, std::vector<std::string>{"api.example.com"});
    EXPECT_EQ(good->credentials, (std::vector<HarnessCredential>{{"example-key", "", ""}}));
    EXPECT_EQ(good->models, (std::vector<HarnessModel>{{"m1", ""}}));
    EXPECT_EQ(good->events, "text");
    EXPECT_FALSE(good->stdin_protocol);

    auto shell = catalog_.describe("shell");
    ASSERT_TRUE(shell) << shell.error().message;
    EXPECT_TRUE(shell->credentials.empty());
    EXPECT_TRUE(shell->thinking_levels.empty());
    EXPECT_EQ(shell->launch_modes, (std::vector<std::string>{"interactive", "headless"}));
    EXPECT_EQ(shell->events, "text");

    // The record the API lists carries the same description.
    const auto record = registry_.record("good");
    ASSERT_TRUE(record && record->harness);
    EXPECT_EQ(*record->harness, *good);
    EXPECT_TRUE(record->description_error.empty());
    EXPECT_FALSE(registry_.record("good-addon")->harness.has_value()) << "addons have no harness description";

    auto missing = catalog_.describe("nope");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ErrorCode::not_found);
    auto refused = catalog_.describe("wrong-major");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
    EXPECT_TRUE(contains(refused.error().message, "wrong-major")) << refused.error().message;
}

TEST_F(RegistryCatalog, LaunchesAndContributesThroughThePlugins) {
    auto spec = catalog_.launch("good", request(LaunchMode::headless, "fix it"));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->image, "fixture/good:1");
    EXPECT_EQ(spec->arguments, (std::vector<std::string>{"good-agent", "--prompt", "fix it"}));
    auto refused = catalog_.launch("good", request(LaunchMode::headless, "invalid"));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(refused.error().message, "plugin 'good'")) << refused.error().message;
    auto missing = catalog_.launch("nope", request(LaunchMode::interactive, ""));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ErrorCode::not_found);

    auto added = catalog_.contribute("good-addon", request(LaunchMode::interactive, ""));
    ASSERT_TRUE(added) << added.error().message;
    EXPECT_EQ(added->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"cdn.example.com", 0}}));
    auto not_addon = catalog_.contribute("good", request(LaunchMode::interactive, ""));
    ASSERT_FALSE(not_addon);
    EXPECT_EQ(not_addon.error().code, ErrorCode::not_found);
    EXPECT_TRUE(contains(not_addon.error().message, "is a harness, not an addon")) << not_addon.error().message;
}

TEST_F(RegistryCatalog, OpensEventsInTheModeItsDescriptionGives) {
    auto opened = catalog_.open_events("good", "s_7f3a2c");
    ASSERT_TRUE(opened) << opened.error().message;
    ASSERT_NE(opened->parser, nullptr);
    EXPECT_EQ(opened->mode, "text");
    EXPECT_FALSE(opened->owns_input);
    auto parsed = opened->parser->feed("hello\n");
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->events.size(), 1u);
    EXPECT_EQ(parsed->events[0].json, R"({"content":{"type":"text","text":"hello"}})");

    auto none = catalog_.open_events("truncated-info", "s_1");
    ASSERT_FALSE(none) << "a harness without a parser has no events";
    EXPECT_EQ(none.error().code, ErrorCode::unavailable);
}

TEST_F(RegistryCatalog, AnImageRecipeIsALayerNamedAfterThePlugin) {
    auto recipe = catalog_.image_recipe("good");
    ASSERT_TRUE(recipe) << recipe.error().message;
    ASSERT_TRUE(recipe->has_value());
    EXPECT_EQ((*recipe)->name, "good");
    EXPECT_EQ((*recipe)->version, "1.2.3");
    EXPECT_EQ((*recipe)->run_steps, std::vector<std::string>{"echo good"});
    EXPECT_EQ((*recipe)->env, (std::vector<std::pair<std::string, std::string>>{{"GOOD", "1"}}));
    auto plain = catalog_.image_recipe("truncated-info");
    ASSERT_TRUE(plain) << plain.error().message;
    EXPECT_FALSE(plain->has_value()) << "nothing to add: its sessions run the base image";
    EXPECT_FALSE(catalog_.image_recipe("nope"));
}

} // namespace
