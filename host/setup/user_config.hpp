// The only files `handler setup` changes on its own: the user's container settings
// (~/.config/containers/containers.conf and storage.conf) and, where systemd runs a
// user session, the handlerd unit. Never a system file.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <string>

namespace handler::setup {

struct ConfigChange {
    std::filesystem::path file;
    std::filesystem::path backup; // empty when the file did not exist before
    bool changed = false;         // false: it already said so, nothing was written
    std::string what;             // e.g. `[engine] runtime = "runc"`
};

// Sets `[table] key = "value"` in the TOML file at `file`, keeping everything else the
// user wrote. An existing file is copied to `<file>.bak` before it changes; a file that
// already holds the value is left alone (so setup can run any number of times); a file
// that is not valid TOML is never touched: the error says where it is broken.
// The edit is made in the text (comments survive) and checked by parsing the result;
// when the text is too unusual for that, the document is re-serialised by toml++ (the
// comments are then only in the .bak).
Result<ConfigChange> set_toml_string(const std::filesystem::path& file, const std::string& table,
                                     const std::string& key, const std::string& value);

// Writes `contents` to `file` unless it already holds exactly that; a different existing
// file is backed up to `<file>.bak` first.
Result<ConfigChange> write_text_file(const std::filesystem::path& file,
                                     const std::string& contents, const std::string& what);

} // namespace handler::setup
