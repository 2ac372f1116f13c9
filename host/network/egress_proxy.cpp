#include "network/egress_proxy.hpp"

#include "network/authority.hpp"
#include "network/client_hello.hpp"
#include "network/interception.hpp"
#include "network/request_checks.hpp"

#include <handler/handover.hpp>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/connect.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <list>
#include <sstream>
#include <optional>
#include <random>

namespace handler::network {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using local = net::local::stream_protocol;
using generic = net::generic::stream_protocol;
using tcp = net::ip::tcp;

Address from_asio(const net::ip::address& address) {
    Address out;
    if (address.is_v4()) {
        const auto bytes = address.to_v4().to_bytes();
        std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
    } else {
        out.v6 = true;
        const auto bytes = address.to_v6().to_bytes();
        std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
    }
    return out;
}

net::ip::address to_asio(const Address& address) {
    if (!address.v6) {
        net::ip::address_v4::bytes_type bytes;
        std::copy_n(address.bytes.begin(), 4, bytes.begin());
        return net::ip::address_v4(bytes);
    }
    net::ip::address_v6::bytes_type bytes;
    std::copy_n(address.bytes.begin(), 16, bytes.begin());
    return net::ip::address_v6(bytes);
}

class SystemResolver final : public Resolver {
public:
    SystemResolver(net::io_context& io, std::map<std::string, std::vector<Address>> overrides,
                   std::map<std::string, HostPort> endpoints)
        : io_(io), overrides_(std::move(overrides)), endpoints_(std::move(endpoints)) {}

    void resolve(const std::string& host, Done done) override {
        if (auto found = overrides_.find(host); found != overrides_.end()) {
            net::post(io_, [addresses = found->second, done = std::move(done)] { done(addresses); });
            return;
        }
        auto resolver = std::make_shared<tcp::resolver>(io_);
        resolver->async_resolve(
            host, "0", tcp::resolver::numeric_service,
            [resolver, host, done = std::move(done)](const boost::system::error_code& error,
                                                     const tcp::resolver::results_type& results) {
                if (error) {
                    done(make_error(ErrorCode::not_found,
                                    "cannot resolve " + host + ": " + error.message()));
                    return;
                }
                std::vector<Address> addresses;
                for (const auto& entry : results) addresses.push_back(from_asio(entry.endpoint().address()));
                done(std::move(addresses));
            });
    }

    bool pinned(const std::string& host) const override { return overrides_.count(host) > 0; }

    std::optional<HostPort> pinned_endpoint(const std::string& host, std::uint16_t port) const override {
        const auto found = endpoints_.find(host + ":" + std::to_string(port));
        if (found == endpoints_.end()) return std::nullopt;
        return found->second;
    }

private:
    net::io_context& io_;
    std::map<std::string, std::vector<Address>> overrides_;
    std::map<std::string, HostPort> endpoints_;
};

} // namespace

std::string text_response(unsigned status, const char* reason, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason +
           "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
           std::to_string(body.size() + 1) + "\r\nConnection: close\r\n\r\n" + body + "\n";
}

namespace {

// The family (AF_INET or AF_INET6) of a TCP socket that is listening or not as asked,
// or 0 for anything else: a file, a pipe, a unix socket, a UDP socket.
int tcp_family(int fd, bool listening) {
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) return 0;
    int value = 0;
    socklen_t size = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &size) != 0 || value != SOCK_STREAM) return 0;
    size = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &value, &size) != 0 || value != IPPROTO_TCP) return 0;
    size = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &size) != 0 || (value != 0) != listening) return 0;
    int family = 0;
    size = sizeof family;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &size) != 0 || (family != AF_INET && family != AF_INET6))
        return 0;
    return family;
}

// True for 127.0.0.0/8 and ::1, with the port in `port`.
bool loopback_address(const sockaddr_storage& address, std::uint16_t& port) {
    if (address.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
        port = ntohs(v4->sin_port);
        return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    }
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    port = ntohs(v6->sin6_port);
    return address.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
}

// What a shim hands over must be one TCP connection from the container's own loopback
// (the shim accepts only there): anything else (a file, a listening socket, a unix
// socket, a connection an open-mode session made to some server outside) is refused, so
// nothing but a program's connection to the proxy port is ever served as one.
bool is_connected_tcp(int fd, int& family) {
    family = tcp_family(fd, false);
    if (family == 0) return false;
    sockaddr_storage peer{};
    socklen_t peer_size = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) return false;
    std::uint16_t port = 0;
    return loopback_address(peer, port);
}

// What a shim leases must be its listener: TCP, listening, bound to loopback at the
// proxy port. The shim holds that port, so nothing else in the container can be bound
// there; every connection accepted from it is a program's connection to the proxy.
bool is_proxy_listener(int fd, std::uint16_t expected_port, int& family) {
    family = tcp_family(fd, true);
    if (family == 0) return false;
    sockaddr_storage bound{};
    socklen_t bound_size = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_size) != 0) return false;
    std::uint16_t port = 0;
    return loopback_address(bound, port) && (expected_port == 0 || port == expected_port);
}

// A read of a ClientHello: most fit in one (curl's is 517 bytes, with a post-quantum key
// share about 1.8 KiB), and read_client_hello bounds the whole.
constexpr std::size_t kHelloReadBytes = 4096;

std::string exfiltration_reason(const SecretBinding& binding, const std::string& host) {
    std::string hosts;
    for (const auto& each : binding.hosts) hosts += (hosts.empty() ? "" : ", ") + each;
    return "exfiltration attempt: a request to " + host + " carries the session's stand-in for its " +
           binding.name + " key, which only ever goes to " + hosts + "; it was refused and logged";
}

} // namespace

