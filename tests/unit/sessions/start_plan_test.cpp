// What starting a session decides, without podman, sockets or a store: every refusal
// start() has (and which of them record nothing), the choices of agent, harness, account
// and network, the checks against the harness's own description, and the container plan
// built from the plugins' answers.
#include "sessions/start_plan.hpp"

#include "support/fake_harness_catalog.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

using handler::testing::contains;
using handler::testing::FakeHarnessCatalog;

class StartPlanTest : public ::testing::Test {
protected:
    StartPlanTest() {
        snapshot_.projects = {project(1, "web", "/work/web"), project(2, "api", "/work/api"),
                              project(3, "inner", "/work/web/inner")};
        plugins::HarnessDescription claude;
        claude.credentials = {{"anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic API key"},
                              {"ollama", "", "Ollama server"}};
        claude.thinking_levels = {"low", "high", "max"};
        catalog_.harnesses["claude-code"].description = claude;
        catalog_.harnesses["shell"]; // declares nothing
        settings_.now_ms = 1'000'000;
        settings_.default_image = "localhost/handler-base:1";
        settings_.home_dir = "/home/user";
        settings_.control_root = "/run/handler/sessions";
        settings_.helper_dir = "/usr/libexec/handler";
        settings_.account_state_root = "/data/account-state";
        settings_.proxy_port = 3128;
        settings_.has_key_store = true;
        settings_.trust_ca = true;
    }

    static store::Project project(std::int64_t id, std::string name, std::string path,
                                  std::optional<std::string> context = std::nullopt) {
        store::Project made;
        made.id = id;
        made.name = std::move(name);
        made.path = std::move(path);
        made.context = std::move(context);
        return made;
    }
    store::Agent& add_agent(std::int64_t project_id, std::string name, std::string harness = "claude-code") {
        store::Agent agent;
        agent.id = static_cast<std::int64_t>(snapshot_.agents.size()) + 10;
        agent.project_id = project_id;
        agent.name = std::move(name);
        agent.harness = std::move(harness);
        snapshot_.agents.push_back(agent);
        return snapshot_.agents.back();
    }
    store::Account& add_account(std::string name, std::string kind, std::optional<std::string> context = {}) {
        store::Account account;
        account.id = static_cast<std::int64_t>(snapshot_.accounts.size()) + 100;
        account.name = std::move(name);
        account.kind = std::move(kind);
        account.context = std::move(context);
        snapshot_.accounts.push_back(account);
        return snapshot_.accounts.back();
    }
    api::StartRequest in(std::string directory) {
        api::StartRequest request;
        request.directory = std::move(directory);
        return request;
    }
    Result<StartPlan> plan(const api::StartRequest& request) {
        return plan_start(request, snapshot_, catalog_, settings_);
    }
    static void expect_refused(const Result<StartPlan>& planned, ErrorCode code, const std::string& part) {
        ASSERT_FALSE(planned.ok()) << "expected a refusal containing: " << part;
        EXPECT_EQ(planned.error().code, code) << planned.error().message;
        EXPECT_TRUE(contains(planned.error().message, part)) << planned.error().message;
    }

    StartSnapshot snapshot_;
    FakeHarnessCatalog catalog_;
    StartSettings settings_;
};

// ---- refusals: nothing is recorded for any of these ------------------------------------

TEST_F(StartPlanTest, RefusesARequestNamingMoreThanOneTarget) {
    auto request = in("/work/web");
    request.agent = "a";
    request.harness = "shell";
    expect_refused(plan(request), ErrorCode::invalid_argument, "name at most one");
}

TEST_F(StartPlanTest, RefusesARelativeDirectory) {
    expect_refused(plan(in("work/web")), ErrorCode::invalid_argument, "absolute path, got 'work/web'");
}

TEST_F(StartPlanTest, RefusesADirectoryNoProjectHoldsSayingWhatToRegister) {
    expect_refused(plan(in("/elsewhere/tool")), ErrorCode::not_found,
                   "no project holds /elsewhere/tool; add one with `handler project add /elsewhere/tool`");
}

