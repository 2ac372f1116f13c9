#include "network/request_checks.hpp"

#include "network/authority.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>

namespace handler::network {

namespace http = boost::beast::http;

namespace {

RequestProblem bad_request(std::string reason) { return RequestProblem{400, "Bad Request", std::move(reason)}; }

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

} // namespace

HeadScan scan_head(std::string_view received, std::size_t from) {
    HeadScan scan;
    std::size_t line = from;
    for (;;) {
        const auto end = received.find('\n', line);
        const std::string_view text =
            received.substr(line, end == std::string_view::npos ? std::string_view::npos : end - line);
        // A CR anywhere but right before the LF (or at the end, where the LF may follow).
        const auto cr = text.find('\r');
        if (cr != std::string_view::npos && cr + 1 != text.size()) {
            scan.problem = "a line holds a CR that does not end it";
            return scan;
        }
        if (end == std::string_view::npos) {
            scan.next = line;
            return scan;
        }
        if (cr == std::string_view::npos) {
            scan.problem = "a line ends in a bare LF, not CRLF";
            return scan;
        }
        if (text.size() == 1) { // the empty line: the head's end
            scan.complete = true;
            scan.size = end + 1;
            scan.next = scan.size;
            return scan;
        }
        if (line != 0 && (text.front() == ' ' || text.front() == '\t')) {
            scan.problem = "a header line is folded onto the one before (obs-fold)";
            return scan;
        }
        line = end + 1;
    }
}

std::optional<RequestProblem> framing_problem(const http::request_header<>& head) {
    if (head.version() != 10 && head.version() != 11)
        return RequestProblem{505, "HTTP Version Not Supported",
                              "only HTTP/1.1 and HTTP/1.0 pass this proxy (HTTP/2 is not offered)"};
    const auto lengths = head.count(http::field::content_length);
    const auto encodings = head.count(http::field::transfer_encoding);
    if (lengths > 0 && encodings > 0)
        return bad_request("the request has both Content-Length and Transfer-Encoding, which parsers read two ways "
                           "(request smuggling)");
    if (lengths > 1)
        return bad_request("the request has more than one Content-Length (even equal ones are refused)");
    if (lengths == 1) {
        const std::string_view value = trimmed(head[http::field::content_length]);
        if (value.empty() || value.size() > 19 ||
            !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return bad_request("the request's Content-Length is not one decimal number");
    }
    if (encodings > 0) {
        if (head.version() == 10)
            return bad_request("an HTTP/1.0 request has a Transfer-Encoding, which RFC 9112 6.1 calls faulty framing");
        if (encodings > 1 || !boost::beast::iequals(trimmed(head[http::field::transfer_encoding]), "chunked"))
            return bad_request("the request's Transfer-Encoding is not exactly one 'chunked'");
    }
    return std::nullopt;
}

std::optional<RequestProblem> misdirected(const http::request_header<>& head, const Target& connect) {
    const std::string_view target(head.target().data(), head.target().size());
    const bool origin_form = target.starts_with('/') || (target == "*" && head.method() == http::verb::options);
    if (!origin_form)
        return bad_request("a request inside a tunnel names its path alone (origin form, like '/v1/messages'), "
                           "not a URL");
    const auto hosts = head.count(http::field::host);
    if (hosts != 1) return bad_request(hosts == 0 ? "the request has no Host" : "the request has more than one Host");
    const std::string_view value = trimmed(head[http::field::host]);
    const auto authority = parse_authority(value, PortPresence::optional);
    std::optional<Target> named;
    if (authority) {
        if (auto parsed = parse_target(authority->ipv6 ? "[" + std::string(authority->host) + "]"
                                                       : std::string(authority->host),
                                       authority->port != 0 ? authority->port : connect.port))
            named = std::move(*parsed);
    }
    if (!named) return bad_request("the request's Host is not host or host:port");
    if (named->host != connect.host || named->ip != connect.ip || named->port != connect.port)
        return RequestProblem{421, "Misdirected Request",
                              "this connection was opened to " + authority_text(connect) + " (CONNECT); a request for " +
                                  authority_text(*named) +
                                  " goes through a CONNECT of its own, which the policy decides"};
    return std::nullopt;
}

} // namespace handler::network
