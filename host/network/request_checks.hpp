// What a request head must be before any of it goes on (docs/network.md, "Requests").
// The proxy runs these on the head of every CONNECT and plain-HTTP request, and on every
// request inside a connection whose TLS it terminates, kept-alive or not: a request that
// two HTTP parsers could read two ways (request smuggling) is refused with 400, and one
// that names another host than its tunnel's with 421. Beast's parser refuses some shapes
// itself (Content-Length beside a chunked Transfer-Encoding, a bare CR, malformed chunk
// sizes and extensions); these refuse the rest, and say why in the proxy's words.
//
// Pure: the caller reads and parses; internal to network/ (it speaks Beast's types).
#pragma once

#include "network/policy.hpp"

#include <boost/beast/http/message.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace handler::network {

struct RequestProblem {
    unsigned status = 400;
    const char* status_text = "Bad Request";
    std::string reason; // a sentence for the client and the network log
};

// Where a request head ends in `received` (what a client sent, from the head's first
// byte). Refused on the way, because parsers disagree on them (RFC 9112 2.2, 5.2): a line
// ended by a bare LF, a CR not followed by LF, and a field line folded onto the one
// before (obs-fold), which Beast joins and others take for a field of its own. Scanning
// resumes at `from`, the `next` of the call before, so a head that arrives a byte at a
// time is read once.
struct HeadScan {
    bool complete = false;
    std::size_t size = 0; // the head's bytes, its last CRLF CRLF included (complete only)
    std::size_t next = 0; // where the next call resumes
    std::optional<std::string> problem;
};
HeadScan scan_head(std::string_view received, std::size_t from = 0);

// How the body is framed, as RFC 9112 6 allows a proxy to pass on without guessing:
// HTTP/1.0 or 1.1 only (505 for anything else; Beast's parser already refuses other
// versions, HTTP/2's preface included, so this holds for heads built otherwise); at most one
// Content-Length, of digits only, and never beside a Transfer-Encoding (even two equal
// ones: RFC 9110 8.6 lets a recipient refuse them, and a proxy that passed them on would
// leave the choice to the upstream); a Transfer-Encoding only as one field that is
// exactly "chunked", and never in HTTP/1.0.
std::optional<RequestProblem> framing_problem(const boost::beast::http::request_header<>& head);

// A request inside a tunnel to `connect` (its CONNECT target, canonical): its target is
// origin-form ("/path", or "*" for OPTIONS), and its one Host names the tunnel's host in
// canonical form, and its port where one is given. A Host that names another host is
// 421 Misdirected Request (RFC 9110 15.5.20): the client should open a tunnel of its own
// to it, which the policy then decides. A missing or doubled Host is 400 (RFC 9112 3.2).
std::optional<RequestProblem> misdirected(const boost::beast::http::request_header<>& head, const Target& connect);

} // namespace handler::network
