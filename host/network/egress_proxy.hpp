// One session's egress proxy (docs/network.md). handlerd listens on
// <runtime>/sessions/<id>/proxy.sock, which the container sees read-only at
// /run/handler/proxy.sock; handler-shim bridges 127.0.0.1:3128 inside the container to
// it, and HTTP(S)_PROXY point there. The session has no other network, so every
// connection it makes out passes through here, and the socket says which session it is.
//
// Per connection: read the request head (CONNECT host:port, or an absolute-form
// http:// request) and check it (request_checks.hpp), decide by name from the live
// policy, resolve on the host side, decide by address, connect; behind a CONNECT, read
// the first TLS ClientHello and check its SNI against the CONNECT's host
// (client_hello.hpp); then tunnel bytes both ways, counting them, or hand the tunnel to
// interception.hpp. A refusal is a 403 whose body names the host, the rule and the
// command that would allow it. Every decision goes to the audit sink. When the policy
// changes, open tunnels are decided again and those now refused are cut.
//
// Threading: everything on the io thread. This header is free of Asio (pimpl).
#pragma once

#include "core/result.hpp"
#include "network/policy.hpp"
#include "network/secret_binding.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace handler::tls {
class CertificateAuthority;
} // namespace handler::tls

namespace handler::network {

// One decision, as the audit log keeps it.
struct AuditEntry {
    std::string session_id;
    std::int64_t at_ms = 0;
    std::string host;
    std::uint16_t port = 0;
    std::string method; // CONNECT, GET, ...
    std::string path;   // plain HTTP only; a tunnel's path is inside TLS
    Verdict verdict = Verdict::deny;
    std::string rule;
    std::string reason; // why it was refused (or cut)
    std::string secret; // the key put into this request (intercepted hosts only)
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    // The program connection this decision was made on (every request of a kept-alive
    // connection shares it): what ConnectionTracer's answer is recorded against.
    std::int64_t connection = 0;
};

// Where decisions go: record() when decided (returns an id), finish() with the byte
// counts when the connection ends. The daemon writes them to SQLite.
class AuditSink {
public:
    virtual ~AuditSink() = default;
    virtual std::int64_t record(const AuditEntry& entry) = 0;
    virtual void finish(std::int64_t id, std::uint64_t bytes_up, std::uint64_t bytes_down,
                        const std::string& reason) = 0;
};

// Who in the container opened each connection (docs/network.md, "Who made a
// connection"). Told of every program connection as it is admitted, before anything is
// decided; what it learns is recorded later, by `connection`, and is for display only:
// the proxy never waits for it and no decision depends on it.
class ConnectionTracer {
public:
    virtual ~ConnectionTracer() = default;
    // `peer_port`: the program's end of the TCP connection (127.0.0.1 or ::1 in the
    // container); 0 when there is none (an older shim streamed the bytes itself).
    virtual void trace(std::int64_t connection, std::uint16_t peer_port) = 0;
    // Runs `done` (on the io thread) once what trace() asked about `connection` has been
    // answered and recorded, or has timed out, or at once when nothing is waiting. A
    // refusal waits for it before it is sent: a program that exits as soon as it is
    // refused (curl) would otherwise be gone before the shim looked, and its entry could
    // not name it. Nothing but the refusal's delivery waits: it is decided and logged at
    // once, and the tracer bounds the wait (ChannelOptions::who_timeout).
    virtual void when_traced(std::int64_t connection, std::function<void()> done) {
        (void)connection;
        done();
    }
};

// Names to addresses, on the host. Asynchronous; `done` runs on the io thread.
class Resolver {
public:
    using Done = std::function<void(Result<std::vector<Address>>)>;
    virtual ~Resolver() = default;
    virtual void resolve(const std::string& host, Done done) = 0;
    // True for a name whose address the user fixed in the settings: it is theirs, so
    // the address check treats it like an exact rule (it may be loopback).
    virtual bool pinned(const std::string& host) const {
        (void)host;
        return false;
    }
    // Where the user sent host:port instead (like curl --connect-to), if they did. Such a
    // destination is theirs too, so it may be loopback.
    virtual std::optional<HostPort> pinned_endpoint(const std::string& host, std::uint16_t port) const {
        (void)host;
        (void)port;
        return std::nullopt;
    }
};

// getaddrinfo through Asio. `overrides` maps names to fixed addresses, like
// curl --resolve, and `endpoints` maps "name:port" to an IP address and port, like
// curl --connect-to: the test setting [network] resolve (docs/configuration.md).
std::unique_ptr<Resolver> make_system_resolver(boost::asio::io_context& io,
                                               std::map<std::string, std::vector<Address>> overrides,
                                               std::map<std::string, HostPort> endpoints = {});

// The TLS side of interception, shared by every session's proxy: per-host server
// contexts built from the CA's leaves (cached), and the client context that verifies
// real upstreams against the system's trust store (OpenSSL's default paths, so
// SSL_CERT_FILE/SSL_CERT_DIR apply). Both offer HTTP/1.1 only, which every harness
// speaks. Used on the io thread only.
class TlsContexts {
public:
    // `ca` must outlive this.
    static Result<std::unique_ptr<TlsContexts>> create(tls::CertificateAuthority& ca);
    ~TlsContexts();
    TlsContexts(const TlsContexts&) = delete;
    TlsContexts& operator=(const TlsContexts&) = delete;

