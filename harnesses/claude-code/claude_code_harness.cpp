// The Claude Code harness: Anthropic's `claude` CLI, its TUI for interactive sessions and
// `claude -p` speaking stream-json both ways for headless ones: stream_json.cpp turns its
// output into session events and answers its control requests, so that it can ask a
// client before it acts. A conversation is the same headless run with its stdin kept open
// for prompt after prompt, its state in the session's own folder so that `--resume`
// continues it in a later container. The flags, variables and hosts below were
// checked by running 2.1.328, the version the image pins.
#include "claude-code/stream_json.hpp"

#include <handler/plugin.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <plugin_common/events.hpp>
#include <plugin_common/launch.hpp>
#include <plugin_common/mcp.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <string>
#include <string_view>

namespace {

using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

constexpr const char* kVersion = "2.1.328";
constexpr const char* kModelHost = "api.anthropic.com";

// locked_down asks before every edit and command; guarded edits files without asking but
// still asks before commands; open asks nothing, the container being the sandbox. A
// headless run asks its clients (permission_request events), an interactive one in its TUI.
const char* permission_mode(hd_start_mode start_mode) {
    switch (start_mode) {
    case HD_START_LOCKED_DOWN: return "default";
    case HD_START_OPEN: return "bypassPermissions";
    case HD_START_GUARDED: break;
    }
    return "acceptEdits";
}

// Where Claude Code reads each credential the harness takes (describe() lists them).
// OpenRouter speaks Anthropic's API at its own base URL and takes its key as a bearer
// token, which is ANTHROPIC_AUTH_TOKEN's.
const char* key_variable(std::string_view account_kind) {
    if (account_kind == "anthropic-api-key") return "ANTHROPIC_API_KEY";
    if (account_kind == "claude-subscription") return "CLAUDE_CODE_OAUTH_TOKEN";
    if (account_kind == "openrouter-api-key") return "ANTHROPIC_AUTH_TOKEN";
    return nullptr;
}

// Ollama and llama.cpp servers speak Anthropic's Messages API too, at their own URL.
bool is_local(std::string_view account_kind) { return account_kind == "ollama" || account_kind == "llama-cpp"; }

// Claude Code's session ids are UUIDs (8-4-4-4-12 hex digits). The one to resume came out
// of a container (its system/init), so nothing else reaches the command line, where it
// could be read as an option or a session's name.
bool is_session_id(std::string_view id) { return handler::plugin_common::is_uuid(id); }

class ClaudeCodeHarness : public handler::sdk::Harness {
public:
    std::string describe() override {
        return R"({"default_hosts":["api.anthropic.com"],)"
               R"("credentials":[)"
               R"({"kind":"anthropic-api-key","env":"ANTHROPIC_API_KEY","label":"Anthropic API key"},)"
               R"({"kind":"claude-subscription","env":"CLAUDE_CODE_OAUTH_TOKEN","label":"Claude subscription token"},)"
               R"({"kind":"openrouter-api-key","env":"ANTHROPIC_AUTH_TOKEN","label":"OpenRouter API key"},)"
               R"j({"kind":"ollama","label":"Ollama server (its Anthropic-compatible API; name the model)"},)j"
               R"j({"kind":"llama-cpp","label":"llama.cpp server (its Anthropic-compatible API; name the model)"}],)j"
               R"j("models":[{"id":"sonnet","label":"Sonnet (latest)"},)j"
               R"j({"id":"opus","label":"Opus (latest)"},{"id":"haiku","label":"Haiku (latest)"}],)j"
               R"("modes":[{"id":"default","label":"Ask before acting"},)"
               R"({"id":"acceptEdits","label":"Accept edits"},)"
               R"({"id":"bypassPermissions","label":"Bypass permissions"},)"
               R"({"id":"plan","label":"Plan only"}],)"
               R"("thinking_levels":["low","medium","high","xhigh","max"],)"
               R"("launch_modes":["interactive","headless","conversation"],"prompt_content":["image"],"mcp":["stdio","http","sse"],)"
               R"("events":"structured","stdin":"protocol"})";
    }

