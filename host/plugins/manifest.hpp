// plugin.toml: the metadata beside every plugin's .so, read before any of the plugin's
// code is loaded (STYLE.md, after fcitx5), so an incompatible plugin is refused without
// running its static constructors. Format (docs/contracts.md):
//
//     id = "shell"                 # [a-z0-9][a-z0-9._-]*, at most 64; equals the code's id
//     kind = "harness"             # "harness" | "addon"
//     version = "0.1.0"            # the plugin's own version
//     abi = "1.0"                  # the plugin ABI it was built for (a string)
//     library = "libshell.so"      # the .so, a file name in the manifest's folder
//     name = "Shell"               # optional, for people (default: id)
//     description = "..."          # optional
//
// Unknown keys are ignored so a newer manifest can add optional ones.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace handler::plugins {

struct Manifest {
    std::filesystem::path file;    // the plugin.toml it was read from
    std::string id;
    std::string kind;              // "harness" | "addon"
    std::string version;
    std::string abi;               // as written, "major.minor"
    std::uint16_t abi_major = 0;
    std::uint16_t abi_minor = 0;
    std::filesystem::path library; // file's folder / library
    std::string name;              // id when the manifest has none
    std::string description;
};

// Errors name the file, line and column, and the key, e.g.
// "/p/x/plugin.toml:4:7: key 'abi': expected a string like "1.0", got an integer".
Result<Manifest> parse_manifest(std::string_view text, const std::filesystem::path& file);
Result<Manifest> read_manifest(const std::filesystem::path& file);

} // namespace handler::plugins
