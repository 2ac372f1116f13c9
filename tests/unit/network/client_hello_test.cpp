// The ClientHello reader on real hellos (tests/fixtures/tls: OpenSSL, curl and Node.js as
// they sent them), cut at every byte as TCP may deliver them, split over records as a
// client may send them, and altered the ways an agent would alter them to reach another
// host than the one its CONNECT named.
#include "network/client_hello.hpp"

#include "support/fakes.hpp"
#include "unit/network/client_hello_bytes.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace handler::network {
// Named as well, for unity builds (scripts/test.sh): helpers of the same name in
// other test files then do not meet.
namespace client_hello_test {
namespace {

using handler::testing::contains;
using namespace handler::network::testing;

Target target(std::string_view host, std::uint16_t port = 443) {
    auto parsed = parse_target(host, port);
    EXPECT_TRUE(parsed.ok()) << host;
    return parsed ? *parsed : Target{};
}

TEST(ClientHello, RealHellosAreReadWithTheirServerName) {
    const std::pair<const char*, std::optional<std::string>> cases[] = {
        {"openssl-sni.bin", "api.example.test"},   {"curl-sni.bin", "api.example.test"},
        {"node-sni.bin", "api.example.test"},      {"openssl-fragmented.bin", "api.example.test"},
        {"openssl-no-sni.bin", std::nullopt},      {"curl-ip.bin", std::nullopt},
    };
    for (const auto& [name, server_name] : cases) {
        const std::string bytes = fixture(name);
        const auto hello = read_client_hello(bytes);
        ASSERT_EQ(hello.status, HelloStatus::complete) << name << ": " << hello.problem;
        EXPECT_EQ(hello.server_name, server_name) << name;
        EXPECT_FALSE(hello.encrypted) << name;
        EXPECT_EQ(hello.record_bytes, bytes.size()) << name;
        // What follows the hello (an agent's early bytes) is not the hello's.
        EXPECT_EQ(read_client_hello(bytes + "\x17\x03\x03").record_bytes, bytes.size()) << name;
    }
}

// TCP delivers a hello in pieces: every prefix is a well-formed beginning, never a
// verdict, and the whole is read the same at any cut.
TEST(ClientHello, EveryPrefixOfARealHelloAsksForMore) {
    for (const char* name : {"curl-sni.bin", "openssl-fragmented.bin"}) {
        const std::string bytes = fixture(name);
        for (std::size_t length = 1; length < bytes.size(); ++length) {
            const auto hello = read_client_hello(std::string_view(bytes).substr(0, length));
            ASSERT_EQ(hello.status, HelloStatus::incomplete) << name << " cut at " << length << ": " << hello.problem;
        }
    }
}

// A client may split its hello over records of any size (the fixture above is OpenSSL's
// 512-byte split); one byte each is the hardest case, and still one hello.
TEST(ClientHello, AHelloSplitOverManyRecordsIsOneHello) {
    const std::string message = handshake(split(fixture("node-sni.bin")));
    for (const std::size_t fragment : {std::size_t{1}, std::size_t{3}, std::size_t{100}}) {
        const auto hello = read_client_hello(records(message, fragment));
        ASSERT_EQ(hello.status, HelloStatus::complete) << fragment << ": " << hello.problem;
        EXPECT_EQ(hello.server_name, "api.example.test");
    }
}

TEST(ClientHello, WhatIsNotTlsIsSaidSoFromItsFirstByte) {
    for (const std::string_view bytes :
         {std::string_view("GET / HTTP/1.1\r\n"), std::string_view("SSH-2.0-OpenSSH_9.2\r\n"),
          std::string_view("\x80\x2e\x01\x03\x01", 5) /* an SSLv2-format hello */, std::string_view("\x17\x03\x03", 3)})
        EXPECT_EQ(read_client_hello(bytes).status, HelloStatus::not_tls) << bytes;
    EXPECT_EQ(read_client_hello("").status, HelloStatus::incomplete);
}

TEST(ClientHello, AnEncryptedClientHelloIsMarked) {
    Parts parts = split(fixture("curl-sni.bin"));
    parts.extensions.emplace_back(0xfe0d, std::string("\x00\x00\x01\x00\x01\x20", 6) + std::string(32, 'k'));
    auto hello = read_client_hello(join(parts));
    ASSERT_EQ(hello.status, HelloStatus::complete) << hello.problem;
    EXPECT_TRUE(hello.encrypted);
    EXPECT_TRUE(contains(*hello_problem(hello, target("api.example.test")), "Encrypted ClientHello"));

    Parts older = split(fixture("curl-sni.bin"));
    older.extensions.emplace_back(0xffce, std::string(40, 'e')); // the ESNI drafts'
    EXPECT_TRUE(read_client_hello(join(older)).encrypted);
}

TEST(ClientHello, MalformedHellosAreRefusedWithWhy) {
    const std::string real = fixture("openssl-sni.bin");
    const Parts parts = split(real);

    Parts two_names = parts;
    two_names.extensions.emplace_back(0, server_name_extension("other.test"));
    Parts two_in_one = parts;
    for (auto& [type, data] : two_in_one.extensions)
        if (type == 0) {
            const std::string entries = std::string(1, '\0') + big_endian(8, 2) + "api.test" + std::string(1, '\0') +
                                        big_endian(10, 2) + "other.test";
            data = big_endian(entries.size(), 2) + entries;
        }
    Parts empty_name = with_server_name(parts, "");
    Parts other_type = parts;
    for (auto& [type, data] : other_type.extensions)
        if (type == 0) data[2] = '\x01';

    std::string wrong_message = real;
    wrong_message[5] = '\x02'; // a ServerHello
    std::string second_record_alert = fixture("openssl-fragmented.bin");
    second_record_alert[5 + 512] = '\x15';
    std::string extensions_too_long = join(parts);
    {
        const std::size_t at = 5 + 4 + parts.before.size();
        const std::size_t length = number(extensions_too_long, at, 2);
        extensions_too_long.replace(at, 2, big_endian(length - 1, 2));
    }
    std::string trailing = real + "x";
    trailing.replace(3, 2, big_endian(number(real, 3, 2) + 1, 2));
    std::string huge_record = real;
    huge_record.replace(3, 2, big_endian(16385, 2));
    std::string empty_record = std::string("\x16\x03\x01\x00\x00", 5) + real;
    std::string not_tls_version = real;
    not_tls_version[1] = '\x07';

    const std::pair<std::string, std::string> cases[] = {
        {join(two_names), "twice"},
        {join(two_in_one), "server_name"},
        {join(empty_name), "server_name"},
        {join(other_type), "server_name"},
        {wrong_message, "not a ClientHello"},
        {second_record_alert, "another type"},
        {extensions_too_long, "extension"},
        {trailing, "more handshake bytes"},
        {huge_record, "16 KiB"},
        {empty_record, "empty"},
        {not_tls_version, "version"},
    };
    for (const auto& [bytes, why] : cases) {
        const auto hello = read_client_hello(bytes);
        ASSERT_EQ(hello.status, HelloStatus::malformed) << why;
        EXPECT_TRUE(contains(hello.problem, why)) << why << ": " << hello.problem;
        EXPECT_TRUE(contains(*hello_problem(hello, target("api.example.test")), "malformed"));
    }
}

// The limit holds however the hello is sent: a declared length over it is refused at
// once, without waiting for the bytes.
TEST(ClientHello, AHelloOverTheLimitIsRefusedBeforeItArrives) {
    const std::string real = fixture("curl-sni.bin");
    EXPECT_EQ(read_client_hello(real, 300).status, HelloStatus::malformed);
    Parts padded = split(real);
    padded.extensions.emplace_back(21, std::string(40000, '\0')); // padding
    const std::string big = records(handshake(padded));
    const auto first_record = read_client_hello(std::string_view(big).substr(0, 5 + 16384));
    ASSERT_EQ(first_record.status, HelloStatus::malformed);
    EXPECT_TRUE(contains(first_record.problem, "over " + std::to_string(kClientHelloLimitBytes))) << first_record.problem;
    EXPECT_EQ(read_client_hello(std::string_view(big).substr(0, 9)).status, HelloStatus::malformed)
        << "the handshake header alone says it is too big";
}

TEST(ClientHello, ItsServerNameMustBeTheConnectHostInCanonicalForm) {
    const auto curl = read_client_hello(fixture("curl-sni.bin"));
    EXPECT_EQ(hello_problem(curl, target("api.example.test")), std::nullopt);
    EXPECT_EQ(hello_problem(curl, target("API.Example.Test.")), std::nullopt) << "the CONNECT's case and root dot";
    const auto upper = read_client_hello(join(with_server_name(split(fixture("curl-sni.bin")), "API.EXAMPLE.TEST.")));
    EXPECT_EQ(hello_problem(upper, target("api.example.test")), std::nullopt) << "the SNI's case and root dot";

    const auto fronted = hello_problem(curl, target("allowed.test"));
    ASSERT_TRUE(fronted.has_value());
    EXPECT_TRUE(contains(*fronted, "is for api.example.test (SNI)")) << *fronted;
    EXPECT_TRUE(contains(*fronted, "allowed.test:443")) << *fronted;
    EXPECT_TRUE(hello_problem(curl, target("api.example.test.evil")).has_value());
    EXPECT_TRUE(hello_problem(curl, target("example.test")).has_value()) << "a parent is another host";

    // No name: refused for a name, the only way for an address.
    const auto nameless = read_client_hello(fixture("curl-ip.bin"));
    EXPECT_TRUE(contains(*hello_problem(nameless, target("api.example.test")), "no SNI"));
    EXPECT_EQ(hello_problem(nameless, target("203.0.113.7")), std::nullopt);
    EXPECT_TRUE(hello_problem(curl, target("203.0.113.7")).has_value()) << "a name the address rule never decided";

    // An SNI that is no host name is refused without being quoted back.
    const auto odd = read_client_hello(join(with_server_name(split(fixture("curl-sni.bin")), "a\x1b[2Jb.test")));
    ASSERT_EQ(odd.status, HelloStatus::complete);
    const auto why = hello_problem(odd, target("api.example.test"));
    ASSERT_TRUE(why.has_value());
    EXPECT_FALSE(contains(*why, "\x1b")) << *why;
    const auto address = read_client_hello(join(with_server_name(split(fixture("curl-sni.bin")), "127.0.0.1")));
    EXPECT_TRUE(hello_problem(address, target("api.example.test")).has_value());
}

} // namespace
} // namespace client_hello_test
} // namespace handler::network