// One client connection: read the head, decide, connect, tunnel.
class ProxyConnection;

struct EgressProxy::Impl : std::enable_shared_from_this<Impl> {
    Impl(net::io_context& io_context, ProxyOptions proxy_options, PolicySource source,
         ProxyServices proxy_services, Now clock, std::vector<Address> own)
        : io(io_context), options(std::move(proxy_options)), policy(std::move(source)),
          resolver(*proxy_services.resolver), audit(*proxy_services.audit), services(proxy_services),
          now(std::move(clock)), own_addresses(std::move(own)),
          acceptor(std::make_shared<net::basic_socket_acceptor<generic>>(io_context)) {}

    void accept();
    // Serves a connection from the unix socket (`handed` false: a handover or an old
    // shim's bytes follow) or from a leased listener (the program's own connection).
    void admit(generic::socket socket, bool direct);
    // Takes a shim's listeners (handover.hpp); owns `fds` either way. False: refused.
    bool take_lease(generic::socket& channel, const std::vector<int>& fds);
    void end_lease();

    // The shim's listeners while it leases them, and the connection that holds the lease.
    struct Lease {
        explicit Lease(generic::socket socket) : channel(std::move(socket)) {}
        generic::socket channel;
        std::vector<std::shared_ptr<net::basic_socket_acceptor<generic>>> listeners;
    };
    template <class Acceptor>
    void accept_on(std::shared_ptr<Acceptor> listener, bool direct);

    net::io_context& io;
    const ProxyOptions options;
    PolicySource policy;
    Resolver& resolver;
    AuditSink& audit;
    const ProxyServices services;
    Now now;
    const std::vector<Address> own_addresses;
    std::shared_ptr<net::basic_socket_acceptor<generic>> acceptor;
    std::unique_ptr<Lease> lease;
    std::list<std::weak_ptr<ProxyConnection>> connections;
    std::size_t peak_connections = 0; // take_peak_connections()
    // Connection ids are kept in the log with the session, across handlerd restarts: a
    // random start makes a clash with an earlier run's ids as good as impossible.
    std::int64_t next_connection = (static_cast<std::int64_t>(std::random_device{}() >> 1) << 31) |
                                   static_cast<std::int64_t>(std::random_device{}() & 0x7fff'ffffu);
    bool stopped = false;

    // A program connection: named, and its owner asked for.
    std::int64_t traced(int fd) {
        const std::int64_t id = ++next_connection;
        if (services.tracer == nullptr) return id;
        std::uint16_t port = 0;
        sockaddr_storage peer{};
        socklen_t peer_size = sizeof peer;
        if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0 ||
            !loopback_address(peer, port))
            port = 0;
        services.tracer->trace(id, port);
        return id;
    }
};

class ProxyConnection : public std::enable_shared_from_this<ProxyConnection> {
public:
    ProxyConnection(EgressProxy::Impl& owner, generic::socket client)
        : owner_(owner), client_(std::move(client)), upstream_(owner.io), timer_(owner.io) {}

    void start(bool direct) {
        parser_.header_limit(static_cast<std::uint32_t>(owner_.options.header_limit_bytes));
        arm_timer(owner_.options.header_timeout, "the request head did not arrive in time");
        if (!direct) return await_handover();
        connection_ = owner_.traced(client_.native_handle());
        boost::system::error_code ignored;
        client_.set_option(tcp::no_delay(true), ignored);
        read_head();
    }

