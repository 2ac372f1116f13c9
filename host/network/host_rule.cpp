#include "network/host_rule.hpp"

#include "network/authority.hpp"
#include "network/policy.hpp"

#include <idn2.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

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

bool is_ascii(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// One dot-separated piece of a name as its A-label(s), by libidn2 (UTS #46 mapping, then
// IDNA2008; an "xn--" label is decoded and encoded again, and must come back the same).
// A Unicode piece may map to more than one label (U+FF0E is a dot).
Result<std::string> to_a_labels(std::string_view piece) {
    const std::string text(piece); // NUL-terminated; a NUL inside was refused before
    char* output = nullptr;
    const int status = ::idn2_lookup_u8(reinterpret_cast<const std::uint8_t*>(text.c_str()),
                                        reinterpret_cast<std::uint8_t**>(&output),
                                        IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT | IDN2_ALABEL_ROUNDTRIP);
    const std::unique_ptr<char, decltype(&std::free)> owned(output, &std::free);
    if (status != IDN2_OK)
        return make_error(ErrorCode::invalid_argument,
                          std::string("an internationalised label is not valid IDNA (") + ::idn2_strerror(status) + ")");
    return std::string(output);
}

} // namespace

Result<std::string> canonical_name(std::string_view name, Underscores underscores) {
    auto refuse = [](std::string why) -> Error { return make_error(ErrorCode::invalid_argument, std::move(why)); };
    if (name.ends_with('.')) name.remove_suffix(1); // the root: "example.com." is example.com
    if (name.empty()) return refuse("it is empty");
    if (name.size() > 1024) return refuse("it is far longer than the 253 bytes a name may have");
    if (name.find('\0') != std::string_view::npos) return refuse("it contains a NUL byte");
    std::string canonical;
    for (std::size_t start = 0;;) {
        const auto dot = name.find('.', start);
        const std::string_view piece =
            name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        const std::string lower = lower_ascii(piece);
        if (is_ascii(lower) && !lower.starts_with("xn--")) {
            canonical += lower;
        } else {
            auto labels = to_a_labels(lower);
            if (!labels) return labels.take_error();
            canonical += *labels;
        }
        if (dot == std::string_view::npos) break;
        canonical += '.';
        start = dot + 1;
    }
    if (!is_host_name(canonical, underscores)) {
        const auto last = std::string_view(canonical).substr(canonical.rfind('.') + 1);
        if (!last.empty() && reads_as_number(last))
            return refuse("it would be read as a number by resolvers; write an address as four decimal numbers "
                          "(like 10.0.0.5)");
        return refuse(underscores == Underscores::refused
                          ? "it is not DNS labels of letters, digits and '-' (1 to 63 each, no '-' first or last, "
                            "at most 253 bytes)"
                          : "it is not DNS labels of letters, digits, '-' and '_' (1 to 63 each, no '-' first or "
                            "last, at most 253 bytes)");
    }
    return canonical;
}

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
        auto name = canonical_name(host, Underscores::refused);
        if (!name) return refuse("'" + std::string(host) + "' is not a host name: " + name.error().message);
        rule.host = std::move(*name);
    }
    const bool v6 = rule.ip && rule.host.find(':') != std::string::npos;
    rule.text = (rule.wildcard ? "*." : "") + (v6 && rule.port != 0 ? "[" + rule.host + "]" : rule.host);
    if (rule.port != 0) rule.text += ":" + std::to_string(rule.port);
    return rule;
}

} // namespace handler::network
