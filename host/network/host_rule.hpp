// The one host-rule grammar (docs/network.md, "Host rules"). An agent's or project's
// allowed_hosts, a harness's model hosts and an addon's hosts are all read here, so a rule
// the store accepts is a rule the policy decides with. Pure: no DNS, no sockets.
//
//   rule     = host [ ":" port ] | "[" IPv6 "]" [ ":" port ] | IPv6
//   host     = name | "*." name | IPv4
//   name     = DNS labels of [a-z0-9-] (1 to 63, no '-' first or last), at most 253
//              bytes, whose last label is not all digits nor 0x...: a resolver would read
//              "1.2.3" or "0x7f.1" as an address. Written in any case, with or without
//              the root's trailing dot, and with internationalised labels as Unicode or
//              as A-labels: canonical_name() below makes the one form that is kept.
//   IPv4     = the dotted quad only; IPv6 without a zone
//   port     = 1 to 65535 (host:port and authority parsing: authority.hpp)
// '*' alone is refused: the mode `open` says that.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace handler::network {

// One allow-list entry. `host` is a lower-case name, a `*.suffix` wildcard's suffix, or an
// IP literal in its canonical form (IPv6 without brackets); port 0 means any.
struct HostRule {
    std::string host;
    std::uint16_t port = 0;
    bool wildcard = false;
    bool ip = false;
    // The rule in its canonical form, as stored and shown: lower case, canonical
    // addresses, IPv6 in brackets when a port follows ("*.npmjs.org:443", "[fd00::1]:443").
    std::string text;
    // A rule a plugin asked for (an addon's hosts), not the user: even exact, it never
    // opens a loopback, private, link-local or own address.
    bool from_plugin = false;
};

// "github.com", "*.npmjs.org", "api.example.com:8443", "10.0.0.5", "fd00::1",
// "[fd00::1]:443". A refusal names `field` and the text ("allowed_hosts[2] 'x' ..."),
// says why and what would be accepted.
Result<HostRule> parse_rule(std::string_view text, std::string_view field = "rule");

// Rules name hosts in DNS's letters; a host in a request may also carry '_'
// (some CDNs' names do), which is harmless there because it only has to match a rule.
enum class Underscores { refused = 1, allowed };
// A lower-case name as the grammar above says (no wildcard, no trailing dot).
bool is_host_name(std::string_view name, Underscores underscores);

std::string lower_ascii(std::string_view text);

// The one canonical form of a host name (docs/network.md, "Names"): the policy decides
// with it, the proxy compares a TLS SNI and every Host header with it, a leaf
// certificate is minted for it and the resolver is asked for it. Lower case, without
// the root's trailing dot, each internationalised label as its IDNA A-label
// ("bücher" is "xn--bcher-kva"; libidn2, UTS #46 non-transitional, as browsers map), and
// every "xn--" label checked to be a real one. Plain ASCII labels never go through IDNA,
// whose rules would refuse names in use ("r3---sn-x.googlevideo.com"). The result
// passes is_host_name(). A refusal says why without quoting `name` (it may come from a
// ClientHello); the caller names it.
Result<std::string> canonical_name(std::string_view name, Underscores underscores);

} // namespace handler::network