    // Pinned, so that the parser meets the output format it was written against.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run(std::string("npm install -g --no-fund --no-audit @anthropic-ai/claude-code@") + kVersion);
        recipe.run("claude --version");
    }

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        const char* variable = key_variable(request.account_kind);
        const bool local = is_local(request.account_kind);
        if (variable == nullptr && !local && !request.account_kind.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Claude Code takes an Anthropic API key (anthropic-api-key), a Claude "
                              "subscription token (claude-subscription, from `claude setup-token`), an "
                              "OpenRouter key or a local ollama or llama-cpp server, not a '" +
                                  std::string(request.account_kind) + "' account");
        if (local && request.model.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Claude Code needs the name of the model to ask a local server for: handler run "
                              "AGENT --model NAME (as the server lists it)");
        const char* mode = permission_mode(request.start_mode);
        if (request.conversation && !request.headless())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "a conversation with Claude Code runs headless (stream-json on its stdin), "
                              "not in its TUI");
        // Quoted as JSON: the id is the container's, and may hold any bytes.
        if (!request.resume.empty() && !is_session_id(request.resume))
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Claude Code cannot resume " +
                                  boost::json::serialize(boost::json::string(
                                      handler::plugin_common::truncate_utf8(request.resume, 64))) +
                                  ": a Claude Code session id is a UUID (as its system/init reported it)");

        if (request.interactive()) {
            // A session's home is new every time, so the TUI would open on its first-run
            // screens (theme, sign-in method, "use this API key?", "trust this folder?",
            // and for bypassPermissions a warning to accept), the sign-in one reaching for
            // platform.claude.com, which the session may not reach. They are answered
            // beforehand in ~/.claude.json: the key it is to use is the session's stand-in
            // (Claude Code remembers a key by its last 20 characters), the folder is the
            // project the user chose, and the mode is the one the user started.
            boost::json::object config;
            config["hasCompletedOnboarding"] = true;
            config["theme"] = "dark";
            config["customApiKeyResponses"] = {{"approved", boost::json::array{"@KEY@"}},
                                               {"rejected", boost::json::array{}}};
            if (request.start_mode == HD_START_OPEN) config["bypassPermissionsModeAccepted"] = true;
            if (!request.project_path.empty())
                config["projects"] = {{request.project_path, {{"hasTrustDialogAccepted", true}}}};
            launch.arguments({"sh", "-c",
                              "key=$(printf %s \"${ANTHROPIC_API_KEY:-}\" | tail -c 20); "
                              "[ -e \"$HOME/.claude.json\" ] || printf %s \"$1\" | sed \"s/@KEY@/$key/\" "
                              "> \"$HOME/.claude.json\"; shift; exec claude \"$@\"",
                              "claude", boost::json::serialize(config)});
        } else {
            launch.argument("claude");
        }
        // The TUI takes its first message as a positional argument, so a prompt starting
        // with "-" would be read as an option; after "--" it cannot be.
        const bool prompt_looks_like_option =
            request.interactive() && !request.prompt.empty() && request.prompt.front() == '-';
        if (request.headless()) {
            // A conversation may start empty: its prompts come later, through the parser.
            if (request.prompt.empty() && !request.conversation)
                throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                                  "Claude Code needs a prompt to run headless (handler run claude-code "
                                  "-p \"what to do\"); start it interactively to talk to it instead");
            // The prompt is the first message on its stdin (the parser writes it); the
            // permission questions come as control requests on stdout and their answers go
            // back on stdin.
            launch.arguments({"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                              "--permission-prompt-tool", "stdio"});
        }
        launch.arguments({"--permission-mode", mode});
        if (!request.resume.empty()) launch.arguments({"--resume", request.resume});
        // An editor's MCP servers, and only those: stdio ones run here, in the container;
        // HTTP ones are reached through the session's proxy, under its rules.
        if (!request.mcp_servers.empty()) {
            try {
                launch.arguments({"--mcp-config", boost::json::serialize(handler::plugin_common::mcp_config(
                                                      request.mcp_servers)),
                                  "--strict-mcp-config"});
            } catch (const std::invalid_argument& error) {
                throw PluginError(HD_STATUS_INVALID_ARGUMENT, std::string("Claude Code: ") + error.what());
            }
        }
        if (!request.model.empty()) launch.arguments({"--model", request.model});
        if (!request.thinking_level.empty())
            launch.arguments({"--effort", handler::plugin_common::thinking_level(
                                              "Claude Code", request.thinking_level,
                                              handler::claude_code::kEffortLevels)});
        launch.arguments(request.extra_args);
        if (request.interactive() && !request.prompt.empty() && !prompt_looks_like_option)
            launch.argument(request.prompt); // the TUI starts with it as the first message
        if (prompt_looks_like_option) launch.arguments({"--", request.prompt});

        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (request.conversation) {
            // Claude Code keeps everything in its config folder (transcripts under
            // projects/<cwd>/<session id>.jsonl, which --resume reads, and its .claude.json),
            // and HOME only when CLAUDE_CONFIG_DIR is unset: checked with 2.1.328.
            launch.session_state("CLAUDE_CONFIG_DIR");
            launch.input(handler::claude_code::StreamJsonParser::initialize_request());
        }
        if (variable != nullptr) launch.env_from_secret(variable, request.account_kind);
        if (request.account_kind == "openrouter-api-key") {
            launch.env("ANTHROPIC_BASE_URL", "https://openrouter.ai/api");
        } else if (local) {
            // The server takes no key; Claude Code wants one, and the token keeps it from
            // asking to approve an API key. Its side requests (titles, summaries) go to
            // the small model, which must be one the server has too.
            launch.env("ANTHROPIC_BASE_URL", request.account_base_url)
                .env("ANTHROPIC_AUTH_TOKEN", "handler-local")
                .env("ANTHROPIC_SMALL_FAST_MODEL", request.model)
                .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", request.model);
        }
        // Only the model API is needed: no telemetry, error reports, feature-flag fetches
        // or self-updates (the image pins the version), so the session's network rules
        // can stay at api.anthropic.com.
        launch.env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1");
        // Claude Code refuses bypassPermissions as root unless told it is sandboxed, which
        // in a session container it is.
        launch.env("IS_SANDBOX", "1");
        // A local server's rule handlerd adds itself; OpenRouter's host is its key's.
        if (request.account_kind == "openrouter-api-key") launch.allow_host("openrouter.ai", 443);
        else if (!local) launch.allow_host(kModelHost, 443);
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<handler::claude_code::StreamJsonParser>>();
    }

    // handlerd restarted while Claude Code runs: the new parser knows the session it is in.
    std::unique_ptr<handler::sdk::EventParser> reopen_events(std::string_view,
                                                             std::string_view harness_session_id) override {
        auto parser = std::make_unique<handler::plugin_common::SdkEventParser<handler::claude_code::StreamJsonParser>>();
        parser->parser().adopt(harness_session_id);
        return parser;
    }
};

} // namespace

HD_HARNESS_PLUGIN(ClaudeCodeHarness, "claude-code", "0.1.0", "Claude Code",
                  "Anthropic's Claude Code CLI, interactive in its TUI or headless with structured events")