// Defect 3 of issue 15: `project add` refuses the home folder, so it must not be offered.
TEST_F(StartPlanTest, FromTheHomeFolderItSuggestsTheProjectsOwnFolderNotTheHomeFolder) {
    for (const char* where : {"/home/user", "/home/user/", "/home", "/"}) {
        auto planned = plan(in(where));
        ASSERT_FALSE(planned.ok()) << where;
        const auto& message = planned.error().message;
        EXPECT_FALSE(contains(message, std::string("handler project add ") + where)) << message;
        EXPECT_TRUE(contains(message, "`handler project add PATH`")) << message;
        EXPECT_TRUE(contains(message, "home folder")) << message;
        EXPECT_TRUE(contains(message, "inside a registered project's folder")) << message;
    }
    // A folder inside the home folder can be a project: that one is offered as before.
    expect_refused(plan(in("/home/user/code")), ErrorCode::not_found, "`handler project add /home/user/code`");
}

TEST_F(StartPlanTest, RefusesAnAgentNameSeveralProjectsHoldOutsideThem) {
    add_agent(1, "fixer");
    add_agent(2, "fixer");
    auto request = in("/elsewhere");
    request.agent = "fixer";
    expect_refused(plan(request), ErrorCode::conflict, "'fixer' exists in several projects");
    // Inside one of the projects, its own agent is meant.
    request.directory = "/work/api/src";
    auto planned = plan(request);
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->project.id, 2);
    EXPECT_EQ(planned->agent->id, snapshot_.agents[1].id);
}

TEST_F(StartPlanTest, RefusesAnUnknownAgentOrName) {
    auto request = in("/work/web");
    request.agent = "nobody";
    expect_refused(plan(request), ErrorCode::not_found, "no agent named 'nobody' in project 'web';");
    request.agent.reset();
    request.name = "nobody";
    expect_refused(plan(request), ErrorCode::not_found, "and no harness with that id");
}

TEST_F(StartPlanTest, RefusesAnUnknownHarness) {
    auto request = in("/work/web");
    request.harness = "nope";
    expect_refused(plan(request), ErrorCode::not_found, "no plugin 'nope'");
}

TEST_F(StartPlanTest, RefusesAHarnessWhoseDescriptionIsBroken) {
    catalog_.harnesses["broken"].description_error =
        make_error(ErrorCode::invalid_argument, "plugin 'broken': describe: \"models\" must be a list");
    auto request = in("/work/web");
    request.harness = "broken";
    expect_refused(plan(request), ErrorCode::invalid_argument, "plugin 'broken': describe");
}

TEST_F(StartPlanTest, RefusesAProjectWithSeveralAgentsWhenNoneIsNamed) {
    add_agent(1, "one");
    add_agent(1, "two");
    expect_refused(plan(in("/work/web")), ErrorCode::invalid_argument, "project 'web' has several agents (one, two)");
}

TEST_F(StartPlanTest, RefusesANetworkModeThatIsNotOne) {
    auto request = in("/work/web");
    request.network = "wide";
    expect_refused(plan(request), ErrorCode::invalid_argument, "'wide' is not one of 'none', 'filtered', 'open' or 'learn'");
}

TEST_F(StartPlanTest, RefusesAThinkingLevelTheHarnessDoesNotListInItsOwnWords) {
    add_agent(1, "claude");
    auto request = in("/work/web");
    request.thinking = "xhigh";
    expect_refused(plan(request), ErrorCode::invalid_argument,
                   "harness 'claude-code' has no thinking level 'xhigh'; its levels are low, high, max");
    request.thinking = "max";
    EXPECT_TRUE(plan(request).ok());
}

TEST_F(StartPlanTest, RefusesAnAccountKindTheHarnessDoesNotTakeListingWhatItTakes) {
    add_account("gpt", "openai-api-key");
    add_agent(1, "claude").account = "gpt";
    expect_refused(plan(in("/work/web")), ErrorCode::invalid_argument,
                   "account 'gpt', a openai-api-key account, and harness 'claude-code' takes Anthropic API key "
                   "(anthropic-api-key), Ollama server (ollama); choose another with `handler agent edit claude");
}

// An empty list is "not declared": the harness's own launch checks, as it always did.
TEST_F(StartPlanTest, AHarnessThatDeclaresNoListsLimitsNothingHere) {
    add_account("gpt", "openai-api-key");
    add_agent(1, "shelly", "shell").account = "gpt";
    auto request = in("/work/web");
    request.thinking = "anything";
    auto planned = plan(request);
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->launch.account_kind, "openai-api-key");
    EXPECT_EQ(planned->launch.thinking_level, "anything");
}

