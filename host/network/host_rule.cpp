#include "network/host_rule.hpp"

#include "network/authority.hpp"
#include "network/policy.hpp"

#include <algorithm>

namespace handler::network {
namespace {

bool is_label(std::string_view label, Underscores underscores) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
        return false;
    return std::all_of(label.begin(), label.end(), [underscores](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               (c == '_' && underscores == Underscores::allowed);
    });
}

bool reads_as_number(std::string_view label) {
    const bool digits = std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
    const bool hexadecimal = label.size() > 2 && label[0] == '0' && label[1] == 'x';
    return digits || hexadecimal;
}

} // namespace

std::string lower_ascii(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
        return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    return lower;
}

bool is_host_name(std::string_view name, Underscores underscores) {
    if (name.empty() || name.size() > 253) return false;
    for (std::size_t start = 0;;) {
        const auto dot = name.find('.', start);
        const std::string_view label =
            name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        if (!is_label(label, underscores)) return false;
        if (dot == std::string_view::npos) return !reads_as_number(label);
        start = dot + 1;
    }
}

Result<HostRule> parse_rule(std::string_view text, std::string_view field) {
    auto refuse = [&](std::string_view why) -> Error {
        return make_error(ErrorCode::invalid_argument,
                          std::string(field) + " '" + std::string(text) + "' is not a host pattern: " + std::string(why) +
                              "; use 'host', '*.domain' or an IP address, each optionally with ':port' "
                              "(like 'github.com', '*.npmjs.org', 'localhost:8080' or '[fd00::1]:443')");
    };
    const std::string lower = lower_ascii(text);
    const auto authority = parse_authority(lower, PortPresence::optional);
    if (!authority) return refuse(authority.error().message);
    HostRule rule;
    rule.port = authority->port;
    std::string_view host = authority->host;
    if (authority->ipv4 || authority->ipv6) {
        const auto address = parse_address(host);
        if (!address) return refuse("'" + std::string(host) + "' is not an IP address in its usual form");
        rule.ip = true;
        rule.host = to_string(*address);
    } else {
        if (host == "*") return refuse("'*' alone would allow everything; set network_mode to 'open' instead");
        if (host.starts_with("*.")) {
            rule.wildcard = true;
            host.remove_prefix(2);
        }
        if (!is_host_name(host, Underscores::refused)) {
            const auto last = host.substr(host.rfind('.') + 1);
            return refuse(!last.empty() && reads_as_number(last)
                              ? "'" + std::string(host) + "' would be read as a number by resolvers; write an "
                                                          "address as four decimal numbers (like 10.0.0.5)"
                              : "'" + std::string(host) + "' is not a host name");
        }
        rule.host = std::string(host);
    }
    const bool v6 = rule.ip && rule.host.find(':') != std::string::npos;
    rule.text = (rule.wildcard ? "*." : "") + (v6 && rule.port != 0 ? "[" + rule.host + "]" : rule.host);
    if (rule.port != 0) rule.text += ":" + std::to_string(rule.port);
    return rule;
}

} // namespace handler::network