    // The shim hands over each connection a program makes (one zero byte carrying the
    // TCP socket, SCM_RIGHTS), so the proxy serves the program's own connection and no
    // byte is copied on the way. An older shim streams the bytes instead; its first byte
    // is the request's.
    void await_handover() {
        client_.async_wait(net::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& error) {
            if (error || self->closed_) return self->close();
            self->take_handover();
        });
    }

    void take_handover() {
        auto handover = shim::receive_handover(client_.native_handle(), MSG_DONTWAIT);
        if (handover.got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return await_handover();
        auto drop = [&] {
            for (const int fd : handover.fds) ::close(fd);
            close();
        };
        if (handover.got <= 0) return drop();
        if (handover.lease()) {
            timer_.cancel();
            closed_ = true; // the unix socket is the lease's now, or closed
            if (!owner_.take_lease(client_, handover.fds)) client_.close();
            return;
        }
        if (handover.fds.empty() && handover.byte != shim::kHandoverByte) {
            connection_ = owner_.traced(-1);
            std::memcpy(buffer_.prepare(1).data(), &handover.byte, 1);
            buffer_.commit(1);
            return read_head();
        }
        int family = 0;
        if (!handover.well_formed() || !is_connected_tcp(handover.fds[0], family)) {
            spdlog::warn("session {}: refused a handed-over connection that is not one TCP connection from loopback",
                         owner_.options.session_id);
            return drop();
        }
        const int fd = handover.fds[0];
        generic::socket program(owner_.io);
        boost::system::error_code error;
        program.assign(generic(family, IPPROTO_TCP), fd, error);
        if (error) {
            ::close(fd);
            return close();
        }
        program.set_option(tcp::no_delay(true), error);
        client_.close(error);
        client_ = std::move(program);
        connection_ = owner_.traced(client_.native_handle());
        read_head();
    }

    // The head, read until its end and checked on the way (scan_head): a line Beast and
    // an upstream could read two ways is refused as soon as it arrives, and only a whole
    // head goes to Beast's parser. What follows it stays in buffer_.
    void read_head() {
        const std::string_view received(static_cast<const char*>(buffer_.data().data()), buffer_.size());
        const auto scan = scan_head(received, scanned_);
        if (scan.problem) return refuse(400, "Bad Request", "malformed request: " + *scan.problem);
        if (scan.complete) {
            beast::error_code error;
            const auto used = parser_.put(net::buffer(buffer_.data().data(), scan.size), error);
            buffer_.consume(used);
            if (!error && (!parser_.is_header_done() || used != scan.size)) error = http::error::partial_message;
            return on_header(error);
        }
        scanned_ = scan.next;
        const std::size_t limit = owner_.options.header_limit_bytes;
        if (buffer_.size() >= limit) return on_header(http::error::header_limit);
        client_.async_read_some(buffer_.prepare(std::min<std::size_t>(limit - buffer_.size(), 4096)),
                                [self = shared_from_this()](const boost::system::error_code& error, std::size_t got) {
                                    if (self->closed_) return;
                                    if (error) return self->on_header(error);
                                    self->buffer_.commit(got);
                                    self->read_head();
                                });
    }

    // Decide again under the current policy (it changed); cut if now refused.
    void reevaluate() {
        if (!tunnelling_ || closed_) return;
        const Decision decision = decide(owner_.policy(), target_, owner_.now());
        if (decision.verdict != Verdict::deny) return;
        spdlog::info("session {}: cutting the tunnel to {}:{}: {}", owner_.options.session_id,
                     target_.host, target_.port, decision.reason);
        cut_reason_ = "cut: " + decision.reason;
        close();
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        boost::system::error_code ignored;
        timer_.cancel();
        if (interception_) return interception_->close(cut_reason_); // it finishes the entry
        client_.close(ignored);
        upstream_.close(ignored);
        if (audit_id_ != 0)
            owner_.audit.finish(audit_id_, up_.bytes, down_.bytes, cut_reason_);
        audit_id_ = 0;
    }

private:
    void arm_timer(std::chrono::milliseconds limit, const char* why) {
        timer_.expires_after(limit);
        timer_.async_wait([weak = weak_from_this(), why](const boost::system::error_code& error) {
            if (error) return;
            if (auto self = weak.lock()) {
                spdlog::debug("proxy: {}", why);
                self->close();
            }
        });
    }

    void on_header(beast::error_code error) {
        timer_.cancel();
        if (error) {
            if (error == http::error::header_limit)
                return refuse(431, "Request Header Fields Too Large",
                              "the request head is over " +
                                  std::to_string(owner_.options.header_limit_bytes) + " bytes");
            if (error != http::error::end_of_stream && error != net::error::eof &&
                error != net::error::operation_aborted)
                return refuse(400, "Bad Request", "malformed request: " + error.message());
            return close();
        }
        auto& request = parser_.get();
        method_ = std::string(request.method_string());
        std::string host;
        std::uint16_t port = 0;
        if (request.method() == http::verb::connect) {
            // authority-form: host:port, [v6]:port
            const std::string_view authority(request.target().data(), request.target().size());
            const auto parsed = parse_authority(authority, PortPresence::required);
            if (!parsed)
                return refuse(400, "Bad Request",
                              "CONNECT needs host:port, got '" + std::string(authority) + "': " +
                                  parsed.error().message);
            host = parsed->host;
            port = parsed->port;
        } else {
            auto url = boost::urls::parse_absolute_uri(request.target());
            if (!url || url->scheme() != "http" || !url->has_authority())
                return refuse(400, "Bad Request",
                              "this is a proxy: send CONNECT host:port, or a request for an "
                              "absolute http:// URL (https goes through CONNECT)");
            host = std::string(url->encoded_host());
            port = url->has_port() ? url->port_number() : 80;
            if (port == 0) return refuse(400, "Bad Request", "the URL's port is not 1 to 65535");
            path_ = std::string(url->encoded_path());
            if (path_.empty()) path_ = "/";
            if (url->has_query()) path_ += "?" + std::string(url->encoded_query());
            // The URL names the host, and the Host the upstream sees is that one (RFC 9112
            // 3.2.2): a Host of the client's own would pick another site behind a shared front.
            // (Taken now: `url` views the target, which changes below.)
            const std::string host_header(url->encoded_host_and_port());
            // The upstream sees an ordinary origin-form request for one exchange; nothing
            // of the proxy's own headers goes on.
            request.target(path_);
            request.erase(http::field::proxy_authorization);
            request.erase("Proxy-Connection");
            request.set(http::field::connection, "close");
            request.set(http::field::host, host_header);
        }
        auto parsed = parse_target(host, port);
        if (!parsed) {
            target_.host = host;
            target_.port = port;
            return deny("", parsed.error().message, 400, "Bad Request");
        }
        target_ = *parsed;
        // Shapes two parsers would read two ways are refused before the name is even decided.
        if (auto problem = framing_problem(request.base()))
            return deny("", problem->reason, problem->status, problem->status_text);
        const bool framed = request.count(http::field::content_length) > 0 ||
                            request.count(http::field::transfer_encoding) > 0;
        if (request.method() == http::verb::connect && framed)
            return deny("", "a CONNECT carries no body, and this one has a Content-Length or Transfer-Encoding", 400,
                        "Bad Request");
        // A plain-HTTP body goes on as far as its Content-Length says and no further, so no
        // request can follow it unread; a chunked one would have to be parsed on the way.
        if (request.method() != http::verb::connect && request.count(http::field::transfer_encoding) > 0)
            return deny("", "a plain-HTTP request body needs a Content-Length (chunked bodies pass only through "
                            "CONNECT)", 411, "Length Required");
        plain_body_bytes_ = parser_.content_length().value_or(0);
        decision_ = decide(owner_.policy(), target_, owner_.now());
        if (decision_.verdict == Verdict::deny) return deny(decision_.rule, decision_.reason, 403, "Forbidden");
        if (owner_.services.secrets) bindings_ = owner_.services.secrets->bindings();
        scanner_ = StandInScanner(bindings_, target_.host);
        if (request.method() != http::verb::connect) {
            std::ostringstream head;
            head << request.base();
            plain_head_ = head.str();
            if (const auto* found = scanner_.find_in(plain_head_))
                return deny(decision_.rule, exfiltration_reason(*found, target_.host), 403, "Forbidden");
        }
        if (auto fixed = owner_.resolver.pinned_endpoint(target_.host, target_.port)) {
            connect_port_ = fixed->port;
            pinned_ = true;
            return connect({*parse_address(fixed->host)});
        }
        if (target_.ip) return connect({*parse_address(target_.host)});
        // Strong: while the name resolves, nothing else holds this connection.
        owner_.resolver.resolve(target_.host, [self = shared_from_this()](Result<std::vector<Address>> addresses) {
            if (self->closed_) return;
            if (!addresses) return self->deny(self->decision_.rule, addresses.error().message, 502, "Bad Gateway");
            self->connect(std::move(*addresses));
        });
    }

    void connect(std::vector<Address> addresses) {
        std::vector<tcp::endpoint> endpoints;
        std::string refusal;
        Decision effective = decision_;
        if (pinned_ || (!target_.ip && owner_.resolver.pinned(target_.host))) effective.exact = true;
        const std::uint16_t port = connect_port_ != 0 ? connect_port_ : target_.port;
        for (const auto& address : addresses) {
            if (auto why = check_address(effective, target_, address, owner_.own_addresses)) {
                refusal = *why;
                continue;
            }
            endpoints.emplace_back(to_asio(address), port);
        }
        endpoints_ = endpoints;
        if (endpoints.empty())
            return deny(decision_.rule, refusal.empty() ? target_.host + " has no address" : refusal, 403,
                        "Forbidden");
        record(decision_.verdict, decision_.rule, "");
        arm_timer(owner_.options.connect_timeout, "connecting upstream timed out");
        net::async_connect(upstream_, endpoints,
                           [self = shared_from_this()](const boost::system::error_code& error,
                                                       const tcp::endpoint&) {
                               self->timer_.cancel();
                               if (self->closed_) return;
                               if (error)
                                   return self->fail_upstream("cannot connect to " + self->target_.host + ":" +
                                                              std::to_string(self->target_.port) + ": " +
                                                              error.message());
                               self->on_connected();
                           });
    }

    void on_connected() {
        boost::system::error_code ignored;
        upstream_.set_option(tcp::no_delay(true), ignored);
        early_.assign(static_cast<const char*>(buffer_.data().data()), buffer_.size());
        buffer_.consume(buffer_.size());
        // The program gets nothing back (neither the tunnel's 200 nor a response) until the
        // shim has said who holds the connection (ConnectionTracer::when_traced): a program
        // done within milliseconds, as curl is, would otherwise have exited before the shim
        // looked at /proc, and its entry could not name it or its tool call. The shim was
        // asked when the connection came in, so its answer is usually there by now; the
        // tracer bounds the wait (ChannelOptions::who_timeout).
        if (owner_.services.tracer == nullptr || connection_ == 0) return proceed_connected();
        owner_.services.tracer->when_traced(connection_, [self = shared_from_this()] {
            if (self->closed_) return;
            self->proceed_connected();
        });
    }

    void proceed_connected() {
        if (parser_.get().method() == http::verb::connect) {
            static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
            auto reply = std::make_shared<std::string>(kEstablished);
            net::async_write(client_, net::buffer(*reply),
                             [self = shared_from_this(), reply](const boost::system::error_code& error, std::size_t) {
                                 if (error) return self->close();
                                 self->tunnelling_ = true;
                                 // A server may speak first (SSH, SMTP), and what it sends needs no check.
                                 if (!self->intercepts()) self->pump_down();
                                 self->read_hello();
                             });
            return;
        }
        // Plain HTTP: the rewritten head, then its body as far as its Content-Length goes.
        // Bytes behind that (a request pipelined after it) never go on.
        up_.budget = plain_body_bytes_;
        if (early_.size() > plain_body_bytes_) early_.resize(static_cast<std::size_t>(plain_body_bytes_));
        auto bytes = std::make_shared<std::string>(std::move(plain_head_));
        up_.bytes += bytes->size();
        net::async_write(upstream_, net::buffer(*bytes),
                         [self = shared_from_this(), bytes](const boost::system::error_code& error, std::size_t) {
                             if (error) return self->close();
                             self->tunnelling_ = true;
                             self->pump_down();
                             self->begin_tunnel();
                         });
    }

    // What a CONNECT's client sends first, read until it shows whether it is a TLS
    // ClientHello and, if so, for which host (client_hello.hpp); nothing of it goes on
    // before. A ClientHello must be for the host the CONNECT named and was decided for:
    // another name in its SNI (domain fronting), no name, or a hidden one (Encrypted
    // ClientHello) is refused. So is anything but TLS to port 443 or to a host whose TLS
    // Handler terminates; other ports may carry other protocols.
    void read_hello() {
        const auto hello = read_client_hello(early_);
        if (hello.status == HelloStatus::incomplete) {
            // A tunnel to another port may wait for its server to speak; a ClientHello begun
            // must come whole in time, and so must one Handler is to answer.
            if (!early_.empty() || intercepts())
                arm_timer(owner_.options.header_timeout, "the TLS ClientHello did not arrive in time");
            const std::size_t had = early_.size();
            // Read into the way up's buffer, which is not zero-filled and which the tunnel
            // takes on after: growing early_ by the read's size instead cost a 4 KiB
            // zero-fill per CONNECT, an eighth of the proxy's own instructions for a
            // CONNECT and one GET (callgrind, bench/README.md).
            if (!up_.buffer) up_.buffer.reset(new char[Direction::kSize]);
            client_.async_read_some(net::buffer(up_.buffer.get(), kHelloReadBytes),
                                    [self = shared_from_this(), had](const boost::system::error_code& error,
                                                                     std::size_t got) {
                                        if (self->closed_) return;
                                        self->timer_.cancel();
                                        if (!error) self->early_.append(self->up_.buffer.get(), got);
                                        // A client that ends its side before it says anything
                                        // ends a tunnel's way up, as it would have before.
                                        if (error && had == 0 && !self->intercepts() && self->target_.port != 443)
                                            return self->end_of(self->upstream_, self->up_);
                                        if (error) return self->close();
                                        self->read_hello();
                                    });
            return;
        }
        std::optional<std::string> problem;
        if (hello.status != HelloStatus::not_tls) {
            problem = hello_problem(hello, target_);
        } else if (intercepts() || target_.port == 443) {
            problem = "what it sent first is not a TLS ClientHello, which a tunnel to port 443 or to a host whose "
                      "TLS Handler terminates must begin with";
        }
        if (problem) return refuse_hello(*problem, hello.status);
        if (intercepts()) {
            up_.buffer.reset(); // the interception has buffers of its own
            return intercept();
        }
        begin_tunnel();
    }

    // A ClientHello refused: its own entry in the log, and the tunnel cut with a fatal TLS
    // alert that says it in the client's terms (unrecognized_name for a name, decode_error
    // for a hello that is malformed), so curl or node report something better than a reset.
    void refuse_hello(const std::string& why, HelloStatus status) {
        spdlog::warn("session {}: refused a tunnel: {}", owner_.options.session_id, why);
        log_refusal(why);
        // The alert goes only while nothing has come down the tunnel, so it can be no
        // write's neighbour on the client's socket.
        if (status == HelloStatus::not_tls || down_.bytes > 0) return close();
        const char description = status == HelloStatus::malformed ? 50 : 112;
        auto alert = std::make_shared<std::string>(std::string{'\x15', '\x03', '\x03', '\x00', '\x02', '\x02'} +
                                                   description);
        net::async_write(client_, net::buffer(*alert),
                         [self = shared_from_this(), alert](const boost::system::error_code&, std::size_t) {
                             self->close();
                         });
    }

    // A refusal inside an allowed tunnel: an entry of its own, and the tunnel's entry
    // finished with it when the tunnel is cut.
    void log_refusal(const std::string& reason) {
        const auto tunnel = std::exchange(audit_id_, 0);
        record(Verdict::deny, decision_.rule, reason);
        owner_.audit.finish(std::exchange(audit_id_, 0), 0, 0, reason);
        audit_id_ = tunnel;
        cut_reason_ = "cut: " + reason;
    }

    // TLS is terminated only for a host a key of this session is bound to; everything
    // else is tunnelled untouched.
    bool intercepts() const {
        if (!owner_.services.tls || !owner_.services.secrets) return false;
        return std::any_of(bindings_.begin(), bindings_.end(),
                           [&](const SecretBinding& binding) { return binding.bound_to(target_.host); });
    }

    void intercept() {
        InterceptionSetup setup(std::move(client_), std::move(upstream_));
        setup.early_bytes = std::move(early_);
        setup.endpoints = endpoints_;
        setup.session_id = owner_.options.session_id;
        setup.connection = connection_;
        setup.host = target_.host;
        setup.port = target_.port;
        setup.target = target_;
        setup.rule = decision_.rule;
        setup.policy_refusal = [weak = weak_from_this()]() -> std::optional<std::string> {
            const auto self = weak.lock();
            if (!self) return std::string("the session's proxy has stopped");
            const auto decision = decide(self->owner_.policy(), self->target_, self->owner_.now());
            if (decision.verdict == Verdict::deny) return decision.reason;
            return std::nullopt;
        };
        setup.bindings = bindings_;
        setup.secrets = owner_.services.secrets;
        setup.tls = owner_.services.tls;
        setup.audit = &owner_.audit;
        setup.now = owner_.now;
        setup.header_limit_bytes = owner_.options.header_limit_bytes;
        setup.connect_timeout = owner_.options.connect_timeout;
        setup.idle_timeout = owner_.options.idle_timeout;
        tunnelling_ = true;
        interception_ = Interception::start(
            std::move(setup), [self = shared_from_this()](std::uint64_t up, std::uint64_t down,
                                                          const std::string& reason) {
                self->up_.bytes = up;
                self->down_.bytes = down;
                if (self->audit_id_ != 0)
                    self->owner_.audit.finish(std::exchange(self->audit_id_, 0), up, down,
                                              self->cut_reason_.empty() ? reason : self->cut_reason_);
                self->closed_ = true;
                self->interception_.reset(); // it holds us through this callback
            });
    }

    // The container's side of a tunnel (pump_down is the other): bytes up until its end.
    // Bytes that arrived with the head and the ClientHello go first.
    void begin_tunnel() {
        if (!early_.empty()) {
            auto early = std::make_shared<std::string>(std::move(early_));
            early_.clear();
            up_.bytes += early->size();
            if (up_.budget) *up_.budget -= early->size();
            if (const auto* found = scanner_.feed(*early)) return exfiltrated(*found);
            net::async_write(upstream_, net::buffer(*early),
                             [self = shared_from_this(), early](const boost::system::error_code& error, std::size_t) {
                                 if (error) return self->close();
                                 self->pump_up();
                             });
        } else {
            pump_up();
        }
    }

    // One direction of the tunnel: read, count, write, repeat; at the end of input, pass
    // the half-close on and mark the direction done. Bytes going out pass the stand-in
    // scanner first (a no-op for a session without keys).
    struct Direction {
        static constexpr std::size_t kSize = 64 * 1024;
        static constexpr std::size_t kPipeBytes = 1024 * 1024;
        // Short exchanges, most requests and answers, go through the buffer: a pipe costs
        // four system calls and kernel bookkeeping per connection that they never earn
        // back, and splicing a small answer costs more than copying it.
        std::unique_ptr<char[]> buffer; // not zero-filled: read into first
        std::uint64_t bytes = 0;
        // Once a read fills the buffer, a direction nobody needs to look into moves through
        // a pipe with splice(2): the kernel hands the pages on, and the proxy never copies them.
        int pipe_read = -1;
        int pipe_write = -1;
        std::size_t in_pipe = 0;
        ~Direction() {
            if (pipe_read >= 0) ::close(pipe_read);
            if (pipe_write >= 0) ::close(pipe_write);
        }
        bool done = false;
        // What may still go this way, when that is bounded (a plain-HTTP request's body).
        std::optional<std::uint64_t> budget;
    };

    template <class From, class To>
    void pump(From& from, To& to, Direction& direction, StandInScanner* scanner) {
        // Once all it may send has gone, what still comes is read (so its end is seen, and
        // passed on as before) and dropped: a request pipelined behind a plain-HTTP body.
        const bool spent = direction.budget && *direction.budget == 0;
        const std::size_t room = direction.budget && !spent ? static_cast<std::size_t>(std::min<std::uint64_t>(
                                                                  *direction.budget, Direction::kSize))
                                                            : Direction::kSize;
        from.async_read_some(
            net::buffer(direction.buffer.get(), room),
            [self = shared_from_this(), &from, &to, &direction, scanner, spent](const boost::system::error_code& error,
                                                                                std::size_t n) {
                if (self->closed_) return;
                if (error) return self->end_of(to, direction);
                if (spent) return self->pump(from, to, direction, scanner);
                direction.bytes += n;
                if (direction.budget) *direction.budget -= n;
                const std::string_view out(direction.buffer.get(), n);
                if (scanner)
                    if (const auto* found = scanner->feed(out)) return self->exfiltrated(*found);
                net::async_write(to, net::buffer(out.data(), out.size()),
                                 [self, &from, &to, &direction, scanner, n](const boost::system::error_code& write_error,
                                                                           std::size_t) {
                                     if (write_error) return self->close();
                                     // A direction nobody looks into whose one read filled the
                                     // whole buffer is a bulk transfer: it moves on to splice(2).
                                     if (!scanner && !direction.budget && n == Direction::kSize)
                                         return self->splice_pump(from, to, direction);
                                     self->pump(from, to, direction, scanner);
                                 });
            });
    }

    // The end of one direction's input: pass the half-close on, unless the other
    // direction is over too, in which case closing both says as much.
    template <class To>
    void end_of(To& to, Direction& direction) {
        direction.done = true;
        const Direction& other = &direction == &up_ ? down_ : up_;
        if (!other.done) {
            boost::system::error_code ignored;
            to.shutdown(net::socket_base::shutdown_send, ignored);
        }
        maybe_finish();
    }

    void pump_up() {
        if (!up_.buffer) up_.buffer.reset(new char[Direction::kSize]); // read_hello's, when it read
        pump(client_, upstream_, up_, scanner_.active() ? &scanner_ : nullptr);
    }
    void pump_down() {
        down_.buffer.reset(new char[Direction::kSize]);
        pump(upstream_, client_, down_, nullptr);
    }

    // pump() without looking: from → pipe → to, waiting for readiness with Asio and
    // moving with splice(2). Stays with pump() when no pipe can be had.
    template <class From, class To>
    void splice_pump(From& from, To& to, Direction& direction) {
        if (direction.pipe_read < 0) {
            int fds[2];
            if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return pump(from, to, direction, nullptr);
            direction.pipe_read = fds[0];
            direction.pipe_write = fds[1];
            // A bigger pipe moves more per wake-up; the default (64 KiB) costs a round of
            // system calls per 64 KiB. Where the kernel allows less, the default stays.
            ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(Direction::kPipeBytes));
            boost::system::error_code ignored;
            from.native_non_blocking(true, ignored);
            to.native_non_blocking(true, ignored);
        }
        splice_in(from, to, direction);
    }

    template <class From, class To>
    void splice_in(From& from, To& to, Direction& direction) {
        if (closed_) return;
        const ssize_t got = ::splice(from.native_handle(), nullptr, direction.pipe_write, nullptr,
                                     Direction::kPipeBytes - direction.in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (got > 0) {
            direction.bytes += static_cast<std::size_t>(got);
            direction.in_pipe += static_cast<std::size_t>(got);
            return splice_out(from, to, direction);
        }
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            from.async_wait(net::socket_base::wait_read,
                            [self = shared_from_this(), &from, &to, &direction](const boost::system::error_code& error) {
                                if (self->closed_) return;
                                if (error) return self->close();
                                self->splice_in(from, to, direction);
                            });
            return;
        }
        end_of(to, direction); // the end of input (0), or an error
    }

    template <class From, class To>
    void splice_out(From& from, To& to, Direction& direction) {
        while (direction.in_pipe > 0) {
            const ssize_t sent = ::splice(direction.pipe_read, nullptr, to.native_handle(), nullptr, direction.in_pipe,
                                          SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (sent > 0) {
                direction.in_pipe -= static_cast<std::size_t>(sent);
                continue;
            }
            if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                to.async_wait(net::socket_base::wait_write,
                              [self = shared_from_this(), &from, &to, &direction](const boost::system::error_code& error) {
                                  if (self->closed_) return;
                                  if (error) return self->close();
                                  self->splice_out(from, to, direction);
                              });
                return;
            }
            return close(); // the receiving side is gone
        }
        splice_in(from, to, direction);
    }

    // A stand-in on its way to a host it is not bound to: logged as its own refusal, and
    // the connection cut before the bytes that carry it go on.
    void exfiltrated(const SecretBinding& binding) {
        const std::string reason = exfiltration_reason(binding, target_.host);
        spdlog::warn("session {}: {}", owner_.options.session_id, reason);
        log_refusal(reason);
        close();
    }

    void maybe_finish() {
        if (up_.done && down_.done) close();
    }

    void record(Verdict verdict, const std::string& rule, const std::string& reason) {
        AuditEntry entry;
        entry.session_id = owner_.options.session_id;
        entry.connection = connection_;
        entry.at_ms = owner_.now();
        entry.host = target_.host;
        entry.port = target_.port;
        entry.method = method_;
        entry.path = path_;
        entry.verdict = verdict;
        entry.rule = rule;
        entry.reason = reason;
        audit_id_ = owner_.audit.record(entry);
    }

    void deny(const std::string& rule, const std::string& reason, unsigned status, const char* status_text) {
        record(Verdict::deny, rule, reason);
        const auto id = std::exchange(audit_id_, 0);
        owner_.audit.finish(id, 0, 0, reason);
        // Sent once the connection's owner is known (ConnectionTracer::when_traced): the
        // client is kept waiting for its refusal, never let through.
        if (owner_.services.tracer == nullptr || connection_ == 0)
            return refuse(status, status_text, "handler: " + reason);
        owner_.services.tracer->when_traced(connection_, [self = shared_from_this(), status, status_text,
                                                          body = "handler: " + reason] {
            self->refuse(status, status_text, body);
        });
    }

    void fail_upstream(const std::string& reason) {
        cut_reason_ = reason;
        refuse(502, "Bad Gateway", "handler: " + reason);
    }

    void refuse(unsigned status, const char* status_text, const std::string& body) {
        auto reply = std::make_shared<std::string>(text_response(status, status_text, body));
        net::async_write(client_, net::buffer(*reply),
                         [self = shared_from_this(), reply](const boost::system::error_code&, std::size_t) {
                             boost::system::error_code ignored;
                             self->client_.shutdown(net::socket_base::shutdown_send, ignored);
                             self->close();
                         });
    }

    EgressProxy::Impl& owner_;
    generic::socket client_;
    tcp::socket upstream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    http::request_parser<http::empty_body> parser_;
    std::vector<tcp::endpoint> endpoints_;
    std::uint16_t connect_port_ = 0; // the port connected to, when the settings moved it
    bool pinned_ = false;
    std::vector<SecretBinding> bindings_;
    StandInScanner scanner_;
    std::string plain_head_;
    std::uint64_t plain_body_bytes_ = 0; // its Content-Length
    std::size_t scanned_ = 0;            // how far scan_head has read the head
    std::string early_;                  // what followed the head: a ClientHello, a body's start
    std::shared_ptr<Interception> interception_;
    Direction up_;   // container → upstream
    Direction down_; // upstream → container
    Target target_;
    Decision decision_;
    std::string method_;
    std::string path_;
    std::string cut_reason_;
    std::int64_t audit_id_ = 0;
    std::int64_t connection_ = 0; // AuditEntry::connection
    bool tunnelling_ = false;
    bool closed_ = false;
};

