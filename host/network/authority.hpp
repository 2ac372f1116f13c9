// The one reader of "host:port" (docs/network.md, "Host rules"): the proxy's CONNECT
// target, host rules, and [network] resolve in config.toml all split their text here.
// Pure, and it allocates nothing for ASCII text: the proxy calls it on every CONNECT.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace handler::network {

enum class PortPresence {
    required = 1, // CONNECT, endpoints: "host:port"
    optional,     // rules: "host" or "host:port"; a bare IPv6 address is a host
};

// An authority split into its parts; `host` points into the text it was parsed from.
struct Authority {
    std::string_view host; // as written (not lower-cased), without brackets
    std::uint16_t port = 0; // 0 when absent
    bool ipv6 = false;      // in brackets, or (port optional) bare with more than one ':'
    bool ipv4 = false;      // a dotted-quad IPv4 address in its usual form
};

// RFC 3986's authority without user info (Boost.URL): "name", "name:port", "1.2.3.4",
// "[v6]:port", and with PortPresence::optional a bare "fd00::1". The port is 1 to 65535
// in at most five digits ("08080" is 8080). The host is checked only against the URI
// grammar: names and addresses are the caller's to check (host_rule.hpp, policy.hpp).
// A name may also be written in Unicode (UTF-8), which canonical_name() makes A-labels of.
// The message says what is wrong without quoting the text, so the caller can name it.
Result<Authority> parse_authority(std::string_view text, PortPresence port);

// 1 to 65535 written in one to five decimal digits.
std::optional<std::uint16_t> parse_port(std::string_view digits);

} // namespace handler::network
