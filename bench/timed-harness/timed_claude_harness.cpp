// The timed-claude harness, for bench/events.sh's timed mode only (bench/timed-harness/
// CMakeLists.txt keeps it out of the build and the install): Claude Code's headless
// stream-json launch, with timed_claude.py in its place and no model behind it, read by
// the claude-code harness's own parser. handlerd, the shim, the event store, the events
// WebSocket and handler acp are then what they are for Claude Code, and a timed block's
// latency starts at the harness's write.
#include "claude-code/stream_json.hpp"

#include "timed_script.hpp"

#include <handler/plugin.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <string>

namespace {

using handler::claude_code::StreamJsonParser;

class TimedClaudeHarness : public handler::sdk::Harness {
public:
    // No credentials and no hosts: there is no model to reach.
    std::string describe() override {
        return R"({"default_hosts":[],"credentials":[],"models":[],)"
               R"("modes":[{"id":"default","label":"Ask before acting"}],)"
               R"("launch_modes":["headless","conversation"],"events":"structured","stdin":"protocol"})";
    }

    // The script as a file of the image; the quoted heredoc takes it byte for byte.
    void image_recipe(handler::sdk::RecipeBuilder& recipe) override {
        recipe.run(std::string("cat > /usr/local/bin/timed-claude <<'TIMED_CLAUDE_END'\n") +
                   handler::bench::kTimedClaudeScript + "TIMED_CLAUDE_END\nchmod 755 /usr/local/bin/timed-claude");
        recipe.run("timed-claude --version");
    }

    // The arguments the claude-code harness gives Claude Code for a headless run.
    void launch(const handler::sdk::LaunchRequest& request, handler::sdk::LaunchBuilder& launch) override {
        if (!request.headless())
            throw handler::sdk::PluginError(HD_STATUS_INVALID_ARGUMENT, "timed-claude runs headless only");
        launch.arguments({"timed-claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                          "--verbose", "--permission-prompt-tool", "stdio", "--permission-mode", "default"});
        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (request.conversation) launch.input(StreamJsonParser::initialize_request());
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<handler::plugin_common::SdkEventParser<StreamJsonParser>>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(TimedClaudeHarness, "timed-claude", "0.1.0", "Timed Claude (bench only)",
                  "bench/events.sh's stand-in for Claude Code: its stream-json with timed text blocks and no "
                  "model, read by the claude-code parser")