// ---- what it chooses --------------------------------------------------------------------

TEST_F(StartPlanTest, WithoutANameTheProjectsOnlyAgentOrTheShellRuns) {
    auto shell = plan(in("/work/web/src"));
    ASSERT_TRUE(shell.ok()) << shell.error().message;
    EXPECT_EQ(shell->record.harness, kDefaultHarness);
    EXPECT_FALSE(shell->agent.has_value());
    EXPECT_EQ(shell->record.project_id, 1);

    add_agent(1, "claude");
    auto by_agent = plan(in("/work/web/src"));
    ASSERT_TRUE(by_agent.ok()) << by_agent.error().message;
    EXPECT_EQ(by_agent->agent->name, "claude");
    EXPECT_EQ(by_agent->record.harness, "claude-code");
    EXPECT_EQ(by_agent->record.agent_id, snapshot_.agents[0].id);
}

TEST_F(StartPlanTest, TheDeepestProjectHoldingTheDirectoryIsIt) {
    auto planned = plan(in("/work/web/inner/lib"));
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->project.name, "inner");
    EXPECT_EQ(planned->launch.project_path, "/work/web/inner");
}

TEST_F(StartPlanTest, ANameIsAnAgentFirstThenAHarness) {
    auto request = in("/work/web");
    request.name = "shell";
    auto harness = plan(request);
    ASSERT_TRUE(harness.ok()) << harness.error().message;
    EXPECT_FALSE(harness->agent.has_value());
    EXPECT_EQ(harness->record.harness, "shell");
    add_agent(1, "shell", "claude-code");
    auto agent = plan(request);
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    EXPECT_EQ(agent->record.harness, "claude-code");
}

TEST_F(StartPlanTest, AnAgentNamedFromOutsideItsProjectRunsInItsProject) {
    add_agent(2, "backend");
    auto request = in("/elsewhere");
    request.agent = "backend";
    auto planned = plan(request);
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->project.name, "api");
}

TEST_F(StartPlanTest, AHeadlessRunHasNoTerminalAndCarriesItsPromptAndChoices) {
    auto request = in("/work/web");
    request.harness = "claude-code";
    request.prompt = "fix the tests";
    request.model = "opus";
    request.thinking = "high";
    request.args = {"--verbose"};
    auto planned = plan(request);
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->record.mode, "headless");
    EXPECT_FALSE(planned->record.tty);
    EXPECT_EQ(planned->record.image, "localhost/handler-base:1");
    EXPECT_EQ(planned->launch.mode, plugins::LaunchMode::headless);
    EXPECT_EQ(planned->launch.prompt, "fix the tests");
    EXPECT_EQ(planned->launch.model, "opus");
    EXPECT_EQ(planned->launch.thinking_level, "high");
    EXPECT_EQ(planned->launch.extra_args, std::vector<std::string>{"--verbose"});
    EXPECT_EQ(planned->prompt_payload, R"({"content":{"type":"text","text":"fix the tests"}})");
    EXPECT_TRUE(planned->launch.session_id.empty()) << "set once the session is recorded";
}

// The agent's model and thinking level are its sessions' defaults, recorded on the session
// (so a resume starts the same way); a session's own value wins over each.
TEST_F(StartPlanTest, TheModelAndThinkingLevelAreTheSessionsThenTheAgents) {
    auto& agent = add_agent(1, "claude");
    agent.model = "sonnet";
    agent.thinking = "low";
    auto planned = plan(in("/work/web"));
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->record.model, "sonnet");
    EXPECT_EQ(planned->record.thinking, "low");
    EXPECT_EQ(planned->launch.model, "sonnet");
    EXPECT_EQ(planned->launch.thinking_level, "low");

    auto request = in("/work/web");
    request.model = "opus";
    auto own_model = plan(request);
    ASSERT_TRUE(own_model.ok()) << own_model.error().message;
    EXPECT_EQ(own_model->launch.model, "opus");
    EXPECT_EQ(own_model->launch.thinking_level, "low");
    request.thinking = "max";
    auto own_both = plan(request);
    ASSERT_TRUE(own_both.ok()) << own_both.error().message;
    EXPECT_EQ(own_both->record.thinking, "max");

    // An agent's level the harness does not have is refused when a session starts.
    snapshot_.agents.back().thinking = "xhigh";
    expect_refused(plan(in("/work/web")), ErrorCode::invalid_argument, "has no thinking level 'xhigh'");
    // A harness run without an agent has no defaults.
    auto bare = in("/work/web");
    bare.harness = "claude-code";
    auto planned_bare = plan(bare);
    ASSERT_TRUE(planned_bare.ok()) << planned_bare.error().message;
    EXPECT_FALSE(planned_bare->record.model);
}

