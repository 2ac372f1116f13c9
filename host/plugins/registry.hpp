// Every plugin handlerd found, with its state, and the loaded ones by id. handlerd makes
// one at start:
//
//     handler::plugins::HostServices services(storage);
//     handler::plugins::PluginRegistry registry(services);
//     registry.load(handler::plugins::default_search_path(paths));
//     for (const PluginRecord& record : registry.list()) ...   // `handler plugins list`
//     auto shell = registry.harness("shell");                  // Result<shared_ptr<...>>
//     if (shell) auto spec = (*shell)->launch(request);
//
// Thread-safe. Plugins are loaded only by load(); there is no unload (loader.hpp says
// why), so a harness obtained here stays valid for as long as the caller holds it.
#pragma once

#include "core/result.hpp"
#include "plugins/loaded_plugin.hpp"
#include "plugins/loader.hpp"
#include "plugins/plugin_record.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::plugins {

class HostServices;

class PluginRegistry {
public:
    // `services` must outlive the registry and every plugin obtained from it.
    explicit PluginRegistry(HostServices& services);
    PluginRegistry(const PluginRegistry&) = delete;
    PluginRegistry& operator=(const PluginRegistry&) = delete;
    ~PluginRegistry();

    // Scans each folder in order and loads what it finds; appends to what an earlier
    // call loaded. An id already held by a loaded or failed plugin is refused.
    // Plugins whose id is in `disabled` are listed as disabled and their code not loaded.
    void load(const std::vector<PluginDir>& search_path,
              const std::vector<std::string>& disabled = {});

    // Every plugin found, in search-path order, loaded or not.
    std::vector<PluginRecord> list() const;
    std::optional<PluginRecord> record(std::string_view id) const;

    // The loaded harness/addon `id`. Errors: not_found (no such plugin, or it is of the
    // other kind), unavailable (refused or failed: the message is the record's).
    Result<std::shared_ptr<LoadedHarness>> harness(std::string_view id) const;
    Result<std::shared_ptr<LoadedAddon>> addon(std::string_view id) const;

    std::vector<std::shared_ptr<LoadedHarness>> harnesses() const;
    std::vector<std::shared_ptr<LoadedAddon>> addons() const;

private:
    struct Entry {
        PluginRecord record;
        std::shared_ptr<LoadedHarness> harness;
        std::shared_ptr<LoadedAddon> addon;
    };

    static void describe(LoadedHarness& harness, PluginRecord& record);
    const Entry* find_loaded_or_failed(std::string_view id) const;
    Result<const Entry*> find_usable(std::string_view id, std::string_view kind) const;

    HostServices& services_;
    mutable std::mutex mutex_;
    std::vector<Entry> entries_;
};

} // namespace handler::plugins
