// The one "host:port" reader (network/authority.hpp): the proxy's CONNECT target, host
// rules and [network] resolve's endpoints. Input: the text as a client sends it.
//
// Properties: a parsed authority written back (brackets around IPv6 when it had them or a
// port follows) parses to the same parts; the host lies inside the text; a required port
// is never 0; a port is 1 to 65535 and its decimal form reads back; an endpoint written
// back reads back the same.
#include "network/authority.hpp"
#include "network/policy.hpp"

#include "fuzz/fuzz_support.hpp"

#include <string>

namespace {

using handler::fuzz::check;
using namespace handler::network;

std::string written_back(const Authority& authority, bool bracketed) {
    std::string text(authority.host);
    if (authority.ipv6 && (bracketed || authority.port != 0)) text = "[" + text + "]";
    if (authority.port != 0) text += ":" + std::to_string(authority.port);
    return text;
}

void check_authority(std::string_view text, PortPresence presence) {
    const auto parsed = parse_authority(text, presence);
    if (!parsed) {
        check(!parsed.error().message.empty(), "a refusal says why");
        return;
    }
    const Authority& authority = *parsed;
    check(authority.host.data() >= text.data() &&
              authority.host.data() + authority.host.size() <= text.data() + text.size(),
          "the host points into the text", text);
    check(!(authority.ipv4 && authority.ipv6), "an address is IPv4 or IPv6, not both", text);
    if (presence == PortPresence::required) check(authority.port != 0, "a required port is there", text);
    const std::string again = written_back(authority, text.starts_with('['));
    const auto reparsed = parse_authority(again, presence);
    check(reparsed.ok(), "a parsed authority written back parses", again);
    check(reparsed->host == authority.host && reparsed->port == authority.port &&
              reparsed->ipv4 == authority.ipv4 && reparsed->ipv6 == authority.ipv6,
          "a parsed authority written back parses to the same parts", text);
}

void check_endpoint(std::string_view text, bool host_may_be_name) {
    const auto endpoint = parse_endpoint(text, host_may_be_name);
    if (!endpoint) return;
    check(endpoint->port != 0, "an endpoint has a port", text);
    if (!host_may_be_name) check(parse_address(endpoint->host).has_value(), "an address endpoint is an address", text);
    const bool v6 = endpoint->host.find(':') != std::string::npos;
    const std::string again = (v6 ? "[" + endpoint->host + "]" : endpoint->host) + ":" + std::to_string(endpoint->port);
    const auto reparsed = parse_endpoint(again, host_may_be_name);
    check(reparsed && reparsed->host == endpoint->host && reparsed->port == endpoint->port,
          "an endpoint written back reads back the same", again);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = handler::fuzz::as_text(data, size);
    check_authority(text, PortPresence::required);
    check_authority(text, PortPresence::optional);
    if (const auto port = parse_port(text)) {
        check(*port >= 1, "a port is at least 1", text);
        check(parse_port(std::to_string(*port)) == port, "a port's decimal form reads back", text);
    }
    check_endpoint(text, false);
    check_endpoint(text, true);
    return 0;
}
