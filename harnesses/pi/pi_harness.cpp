// The pi harness: the pi coding agent (@mariozechner/pi-coding-agent), its TUI for
// interactive sessions and `pi -p --mode json` for headless ones, whose output
// json_mode.cpp turns into session events. The flags, variables and hosts below were
// checked by running 0.73.1, the version the image pins.
#include "pi/json_mode.hpp"

#include <handler/plugin.hpp>
#include <plugin_common/launch.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <array>
#include <string>
#include <string_view>

namespace {

using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

constexpr const char* kVersion = "0.73.1";

// The providers pi reaches with a key Handler holds: pi's name for the provider, where
// pi reads the key, and the provider's API host (pi's built-in base URLs).
struct Provider {
    std::string_view account_kind;
    std::string_view provider;
    std::string_view variable;
    std::string_view host;
};
constexpr std::array<Provider, 5> kProviders = {{
    {"anthropic-api-key", "anthropic", "ANTHROPIC_API_KEY", "api.anthropic.com"},
    // pi sends a Claude subscription token as a bearer token to the same API.
    {"claude-subscription", "anthropic", "ANTHROPIC_OAUTH_TOKEN", "api.anthropic.com"},
    {"openai-api-key", "openai", "OPENAI_API_KEY", "api.openai.com"},
    {"openrouter-api-key", "openrouter", "OPENROUTER_API_KEY", "openrouter.ai"},
    {"mistral-api-key", "mistral", "MISTRAL_API_KEY", "api.mistral.ai"},
}};

const Provider* provider_for(std::string_view account_kind) {
    for (const Provider& provider : kProviders)
        if (provider.account_kind == account_kind) return &provider;
    return nullptr;
}

// pi asks before nothing: its tools simply run. So the start modes choose which tools it
// has: locked down only reads and searches, guarded has pi's default set (read, bash,
// edit, write), open adds the search tools to that.
const char* tools_for(hd_start_mode start_mode) {
    switch (start_mode) {
    case HD_START_LOCKED_DOWN: return "read,grep,find,ls";
    case HD_START_OPEN: return "read,bash,edit,write,grep,find,ls";
    case HD_START_GUARDED: break;
    }
    return "read,bash,edit,write";
}

class PiHarness : public handler::sdk::Harness {
public:
    std::string describe() override {
        return R"({"default_hosts":["api.anthropic.com"],)"
               R"("credentials":[)"
               R"({"kind":"anthropic-api-key","env":"ANTHROPIC_API_KEY","label":"Anthropic API key"},)"
               R"({"kind":"claude-subscription","env":"ANTHROPIC_OAUTH_TOKEN","label":"Claude subscription token"},)"
               R"({"kind":"openai-api-key","env":"OPENAI_API_KEY","label":"OpenAI API key"},)"
               R"({"kind":"openrouter-api-key","env":"OPENROUTER_API_KEY","label":"OpenRouter API key"},)"
               R"({"kind":"mistral-api-key","env":"MISTRAL_API_KEY","label":"Mistral API key"}],)"
               R"("modes":[{"id":"default","label":"Runs its tools without asking"}],)"
               R"("launch_modes":["interactive","headless"],"events":"structured"})";
    }

    // Pinned, so that the parser meets the output format it was written against.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run(std::string("npm install -g --no-fund --no-audit @mariozechner/pi-coding-agent@") + kVersion);
        recipe.run("pi --version");
    }

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        const Provider* provider = provider_for(request.account_kind);
        if (provider == nullptr && !request.account_kind.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "pi takes an Anthropic, OpenAI, OpenRouter or Mistral API key or a Claude "
                              "subscription token, not a '" + std::string(request.account_kind) +
                                  "' account (pi reaches a local server only through its models.json, "
                                  "which Handler cannot give it yet)");
        if (request.headless() && request.prompt.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "pi needs a prompt to run headless (handler run pi -p \"what to do\"); "
                              "start it interactively to talk to it instead");

        if (request.headless()) {
            // pi -p reads all of a stdin that is not a terminal before it starts; a
            // session's never ends. Its session files would land in the session's home,
            // which ends with it.
            launch.arguments(handler::plugin_common::without_stdin("pi"));
            launch.arguments({"-p", "--mode", "json", "--no-session"});
        } else {
            launch.argument("pi");
        }
        // A model given as provider/id names its provider itself.
        if (provider != nullptr && request.model.find('/') == std::string_view::npos)
            launch.arguments({"--provider", provider->provider});
        if (!request.model.empty()) launch.arguments({"--model", request.model});
        launch.arguments({"--tools", tools_for(request.start_mode)});
        launch.arguments(request.extra_args);
        if (!request.prompt.empty()) {
            // pi reads any argument starting with "-" as an option, and takes no "--";
            // a leading space keeps the prompt a prompt, and the model reads it the same.
            launch.argument(request.prompt.front() == '-' ? " " + std::string(request.prompt)
                                                          : std::string(request.prompt));
        }

        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (provider != nullptr) {
            launch.env_from_secret(provider->variable, request.account_kind);
            launch.allow_host(provider->host, 443);
        }
        // No version check, no install report: the model API is the only host it needs.
        launch.env("PI_OFFLINE", "1").env("PI_SKIP_VERSION_CHECK", "1").env("PI_TELEMETRY", "0");
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<handler::pi::JsonModeParser>>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(PiHarness, "pi", "0.1.0", "pi",
                  "The pi coding agent, interactive in its TUI or headless (pi -p --mode json) with structured events")
