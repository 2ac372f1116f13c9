// The Mistral Vibe harness: Mistral's `vibe` CLI, its TUI for interactive sessions and
// `vibe --prompt … --output streaming` for headless ones, whose output streaming.cpp
// turns into session events. Vibe is a Python program from PyPI, which the machines this
// was written on cannot reach, so nothing here was run: the flags, variables and hosts
// were read in the source of 2.18.4 (github.com/mistralai/mistral-vibe), the version
// the image pins; the files are named where each fact comes from.
#include "vibe/streaming.hpp"

#include <plugin_common/launch.hpp>

#include <handler/plugin.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <string>
#include <string_view>

namespace {

using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

constexpr const char* kVersion = "2.18.4";
constexpr const char* kModelHost = "api.mistral.ai";
constexpr const char* kVenv = "/opt/mistral-vibe";

// Vibe's own agents (vibe/core/agents/models.py) are its permission modes. locked_down
// is "default": writing files, commands other than read-only ones (bash's allowlist:
// ls, cat, git status, ...), the web tools and subagents ask first, and a headless run
// has nobody to ask, so Vibe refuses those calls ("Tool execution not permitted.",
// vibe/core/agent_loop.py _ask_approval) and the model carries on without them. guarded
// is "accept-edits": write_file and edit run without asking, the rest as in default.
// open is "auto-approve" (bypass_tool_permissions): nothing asks, the container being
// the sandbox.
const char* agent_for(hd_start_mode start_mode) {
    switch (start_mode) {
    case HD_START_LOCKED_DOWN: return "default";
    case HD_START_OPEN: return "auto-approve";
    case HD_START_GUARDED: break;
    }
    return "accept-edits";
}

class VibeHarness : public handler::sdk::Harness {
public:
    // The models are the aliases of Vibe's built-in model list (vibe/core/config/_settings.py
    // DEFAULT_MODELS), less "local", which needs a llama.cpp server. The modes are its agents.
    std::string describe() override {
        return R"({"default_hosts":["api.mistral.ai"],)"
               R"("credentials":[{"kind":"mistral-api-key","env":"MISTRAL_API_KEY","label":"Mistral API key"}],)"
               R"j("models":[{"id":"mistral-medium-3.5","label":"Mistral Medium 3.5 (Vibe's default)"},)j"
               R"({"id":"devstral-small","label":"Devstral Small"}],)"
               R"("modes":[{"id":"default","label":"Ask before acting"},)"
               R"({"id":"accept-edits","label":"Accept edits"},)"
               R"({"id":"auto-approve","label":"Auto-approve"},)"
               R"j({"id":"plan","label":"Plan only (read-only)"}],)j"
               R"("launch_modes":["interactive","headless"],"events":"structured"})";
    }

    // Pinned, so that the parser meets the output format it was written against; the
    // package pins each of its dependencies exactly, so this installs the same set every
    // time. Debian's python3 (3.13 in trixie; Vibe needs 3.12 or newer) has no ensurepip
    // without python3-venv, which the base image leaves out. A venv keeps Vibe's ~80
    // packages out of the system's Python.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                   "python3-venv && rm -rf /var/lib/apt/lists/*");
        recipe.run(std::string("python3 -m venv ") + kVenv + " && " + kVenv +
                   "/bin/pip install --no-cache-dir --disable-pip-version-check mistral-vibe==" + kVersion);
        recipe.run(std::string("ln -s ") + kVenv + "/bin/vibe /usr/local/bin/vibe");
        recipe.run("vibe --version");
    }

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        const bool has_key = request.account_kind == "mistral-api-key";
        if (request.account_kind == "mistral-login")
            // Vibe's sign-in (`vibe --setup`, the browser flow of vibe/setup/auth) ends by
            // saving an API key to ~/.vibe/.env: there is no login token it reads.
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Mistral Vibe cannot use a Mistral login: its own sign-in only creates an API "
                              "key. Create one at console.mistral.ai and add it as a mistral-api-key account "
                              "(handler account add NAME --kind mistral-api-key --api-key-stdin)");
        if (!has_key && !request.account_kind.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Mistral Vibe takes a Mistral API key (mistral-api-key), not a '" +
                                  std::string(request.account_kind) + "' account");
        const char* agent = agent_for(request.start_mode);

        // The prompt of a headless run is --prompt's value, so "--" cannot protect one
        // that starts with "-" (argparse would end the options there and leave --prompt
        // empty); "--prompt=TEXT" keeps any text whole. The TUI's prompt is positional:
        // after "--" it cannot be read as an option.
        const bool prompt_looks_like_option = !request.prompt.empty() && request.prompt.front() == '-';
        if (request.headless()) {
            if (request.prompt.empty())
                throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                                  "Mistral Vibe needs a prompt to run headless (handler run vibe -p \"what to "
                                  "do\"); start it interactively to talk to it instead");
            // Vibe reads all of stdin before it starts whenever stdin is not a terminal
            // (vibe/cli/cli.py get_prompt_from_stdin), and uses it only when --prompt is
            // empty, which it never is here. A headless session's stdin is the caller's
            // (a terminal left open would stall the run), so it gets /dev/null instead.
            launch.arguments(handler::plugin_common::without_stdin("vibe"));
            if (prompt_looks_like_option) launch.argument("--prompt=" + std::string(request.prompt));
            else launch.arguments({"--prompt", request.prompt});
            launch.arguments({"--output", "streaming"});
        } else {
            launch.argument("vibe");
        }
        launch.arguments({"--agent", agent});
        // Trusting the folder makes Vibe load the project's .vibe/ (its config, Python
        // tools, agents, hooks) and AGENTS.md. A tool there is code that runs when Vibe
        // starts, which a guarded session could write for the next one to run without
        // asking; so only open sessions, where everything runs anyway, trust it. Otherwise
        // a headless run ignores them (with a warning on stderr) and the TUI asks.
        if (request.start_mode == HD_START_OPEN) launch.argument("--trust");
        launch.arguments(request.extra_args);
        if (request.interactive() && !request.prompt.empty()) {
            if (prompt_looks_like_option) launch.argument("--");
            launch.argument(request.prompt); // the TUI starts with it as the first message
        }

        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (has_key) launch.env_from_secret("MISTRAL_API_KEY", request.account_kind);
        // Every config field can be set as VIBE_<FIELD>, and such variables win over
        // config.toml (vibe/core/config/_settings.py: env_prefix "VIBE_", env before the
        // TOML source). No telemetry (which also switches off Sentry error reports, the
        // experiments service and tracing) and no PyPI update checks (the image pins the
        // version), so the session's network rules can stay at api.mistral.ai.
        launch.env("VIBE_ENABLE_TELEMETRY", "false").env("VIBE_ENABLE_UPDATE_CHECKS", "false");
        // Vibe has no model flag; the model is the config's active_model, an alias.
        if (!request.model.empty()) launch.env("VIBE_ACTIVE_MODEL", request.model);
        if (!request.thinking_level.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "Mistral Vibe takes no thinking level; its model's own setting applies");
        launch.allow_host(kModelHost, 443);
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<handler::vibe::StreamingParser>>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(VibeHarness, "vibe", "0.1.0", "Mistral Vibe",
                  "Mistral's Vibe CLI, interactive in its TUI or headless with structured events")
