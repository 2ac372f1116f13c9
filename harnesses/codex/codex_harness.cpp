// The Codex harness: OpenAI's `codex` CLI, its TUI for interactive sessions and its app
// server (`codex app-server`, JSON-RPC on stdio) for headless ones, which app_server.cpp
// speaks: it turns Codex's notifications into session events and its approval requests
// into permission requests that a client answers. The flags, variables and hosts below
// were checked by running 0.169.0, the version the image pins, in a session container.
#include "codex/app_server.hpp"

#include <handler/plugin.hpp>
#include <plugin_common/launch.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace {

using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

constexpr const char* kVersion = "0.169.0";
constexpr const char* kModelHost = "api.openai.com";
// Where a conversation finds the account's folder (its own CODEX_HOME is the session's).
constexpr const char* kAccountHome = "HANDLER_CODEX_ACCOUNT";
// Codex settings are TOML; every `-c` value below is one, so a model name or URL is
// quoted as a TOML string (with the escapes TOML needs), never pasted in bare.
std::string toml_string(std::string_view text) {
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    return quoted + '"';
}

bool is_local(std::string_view account_kind) { return account_kind == "ollama" || account_kind == "llama-cpp"; }

class CodexHarness : public handler::sdk::Harness {
public:
    std::string describe() override {
        return R"({"default_hosts":["api.openai.com"],)"
               R"("credentials":[)"
               R"({"kind":"openai-api-key","env":"CODEX_API_KEY","label":"OpenAI API key"},)"
               R"j({"kind":"chatgpt-login","label":"ChatGPT login (codex login, kept in the account's folder)"},)j"
               R"j({"kind":"ollama","label":"Ollama server (its OpenAI-compatible Responses API)"},)j"
               R"j({"kind":"llama-cpp","label":"llama.cpp server (its OpenAI-compatible Responses API)"}],)j"
               R"("modes":[{"id":"untrusted","label":"Asks before every command that changes something"},)"
               R"({"id":"on-request","label":"Asks before commands it deems dangerous"},)"
               R"({"id":"never","label":"Asks nothing"}],)"
               R"("thinking_levels":["none","minimal","low","medium","high","xhigh"],)"
               R"("launch_modes":["interactive","headless","conversation"],"prompt_content":["image"],"events":"structured","stdin":"protocol"})";
    }

    // Pinned, so that the parser meets the output format it was written against. No
    // bubblewrap: Codex's own sandbox needs a user namespace, which a session cannot make
    // (app_server.hpp, kSandboxMode), so Codex runs without it in every mode.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run(std::string("npm install -g --no-fund --no-audit @openai/codex@") + kVersion);
        recipe.run("codex --version");
    }

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        const bool local = is_local(request.account_kind);
        const bool chatgpt = request.account_kind == "chatgpt-login";
        if (!request.account_kind.empty() && request.account_kind != "openai-api-key" && !chatgpt && !local)
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Codex takes an OpenAI API key (openai-api-key), a ChatGPT login (chatgpt-login) or a "
                              "local ollama or llama-cpp server, not a '" + std::string(request.account_kind) +
                                  "' account");
        if (request.conversation && !request.headless())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT, "a Codex conversation runs headless (its app server)");
        if (request.headless() && !request.conversation && request.prompt.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Codex needs a prompt to run headless (handler run codex -p \"what to do\"); "
                              "start it interactively or as a conversation to talk to it instead");
        if (!request.resume.empty()) {
            if (!request.conversation)
                throw PluginError(HD_STATUS_INVALID_ARGUMENT, "Codex resumes conversations only");
            // The id came out of a container: only a thread id's shape goes back into one
            // (it is not shown here, whatever it holds).
            if (!handler::codex::is_thread_id(request.resume))
                throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                                  "Codex cannot resume this conversation: its recorded thread id is not a Codex "
                                  "thread id (a UUID)");
        }

        // What runs before Codex, in a shell. The TUI and the app server read no key from
        // the environment (only `codex exec` does): without a login the TUI opens on its
        // sign-in screen and the app server sends no key. Logging in with the stand-in
        // first (it goes to the session's CODEX_HOME, which ends with it) makes both
        // ready; a failed login shows in what follows, which says what is wrong.
        std::string before;
        if (request.account_kind == "openai-api-key")
            before += "printenv CODEX_API_KEY | codex login --with-api-key >/dev/null 2>&1; ";
        if (chatgpt && request.conversation)
            // A conversation's CODEX_HOME is its own (below); the account's login is the
            // account's file, linked rather than copied: Codex writes a refreshed token
            // through the link (it did for `codex login`), so the account and its other
            // sessions keep the one that is valid. Its settings and instructions likewise.
            before += "for f in auth.json config.toml AGENTS.md; do if [ -e \"$" + std::string(kAccountHome) +
                      "/$f\" ]; then ln -sfn \"$" + std::string(kAccountHome) + "/$f\" \"$CODEX_HOME/$f\"; fi; done; ";
        if (before.empty())
            launch.argument("codex");
        else
            launch.arguments({"sh", "-c", before + "exec codex \"$@\"", "codex"});
        if (request.headless()) {
            // Headless is a conversation with its app server on stdio: the opening goes
            // first, each prompt follows as a turn once the thread is there (the parser
            // writes it), and the approvals it asks for reach the session's clients. A
            // resume continues the thread the conversation had.
            launch.argument("app-server");
            std::string_view approval = "on-request"; // guarded: asks before what it deems dangerous
            // Locked down asks before every command that is not known to only read; open
            // asks nothing. The container is the sandbox in all three (its network rules
            // apply to every command).
            if (request.start_mode == HD_START_LOCKED_DOWN) approval = "untrusted";
            if (request.start_mode == HD_START_OPEN) approval = "never";
            boost::json::object thread{{"approvalPolicy", approval}, {"sandbox", handler::codex::kSandboxMode}};
            if (!request.model.empty()) thread["model"] = request.model;
            if (!request.project_path.empty()) thread["cwd"] = request.project_path;
            launch.input(handler::codex::AppServerParser::opening(thread, request.resume));
        } else {
            // The same approval policies as headless, in its TUI.
            constexpr std::string_view sandbox = handler::codex::kSandboxMode;
            switch (request.start_mode) {
            case HD_START_LOCKED_DOWN:
                launch.arguments({"--sandbox", sandbox, "--ask-for-approval", "untrusted"});
                break;
            case HD_START_OPEN:
                launch.argument("--dangerously-bypass-approvals-and-sandbox");
                break;
            case HD_START_GUARDED:
                launch.arguments({"--sandbox", sandbox, "--ask-for-approval", "on-request"});
                break;
            }
            if (!request.model.empty()) launch.arguments({"--model", request.model});
        }
        // No telemetry, no update checks (the image pins the version): the model API is
        // the only host a session needs.
        launch.arguments({"-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false"});
        // Its reasoning effort; the model may take fewer of these than Codex knows.
        if (!request.thinking_level.empty())
            launch.arguments({"-c", "model_reasoning_effort=" +
                                        toml_string(handler::plugin_common::thinking_level(
                                            "Codex", request.thinking_level, handler::codex::kThinkingLevels))});
        // With its model unreachable Codex would retry for ever ("Reconnecting... waiting
        // for network"); bounded, a run fails after five tries and says why.
        launch.arguments({"--disable", "unbounded_connection_retries"});
        // Request bodies stay readable (Codex would zstd them), so that the proxy can
        // search them for another key's stand-in as it does every other request.
        launch.arguments({"--disable", "enable_request_compression"});
        if (local) {
            // A provider of its own: Codex's built-in ones cannot be pointed elsewhere.
            // Local servers take no key, and speak the Responses API under /v1.
            std::string url(request.account_base_url);
            if (!url.ends_with("/v1")) url += "/v1";
            launch.arguments({"-c", "model_providers.handler-local={name=" + toml_string("Local server") +
                                        ", base_url=" + toml_string(url) + ", wire_api=\"responses\"}",
                              "-c", "model_provider=\"handler-local\""});
        }
        launch.arguments(request.extra_args);
        if (request.interactive() && !request.prompt.empty()) {
            // After "--" a prompt starting with "-" cannot be read as an option.
            if (request.prompt.front() == '-') launch.argument("--");
            launch.argument(request.prompt);
        }

        if (!request.project_path.empty()) launch.workdir(request.project_path);
        // The login above reads the stand-in from CODEX_API_KEY; Codex sends it as
        // "Authorization: Bearer", where the proxy swaps in the real key.
        if (request.account_kind == "openai-api-key") launch.env_from_secret("CODEX_API_KEY", request.account_kind);
        // A conversation keeps Codex's own record of it (its thread's rollout and state,
        // under CODEX_HOME) in the session's folder, where a later container resumes it.
        if (request.conversation) launch.session_state("CODEX_HOME");
        if (chatgpt) {
            // A ChatGPT login is Codex's own: `codex login` (in a terminal session) writes
            // its tokens to CODEX_HOME, and Codex refreshes them there. So CODEX_HOME is
            // the account's folder, kept across sessions (a conversation's links to it);
            // its tokens are readable inside, which is what a login that Codex refreshes
            // itself needs. Codex then talks to ChatGPT's backend, and to its sign-in host
            // for the login and refreshes.
            launch.account_state(request.conversation ? kAccountHome : "CODEX_HOME");
            launch.allow_host("chatgpt.com", 443).allow_host("auth.openai.com", 443);
        } else if (!local) {
            // Codex trusts the session's CA through SSL_CERT_FILE, which handlerd sets.
            launch.allow_host(kModelHost, 443);
        }
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<handler::codex::AppServerParser>>();
    }

    // After a handlerd restart the app server runs on: its thread is the one the last
    // parser reported, and the next prompt is a turn/start on it.
    std::unique_ptr<handler::sdk::EventParser> reopen_events(std::string_view,
                                                             std::string_view thread_id) override {
        auto parser = std::make_unique<handler::plugin_common::SdkEventParser<handler::codex::AppServerParser>>();
        parser->parser().adopt(thread_id);
        return parser;
    }
};

} // namespace

HD_HARNESS_PLUGIN(CodexHarness, "codex", "0.1.0", "Codex",
                  "OpenAI's Codex CLI, interactive in its TUI or headless (codex app-server) with structured events and permission requests")
