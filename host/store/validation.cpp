#include "store/validation.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace handler::store {
namespace {

bool is_ascii_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Everything we store is served as JSON, which must be valid UTF-8.
bool is_valid_utf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        std::uint32_t code_point = 0;
        if (byte < 0x80) { ++i; continue; }
        if ((byte & 0xe0) == 0xc0) { length = 2; code_point = byte & 0x1f; }
        else if ((byte & 0xf0) == 0xe0) { length = 3; code_point = byte & 0x0f; }
        else if ((byte & 0xf8) == 0xf0) { length = 4; code_point = byte & 0x07; }
        else return false;
        if (i + length > text.size()) return false;
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xc0) != 0x80) return false;
            code_point = (code_point << 6) | (next & 0x3f);
        }
        const bool overlong = (length == 2 && code_point < 0x80) ||
                              (length == 3 && code_point < 0x800) ||
                              (length == 4 && code_point < 0x10000);
        if (overlong || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff))
            return false;
        i += length;
    }
    return true;
}

bool has_control_character(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7f;
    });
}

Error invalid(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

// The shared rule of agent and account names, both typed on command lines.
Result<void> check_command_line_name(std::string_view what, std::string_view name) {
    const bool valid = !name.empty() && name.size() <= 64 && is_ascii_alnum(name.front()) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                           return is_ascii_alnum(c) || c == '.' || c == '_' || c == '-';
                       });
    if (!valid)
        return invalid(std::string(what) + " name '" + std::string(name) +
                       "' is not valid: use 1 to 64 letters, digits, '.', '_' or '-', "
                       "starting with a letter or digit");
    return {};
}

// One DNS label: 1–63 of [a-z0-9-], not starting or ending with '-'.
bool is_label(std::string_view label) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
        return false;
    return std::all_of(label.begin(), label.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
}

} // namespace

Result<void> check_context_name(std::string_view name) {
    const bool valid = !name.empty() && name.size() <= 64 && name.front() != ' ' &&
                       name.back() != ' ' &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                           return is_ascii_alnum(c) || c == ' ' || c == '-' || c == '_' ||
                                  c == '.';
                       });
    if (!valid)
        return invalid("context name '" + std::string(name) +
                       "' is not valid: use 1 to 64 letters, digits, spaces, '-', '_' or '.', "
                       "not starting or ending with a space");
    return {};
}

Result<void> check_project_name(std::string_view name) {
    if (name.empty() || name.size() > 128 || name.front() == ' ' || name.back() == ' ' ||
        has_control_character(name) || !is_valid_utf8(name))
        return invalid("project name '" + std::string(name) +
                       "' is not valid: use 1 to 128 bytes of text without control "
                       "characters, not starting or ending with a space");
    return {};
}

Result<void> check_agent_name(std::string_view name) {
    return check_command_line_name("agent", name);
}

Result<void> check_account_name(std::string_view name) {
    return check_command_line_name("account", name);
}

Result<void> check_account_kind(std::string_view kind) {
    if (std::find(kAccountKinds.begin(), kAccountKinds.end(), kind) != kAccountKinds.end())
        return {};
    std::string known;
    for (const auto k : kAccountKinds) known += (known.empty() ? "" : ", ") + std::string(k);
    return invalid("account kind '" + std::string(kind) + "' is not known; use one of " + known);
}

Result<void> check_harness(std::string_view harness) {
    const bool valid = !harness.empty() && harness.size() <= 64 &&
                       ((harness.front() >= 'a' && harness.front() <= 'z') ||
                        (harness.front() >= '0' && harness.front() <= '9')) &&
                       std::all_of(harness.begin(), harness.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                  c == '.' || c == '_' || c == '-';
                       });
    if (!valid)
        return invalid("harness '" + std::string(harness) +
                       "' is not a plugin id: use 1 to 64 lower-case letters, digits, '.', '_' "
                       "or '-', like 'claude-code'");
    return {};
}

Result<void> check_project_path(std::string_view path) {
    std::string quoted = "'";
    quoted.append(path).push_back('\'');
    if (path.empty() || path.front() != '/')
        return invalid("project path " + quoted + " is not absolute");
    if (path == "/")
        return invalid("the root folder '/' cannot be a project: the agent would see every file");
    if (path.size() > 4096 || has_control_character(path) || !is_valid_utf8(path))
        return invalid("project path " + quoted +
                       " is not valid: it must be UTF-8 text without control characters, at "
                       "most 4096 bytes");
    if (path.back() == '/' || path.find("//") != std::string_view::npos ||
        path.find("/./") != std::string_view::npos ||
        path.find("/../") != std::string_view::npos || path.ends_with("/.") ||
        path.ends_with("/.."))
        return invalid("project path " + quoted +
                       " is not in canonical form (no '.', '..', '//' or trailing '/')");
    return {};
}

Result<void> check_text(std::string_view field, std::string_view value, std::size_t max_bytes) {
    if (value.size() > max_bytes)
        return invalid(std::string(field) + " is " + std::to_string(value.size()) +
                       " bytes long; at most " + std::to_string(max_bytes) + " are allowed");
    if (!is_valid_utf8(value) || value.find('\0') != std::string_view::npos)
        return invalid(std::string(field) + " must be UTF-8 text without NUL characters");
    return {};
}

Result<std::string> normalize_host_pattern(std::string_view pattern, std::string_view field) {
    std::string text(pattern);
    std::transform(text.begin(), text.end(), text.begin(), [](char c) {
        return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    auto refuse = [&](std::string_view why) -> Error {
        return invalid(std::string(field) + " '" + std::string(pattern) +
                       "' is not a host pattern" + std::string(why) +
                       ": use 'host', '*.domain', optionally with ':port' (like 'github.com', "
                       "'*.npmjs.org' or 'localhost:8080')");
    };

    std::string_view host = text;
    if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
        const std::string_view port = host.substr(colon + 1);
        unsigned value = 0;
        const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || port.size() > 5 || error != std::errc() ||
            end != port.data() + port.size() || value < 1 || value > 65535)
            return refuse(" (the port must be a number from 1 to 65535)");
        host = host.substr(0, colon);
    }
    if (host == "*")
        return refuse(" ('*' alone would allow everything; set network_mode to 'open' instead)");
    if (host.starts_with("*.")) host.remove_prefix(2);
    if (host.empty() || host.size() > 253) return refuse("");
    for (std::size_t start = 0;;) {
        const auto dot = host.find('.', start);
        const std::string_view label =
            host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        if (!is_label(label)) return refuse("");
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return text;
}

Result<std::vector<std::string>> normalize_allowed_hosts(const std::vector<std::string>& hosts) {
    if (hosts.size() > kMaxAllowedHosts)
        return invalid("allowed_hosts has " + std::to_string(hosts.size()) + " entries; at most " +
                       std::to_string(kMaxAllowedHosts) + " are allowed");
    std::vector<std::string> normalized;
    normalized.reserve(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        const std::string field = "allowed_hosts[" + std::to_string(i) + "]";
        auto host = normalize_host_pattern(hosts[i], field);
        if (!host) return host.take_error();
        if (std::find(normalized.begin(), normalized.end(), *host) != normalized.end())
            return invalid(field + " '" + hosts[i] + "' is listed twice");
        normalized.push_back(std::move(*host));
    }
    return normalized;
}

} // namespace handler::store
