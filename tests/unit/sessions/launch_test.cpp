// The container a session gets from what its harness asked for.
#include "sessions/launch.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

namespace handler::sessions {
namespace {

using handler::testing::contains;

LaunchContext context(bool tty) {
    LaunchContext c;
    c.session_id = "s_abc123";
    c.project_path = "/srv/project";
    c.default_image = "localhost/handler-base:1";
    c.control_dir = "/run/user/1000/handler/sessions/s_abc123";
    c.helper_dir = "/usr/libexec/handler";
    c.tty = tty;
    c.rows = 40;
    c.cols = 100;
    return c;
}

// A tunnelled host's certificate is the upstream's own: the session trusts the CAs handlerd
// verifies upstreams with, so a machine whose owner points OpenSSL elsewhere gets the same.
TEST(TrustBundle, IsTheOneOpenSslReadsWhenSetElseTheSystems) {
    std::map<std::string, std::string> env;
    const auto getenv = [&](const char* name) -> const char* {
        auto found = env.find(name);
        return found == env.end() ? nullptr : found->second.c_str();
    };
    EXPECT_EQ(system_trust_bundle(getenv), "/etc/ssl/certs/ca-certificates.crt");
    env["SSL_CERT_FILE"] = "";
    EXPECT_EQ(system_trust_bundle(getenv), "/etc/ssl/certs/ca-certificates.crt");
    env["SSL_CERT_FILE"] = "/home/alice/corporate-ca.pem";
    EXPECT_EQ(system_trust_bundle(getenv), "/home/alice/corporate-ca.pem");
}

TEST(LaunchSpec, WrapsTheProgramInTheShimWithATerminal) {
    plugins::LaunchSpec launch;
    launch.arguments = {"bash", "-l"};
    launch.env = {{"TERM", "dumb"}, {"A", "1"}};
    auto spec = container_spec(launch, context(true));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    const std::vector<std::string> argv = {"/opt/handler/handler-shim", "--connect",
                                           "/run/handler/control.sock", "--tty", "--rows", "40",
                                           "--cols", "100", "--", "bash", "-l"};
    EXPECT_EQ(spec->argv, argv);
    EXPECT_EQ(spec->image, "localhost/handler-base:1");
    EXPECT_EQ(spec->workdir, "/srv/project");
    EXPECT_EQ(spec->network, runtime::NetworkMode::none);
    EXPECT_FALSE(spec->tty) << "the shim owns the terminal, not podman";
    // TERM defaults first, so the harness's own value (later) wins.
    ASSERT_EQ(spec->env.size(), 3u);
    EXPECT_EQ(spec->env[0].name, "TERM");
    EXPECT_EQ(spec->env[1].value, "dumb");
}

TEST(LaunchSpec, HeadlessRunsGetPipesAndTheHarnessMayNameImageAndWorkdir) {
    plugins::LaunchSpec launch;
    launch.arguments = {"bash", "-lc", "true"};
    launch.image = "localhost/other:2";
    launch.workdir = "/srv/project/sub";
    auto spec = container_spec(launch, context(false));
    ASSERT_TRUE(spec.ok());
    const std::vector<std::string> argv = {"/opt/handler/handler-shim", "--connect",
                                           "/run/handler/control.sock", "--", "bash", "-lc",
                                           "true"};
    EXPECT_EQ(spec->argv, argv);
    EXPECT_EQ(spec->image, "localhost/other:2");
    EXPECT_EQ(spec->workdir, "/srv/project/sub");
    EXPECT_TRUE(spec->env.empty());
}

TEST(LaunchSpec, WithAProxyTheShimBridgesItAndTheProxyVariablesPointThere) {
    plugins::LaunchSpec launch;
    launch.arguments = {"bash", "-l"};
    auto with_proxy = context(true);
    with_proxy.proxy_port = 3128;
    auto spec = container_spec(launch, with_proxy);
    ASSERT_TRUE(spec.ok());
    const std::vector<std::string> bridge = {"--proxy-port", "3128", "--proxy-socket",
                                             "/run/handler/proxy.sock"};
    EXPECT_NE(std::search(spec->argv.begin(), spec->argv.end(), bridge.begin(), bridge.end()),
              spec->argv.end());
    auto value = [&](const std::string& name) {
        for (const auto& entry : spec->env)
            if (entry.name == name) return entry.value;
        return std::string("<unset>");
    };
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
        EXPECT_EQ(value(name), "http://127.0.0.1:3128") << name;
    EXPECT_EQ(value("NO_PROXY"), "localhost,127.0.0.1,::1");
}

TEST(LaunchSpec, RefusesWhatItCannotHonour) {
    plugins::LaunchSpec empty;
    auto refused = container_spec(empty, context(true));
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "no program"));

    plugins::LaunchSpec with_secret;
    with_secret.arguments = {"claude"};
    with_secret.secret_env = {{"ANTHROPIC_API_KEY", "anthropic"}};
    refused = container_spec(with_secret, context(true));
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "anthropic")) << refused.error().message;
}

