// The egress proxy's reading of a request head (network/egress_proxy.cpp, on_header):
// Beast's request parser with the proxy's head limit, then the CONNECT authority
// (parse_authority) or the absolute http:// URL (Boost.URL), then parse_target and the
// decision by name. Input: the bytes a program in the container sends to the proxy.
//
// Properties: the head parses the same however the bytes are split; a CONNECT target
// the proxy accepts written back (host:port) is accepted as the same target; a target's
// host is canonical (lower case, no trailing dot, an address in its usual form or a host
// name), so parsing it again changes nothing; a refusal by the policy names the host;
// the head a plain request is forwarded with parses again as exactly one head, with the
// rewritten origin-form target, a Host and no Proxy-Authorization.
#include "network/authority.hpp"
#include "network/host_rule.hpp"
#include "network/policy.hpp"

#include "fuzz/fuzz_support.hpp"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace {

namespace http = boost::beast::http;
using handler::fuzz::check;
using namespace handler::network;

// ProxyOptions' default head limit.
constexpr std::size_t kHeaderLimitBytes = 16 * 1024;

using Parser = http::request_parser<http::empty_body>;

// Feeds `pieces` as async_read_header does: the unconsumed bytes stay in the buffer and
// more are appended until the head is whole or the parser refuses it.
std::unique_ptr<Parser> read_head(const std::vector<std::string_view>& pieces, boost::beast::error_code& error) {
    auto parser = std::make_unique<Parser>();
    parser->header_limit(static_cast<std::uint32_t>(kHeaderLimitBytes));
    std::string buffer;
    for (const auto piece : pieces) {
        buffer.append(piece);
        const std::size_t used = parser->put(boost::asio::buffer(buffer), error);
        buffer.erase(0, used);
        if (error == http::error::need_more) {
            error = {};
            continue;
        }
        if (error || parser->is_header_done()) return parser;
    }
    error = http::error::need_more;
    return parser;
}

const Policy& policy() {
    static const Policy rules = [] {
        Policy made;
        made.mode = Mode::filtered;
        made.agent = "fuzz";
        for (const char* text : {"github.com", "*.npmjs.org", "10.0.0.5", "[fd00::1]:443", "api.example.com:8443"})
            made.allow.push_back(*parse_rule(text));
        made.model_hosts.push_back(*parse_rule("api.anthropic.com"));
        return made;
    }();
    return rules;
}

void check_target(const std::string& host, std::uint16_t port) {
    const auto target = parse_target(host, port);
    if (!target) return;
    check(target->port == port, "a target keeps its port", host);
    check(target->host == lower_ascii(target->host) && !target->host.ends_with('.'),
          "a target's host is lower case, without a trailing dot", target->host);
    if (target->ip) {
        const auto address = parse_address(target->host);
        check(address && to_string(*address) == target->host, "an address target is in its usual form",
              target->host);
    } else {
        check(is_host_name(target->host, Underscores::allowed), "a name target is a host name", target->host);
    }
    const auto again = parse_target(target->host, port);
    check(again && again->host == target->host && again->ip == target->ip, "a target parsed again is the same",
          target->host);
    const auto decision = decide(policy(), *target, 0);
    if (decision.verdict == Verdict::deny)
        check(decision.reason.find(target->host) != std::string::npos, "a refusal names the host", decision.reason);
    else
        check(!decision.rule.empty(), "an allowed target names its rule", target->host);
}

void check_connect(std::string_view authority_text) {
    const auto parsed = parse_authority(authority_text, PortPresence::required);
    if (!parsed) return;
    const std::string host(parsed->host);
    check_target(host, parsed->port);
    const auto target = parse_target(host, parsed->port);
    if (!target) return;
    const bool v6 = target->ip && target->host.find(':') != std::string::npos;
    const std::string written = (v6 ? "[" + target->host + "]" : target->host) + ":" + std::to_string(target->port);
    const auto reparsed = parse_authority(written, PortPresence::required);
    check(reparsed.ok(), "a CONNECT target written back parses", written);
    const auto same = parse_target(reparsed->host, reparsed->port);
    check(same && same->host == target->host && same->port == target->port,
          "a CONNECT target written back is the same target", written);
}

// What on_header does to a plain request before it goes upstream.
void check_plain(Parser& parser) {
    auto& request = parser.get();
    auto url = boost::urls::parse_absolute_uri(request.target());
    if (!url || url->scheme() != "http" || !url->has_authority()) return;
    const std::string host(url->encoded_host());
    const std::uint16_t port = url->has_port() ? url->port_number() : 80;
    if (port == 0) return;
    std::string path(url->encoded_path());
    if (path.empty()) path = "/";
    if (url->has_query()) path += "?" + std::string(url->encoded_query());
    request.target(path);
    request.erase(http::field::proxy_authorization);
    request.erase("Proxy-Connection");
    request.set(http::field::connection, "close");
    if (request.find(http::field::host) == request.end()) request.set(http::field::host, host);
    check_target(host, port);

    std::ostringstream written;
    written << request.base();
    const std::string head = written.str();
    boost::beast::error_code error;
    Parser again;
    again.header_limit(static_cast<std::uint32_t>(head.size() + 1));
    const std::size_t used = again.put(boost::asio::buffer(head), error);
    check(!error && again.is_header_done(), "the forwarded head parses", head);
    check(used == head.size(), "the forwarded head is one head and nothing more", head);
    check(again.get().target() == path, "the forwarded head has the origin-form target", head);
    check(again.get().find(http::field::host) != again.get().end(), "the forwarded head has a Host", head);
    check(again.get().find(http::field::proxy_authorization) == again.get().end(),
          "the forwarded head carries no Proxy-Authorization", head);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes = handler::fuzz::as_text(data, size);
    boost::beast::error_code whole_error;
    auto whole = read_head({bytes}, whole_error);
    boost::beast::error_code split_error;
    auto split = read_head(handler::fuzz::pieces_of(bytes), split_error);
    const bool whole_done = !whole_error && whole->is_header_done();
    const bool split_done = !split_error && split->is_header_done();
    check(whole_done == split_done, "a head parses the same however it is split", bytes);
    if (!whole_done) return 0;
    check(whole->get().method_string() == split->get().method_string() &&
              whole->get().target() == split->get().target(),
          "a head parses to the same request however it is split", bytes);

    auto& request = whole->get();
    if (request.method() == http::verb::connect)
        check_connect(std::string_view(request.target().data(), request.target().size()));
    else
        check_plain(*whole);
    return 0;
}
