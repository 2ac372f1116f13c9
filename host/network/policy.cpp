#include "network/policy.hpp"

#include "network/authority.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace handler::network {
namespace {

bool matches(const HostRule& rule, const Target& target) {
    if (rule.port != 0 && rule.port != target.port) return false;
    if (rule.ip || !rule.wildcard) {
        if (rule.ip != target.ip) return false;
        if (rule.ip) {
            auto a = parse_address(rule.host);
            auto b = parse_address(target.host);
            return a && b && a->v6 == b->v6 && a->bytes == b->bytes;
        }
        return rule.host == target.host;
    }
    // "*.example.com" matches its subdomains at any depth, not example.com itself.
    return !target.ip && target.host.size() > rule.host.size() + 1 &&
           target.host.ends_with(rule.host) &&
           target.host[target.host.size() - rule.host.size() - 1] == '.';
}

const HostRule* first_match(const std::vector<HostRule>& rules, const Target& target) {
    for (const auto& rule : rules)
        if (matches(rule, target)) return &rule;
    return nullptr;
}

// A host from a request (a CONNECT, a URL, a Host header, a ClientHello's SNI) is quoted
// in a refusal only when it is short printable ASCII: it goes to the log and the terminal.
std::string quoted(std::string_view text) {
    const bool plain =
        text.size() <= 255 && std::all_of(text.begin(), text.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    return plain ? "'" + std::string(text) + "'" : std::string("the name given");
}

} // namespace

std::string authority_text(const Target& target) {
    const bool v6 = target.ip && target.host.find(':') != std::string::npos;
    return (v6 ? "[" + target.host + "]" : target.host) + ":" + std::to_string(target.port);
}

Result<Target> parse_target(std::string_view host_text, std::uint16_t port) {
    if (port == 0) return make_error(ErrorCode::invalid_argument, "port 0 is not a destination");
    std::string_view host = host_text;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    Target target;
    target.port = port;
    if (auto address = parse_address(lower_ascii(host))) {
        target.ip = true;
        // inet_pton takes IPv4 only as a dotted quad without leading zeros, the form
        // inet_ntop writes, so such a text is canonical as it is; writing it again cost
        // a sprintf per CONNECT. IPv6 has many spellings of one address.
        target.host = address->v6 ? to_string(*address) : std::string(host);
        return target;
    }
    auto name = canonical_name(host, Underscores::allowed);
    if (!name)
        return make_error(ErrorCode::invalid_argument, quoted(host_text) +
                                                           " is not a host name or an IP address in its usual form (" +
                                                           name.error().message + ")");
    target.host = std::move(*name);
    return target;
}

Decision decide(const Policy& policy, const Target& target, std::int64_t now_ms) {
    Decision decision;
    if (const auto* rule = first_match(policy.model_hosts, target)) {
        decision.verdict = Verdict::allow;
        decision.rule = "model host " + rule->text;
        decision.exact = !rule->wildcard && !rule->from_plugin;
        return decision;
    }
    const HostRule* listed = policy.mode == Mode::none ? nullptr : first_match(policy.allow, target);
    if (listed != nullptr) {
        decision.verdict = Verdict::allow;
        decision.rule = listed->text;
        decision.exact = !listed->wildcard && !listed->from_plugin;
        return decision;
    }
    if (policy.mode == Mode::open) {
        decision.verdict = Verdict::allow;
        decision.rule = "mode open";
        return decision;
    }
    if (policy.mode == Mode::learn && now_ms < policy.learn_until_ms) {
        decision.verdict = Verdict::learned;
        decision.rule = "learn mode";
        return decision;
    }
    const std::string who = policy.agent.empty() ? std::string("this session") : "agent " + policy.agent;
    const std::string mode = policy.mode == Mode::learn ? "filtered (learning has ended)"
                                                        : std::string(to_string(policy.mode));
    decision.reason = authority_text(target) + " is not allowed for " + who + " (network mode " + mode +
                      (policy.mode == Mode::none ? ": only the harness's model hosts"
                                                 : ": no rule matches") +
                      ")";
    const std::string host =
        target.ip && target.host.find(':') != std::string::npos ? "[" + target.host + "]" : target.host;
    // A session without an agent takes its project's list (run in the project's folder).
    decision.reason += policy.agent.empty() ? "; allow it for the project with: handler project edit --allow " + host
                                            : "; allow it with: handler network allow " + policy.agent + " " + host;
    return decision;
}

std::optional<HostPort> parse_endpoint(std::string_view text, bool host_may_be_name) {
    const auto authority = parse_authority(text, PortPresence::required);
    if (!authority) return std::nullopt;
    const auto address = parse_address(authority->host);
    if (authority->ipv6 ? !address || !address->v6
                        : !address && !(host_may_be_name && parse_target(authority->host, 1).ok()))
        return std::nullopt;
    return HostPort{std::string(authority->host), authority->port};
}

std::optional<Address> parse_address(std::string_view text) {
    const std::string copy(text);
    Address address;
    in_addr v4{};
    // inet_pton takes only the dotted quad; "127.1" or "0x7f.0.0.1" are not addresses here.
    if (::inet_pton(AF_INET, copy.c_str(), &v4) == 1) {
        std::memcpy(address.bytes.data(), &v4, 4);
        return address;
    }
    in6_addr v6{};
    if (copy.find('%') == std::string::npos && ::inet_pton(AF_INET6, copy.c_str(), &v6) == 1) {
        address.v6 = true;
        std::memcpy(address.bytes.data(), &v6, 16);
        return address;
    }
    return std::nullopt;
}

std::string to_string(const Address& address) {
    char text[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(address.v6 ? AF_INET6 : AF_INET, address.bytes.data(), text, sizeof text);
    return text;
}

bool is_special(const Address& address) {
    const auto& b = address.bytes;
    if (!address.v6) {
        const unsigned a0 = b[0], a1 = b[1];
        return a0 == 0 || a0 == 10 || a0 == 127 || (a0 == 169 && a1 == 254) ||
               (a0 == 172 && (a1 & 0xf0) == 16) || (a0 == 192 && a1 == 168) ||
               (a0 == 100 && (a1 & 0xc0) == 64) || a0 >= 224 || // multicast, reserved, broadcast
               (a0 == 192 && a1 == 0 && b[2] == 0);              // IETF protocol assignments
    }
    const bool zero_prefix = std::all_of(b.begin(), b.begin() + 10, [](unsigned char c) { return c == 0; });
    if (zero_prefix && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, which covers :: and ::1 too)
        Address v4;
        std::copy(b.begin() + 12, b.end(), v4.bytes.begin());
        return is_special(v4) || (b[10] == 0 && b[11] == 0);
    }
    if ((b[0] & 0xfe) == 0xfc) return true;                  // fc00::/7 unique local
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // fe80::/10 link-local
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  // fec0::/10 site-local (old)
    if (b[0] == 0xff) return true;                           // multicast
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return true; // 64:ff9b:: NAT64
    if (b[0] == 0x20 && b[1] == 0x02) return true;           // 2002::/16 6to4 wraps any v4
    return false;
}

bool is_own(const Address& address, const std::vector<Address>& own_addresses) {
    return std::any_of(own_addresses.begin(), own_addresses.end(), [&](const Address& mine) {
        return mine.v6 == address.v6 && mine.bytes == address.bytes;
    });
}

std::optional<std::string> check_address(const Decision& decision, const Target& target,
                                         const Address& address,
                                         const std::vector<Address>& own_addresses) {
    const bool own = is_own(address, own_addresses);
    if (!own && !is_special(address)) return std::nullopt;
    if (decision.exact) return std::nullopt;
    return authority_text(target) + " resolves to " + to_string(address) + ", " +
           (own ? "an address of this machine" : "a loopback, private or link-local address") +
           ", which a session may reach only through a rule of its agent or project (not an addon's) naming "
           "that host or address exactly";
}

} // namespace handler::network
