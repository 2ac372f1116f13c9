#include "plugins/manifest.hpp"

#include "core/paths.hpp"

#include <toml++/toml.h>

#include <charconv>
#include <optional>

namespace handler::plugins {
namespace {

constexpr std::size_t kMaxIdLength = 64;

std::string_view type_name(toml::node_type type) {
    switch (type) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    }
    return "an unknown value";
}

std::string where(const std::filesystem::path& file, const toml::source_region& region) {
    return file.string() + ":" + std::to_string(region.begin.line) + ":" +
           std::to_string(region.begin.column);
}

Error key_error(const std::filesystem::path& file, const toml::node& node, std::string_view key,
                const std::string& problem) {
    return make_error(ErrorCode::invalid_argument,
                      where(file, node.source()) + ": key '" + std::string(key) + "': " + problem);
}

// A required or optional string key. `hint` shows a valid value in the error.
Result<std::optional<std::string>> string_key(const toml::table& table,
                                              const std::filesystem::path& file,
                                              std::string_view key, bool required,
                                              std::string_view hint) {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
        if (!required) return std::optional<std::string>();
        return make_error(ErrorCode::invalid_argument,
                          file.string() + ": missing key '" + std::string(key) + "' (e.g. " +
                              std::string(key) + " = " + std::string(hint) + ")");
    }
    const auto* value = node->as_string();
    if (value == nullptr)
        return key_error(file, *node, key,
                         "expected a string like " + std::string(hint) + ", got " +
                             std::string(type_name(node->type())));
    if (required && value->get().empty())
        return key_error(file, *node, key, "must not be empty (e.g. " + std::string(hint) + ")");
    return std::optional<std::string>(value->get());
}

bool valid_id(std::string_view id) {
    if (id.empty() || id.size() > kMaxIdLength) return false;
    for (std::size_t i = 0; i < id.size(); ++i) {
        const char c = id[i];
        const bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!plain && (i == 0 || (c != '-' && c != '_' && c != '.'))) return false;
    }
    return true;
}

std::optional<std::uint16_t> parse_number(std::string_view text) {
    std::uint16_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
}

} // namespace

Result<Manifest> parse_manifest(std::string_view text, const std::filesystem::path& file) {
    toml::table table;
#if TOML_EXCEPTIONS
    try {
        table = toml::parse(text, file.string());
    } catch (const toml::parse_error& error) {
        return make_error(ErrorCode::invalid_argument,
                          where(file, error.source()) + ": " + std::string(error.description()));
    }
#else
    toml::parse_result parsed = toml::parse(text, file.string());
    if (!parsed)
        return make_error(ErrorCode::invalid_argument, where(file, parsed.error().source()) + ": " +
                                                           std::string(parsed.error().description()));
    table = std::move(parsed).table();
#endif

    Manifest manifest;
    manifest.file = file;

    auto id = string_key(table, file, "id", true, "\"my-harness\"");
    if (!id) return id.take_error();
    manifest.id = **id;
    if (!valid_id(manifest.id))
        return key_error(file, *table.get("id"), "id",
                         "'" + manifest.id + "' is not a valid id: use lower-case letters, digits "
                         "and - _ . (not first), at most 64 characters");

    auto kind = string_key(table, file, "kind", true, "\"harness\"");
    if (!kind) return kind.take_error();
    manifest.kind = **kind;
    if (manifest.kind != "harness" && manifest.kind != "addon")
        return key_error(file, *table.get("kind"), "kind",
                         "expected \"harness\" or \"addon\", got \"" + manifest.kind + "\"");

    auto version = string_key(table, file, "version", true, "\"0.1.0\"");
    if (!version) return version.take_error();
    manifest.version = **version;

    // A string, not a number: as a TOML float, 1.10 would silently read as 1.1.
    auto abi = string_key(table, file, "abi", true, "\"1.0\"");
    if (!abi) return abi.take_error();
    manifest.abi = **abi;
    const std::size_t dot = manifest.abi.find('.');
    const auto major = dot == std::string::npos ? std::nullopt
                                                : parse_number(std::string_view(manifest.abi).substr(0, dot));
    const auto minor = dot == std::string::npos ? std::nullopt
                                                : parse_number(std::string_view(manifest.abi).substr(dot + 1));
    if (!major || !minor)
        return key_error(file, *table.get("abi"), "abi",
                         "expected \"major.minor\" like \"1.0\", got \"" + manifest.abi + "\"");
    manifest.abi_major = *major;
    manifest.abi_minor = *minor;

    auto library = string_key(table, file, "library", true, "\"libmy-harness.so\"");
    if (!library) return library.take_error();
    const std::string& library_name = **library;
    if (library_name.find('/') != std::string::npos || library_name == "." || library_name == "..")
        return key_error(file, *table.get("library"), "library",
                         "must be a file name in the manifest's folder, got \"" + library_name + "\"");
    manifest.library = file.parent_path() / library_name;

    auto name = string_key(table, file, "name", false, "\"My harness\"");
    if (!name) return name.take_error();
    manifest.name = name->value_or(manifest.id);

    auto description = string_key(table, file, "description", false, "\"Runs my agent\"");
    if (!description) return description.take_error();
    manifest.description = description->value_or("");

    return manifest;
}

Result<Manifest> read_manifest(const std::filesystem::path& file) {
    auto text = read_file(file);
    if (!text) return text.take_error();
    return parse_manifest(*text, file);
}

} // namespace handler::plugins
