// The pi harness: the pi coding agent (@mariozechner/pi-coding-agent), its TUI for
// interactive sessions and `pi --mode rpc` for headless ones, one-shot runs and
// conversations alike, whose protocol rpc_mode.cpp speaks. The flags, variables and hosts
// below were checked by running 0.73.1, the version the image pins.
#include "pi/rpc_mode.hpp"

#include <handler/plugin.hpp>
#include <plugin_common/launch.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

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

bool is_local(std::string_view account_kind) { return account_kind == "ollama" || account_kind == "llama-cpp"; }

// pi has no base-URL variable: a provider of its own is a models.json entry. Ollama and
// llama.cpp both speak the OpenAI chat completions API under /v1 and take no key (pi
// wants one, so it gets a word).
std::string local_models_json(std::string_view base_url, std::string_view model) {
    std::string url(base_url);
    if (!url.ends_with("/v1")) url += "/v1";
    boost::json::object provider{{"baseUrl", url},
                                 {"api", "openai-completions"},
                                 {"apiKey", "handler-local"},
                                 {"models", boost::json::array{boost::json::object{{"id", model}}}}};
    return boost::json::serialize(boost::json::object{{"providers", {{"handler-local", std::move(provider)}}}});
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

// Whether `id` has the shape of pi's session ids (UUIDs, which it writes in lowercase).
// A resume's id comes from the session's earlier container, so it is checked before pi's
// --session sees it: pi would read anything with a "/" in it as a file's path.
bool is_session_id(std::string_view id) { return handler::plugin_common::is_uuid(id, true); }

class PiHarness : public handler::sdk::Harness {
public:
    std::string describe() override {
        return R"({"default_hosts":["api.anthropic.com"],)"
               R"("credentials":[)"
               R"({"kind":"anthropic-api-key","env":"ANTHROPIC_API_KEY","label":"Anthropic API key"},)"
               R"({"kind":"claude-subscription","env":"ANTHROPIC_OAUTH_TOKEN","label":"Claude subscription token"},)"
               R"({"kind":"openai-api-key","env":"OPENAI_API_KEY","label":"OpenAI API key"},)"
               R"({"kind":"openrouter-api-key","env":"OPENROUTER_API_KEY","label":"OpenRouter API key"},)"
               R"({"kind":"mistral-api-key","env":"MISTRAL_API_KEY","label":"Mistral API key"},)"
               R"j({"kind":"ollama","label":"Ollama server (its OpenAI-compatible API; name the model)"},)j"
               R"j({"kind":"llama-cpp","label":"llama.cpp server (its OpenAI-compatible API; name the model)"}],)j"
               R"("modes":[{"id":"default","label":"Runs its tools without asking"}],)"
               R"("thinking_levels":["off","minimal","low","medium","high","xhigh"],)"
               R"("launch_modes":["interactive","headless","conversation"],"prompt_content":["image"],"events":"structured",)"
               // Per harness, not per launch: headless runs all speak rpc, one-shot ones too.
               R"("stdin":"protocol"})";
    }

    // Pinned, so that the parser meets the output format it was written against.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run(std::string("npm install -g --no-fund --no-audit @mariozechner/pi-coding-agent@") + kVersion);
        recipe.run("pi --version");
    }

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        const Provider* provider = provider_for(request.account_kind);
        const bool local = is_local(request.account_kind);
        if (provider == nullptr && !local && !request.account_kind.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "pi takes an Anthropic, OpenAI, OpenRouter or Mistral API key, a Claude "
                              "subscription token or a local ollama or llama-cpp server, not a '" +
                                  std::string(request.account_kind) + "' account");
        if (local && request.model.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "pi needs the name of the model to ask a local server for: handler run AGENT "
                              "--model NAME (as the server lists it)");
        if (request.headless() && !request.conversation && request.resume.empty() && request.prompt.empty())
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              "pi needs a prompt to run headless (handler run pi -p \"what to do\"); "
                              "start it interactively to talk to it instead");
        if (!request.resume.empty() && !is_session_id(request.resume))
            throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                              // Quoted as JSON: it came from inside a container, and may hold escapes.
                              "pi cannot resume " +
                                  boost::json::serialize(boost::json::value(
                                      handler::plugin_common::truncate_utf8(request.resume, 80))) +
                                  ": that is not one of pi's session ids (a UUID such as "
                                  "01a2324e-88ae-70b0-a640-6b7efc57e908)");

        if (local)
            launch.arguments(handler::plugin_common::with_home_file(
                ".pi/agent/models.json", local_models_json(request.account_base_url, request.model), "pi", false));
        else
            launch.argument("pi");
        // A conversation's transcript is kept in the session's own folder, so that a later
        // container continues it; a one-shot run's would land in the session's home,
        // which ends with it.
        const bool keeps_session = request.conversation || !request.resume.empty();
        if (request.headless()) launch.arguments({"--mode", "rpc"});
        if (request.headless() && !keeps_session) launch.argument("--no-session");
        if (!request.resume.empty()) launch.arguments({"--session", request.resume});
        if (local)
            launch.arguments({"--provider", "handler-local"});
        else if (provider != nullptr && request.model.find('/') == std::string_view::npos)
            launch.arguments({"--provider", provider->provider}); // "provider/id" names its own
        if (!request.model.empty()) launch.arguments({"--model", request.model});
        if (!request.thinking_level.empty())
            launch.arguments({"--thinking", handler::pi::thinking_level(request.thinking_level)});
        launch.arguments({"--tools", tools_for(request.start_mode)});
        launch.arguments(request.extra_args);
        if (request.interactive() && !request.prompt.empty()) {
            // pi reads any argument starting with "-" as an option, and takes no "--";
            // a leading space keeps the prompt a prompt, and the model reads it the same.
            launch.argument(request.prompt.front() == '-' ? " " + std::string(request.prompt)
                                                          : std::string(request.prompt));
        }
        // Headless, the prompt is an rpc command (the parser's prompt()), after these.
        if (request.headless()) launch.input(handler::pi::RpcModeParser::opening(request.project_path));
        if (keeps_session) launch.session_state("PI_CODING_AGENT_SESSION_DIR");

        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (provider != nullptr) {
            launch.env_from_secret(provider->variable, request.account_kind);
            launch.allow_host(provider->host, 443);
        }
        // No version check, no install report: the model API is the only host it needs.
        launch.env("PI_OFFLINE", "1").env("PI_SKIP_VERSION_CHECK", "1").env("PI_TELEMETRY", "0");
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<handler::pi::RpcModeParser>>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(PiHarness, "pi", "0.1.0", "pi",
                  "The pi coding agent, interactive in its TUI or headless and in conversations (pi --mode rpc) "
                  "with structured events")
