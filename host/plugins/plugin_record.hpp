// What handlerd knows about each plugin it found, loaded or refused. A refusal is kept
// and listed with its reason, never silently skipped (STYLE.md, after OBS and fcitx5).
#pragma once

#include "plugins/harness_description.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace handler::plugins {

enum class PluginState {
    loaded = 1,   // code loaded and the instance created
    refused,      // checked and rejected before or while loading: see message
    failed,       // loaded, but create() failed: see message
    disabled,     // named in [plugins] disabled: found, its code never loaded
};

std::string_view to_string(PluginState state);

struct PluginRecord {
    std::string id;          // from the manifest (or the file name if it has none)
    std::string kind;        // "harness" | "addon" | "" if unknown
    std::string version;     // the plugin's own version
    std::string abi;         // "major.minor" it was built against ("" if unknown)
    std::string name;        // for people
    std::string library;     // absolute path of the .so
    std::string manifest;    // absolute path of plugin.toml ("" if missing)
    std::string source;      // "builtin" | "user"
    PluginState state = PluginState::refused;
    std::string message;     // why refused/failed: names the file, versions and the fix
    // A loaded harness's describe(), read once at load; when it could not be read,
    // description_error says why (naming the plugin) and its sessions are refused.
    std::optional<HarnessDescription> harness;
    std::string description_error;
};

} // namespace handler::plugins
