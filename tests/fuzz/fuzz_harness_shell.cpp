// The shell harness's output parser, which lives inside its plugin: loaded from the build
// tree by the real loader and fed through the host's event stream, as handlerd does (and
// as tests/unit/plugins/shell_harness_test.cpp does). Input: the shell's stdout.
//
// Properties: every event is of a known kind and has its kind's shape; the text of the
// events is the same however stdout is cut (a UTF-8 sequence split between pieces waits
// for its end); valid UTF-8 comes through unchanged.
#include "core/utf8.hpp"
#include "plugins/host_services.hpp"
#include "plugins/memory_plugin_storage.hpp"
#include "plugins/registry.hpp"

#include "fuzz/event_contract.hpp"
#include "fuzz/fuzz_support.hpp"

#include <boost/json/parse.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace {

using handler::fuzz::check;
namespace plugins = handler::plugins;

struct Shell {
    plugins::MemoryPluginStorage storage;
    plugins::HostServices services{
        storage, std::make_shared<spdlog::logger>("quiet", std::make_shared<spdlog::sinks::null_sink_mt>())};
    plugins::PluginRegistry registry{services};
    std::shared_ptr<plugins::LoadedHarness> harness;

    Shell() {
        registry.load({plugins::PluginDir{HANDLER_BUILTIN_PLUGIN_DIR, "builtin"}});
        auto found = registry.harness("shell");
        check(found.ok(), "the shell plugin loads from " HANDLER_BUILTIN_PLUGIN_DIR,
              found ? "" : found.error().message);
        harness = *found;
    }
};

// The text of the events `pieces` give.
std::string text_of(Shell& shell, const std::vector<std::string_view>& pieces) {
    auto stream = shell.harness->open_events("s_1");
    check(stream.ok(), "the shell opens an event stream");
    std::string text;
    for (const auto piece : pieces) {
        auto parsed = (*stream)->feed(piece);
        check(parsed.ok(), "the shell parses any output", parsed ? "" : parsed.error().message);
        for (const auto& event : parsed->events) {
            handler::fuzz::check_event(static_cast<hd_event_kind>(event.kind), event.json);
            check(event.kind == plugins::EventKind::agent_message_chunk, "a shell's output is message text", event.json);
            text += boost::json::parse(event.json).at("content").at("text").as_string();
        }
    }
    return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Shell shell;
    const std::string_view output = handler::fuzz::as_text(data, size);
    const std::string whole = text_of(shell, {output});
    const std::string cut = text_of(shell, handler::fuzz::pieces_of(output));
    check(whole == cut, "the text is the same however stdout is cut", output);
    if (handler::is_valid_utf8(output)) check(whole == output, "valid UTF-8 comes through unchanged", output);
    return 0;
}