void EgressProxy::Impl::admit(generic::socket socket, bool direct) {
    connections.remove_if([](const auto& entry) { return entry.expired(); });
    if (connections.size() >= options.max_connections) {
        spdlog::warn("session {}: over {} proxy connections; refusing more", options.session_id,
                     options.max_connections);
        return;
    }
    auto connection = std::make_shared<ProxyConnection>(*this, std::move(socket));
    connections.push_back(connection);
    peak_connections = std::max(peak_connections, connections.size()); // pruned above
    connection->start(direct);
}

template <class Acceptor>
void EgressProxy::Impl::accept_on(std::shared_ptr<Acceptor> listener, bool direct) {
    listener->async_accept([weak = weak_from_this(), listener, direct](const boost::system::error_code& error,
                                                                        generic::socket socket) {
        auto self = weak.lock();
        if (!self || self->stopped || !listener->is_open() || error == net::error::operation_aborted) return;
        if (!error) {
            self->admit(std::move(socket), direct);
            return self->accept_on(listener, direct);
        }
        // Out of descriptors, most likely: the connection stays queued, and accepting again
        // at once would spin. Try again shortly.
        spdlog::warn("session {}: accepting a proxy connection failed: {}", self->options.session_id,
                     error.message());
        auto pause = std::make_shared<net::steady_timer>(self->io, std::chrono::milliseconds(100));
        pause->async_wait([weak, listener, direct, pause](const boost::system::error_code&) {
            if (auto again = weak.lock(); again && !again->stopped && listener->is_open())
                again->accept_on(listener, direct);
        });
    });
}

