#include "setup/user_config.hpp"

#include "core/text.hpp"
#include "core/paths.hpp"

#include <toml++/toml.h>

#include <sstream>
#include <vector>

namespace handler::setup {
namespace fs = std::filesystem;

namespace {

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// A line of the file without its blanks at either end (a CR of a CRLF file too).
std::string trimmed_line(std::string_view line) { return std::string(text::trim(line, " \t\r")); }

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += line + '\n';
    return out;
}

bool is_table_header(const std::string& line) {
    const std::string trimmed = trimmed_line(line);
    return !trimmed.empty() && trimmed.front() == '[';
}

bool is_assignment_of(const std::string& line, const std::string& key) {
    const std::string trimmed = trimmed_line(line);
    if (trimmed.rfind(key, 0) != 0) return false;
    return trimmed_line(trimmed.substr(key.size())).rfind('=', 0) == 0;
}

// The text edit: replace the key's line in the table, or add it under the table's
// header, or append the table. Nullopt when the layout is not the plain one this
// understands (dotted keys, inline tables, the key on a continuation line...).
std::optional<std::string> edit_text(const std::string& text, const toml::table& root,
                                     const std::string& table, const std::string& key,
                                     const std::string& value) {
    const std::string assignment = key + " = " + quote(value);
    const toml::node* section = root.get(table);
    if (section == nullptr) {
        std::string out = text;
        if (!out.empty() && out.back() != '\n') out += '\n';
        if (!out.empty()) out += '\n';
        return out + "[" + table + "]\n" + assignment + "\n";
    }
    auto lines = split_lines(text);
    const std::string header = "[" + table + "]";
    std::size_t at = lines.size();
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string trimmed = trimmed_line(lines[i]);
        if (trimmed == header || trimmed.rfind(header + " ", 0) == 0 ||
            trimmed.rfind(header + "#", 0) == 0) {
            at = i;
            break;
        }
    }
    if (at == lines.size()) return std::nullopt;
    for (std::size_t i = at + 1; i < lines.size() && !is_table_header(lines[i]); ++i)
        if (is_assignment_of(lines[i], key)) {
            lines[i] = assignment;
            return join_lines(lines);
        }
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at) + 1, assignment);
    return join_lines(lines);
}

Result<toml::table> parse(const std::string& text, const fs::path& file) {
    try {
        return toml::parse(text, file.string());
    } catch (const toml::parse_error& error) {
        return make_error(ErrorCode::invalid_argument,
                          file.string() + ":" + std::to_string(error.source().begin.line) + ":" +
                              std::to_string(error.source().begin.column) +
                              ": not valid TOML (" + std::string(error.description()) +
                              "); left unchanged: fix or move it away, then run `handler setup` "
                              "again");
    }
}

Result<fs::path> back_up(const fs::path& file, const std::string& original) {
    const fs::path backup = file.string() + ".bak";
    if (auto written = write_file_atomic(backup, original, 0644); !written)
        return written.take_error();
    return backup;
}

// Backs up `original` (when the file existed), makes the folder (when it did not), then
// writes `contents` atomically. Returns where the backup went.
Result<std::optional<fs::path>> replace_file(const fs::path& file,
                                             const std::optional<std::string>& original,
                                             const std::string& contents) {
    std::optional<fs::path> backup_path;
    if (original) {
        auto backup = back_up(file, *original);
        if (!backup) return backup.take_error();
        backup_path = *backup;
    } else {
        std::error_code error;
        fs::create_directories(file.parent_path(), error);
        if (error)
            return make_error(ErrorCode::internal, "cannot create folder " +
                                                       file.parent_path().string() + ": " +
                                                       error.message());
    }
    if (auto written = write_file_atomic(file, contents, 0644); !written)
        return written.take_error();
    return backup_path;
}

} // namespace

Result<ConfigChange> set_toml_string(const fs::path& file, const std::string& table,
                                     const std::string& key, const std::string& value) {
    ConfigChange change{file, {}, false, "[" + table + "] " + key + " = " + quote(value)};
    std::error_code error;
    const bool existed = fs::exists(file, error);
    std::string original;
    toml::table root;
    if (existed) {
        auto text = read_file(file);
        if (!text) return text.take_error();
        original = std::move(*text);
        auto parsed = parse(original, file);
        if (!parsed) return parsed.take_error();
        root = std::move(*parsed);
        if (auto current = root[table][key].value<std::string>(); current && *current == value)
            return change;
        if (const toml::node* section = root.get(table); section != nullptr && !section->is_table())
            return make_error(ErrorCode::invalid_argument,
                              file.string() + ": `" + table + "` is not a table; left unchanged: "
                                              "fix it, then run `handler setup` again");
    }

    // What the result must parse to: the user's document with only this key set.
    toml::table expected = root;
    if (!expected.contains(table)) expected.insert(table, toml::table{});
    expected[table].as_table()->insert_or_assign(key, value);

    std::string contents;
    if (auto edited = edit_text(original, root, table, key, value)) {
        try {
            if (toml::parse(*edited) == expected) contents = std::move(*edited);
        } catch (const toml::parse_error&) {
        }
    }
    if (contents.empty()) {
        std::ostringstream serialised;
        serialised << expected << '\n';
        contents = serialised.str();
    }

    auto replaced = replace_file(file, existed ? std::optional<std::string>(original) : std::nullopt,
                                 contents);
    if (!replaced) return replaced.take_error();
    change.backup = replaced->value_or(fs::path());
    change.changed = true;
    return change;
}

Result<ConfigChange> write_text_file(const fs::path& file, const std::string& contents,
                                     const std::string& what) {
    ConfigChange change{file, {}, false, what};
    std::error_code error;
    std::optional<std::string> existing;
    if (fs::exists(file, error)) {
        auto current = read_file(file);
        if (!current) return current.take_error();
        if (*current == contents) return change;
        existing = std::move(*current);
    }
    auto replaced = replace_file(file, existing, contents);
    if (!replaced) return replaced.take_error();
    change.backup = replaced->value_or(fs::path());
    change.changed = true;
    return change;
}

} // namespace handler::setup
