// Finds plugins on the search path and loads them, checking everything it can before
// running any of a plugin's code (docs/contracts.md, "Loading"):
//
//   1. plugin.toml beside the .so: parsed; a .so without one is refused.
//   2. the manifest's ABI: major == HD_ABI_MAJOR and minor <= HD_ABI_MINOR.
//   3. the id is not taken by a plugin earlier on the search path.
//   4. dlopen (RTLD_NOW | RTLD_LOCAL, so an undefined symbol fails here, with its name,
//      and plugins cannot see each other's symbols), then hd_plugin_entry.
//   5. the code's hd_plugin_info, read with read_struct: ABI, kind and id must agree
//      with the manifest; the kind's vtable must be there.
//   6. create() with the plugin's host services; a failure there leaves it "failed".
//
// Every outcome is a PluginRecord whose message names the file, the versions where
// they matter, and the fix. Nothing is skipped silently.
//
// A loaded library is never unloaded, not even when its registry goes away or its
// create() failed: the plugin may have started threads, registered atexit or
// thread_local destructors, or left pointers to its static strings with the host, and
// dlclose under any of those crashes later, far from the cause. LLVM, OBS and fcitx5
// do the same. The handles are kept in a process-wide list that is never destroyed.
#pragma once

#include "core/paths.hpp"
#include "plugins/loaded_plugin.hpp"
#include "plugins/plugin_record.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace handler::plugins {

class HostServices;

// A folder holding plugin folders: <path>/<name>/plugin.toml + the .so it names.
struct PluginDir {
    std::filesystem::path path;
    std::string source; // "builtin" | "user": shown in PluginRecord::source
};

// The built-in folder (handler::builtin_plugin_dir(), beside the binary) first, then the
// user's (Paths::user_plugin_dir()). First wins on a duplicate id, so a user folder
// cannot shadow a built-in plugin.
std::vector<PluginDir> default_search_path(const Paths& paths);

// One thing found in a PluginDir: a plugin folder's manifest, or a .so that has no
// manifest beside it (manifest empty), which is refused.
struct PluginCandidate {
    std::filesystem::path manifest;
    std::filesystem::path library; // set only when manifest is empty
    std::string source;
};

// In name order. A missing folder yields nothing.
std::vector<PluginCandidate> scan_plugin_dir(const PluginDir& dir);

struct LoadOutcome {
    PluginRecord record;
    std::shared_ptr<LoadedHarness> harness; // set iff loaded and kind harness
    std::shared_ptr<LoadedAddon> addon;     // set iff loaded and kind addon
};

// The record that already holds `id` on the search path, or nullptr.
using ClaimedBy = std::function<const PluginRecord*(std::string_view id)>;
// Whether the settings disable plugin `id`: its manifest is read, its code never loaded.
using IsDisabled = std::function<bool(std::string_view id)>;

LoadOutcome load_plugin(const PluginCandidate& candidate, HostServices& services,
                        const ClaimedBy& claimed_by, const IsDisabled& is_disabled = {});

} // namespace handler::plugins