void EgressProxy::Impl::accept() { accept_on(acceptor, false); }

bool EgressProxy::Impl::take_lease(generic::socket& channel, const std::vector<int>& fds) {
    std::vector<std::pair<int, int>> checked; // fd, family
    for (const int fd : fds) {
        int family = 0;
        if (!is_proxy_listener(fd, options.listener_port, family)) {
            spdlog::warn("session {}: refused a lease of listeners that are not the proxy port's on loopback",
                         options.session_id);
            for (const int each : fds) ::close(each);
            return false;
        }
        checked.emplace_back(fd, family);
    }
    auto next = std::make_unique<Lease>(std::move(channel));
    std::size_t taken = 0;
    for (const auto& [fd, family] : checked) {
        // A proxy's client always speaks first (CONNECT, or its request), so a connection
        // is taken off the queue once that is there, and its first read finds it instead
        // of waiting another round.
        const int seconds = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
        auto listener = std::make_shared<net::basic_socket_acceptor<generic>>(io);
        boost::system::error_code error;
        listener->assign(generic(family, IPPROTO_TCP), fd, error);
        ++taken;
        if (error) {
            for (std::size_t i = taken; i < checked.size(); ++i) ::close(checked[i].first);
            ::close(fd);
            return false;
        }
        next->listeners.push_back(std::move(listener));
    }
    // The answer tells the shim to stop accepting; a fresh connection has room for it.
    const char ack = shim::kLeaseByte;
    if (::send(next->channel.native_handle(), &ack, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) return false;
    end_lease(); // a shim leases again after handlerd restarts; the newest lease is the one
    lease = std::move(next);
    for (auto& listener : lease->listeners) accept_on(listener, true);
    // Whatever comes on the lease's connection (its end, above all) ends it.
    lease->channel.async_wait(net::socket_base::wait_read,
                              [weak = weak_from_this(), current = lease.get()](const boost::system::error_code& error) {
                                  if (error == net::error::operation_aborted) return;
                                  if (auto self = weak.lock(); self && self->lease.get() == current) self->end_lease();
                              });
    spdlog::info("session {}: the shim leased the proxy port ({} listener(s)); connections are accepted directly",
                 options.session_id, lease->listeners.size());
    return true;
}

void EgressProxy::Impl::end_lease() {
    if (!lease) return;
    boost::system::error_code ignored;
    for (auto& listener : lease->listeners) listener->close(ignored);
    lease->channel.close(ignored);
    lease.reset();
}

EgressProxy::EgressProxy(net::io_context& io, ProxyOptions options, PolicySource policy, ProxyServices services,
                         Now now, std::vector<Address> own)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(policy), services, std::move(now),
                                   std::move(own))) {}