// A harness that keeps a login in the account's folder gets it mounted, and its variable
// says where; a session without an account cannot give it one.
TEST(LaunchSpec, AnAccountsStateFolderIsMountedWhereItsVariableSays) {
    plugins::LaunchSpec launch;
    launch.arguments = {"codex"};
    launch.account_state_env = "CODEX_HOME";
    LaunchContext with = context(false);
    with.account_state_dir = "/home/u/.local/share/handler/account-state/3";
    auto spec = container_spec(launch, with);
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    EXPECT_EQ(spec->account_state_dir, with.account_state_dir);
    EXPECT_TRUE(std::find(spec->env.begin(), spec->env.end(),
                          runtime::EnvEntry{"CODEX_HOME", "/var/lib/handler/account"}) != spec->env.end());

    auto refused = container_spec(launch, context(false));
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "no account")) << refused.error().message;

    plugins::LaunchSpec plain;
    plain.arguments = {"bash"};
    auto none = container_spec(plain, with);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->account_state_dir.empty()) << "only a harness that asks gets the folder";
}

// An addon adds variables, files, keys and hosts; the hosts become rules of their own.
TEST(MergeAddon, AddsWhatTheAddonAsksForAndKeepsItsHostsApart) {
    plugins::LaunchSpec spec;
    spec.arguments = {"claude"};
    spec.env = {{"HOME", "/home/agent"}};
    spec.allowed_hosts = {{"api.anthropic.com", 443}};
    plugins::LaunchSpec addon;
    addon.env = {{"PLAYWRIGHT_BROWSERS_PATH", "/opt/browsers"}};
    addon.files = {{"/etc/playwright.json", "{}", 0644}};
    addon.allowed_hosts = {{"playwright.azureedge.net", 443}, {"*.playwright.dev", 0}, {"*.playwright.dev", 0}};
    std::vector<std::string> hosts;
    ASSERT_TRUE(merge_addon("playwright", addon, spec, hosts).ok());
    EXPECT_EQ(spec.env.size(), 2u);
    EXPECT_EQ(spec.env[1].name, "PLAYWRIGHT_BROWSERS_PATH");
    EXPECT_EQ(spec.files.size(), 1u);
    EXPECT_EQ(spec.allowed_hosts.size(), 1u) << "the harness's own hosts stay the harness's";
    EXPECT_EQ(hosts, (std::vector<std::string>{"playwright.azureedge.net:443", "*.playwright.dev"}));
}

TEST(MergeAddon, RefusesAnAddonThatChangesWhatTheHarnessChose) {
    plugins::LaunchSpec spec;
    spec.arguments = {"claude"};
    spec.env = {{"HOME", "/home/agent"}};
    spec.secret_env = {{"ANTHROPIC_API_KEY", "anthropic-api-key"}};
    spec.files = {{"/home/agent/.claude.json", "{}", 0600}};
    using Set = void (*)(plugins::LaunchSpec&);
    const std::pair<Set, std::string> cases[] = {
        {[](plugins::LaunchSpec& a) { a.image = "other"; }, "sets the image"},
        {[](plugins::LaunchSpec& a) { a.arguments = {"sh"}; }, "sets the program"},
        {[](plugins::LaunchSpec& a) { a.workdir = "/"; }, "sets the working folder"},
        {[](plugins::LaunchSpec& a) { a.account_state_env = "CODEX_HOME"; }, "keeps the account's state"},
        {[](plugins::LaunchSpec& a) { a.input = "{\"type\":\"user\"}\n"; }, "writes to the harness's stdin"},
        {[](plugins::LaunchSpec& a) { a.env = {{"HOME", "/tmp"}}; }, "sets HOME, which is already set"},
        {[](plugins::LaunchSpec& a) { a.env = {{"ANTHROPIC_API_KEY", "x"}}; },
         "sets ANTHROPIC_API_KEY, which is already set"},
        {[](plugins::LaunchSpec& a) { a.secret_env = {{"HOME", "anthropic-api-key"}}; },
         "sets HOME, which is already set"},
        {[](plugins::LaunchSpec& a) { a.files = {{"/home/agent/.claude.json", "{}", 0600}}; },
         "writes /home/agent/.claude.json"},
    };
    for (const auto& [set, expected] : cases) {
        plugins::LaunchSpec addon;
        set(addon);
        plugins::LaunchSpec copy = spec;
        std::vector<std::string> hosts;
        auto merged = merge_addon("pushy", addon, copy, hosts);
        ASSERT_FALSE(merged.ok()) << expected;
        EXPECT_TRUE(contains(merged.error().message, "addon 'pushy' " + expected)) << merged.error().message;
        EXPECT_EQ(copy, spec) << "nothing was merged: " << expected;
    }
}

} // namespace
} // namespace handler::sessions
