// The host-rule grammar (network/host_rule.hpp) that the store, the API and the policy
// all read rules with, and the policy's decision by name (network/policy.hpp). Input: a
// rule as a user types it into allowed_hosts.
//
// Properties: a rule's canonical text parses to the same rule (so what the store keeps
// is what the policy decides with); its host is lower case, a host name by the grammar
// or an address in its usual form; a refusal names the field; an exact rule allows its
// own host (at its port, or any port) and nothing under it; a wildcard allows a name
// under its suffix and never the suffix itself.
#include "network/host_rule.hpp"
#include "network/policy.hpp"

#include "fuzz/fuzz_support.hpp"

#include <string>

namespace {

using handler::fuzz::check;
using namespace handler::network;

Decision decision_for(const HostRule& rule, const std::string& host, std::uint16_t port) {
    const auto target = parse_target(host, port);
    check(target.ok(), "a host a rule names is a target the proxy accepts", host);
    Policy policy;
    policy.mode = Mode::filtered;
    policy.allow = {rule};
    return decide(policy, *target, 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = handler::fuzz::as_text(data, size);
    const auto parsed = parse_rule(text, "allowed_hosts[0]");
    if (!parsed) {
        check(parsed.error().message.starts_with("allowed_hosts[0] '"), "a refusal names the field",
              parsed.error().message);
        return 0;
    }
    const HostRule& rule = *parsed;
    check(rule.host == lower_ascii(rule.host), "a rule's host is lower case", rule.text);
    if (rule.ip) {
        const auto address = parse_address(rule.host);
        check(address && to_string(*address) == rule.host, "an address rule holds the address's usual form",
              rule.text);
        check(!rule.wildcard, "an address is never a wildcard", rule.text);
    } else {
        check(is_host_name(rule.host, Underscores::refused), "a name rule's host is a host name", rule.text);
    }

    const auto again = parse_rule(rule.text, "allowed_hosts[0]");
    check(again.ok(), "a rule's canonical text parses", rule.text);
    check(again->host == rule.host && again->port == rule.port && again->wildcard == rule.wildcard &&
              again->ip == rule.ip && again->text == rule.text,
          "a rule's canonical text parses to the same rule", rule.text);

    const std::uint16_t port = rule.port != 0 ? rule.port : 443;
    if (!rule.wildcard) {
        check(decision_for(rule, rule.host, port).verdict == Verdict::allow, "an exact rule allows its host",
              rule.text);
        if (rule.port != 0)
            check(decision_for(rule, rule.host, rule.port == 1 ? 2 : 1).verdict == Verdict::deny,
                  "a rule with a port allows no other port", rule.text);
        if (!rule.ip && rule.host.size() + 2 <= 253)
            check(decision_for(rule, "a." + rule.host, port).verdict == Verdict::deny,
                  "an exact rule allows nothing under its host", rule.text);
    } else {
        check(decision_for(rule, rule.host, port).verdict == Verdict::deny,
              "a wildcard does not allow its suffix itself", rule.text);
        if (rule.host.size() + 2 <= 253)
            check(decision_for(rule, "a." + rule.host, port).verdict == Verdict::allow,
                  "a wildcard allows a name under its suffix", rule.text);
    }
    return 0;
}
