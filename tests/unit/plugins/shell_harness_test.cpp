// The built-in shell harness (harnesses/shell), loaded from the build tree's plugin
// folder by the real loader, as handlerd loads it.
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "runtime/process.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace {

using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::LoadedHarness;

class PluginShellHarness : public ::testing::Test {
protected:
    void SetUp() override {
        registry_.load({handler::plugins::PluginDir{HANDLER_BUILTIN_PLUGIN_DIR, "builtin"}});
        auto found = registry_.harness("shell");
        ASSERT_TRUE(found) << found.error().message;
        shell_ = *found;
    }

    LaunchRequest request(LaunchMode mode, std::string prompt, std::vector<std::string> extra = {}) {
        LaunchRequest r;
        r.mode = mode;
        r.session_id = "s_1";
        r.project_path = "/home/u/project";
        r.prompt = std::move(prompt);
        r.extra_args = std::move(extra);
        return r;
    }

    handler::plugins::MemoryPluginStorage storage_;
    handler::plugins::HostServices services_{storage_, handler::testing::quiet_logger()};
    handler::plugins::PluginRegistry registry_{services_};
    std::shared_ptr<LoadedHarness> shell_;
};

TEST_F(PluginShellHarness, IsListedAsABuiltinHarness) {
    const auto record = registry_.record("shell");
    ASSERT_TRUE(record);
    EXPECT_EQ(record->kind, "harness");
    EXPECT_EQ(record->version, "0.1.0");
    EXPECT_EQ(record->abi, "1.1");
    EXPECT_EQ(record->source, "builtin");
}

// The argv is run for real on this machine (which has bash), and again with bash out of
// PATH, as in a busybox image: the shell must come up either way.
std::string run(const std::vector<std::string>& arguments, bool without_bash) {
    std::vector<std::string> argv = {"env", without_bash ? "PATH=/nonexistent" : "PATH=/usr/bin:/bin"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    handler::runtime::SystemCommandRunner runner;
    auto result = runner.run({argv, std::nullopt, 10'000, 1 << 20});
    EXPECT_TRUE(result) << (result ? "" : result.error().message);
    if (!result) return {};
    EXPECT_EQ(result->exit_code, 0) << result->stderr_text;
    return result->stdout_text;
}

TEST_F(PluginShellHarness, InteractiveIsALoginShellInTheProject) {
    auto spec = shell_->launch(request(LaunchMode::interactive, ""));
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_FALSE(spec->arguments.empty());
    EXPECT_EQ(spec->arguments.front(), "/bin/sh");
    EXPECT_EQ(spec->workdir, "/home/u/project");
    EXPECT_EQ(spec->image, ""); // the image handlerd builds for it
    EXPECT_TRUE(spec->allowed_hosts.empty());
    EXPECT_TRUE(spec->secret_env.empty());
}

TEST_F(PluginShellHarness, TerminalArgumentsGoToTheShell) {
    auto spec = shell_->launch(request(LaunchMode::interactive, "", {"-c", "echo \"$0:$1\" arg"}));
    ASSERT_TRUE(spec);
    EXPECT_EQ(run(spec->arguments, false), "bash: arg\n");
    EXPECT_EQ(run(spec->arguments, true), "/bin/sh: arg\n");
}

TEST_F(PluginShellHarness, HeadlessRunsThePromptAsACommand) {
    auto spec = shell_->launch(request(LaunchMode::headless, "echo \"$0 [$1] [$2]\"", {"x y", "z"}));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(run(spec->arguments, false), "bash [x y] [z]\n");
    EXPECT_EQ(run(spec->arguments, true), "sh [x y] [z]\n");
}

TEST_F(PluginShellHarness, HeadlessWithoutPromptIsAnInvalidArgument) {
    auto spec = shell_->launch(request(LaunchMode::headless, ""));
    ASSERT_FALSE(spec);
    EXPECT_EQ(spec.error().code, handler::ErrorCode::invalid_argument);
    EXPECT_TRUE(handler::testing::contains(spec.error().message, "give it a command to run"));
}

TEST_F(PluginShellHarness, DescribesNoHostsAndNoCredentials) {
    auto json = shell_->describe();
    ASSERT_TRUE(json) << json.error().message;
    const auto value = boost::json::parse(*json).as_object();
    EXPECT_TRUE(value.at("default_hosts").as_array().empty());
    EXPECT_TRUE(value.at("credentials").as_array().empty());
    auto recipe = shell_->image_recipe();
    ASSERT_TRUE(recipe);
    EXPECT_TRUE(recipe->run_steps.empty());
    EXPECT_TRUE(recipe->env.empty());
}

TEST_F(PluginShellHarness, OutputBecomesTextEventsWithoutSplittingCharacters) {
    auto stream = shell_->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    auto first = (*stream)->feed("caf\xc3"); // "é" cut in half
    ASSERT_TRUE(first);
    ASSERT_EQ(first->events.size(), 1u);
    EXPECT_EQ(first->events[0].json, R"({"content":{"type":"text","text":"caf"}})");
    auto second = (*stream)->feed("\xa9\n");
    ASSERT_TRUE(second);
    ASSERT_EQ(second->events.size(), 1u);
    EXPECT_EQ(second->events[0].json, "{\"content\":{\"type\":\"text\",\"text\":\"\xc3\xa9\\n\"}}");
}

} // namespace
