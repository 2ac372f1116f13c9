// The egress policy of one session, and the decisions made from it (docs/network.md).
// Pure: no sockets, no clock of its own, no DNS; the proxy asks, this answers. The
// decision is made twice per connection, in this order:
//   1. by name and port (decide), before anything is resolved, so a refused host costs
//      no DNS query and learns the agent nothing;
//   2. by address (check_address), after handlerd has resolved the name: loopback,
//      private, link-local and the host's own addresses are refused unless an exact rule
//      names that host or address. A wildcard never licenses them, or `*.nip.io` would
//      reach handlerd's own API at 127.0.0.1 (DNS rebinding).
#pragma once

#include "core/result.hpp"
#include "network/host_rule.hpp"
#include "network/network_mode.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::network {


struct Policy {
    Mode mode = Mode::filtered;
    std::vector<HostRule> model_hosts; // the harness's own (model API); allowed but in none? always
    std::vector<HostRule> allow;       // the agent's list, plus what addons add
    std::int64_t learn_until_ms = 0;   // learn: open until then, then filtered
    std::string agent;                 // named in the "allow it with" hint; may be empty
};

// A requested host after normalisation: a lower-case name or an IP literal.
struct Target {
    std::string host;
    std::uint16_t port = 0;
    bool ip = false;
};

// A host as it came in a request (CONNECT authority, URL host, Host header, TLS SNI; IPv6
// in brackets) in its one canonical form: an IP literal's usual text, or canonical_name()
// (lower case, no root dot, A-labels). Names that a resolver would read as numbers
// ("2130706433", "0x7f.1") are refused: IP literals are only ever the canonical forms.
Result<Target> parse_target(std::string_view host, std::uint16_t port);

// "host:port", with an IPv6 host in brackets, as refusals and the log name a target.
std::string authority_text(const Target& target);

enum class Verdict {
    allow = 1,
    deny,
    learned, // passes only because the session is learning; recorded for promotion
};

struct Decision {
    Verdict verdict = Verdict::deny;
    std::string rule;   // the matching rule ("github.com", "model host api.anthropic.com",
                        // "mode open", "learn mode"), or "" when nothing matched
    std::string reason; // for a deny: a sentence naming the host, why, and the command
                        // that would allow it
    bool exact = false; // matched by an exact host or IP rule of the user's (licenses special addresses)
};

Decision decide(const Policy& policy, const Target& target, std::int64_t now_ms);

// A resolved address in network byte order (4 or 16 bytes used).
struct Address {
    bool v6 = false;
    std::array<unsigned char, 16> bytes{};
};

std::optional<Address> parse_address(std::string_view text);
std::string to_string(const Address& address);

// "host:port", with an IPv6 host in brackets (parse_authority); the host comes back as
// written, without them. With `host_may_be_name` false the host must be an IP address,
// else also a name parse_target accepts. The port is 1 to 65535.
struct HostPort {
    std::string host;
    std::uint16_t port = 0;
};
std::optional<HostPort> parse_endpoint(std::string_view text, bool host_may_be_name);

// Loopback, unspecified, private (10/8, 172.16/12, 192.168/16, 100.64/10 CGNAT, fc00::/7),
// link-local (169.254/16, fe80::/10), multicast, broadcast, and IPv4-mapped/compatible
// forms of those.
bool is_special(const Address& address);
// One of `own_addresses` (this machine's interfaces).
bool is_own(const Address& address, const std::vector<Address>& own_addresses);

// After resolution: nullopt when `address` may be connected to under `decision`;
// otherwise the reason it may not. `own_addresses` are the host's interfaces.
std::optional<std::string> check_address(const Decision& decision, const Target& target,
                                         const Address& address,
                                         const std::vector<Address>& own_addresses);

} // namespace handler::network
