// The checks every request head passes before any of it goes on: the shapes of request
// smuggling (RFC 9112 6, 2.2, 5.2) and a Host that names another host than the tunnel's.
// The proxy runs them on real sockets in egress_proxy_test and interception_test; here
// each rule alone, on heads built field by field (so that Beast's parser, which refuses
// some shapes itself, does not decide for them).
#include "network/request_checks.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

namespace handler::network {
namespace {

using handler::testing::contains;
namespace http = boost::beast::http;

http::request_header<> head(std::initializer_list<std::pair<http::field, std::string_view>> fields,
                            unsigned version = 11, std::string_view target = "/v1/messages") {
    http::request_header<> request;
    request.method(http::verb::post);
    request.target(target);
    request.version(version);
    for (const auto& [name, value] : fields) request.insert(name, value);
    return request;
}

Target connect_target(std::string_view host, std::uint16_t port = 443) { return *parse_target(host, port); }

TEST(RequestChecks, AHeadEndsAtItsEmptyLine) {
    const std::string whole = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\nbody";
    const auto scan = scan_head(whole);
    EXPECT_TRUE(scan.complete);
    EXPECT_EQ(scan.size, whole.size() - 4);
    EXPECT_FALSE(scan.problem);
    // A byte at a time: each call resumes where the last stopped, and ends the same.
    std::size_t from = 0;
    for (std::size_t length = 1; length <= whole.size(); ++length) {
        const auto part = scan_head(std::string_view(whole).substr(0, length), from);
        ASSERT_FALSE(part.problem) << length;
        if (part.complete) {
            EXPECT_EQ(part.size, scan.size);
            EXPECT_EQ(length, scan.size) << "complete as soon as its last LF came";
            break;
        }
        from = part.next;
    }
}

TEST(RequestChecks, BareLineEndsAndFoldedLinesAreRefusedAsTheyArrive) {
    const std::pair<std::string, std::string> cases[] = {
        {"GET / HTTP/1.1\nHost: a.test\n\n", "bare LF"},
        {"GET / HTTP/1.1\r\nHost: a.test\n\r\n", "bare LF"},
        {"GET / HTTP/1.1\r\nHost: a.test\r\nX: 1\n", "bare LF"}, // before the head is whole
        {"GET / HTTP/1.1\r\nHost: a\rtest\r\n\r\n", "CR"},
        {"GET / HTTP/1.1\r\nX-A: 1\r\n folded: in\r\n\r\n", "obs-fold"},
        {"GET / HTTP/1.1\r\nX-A: 1\r\n\tContent-Length: 5\r\n\r\n", "obs-fold"},
    };
    for (const auto& [bytes, why] : cases) {
        const auto scan = scan_head(bytes);
        ASSERT_TRUE(scan.problem) << bytes;
        EXPECT_TRUE(contains(*scan.problem, why)) << *scan.problem;
        EXPECT_FALSE(scan.complete);
    }
}

TEST(RequestChecks, OnlyOneUnambiguousFramingPasses) {
    EXPECT_FALSE(framing_problem(head({{http::field::content_length, "5"}})));
    EXPECT_FALSE(framing_problem(head({{http::field::transfer_encoding, "chunked"}})));
    EXPECT_FALSE(framing_problem(head({{http::field::transfer_encoding, "Chunked"}})));
    EXPECT_FALSE(framing_problem(head({})));
    EXPECT_FALSE(framing_problem(head({}, 10)));
    const std::pair<http::request_header<>, std::string> cases[] = {
        {head({{http::field::content_length, "5"}, {http::field::transfer_encoding, "chunked"}}), "both"},
        {head({{http::field::transfer_encoding, "chunked"}, {http::field::content_length, "5"}}), "both"},
        {head({{http::field::content_length, "5"}, {http::field::content_length, "5"}}), "more than one"},
        {head({{http::field::content_length, "5"}, {http::field::content_length, "6"}}), "more than one"},
        {head({{http::field::content_length, "5, 5"}}), "not one decimal"},
        {head({{http::field::content_length, "+5"}}), "not one decimal"},
        {head({{http::field::content_length, "0x5"}}), "not one decimal"},
        {head({{http::field::content_length, "99999999999999999999"}}), "not one decimal"},
        {head({{http::field::transfer_encoding, "gzip, chunked"}}), "exactly one 'chunked'"},
        {head({{http::field::transfer_encoding, "chunked, gzip"}}), "exactly one 'chunked'"},
        {head({{http::field::transfer_encoding, "chunked"}, {http::field::transfer_encoding, "chunked"}}),
         "exactly one 'chunked'"},
        {head({{http::field::transfer_encoding, "xchunked"}}), "exactly one 'chunked'"},
        {head({{http::field::transfer_encoding, "chunked"}}, 10), "HTTP/1.0"},
    };
    for (const auto& [request, why] : cases) {
        const auto problem = framing_problem(request);
        ASSERT_TRUE(problem) << why;
        EXPECT_EQ(problem->status, 400u);
        EXPECT_TRUE(contains(problem->reason, why)) << problem->reason;
    }
    const auto h2 = framing_problem(head({}, 20)); // "PRI * HTTP/2.0", HTTP/2's preface
    ASSERT_TRUE(h2);
    EXPECT_EQ(h2->status, 505u);
}

TEST(RequestChecks, TheHostMustNameTheTunnelsHost) {
    const auto api = connect_target("api.test");
    EXPECT_FALSE(misdirected(head({{http::field::host, "api.test"}}), api));
    EXPECT_FALSE(misdirected(head({{http::field::host, "API.Test."}}), api)) << "case and the root dot";
    EXPECT_FALSE(misdirected(head({{http::field::host, "api.test:443"}}), api));
    EXPECT_FALSE(misdirected(head({{http::field::host, "[::1]:8443"}}), connect_target("[::1]", 8443)));
    EXPECT_FALSE(misdirected(head({{http::field::host, "xn--bcher-kva.example"}}),
                             connect_target("xn--bcher-kva.example")));
    const std::pair<http::request_header<>, unsigned> cases[] = {
        {head({{http::field::host, "other.test"}}), 421},
        {head({{http::field::host, "api.test.other.test"}}), 421},
        {head({{http::field::host, "api.test:8443"}}), 421},
        {head({{http::field::host, "127.0.0.1"}}), 421},
        {head({}), 400},
        {head({{http::field::host, "api.test"}, {http::field::host, "other.test"}}), 400},
        {head({{http::field::host, "api.test"}, {http::field::host, "api.test"}}), 400},
        {head({{http::field::host, "api.test/evil"}}), 400},
        {head({{http::field::host, "user@api.test"}}), 400},
        {head({{http::field::host, "api.test"}}, 11, "https://other.test/v1"), 400},
        {head({{http::field::host, "api.test"}}, 11, "other.test:443"), 400},
    };
    for (const auto& [request, status] : cases) {
        const auto problem = misdirected(request, api);
        ASSERT_TRUE(problem) << request[http::field::host];
        EXPECT_EQ(problem->status, status) << request[http::field::host] << ": " << problem->reason;
    }
    const auto other = misdirected(head({{http::field::host, "Other.Test"}}), api);
    EXPECT_EQ(std::string(other->status_text), "Misdirected Request");
    EXPECT_TRUE(contains(other->reason, "opened to api.test:443")) << other->reason;
    EXPECT_TRUE(contains(other->reason, "a request for other.test:443")) << other->reason;
    http::request_header<> options = head({{http::field::host, "api.test"}}, 11, "*");
    options.method(http::verb::options);
    EXPECT_FALSE(misdirected(options, api)) << "OPTIONS * is the one target without a path";
}

} // namespace
} // namespace handler::network
