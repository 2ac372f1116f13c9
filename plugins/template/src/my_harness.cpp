// A harness plugin for a made-up coding agent, `my-agent`, that shows every part of
// the SDK a real harness uses. Replace my-agent with your agent's CLI.
#include <handler/plugin.hpp>

#include <string>

namespace {

using handler::sdk::EventSink;
using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

// my-agent --output jsonl prints one JSON object per line. A real parser maps each
// object to the event vocabulary in docs/contracts.md; this one forwards each line's
// text as an agent message.
class LineEvents : public handler::sdk::EventParser {
public:
    void feed(std::string_view bytes, EventSink& sink) override {
        pending_.append(bytes);
        std::size_t end;
        while ((end = pending_.find('\n')) != std::string::npos) {
            const std::string line = pending_.substr(0, end);
            pending_.erase(0, end + 1);
            if (line.empty()) continue;
            sink.emit(HD_EVENT_AGENT_MESSAGE_CHUNK,
                      R"({"content":{"type":"text","text":)" + handler::sdk::json_quote(line) + "}}");
        }
    }

private:
    std::string pending_; // a line can arrive in several pieces
};

class MyHarness : public handler::sdk::Harness {
public:
    // What handlerd shows and offers for this harness (docs/contracts.md, "describe").
    std::string describe() override {
        return R"({"default_hosts":["api.example.com"],)"
               R"("credentials":[{"kind":"example-api-key","env":"EXAMPLE_API_KEY"}],)"
               R"("models":[{"id":"example-large","label":"Example Large"}],)"
               R"("modes":[],"launch_modes":["interactive","headless"],"events":"structured"})";
    }

    // Runs once when handlerd builds this harness's image on top of the base image.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run("npm install -g my-agent@1").env("MY_AGENT_TELEMETRY", "off");
    }

    // Describes the container for one session. Throw PluginError to refuse.
    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        launch.argument("my-agent");
        if (!request.model.empty()) launch.arguments({"--model", request.model});
        if (request.headless()) {
            if (request.prompt.empty())
                throw PluginError(HD_STATUS_INVALID_ARGUMENT, "my-agent needs a prompt to run headless");
            launch.arguments({"--output", "jsonl", "--prompt", request.prompt});
        }
        launch.arguments(request.extra_args).workdir(request.project_path);

        // The model provider must stay reachable in every network mode.
        launch.allow_host("api.example.com", 443);
        // The container only ever sees a stand-in; handlerd's proxy swaps in the real
        // key on requests to the key's own hosts.
        if (request.account_kind == "example-api-key")
            launch.env_from_secret("EXAMPLE_API_KEY", "example-api-key");

        host().debug("launching my-agent for session " + std::string(request.session_id));
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<LineEvents>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(MyHarness, "my-harness", "0.1.0", "My harness",
                  "Runs my-agent, a coding agent, in a Handler session")
