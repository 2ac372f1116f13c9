// The first TLS ClientHello of a connection, read from the bytes a client sent before
// any of them go on (docs/network.md, "Names"). The egress proxy reads it behind every
// CONNECT, tunnelled or intercepted, so that a ClientHello naming another host than the
// one it decided (domain fronting by SNI) or hiding its name (Encrypted ClientHello) is
// refused before a byte of it leaves.
//
// Pure and bounded: it looks only at the bytes given, which may be any prefix of what
// the client sent (a hello can span several TLS records and TCP reads), and refuses a
// hello larger than the limit instead of waiting for it. The grammar is RFC 8446 4.1.2
// (ClientHello), 5.1 (records) and RFC 6066 3 (server_name), read strictly: whatever a
// TLS server would have to guess about is malformed here.
#pragma once

#include "network/policy.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace handler::network {

enum class HelloStatus {
    incomplete = 1, // a well-formed prefix: read more
    not_tls,        // the first byte is not that of a TLS handshake record
    complete,
    malformed,      // `problem` says what
};

struct ClientHello {
    HelloStatus status = HelloStatus::incomplete;
    std::string problem;
    // The one host_name of the server_name extension, as sent (the caller canonicalises
    // it); none when the extension is absent, as for an IP address.
    std::optional<std::string> server_name;
    // encrypted_client_hello (0xfe0d), or the older drafts' encrypted_server_name
    // (0xffce): the name that counts is hidden from the proxy.
    bool encrypted = false;
    std::size_t record_bytes = 0; // what the records that hold the hello took (complete only)
};

// Larger than any hello a client sends today (post-quantum key shares included: about
// 2 KiB), small enough to hold in memory per connection.
inline constexpr std::size_t kClientHelloLimitBytes = 32 * 1024;

ClientHello read_client_hello(std::string_view bytes, std::size_t limit_bytes = kClientHelloLimitBytes);

// Why a complete or malformed `hello` may not go on to `connect` (the CONNECT target, in
// canonical form), or nothing: it must be well-formed and not encrypted, and its SNI,
// in canonical form (parse_target), must name that host; for an IP address there must be
// none (RFC 6066 allows no addresses in it). The sentence names both hosts when the SNI
// is a host name, and never quotes one that is not.
std::optional<std::string> hello_problem(const ClientHello& hello, const Target& connect);

} // namespace handler::network
