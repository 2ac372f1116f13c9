// handler_plugin_probe: loads plugin folders with handlerd's real loader and registry
// and prints what happened as JSON, so a script can check that a plugin built out of
// tree loads and answers. Storage is in memory; nothing is written.
//
//   handler_plugin_probe [--require-loaded ID]... DIR...
//
// Each DIR is scanned like a plugin folder (<DIR>/<name>/plugin.toml). Prints
// {"plugins":[record..., with "describe" and a sample "launch" for loaded harnesses]}.
// Exits 1 if a --require-loaded plugin did not load, 2 on bad usage.
#include "plugins/host_services.hpp"
#include "plugins/memory_plugin_storage.hpp"
#include "plugins/registry.hpp"

#include <boost/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <string>
#include <vector>

namespace {

namespace json = boost::json;
using namespace handler::plugins;

json::value launch_sample(LoadedHarness& harness) {
    LaunchRequest request;
    request.mode = LaunchMode::headless;
    request.session_id = "s_probe";
    request.project_path = "/tmp/probe-project";
    request.prompt = "say hello";
    auto spec = harness.launch(request);
    if (!spec) return json::object{{"error", spec.error().message}};
    json::array arguments;
    for (const std::string& argument : spec->arguments) arguments.emplace_back(argument);
    return json::object{{"image", spec->image}, {"arguments", arguments}, {"workdir", spec->workdir}};
}

} // namespace

int main(int argc, char** argv) {
    std::vector<PluginDir> dirs;
    std::vector<std::string> required;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--require-loaded" && i + 1 < argc) {
            required.emplace_back(argv[++i]);
        } else if (!arg.empty() && arg[0] == '-') {
            std::cerr << "usage: handler_plugin_probe [--require-loaded ID]... DIR...\n";
            return 2;
        } else {
            dirs.push_back(PluginDir{arg, "user"});
        }
    }
    if (dirs.empty()) {
        std::cerr << "usage: handler_plugin_probe [--require-loaded ID]... DIR...\n";
        return 2;
    }

    // stdout carries the JSON alone; the loader's log goes to stderr.
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("probe", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
    MemoryPluginStorage storage;
    HostServices services(storage);
    PluginRegistry registry(services);
    registry.load(dirs);

    json::array plugins;
    for (const PluginRecord& record : registry.list()) {
        json::object entry{{"id", record.id},           {"kind", record.kind},
                           {"version", record.version}, {"abi", record.abi},
                           {"name", record.name},       {"library", record.library},
                           {"manifest", record.manifest}, {"source", record.source},
                           {"state", to_string(record.state)}, {"message", record.message}};
        if (record.state == PluginState::loaded && record.kind == "harness") {
            auto harness = registry.harness(record.id);
            if (harness) {
                auto description = (*harness)->describe();
                entry["describe"] = description ? json::parse(*description)
                                                : json::value(json::object{{"error", description.error().message}});
                entry["launch"] = launch_sample(**harness);
            }
        }
        plugins.emplace_back(std::move(entry));
    }
    std::cout << json::serialize(json::object{{"plugins", plugins}}) << "\n";

    int status = 0;
    for (const std::string& id : required) {
        const auto record = registry.record(id);
        if (!record || record->state != PluginState::loaded) {
            std::cerr << "handler_plugin_probe: plugin '" << id << "' did not load"
                      << (record ? ": " + record->message : std::string(": not found")) << "\n";
            status = 1;
        }
    }
    return status;
}
