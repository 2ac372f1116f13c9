// TLS interception for the hosts a session's keys are bound to (docs/network.md, "Keys").
// The egress proxy hands a CONNECT tunnel here once it has decided and connected: the
// container's TLS ends at a leaf the per-install CA minted for the host, each request
// is read, its stand-in swapped for the real key in the bound header only, and sent on
// over TLS that verifies the real upstream against the system's trust store. Requests
// that carry another key's stand-in are refused and logged as exfiltration attempts.
//
// Internal to network/: only egress_proxy.cpp and interception.cpp include this, which
// keeps Asio's SSL and coroutine headers out of every other translation unit.
#pragma once

#include "network/egress_proxy.hpp"
#include "network/secret_binding.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace handler::network {

struct InterceptionSetup {
    InterceptionSetup(boost::asio::generic::stream_protocol::socket from_client,
                      boost::asio::ip::tcp::socket to_upstream)
        : client(std::move(from_client)), upstream(std::move(to_upstream)) {}

    // The container's connection: the TCP connection the shim handed over, or (from an
    // older shim) a stream on the proxy socket.
    boost::asio::generic::stream_protocol::socket client;
    boost::asio::ip::tcp::socket upstream;    // connected
    std::string early_bytes;                  // what followed the CONNECT head
    std::vector<boost::asio::ip::tcp::endpoint> endpoints; // checked; for reconnecting
    std::string session_id;
    std::int64_t connection = 0; // AuditEntry::connection
    std::string host;
    std::uint16_t port = 0;
    Target target; // host and port in canonical form: what every request's Host must name
    std::string rule;
    // The policy's refusal of the tunnel's target now, if it refuses it: asked again for
    // every request, so a change between two is never missed.
    std::function<std::optional<std::string>()> policy_refusal;
    std::vector<SecretBinding> bindings; // all of the session's
    SecretSource* secrets = nullptr;
    TlsContexts* tls = nullptr;
    AuditSink* audit = nullptr;
    std::function<std::int64_t()> now;
    std::size_t header_limit_bytes = 16 * 1024;
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds idle_timeout{5 * 60'000};
};

// A whole plain-text HTTP response that closes the connection (refusals, 502s).
std::string text_response(unsigned status, const char* reason, const std::string& body);

class Interception : public std::enable_shared_from_this<Interception> {
public:
    // The tunnel ended: bytes each way (TLS records as they crossed the container's
    // side) and why it was cut, if it was.
    using Done = std::function<void(std::uint64_t up, std::uint64_t down, const std::string& reason)>;

    static std::shared_ptr<Interception> start(InterceptionSetup setup, Done done);
    virtual ~Interception() = default;
    // Cut it now (the policy changed); `reason` goes to the audit log.
    virtual void close(const std::string& reason) = 0;
};

} // namespace handler::network
