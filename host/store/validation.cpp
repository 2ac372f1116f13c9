#include "store/validation.hpp"

#include "core/utf8.hpp"
#include "network/authority.hpp"
#include "network/host_rule.hpp"
#include "secrets/account_kinds.hpp"

#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>

namespace handler::store {
namespace {

bool is_ascii_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
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
    if (secrets::find_account_kind(kind) != nullptr) return {};
    return invalid("account kind '" + std::string(kind) + "' is not known; use one of " +
                   secrets::account_kind_names());
}

Result<void> check_model_name(std::string_view model) {
    const auto allowed = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == ':' ||
               c == '/' || c == '@' || c == '+' || c == '-';
    };
    if (model.empty() || model.size() > 128 || std::isalnum(static_cast<unsigned char>(model.front())) == 0 ||
        !std::all_of(model.begin(), model.end(), allowed))
        return invalid("model '" + std::string(model.substr(0, 160)) +
                       "' is not a model name: use 1 to 128 letters, digits and . _ : / @ + -, "
                       "starting with a letter or digit");
    return {};
}

Result<void> check_thinking_level(std::string_view level) {
    if (level.empty() || level.size() > 16 ||
        !std::all_of(level.begin(), level.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
        return invalid("thinking level '" + std::string(level.substr(0, 40)) +
                       "' is not one: use the harness's word for it (1 to 16 lowercase letters, like high)");
    return {};
}

Result<std::string> normalize_base_url(std::string_view url) {
    if (url.size() > kMaxBaseUrlBytes)
        return invalid("base_url is " + std::to_string(url.size()) + " bytes long; at most " +
                       std::to_string(kMaxBaseUrlBytes) + " are allowed");
    auto refuse = [&](const std::string& why) -> Error {
        return invalid("base_url '" + std::string(url) + "' is not valid: " + why +
                       "; use http:// or https://, a host, an optional port and path, like "
                       "'http://127.0.0.1:11434'");
    };
    // An absolute URI never holds '#', so this is the fragment parse_absolute_uri would
    // only call a mismatch.
    if (url.find('#') != std::string_view::npos) return refuse("it has a fragment ('#...')");
    // "localhost:11434" parses, as scheme "localhost"; name the usual slip instead.
    const bool has_scheme_separator = url.find("://") != std::string_view::npos;
    const std::string no_scheme = "it does not start with http:// or https://";
    const auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed)
        return refuse(has_scheme_separator
                          ? "it is not a well-formed URL (spaces and other special characters "
                            "must be percent-encoded)"
                          : no_scheme);
    const boost::urls::url_view& view = *parsed;
    if (view.scheme_id() != boost::urls::scheme::http &&
        view.scheme_id() != boost::urls::scheme::https)
        return refuse(has_scheme_separator ? "the scheme must be http or https, not '" +
                                                 std::string(view.scheme()) + "'"
                                           : no_scheme);
    if (!view.has_authority()) return refuse("it has no host ('http://' must come first)");
    if (view.has_userinfo())
        return refuse("it carries a user name or password ('user:password@'); give the server "
                      "address alone");
    if (view.has_query()) return refuse("it has a query ('?...')");

    std::string host;
    switch (view.host_type()) {
    case boost::urls::host_type::ipv4:
        host = view.host_ipv4_address().to_string();
        break;
    case boost::urls::host_type::ipv6:
        host = "[" + view.host_ipv6_address().to_string() + "]";
        break;
    case boost::urls::host_type::name:
        host = network::lower_ascii(view.encoded_host_name());
        if (host.empty()) return refuse("it has no host");
        // A top-level label is never all digits: "300.1.1.1" is a mistyped address.
        if (const auto last = host.substr(host.rfind('.') + 1);
            std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return refuse("the host '" + host + "' is not a valid IPv4 address");
        if (auto name = network::canonical_name(host, network::Underscores::refused)) {
            host = std::move(*name); // the form the proxy's rule for it compares with
        } else {
            return refuse("the host '" + std::string(view.encoded_host_name()) +
                          "' is not a host name, an IPv4 address or an [IPv6] address (" + name.error().message + ")");
        }
        break;
    default:
        return refuse("the host must be a name, an IPv4 address or an [IPv6] address");
    }

    std::string normalized = std::string(view.scheme_id() == boost::urls::scheme::http ? "http"
                                                                                       : "https") +
                             "://" + host;
    if (view.has_port()) {
        const auto port = network::parse_port(view.port());
        if (!port) return refuse("the port must be a number from 1 to 65535");
        normalized += ":" + std::to_string(*port);
    }
    std::string_view path = view.encoded_path();
    while (path.ends_with('/')) path.remove_suffix(1);
    normalized += path;
    return normalized;
}

Result<std::optional<std::string>> account_base_url(std::string_view kind,
                                                    const std::optional<std::string>& base_url) {
    if (!secrets::is_local_server(kind)) {
        if (base_url)
            return invalid("base_url is only for " + secrets::account_kind_names(secrets::Holds::local_server) +
                           " accounts; " +
                           std::string(kind) + " accounts have none");
        return std::optional<std::string>();
    }
    if (!base_url) return std::optional<std::string>(secrets::default_base_url(kind));
    auto normalized = normalize_base_url(*base_url);
    if (!normalized) return normalized.take_error();
    return std::optional<std::string>(std::move(*normalized));
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

Result<std::vector<std::string>> check_addons(const std::vector<std::string>& addons) {
    for (std::size_t i = 0; i < addons.size(); ++i) {
        if (auto valid = check_harness(addons[i]); !valid)
            return invalid("addons[" + std::to_string(i) + "]: '" + addons[i] +
                           "' is not a plugin id: use 1 to 64 lower-case letters, digits, '.', '_' or '-'");
        if (std::find(addons.begin(), addons.begin() + static_cast<std::ptrdiff_t>(i), addons[i]) !=
            addons.begin() + static_cast<std::ptrdiff_t>(i))
            return invalid("addons[" + std::to_string(i) + "]: '" + addons[i] + "' is listed twice");
    }
    return addons;
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
    auto rule = network::parse_rule(pattern, field);
    if (!rule) return rule.take_error();
    return std::move(rule->text);
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