EgressProxy::~EgressProxy() { stop(); }

Result<void> EgressProxy::start() {
    auto& impl = *impl_;
    std::error_code ignored;
    std::filesystem::remove(impl.options.socket_path, ignored);
    boost::system::error_code error;
    const generic::endpoint endpoint(local::endpoint(impl.options.socket_path.string()));
    impl.acceptor->open(endpoint.protocol(), error);
    if (!error) impl.acceptor->bind(endpoint, error);
    if (!error) impl.acceptor->listen(net::socket_base::max_listen_connections, error);
    if (error)
        return make_error(ErrorCode::internal, "session " + impl.options.session_id + ": cannot listen on " +
                                                   impl.options.socket_path.string() + ": " + error.message());
    impl.accept();
    return {};
}

void EgressProxy::stop() {
    auto& impl = *impl_;
    if (impl.stopped) return;
    impl.stopped = true;
    boost::system::error_code ignored;
    impl.acceptor->close(ignored);
    impl.end_lease();
    for (auto& entry : impl.connections)
        if (auto connection = entry.lock()) connection->close();
    impl.connections.clear();
    std::error_code ignored_fs;
    std::filesystem::remove(impl.options.socket_path, ignored_fs);
}

void EgressProxy::reevaluate() {
    for (auto& entry : impl_->connections)
        if (auto connection = entry.lock()) connection->reevaluate();
}