TEST_F(StartPlanTest, TheNetworkModeIsTheRequestsThenTheAgentsAndDecidesTheStartMode) {
    add_agent(1, "claude").network_mode = store::NetworkMode::none;
    auto planned = plan(in("/work/web"));
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    EXPECT_EQ(planned->network_mode, network::Mode::none);
    EXPECT_FALSE(planned->record.network_mode.has_value()) << "the agent's mode is read live, not copied";
    EXPECT_EQ(planned->launch.start_mode, plugins::StartMode::locked_down);

    auto request = in("/work/web");
    request.network = "open";
    auto open = plan(request);
    ASSERT_TRUE(open.ok()) << open.error().message;
    EXPECT_EQ(open->record.network_mode, network::Mode::open);
    EXPECT_EQ(open->launch.start_mode, plugins::StartMode::open);

    request.network = "learn";
    auto learn = plan(request);
    ASSERT_TRUE(learn.ok()) << learn.error().message;
    EXPECT_EQ(learn->record.network_mode, network::Mode::learn);
    EXPECT_EQ(learn->launch.start_mode, plugins::StartMode::guarded);
    EXPECT_EQ(learn->record.learn_until, settings_.now_ms + settings_.learn_window.count());
}

TEST_F(StartPlanTest, ALocalServerAccountGivesTheHarnessItsUrlAndTheSessionItsRule) {
    add_account("local", "ollama").base_url = "http://127.0.0.1:11434";
    add_agent(1, "claude").account = "local";
    auto planned = plan(in("/work/web"));
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    ASSERT_TRUE(planned->local_server.has_value());
    EXPECT_EQ(planned->launch.account_kind, "ollama");
    EXPECT_EQ(planned->launch.account_base_url, "http://ollama.handler.internal:11434");
    EXPECT_EQ(planned->local_server->rule, "ollama.handler.internal:11434");
}

// ---- the container plan -------------------------------------------------------------------

class ContainerPlanTest : public StartPlanTest {
protected:
    StartPlan planned(const api::StartRequest& request) {
        auto made = plan(request);
        EXPECT_TRUE(made.ok()) << made.error().message;
        return made.ok() ? *made : StartPlan{};
    }
    static plugins::LaunchSpec harness_spec() {
        plugins::LaunchSpec spec;
        spec.arguments = {"claude"};
        spec.allowed_hosts = {{"statsig.anthropic.com", 443}};
        spec.secret_env = {{"ANTHROPIC_API_KEY", "anthropic-api-key"}, {"OTHER", "anthropic-api-key"}};
        return spec;
    }
};

TEST_F(ContainerPlanTest, MergesAddonsAndCollectsKeysAndHostRules) {
    add_agent(1, "claude").addons = {"cdn"};
    plugins::LaunchSpec addon;
    addon.env = {{"CDN", "1"}};
    addon.allowed_hosts = {{"cdn.test", 0}};
    auto container = plan_container(planned(in("/work/web")), "s_1", harness_spec(), {{"cdn", addon}}, settings_);
    ASSERT_TRUE(container.ok()) << container.error().message;
    EXPECT_EQ(container->key_kinds, std::vector<std::string>{"anthropic-api-key"}) << "one stand-in per kind";
    EXPECT_EQ(container->model_hosts, (std::vector<std::string>{"statsig.anthropic.com:443", "api.anthropic.com"}));
    EXPECT_EQ(container->addon_hosts, std::vector<std::string>{"cdn.test"});
    EXPECT_EQ(container->launch.env, (std::vector<plugins::EnvVar>{{"CDN", "1"}}));
    EXPECT_TRUE(container->build_image) << "the harness named no image";
    const auto& context = container->context;
    EXPECT_EQ(context.session_id, "s_1");
    EXPECT_EQ(context.control_dir, "/run/handler/sessions/s_1");
    EXPECT_EQ(context.helper_dir, "/usr/libexec/handler");
    EXPECT_EQ(context.project_path, "/work/web");
    EXPECT_EQ(context.proxy_port, 3128);
    EXPECT_TRUE(context.trust_ca);
    EXPECT_TRUE(context.tty);
    EXPECT_FALSE(context.open_network);
    EXPECT_TRUE(context.stand_ins.empty()) << "made by start(), which holds the key store";
}