    struct Impl;
    Impl& impl() { return *impl_; }

private:
    explicit TlsContexts(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

struct ProxyOptions {
    std::filesystem::path socket_path;
    std::string session_id;
    std::size_t header_limit_bytes = 16 * 1024;
    std::chrono::milliseconds header_timeout{30'000};
    std::chrono::milliseconds connect_timeout{10'000};
    std::size_t max_connections = 512;
    // The port the shim listens on in the container (its --proxy-port). A shim leases its
    // listeners to the proxy (handover.hpp); only listeners on loopback at this port are
    // taken, so nothing else bound in the container can be served as the proxy port.
    // 0: any loopback port (tests, the benchmark).
    std::uint16_t listener_port = 0;
    // An intercepted connection with no request for this long is closed.
    std::chrono::milliseconds idle_timeout{5 * 60'000};
};

// What a proxy uses and does not own; each must outlive it. `secrets` and `tls` may be
// null (a session with no keys): then nothing is intercepted.
struct ProxyServices {
    Resolver* resolver = nullptr;
    AuditSink* audit = nullptr;
    SecretSource* secrets = nullptr;
    TlsContexts* tls = nullptr;
    ConnectionTracer* tracer = nullptr; // may be null: nobody asks who
};

class EgressProxy {
public:
    using PolicySource = std::function<Policy()>;
    using Now = std::function<std::int64_t()>;

    // `policy` is asked on every connection (and on reevaluate()), so changes apply at
    // once; so are the session's keys.
    EgressProxy(boost::asio::io_context& io, ProxyOptions options, PolicySource policy,
                ProxyServices services, Now now, std::vector<Address> own_addresses);
    ~EgressProxy();
    EgressProxy(const EgressProxy&) = delete;
    EgressProxy& operator=(const EgressProxy&) = delete;

    Result<void> start();
    // Closes the listener and every connection.
    void stop();
    // The policy changed: decide every open tunnel again; cut those now refused.
    void reevaluate();
    std::size_t open_connections() const;
    // The most connections open at once since the last call (since start, the first
    // time); the count then starts again from those open now. handlerd gives glibc's
    // free heap back when this falls from a peak (daemon/heap.hpp).
    std::size_t take_peak_connections();

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

// This machine's own interface addresses (refused like loopback; check_address).
std::vector<Address> own_addresses();

} // namespace handler::network