std::size_t EgressProxy::open_connections() const {
    std::size_t count = 0;
    for (const auto& entry : impl_->connections)
        if (!entry.expired()) ++count;
    return count;
}

std::size_t EgressProxy::take_peak_connections() {
    const std::size_t open = open_connections();
    return std::max(std::exchange(impl_->peak_connections, open), open);
}

std::unique_ptr<Resolver> make_system_resolver(net::io_context& io,
                                               std::map<std::string, std::vector<Address>> overrides,
                                               std::map<std::string, HostPort> endpoints) {
    return std::make_unique<SystemResolver>(io, std::move(overrides), std::move(endpoints));
}

std::vector<Address> own_addresses() {
    std::vector<Address> addresses;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return addresses;
    for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
        if (entry->ifa_addr == nullptr) continue;
        Address address;
        if (entry->ifa_addr->sa_family == AF_INET) {
            const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
            std::memcpy(address.bytes.data(), &in->sin_addr, 4);
        } else if (entry->ifa_addr->sa_family == AF_INET6) {
            const auto* in6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
            address.v6 = true;
            std::memcpy(address.bytes.data(), &in6->sin6_addr, 16);
        } else {
            continue;
        }
        addresses.push_back(address);
    }
    ::freeifaddrs(list);
    return addresses;
}

} // namespace handler::network