TEST_F(ContainerPlanTest, RefusesAnAddonThatOverreaches) {
    add_agent(1, "claude").addons = {"greedy"};
    plugins::LaunchSpec greedy;
    greedy.image = "elsewhere:latest";
    auto container = plan_container(planned(in("/work/web")), "s_1", harness_spec(), {{"greedy", greedy}}, settings_);
    ASSERT_FALSE(container.ok());
    EXPECT_TRUE(contains(container.error().message, "greedy")) << container.error().message;
}

TEST_F(ContainerPlanTest, RefusesAKeyWithoutAKeyStoreAndARuleThatDoesNotParse) {
    settings_.has_key_store = false;
    auto keyless = plan_container(planned(in("/work/web")), "s_1", harness_spec(), {}, settings_);
    ASSERT_FALSE(keyless.ok());
    EXPECT_EQ(keyless.error().code, ErrorCode::unavailable);
    EXPECT_TRUE(contains(keyless.error().message, "no key store")) << keyless.error().message;

    plugins::LaunchSpec bad;
    bad.arguments = {"x"};
    bad.allowed_hosts = {{"not a host!", 0}};
    EXPECT_FALSE(plan_container(planned(in("/work/web")), "s_1", bad, {}, settings_).ok());
}

TEST_F(ContainerPlanTest, AnAccountsStateFolderIsItsOwnAndNeverAcrossContexts) {
    snapshot_.projects[0].context = "work";
    add_account("login", "chatgpt-login", "work");
    add_agent(1, "codex", "shell").account = "login";
    plugins::LaunchSpec stateful;
    stateful.arguments = {"codex"};
    stateful.account_state_env = "CODEX_HOME";
    auto container = plan_container(planned(in("/work/web")), "s_1", stateful, {}, settings_);
    ASSERT_TRUE(container.ok()) << container.error().message;
    EXPECT_EQ(container->context.account_state_dir, "/data/account-state/100");

    snapshot_.accounts[0].context = "home";
    auto mismatch = plan_container(planned(in("/work/web")), "s_1", stateful, {}, settings_);
    ASSERT_FALSE(mismatch.ok());
    EXPECT_EQ(mismatch.error().code, ErrorCode::conflict);
    EXPECT_EQ(mismatch.error().message, "account 'login' belongs to context 'home' but project 'web' "
                                        "belongs to 'work'; pick an account of the project's context");
    // Untagged is a context of its own (docs/domain-model.md), not a wildcard.
    snapshot_.accounts[0].context.reset();
    auto untagged = plan_container(planned(in("/work/web")), "s_1", stateful, {}, settings_);
    ASSERT_FALSE(untagged.ok());
    EXPECT_EQ(untagged.error().code, ErrorCode::conflict);
    EXPECT_EQ(untagged.error().message, "account 'login' belongs to no context but project 'web' "
                                        "belongs to 'work'; pick an account of the project's context");

    snapshot_.accounts[0].context = "work";
    settings_.account_state_root.clear();
    auto no_root = plan_container(planned(in("/work/web")), "s_1", stateful, {}, settings_);
    ASSERT_FALSE(no_root.ok());
    EXPECT_TRUE(contains(no_root.error().message, "keeps no account state")) << no_root.error().message;
}

TEST_F(ContainerPlanTest, OnlyOpenModeGetsARealNetworkAndALocalServerItsRule) {
    add_account("local", "ollama").base_url = "http://127.0.0.1:11434";
    add_agent(1, "claude").account = "local";
    auto request = in("/work/web");
    request.network = "open";
    plugins::LaunchSpec spec;
    spec.arguments = {"claude"};
    spec.image = "own:1";
    auto container = plan_container(planned(request), "s_2", spec, {}, settings_);
    ASSERT_TRUE(container.ok()) << container.error().message;
    EXPECT_TRUE(container->context.open_network);
    EXPECT_FALSE(container->build_image) << "the harness named its image";
    EXPECT_EQ(container->model_hosts, std::vector<std::string>{"ollama.handler.internal:11434"});
}

} // namespace
} // namespace handler::sessions
