#include "network/interception.hpp"

#include "network/request_checks.hpp"
#include "tls/ca.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

namespace handler::network {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using generic = net::generic::stream_protocol;
using tcp = net::ip::tcp;

namespace {

// ALPN: HTTP/1.1 only, on both sides. Every harness speaks it (HARNESS-PROTOCOLS.md), and
// one protocol keeps the request rewriting simple enough to trust.
constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr std::size_t kMaxServerContexts = 256;
constexpr std::chrono::seconds kShutdownGrace{2};
// Room for a request body read beside a head in the client's buffer.
constexpr std::size_t kBodyReadBytes = 64 * 1024;

int select_http11(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* offered,
                  unsigned int offered_length, void*) {
    unsigned char* chosen = nullptr;
    if (SSL_select_next_proto(&chosen, out_length, kAlpnHttp11, sizeof kAlpnHttp11, offered, offered_length) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK; // no HTTP/1.1 offered: go on without ALPN
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

bool is_ip_literal(const std::string& host) {
    boost::system::error_code error;
    net::ip::make_address(host, error);
    return !error;
}

} // namespace

struct TlsContexts::Impl {
    explicit Impl(tls::CertificateAuthority& authority) : ca(authority) {}

    Result<std::shared_ptr<ssl::context>> server_for(const std::string& host) {
        auto leaf = ca.leaf_for(host);
        if (!leaf) return leaf.take_error();
        if (auto found = servers.find(host); found != servers.end() && found->second.leaf == *leaf)
            return found->second.context;
        auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
        SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
        boost::system::error_code error;
        context->use_certificate(net::buffer((*leaf)->certificate_pem), ssl::context::pem, error);
        if (!error) context->use_private_key(net::buffer((*leaf)->private_key_pem), ssl::context::pem, error);
        if (error)
            return make_error(ErrorCode::internal, "cannot use the certificate minted for " + host + ": " +
                                                       error.message());
        SSL_CTX_set_alpn_select_cb(context->native_handle(), select_http11, nullptr);
        if (servers.size() >= kMaxServerContexts) servers.clear();
        servers[host] = Server{*leaf, context};
        return context;
    }

    struct Server {
        std::shared_ptr<const tls::LeafCertificate> leaf;
        std::shared_ptr<ssl::context> context;
    };

    tls::CertificateAuthority& ca;
    ssl::context client{ssl::context::tls_client};
    std::unordered_map<std::string, Server> servers;
};

TlsContexts::TlsContexts(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsContexts::~TlsContexts() = default;

Result<std::unique_ptr<TlsContexts>> TlsContexts::create(tls::CertificateAuthority& ca) {
    auto impl = std::make_unique<Impl>(ca);
    boost::system::error_code error;
    impl->client.set_default_verify_paths(error);
    if (error)
        return make_error(ErrorCode::internal, "cannot load the system's trusted certificates: " + error.message());
    impl->client.set_verify_mode(ssl::verify_peer);
    SSL_CTX_set_min_proto_version(impl->client.native_handle(), TLS1_2_VERSION);
    if (SSL_CTX_set_alpn_protos(impl->client.native_handle(), kAlpnHttp11, sizeof kAlpnHttp11) != 0)
        return make_error(ErrorCode::internal, "cannot set ALPN on the upstream TLS context");
    return std::unique_ptr<TlsContexts>(new TlsContexts(std::move(impl)));
}

namespace {

using ClientStream = ssl::stream<generic::socket>;
using UpstreamStream = ssl::stream<tcp::socket>;

// Thrown out of an exchange to end the tunnel with a reply the client can read.
struct Refusal {
    unsigned status;
    const char* status_text;
    std::string reason;
};

// A WebSocket close frame from the server's side (unmasked): 1008, policy violation.
std::string close_frame(std::string_view reason) {
    std::string frame = "\x88";
    frame += static_cast<char>(2 + reason.size()); // reason.size() stays under 124
    frame += "\x03\xf0";
    frame += reason;
    return frame;
}

class InterceptionImpl final : public Interception {
public:
    InterceptionImpl(InterceptionSetup setup, Done done, std::shared_ptr<ssl::context> server)
        : setup_(std::move(setup)), done_(std::move(done)), executor_(setup_.client.get_executor()),
          server_context_(std::move(server)), client_(std::move(setup_.client), *server_context_),
          timer_(executor_), buffer_(64 * 1024) {
        upstream_.emplace(std::move(setup_.upstream), setup_.tls->impl().client);
    }

    void begin() {
        net::co_spawn(executor_, run(std::static_pointer_cast<InterceptionImpl>(shared_from_this())),
                      net::detached);
    }

    void close(const std::string& reason) override {
        if (closed_) return;
        if (!reason.empty()) reason_ = reason;
        shut();
    }

private:
    void shut() {
        closed_ = true;
        boost::system::error_code ignored;
        timer_.cancel();
        client_.lowest_layer().close(ignored);
        if (upstream_) upstream_->lowest_layer().close(ignored);
    }

    void arm(std::chrono::steady_clock::duration limit) {
        timer_.expires_after(limit);
        timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
            if (error) return;
            if (auto self = weak.lock()) static_cast<InterceptionImpl&>(*self).shut();
        });
    }

    static net::awaitable<void> run(std::shared_ptr<InterceptionImpl> self) {
        std::optional<Refusal> refused;
        try {
            co_await self->serve();
        } catch (const Refusal& refusal) {
            refused = refusal;
        } catch (const boost::system::system_error& error) {
            if (!self->closed_ && error.code() != net::error::eof && error.code() != ssl::error::stream_truncated)
                spdlog::debug("session {}: intercepted {}: {}", self->setup_.session_id, self->setup_.host,
                              error.what());
        } catch (const std::exception& error) {
            spdlog::warn("session {}: intercepted {}: {}", self->setup_.session_id, self->setup_.host,
                         error.what());
        }
        if (refused) {
            self->reason_ = refused->reason;
            co_await self->reply(*refused);
        }
        self->shut();
        if (self->done_) self->done_(self->up_, self->down_, self->reason_);
    }

    net::awaitable<void> reply(const Refusal& refusal) {
        if (closed_) co_return;
        // Inside a WebSocket an HTTP answer would be noise: a close frame (1008, policy
        // violation) says it in the WebSocket's own terms; the network log has the rest.
        const std::string text = upgraded_ ? close_frame("handler: refused, see the network log")
                                           : text_response(refusal.status, refusal.status_text, "handler: " + refusal.reason);
        arm(kShutdownGrace);
        boost::system::error_code ignored;
        co_await net::async_write(client_, net::buffer(text), net::redirect_error(net::use_awaitable, ignored));
        co_await client_.async_shutdown(net::redirect_error(net::use_awaitable, ignored));
    }

    net::awaitable<void> serve() {
        // The container's side first: it is waiting for our hello. Bytes it sent behind
        // the CONNECT head are the start of its own.
        arm(setup_.connect_timeout);
        co_await client_.async_handshake(ssl::stream_base::server, net::buffer(setup_.early_bytes),
                                         net::use_awaitable);
        // The proxy read the first ClientHello's SNI before any of it went on; a second
        // one (after a HelloRetryRequest) reached only OpenSSL, so the name it settled on
        // is checked too.
        const char* sni = SSL_get_servername(client_.native_handle(), TLSEXT_NAMETYPE_host_name);
        std::optional<Target> named;
        if (sni != nullptr)
            if (auto parsed = parse_target(sni, setup_.target.port)) named = std::move(*parsed);
        if (!named || named->ip || named->host != setup_.target.host)
            throw logged(RequestProblem{421, "Misdirected Request",
                                        "the TLS handshake settled on another host (SNI) than " +
                                            authority_text(setup_.target) + ", which the tunnel was opened (CONNECT) to"});
        co_await handshake_upstream();
        timer_.cancel();

        // Bounded, so that no request head or chunk-size line can grow it without end
        // (Beast's read then fails with buffer_overflow).
        beast::flat_buffer from_client(setup_.header_limit_bytes + kBodyReadBytes);
        beast::flat_buffer from_upstream;
        for (;;) {
            http::request_parser<http::buffer_body> request;
            request.header_limit(static_cast<std::uint32_t>(setup_.header_limit_bytes));
            request.body_limit(std::numeric_limits<std::uint64_t>::max());
            arm(setup_.idle_timeout);
            const bool read = co_await read_head(from_client, request);
            timer_.cancel();
            if (!read) co_return;
            const bool again = co_await exchange(request, from_client, from_upstream);
            if (!again) break;
        }
        boost::system::error_code ignored;
        arm(kShutdownGrace);
        co_await client_.async_shutdown(net::redirect_error(net::use_awaitable, ignored));
    }

    // One request head, read until its end and checked on the way (scan_head), then
    // parsed by Beast. False: the client ended the connection between requests.
    net::awaitable<bool> read_head(beast::flat_buffer& from_client,
                                   http::request_parser<http::buffer_body>& request) {
        const std::size_t limit = setup_.header_limit_bytes;
        std::size_t scanned = 0;
        for (;;) {
            const std::string_view received(static_cast<const char*>(from_client.data().data()), from_client.size());
            const auto scan = scan_head(received, scanned);
            if (scan.problem)
                throw logged(RequestProblem{400, "Bad Request", "malformed request: " + *scan.problem});
            if (scan.complete) {
                boost::system::error_code error;
                const auto used = request.put(net::buffer(from_client.data().data(), scan.size), error);
                from_client.consume(used);
                if (!error && (!request.is_header_done() || used != scan.size)) error = http::error::partial_message;
                if (error == http::error::header_limit) break;
                if (error) throw logged(RequestProblem{400, "Bad Request", "malformed request: " + error.message()});
                co_return true;
            }
            scanned = scan.next;
            if (from_client.size() >= limit) break;
            boost::system::error_code error;
            const std::size_t got = co_await client_.async_read_some(
                from_client.prepare(std::min<std::size_t>(limit - from_client.size(), 4096)),
                net::redirect_error(net::use_awaitable, error));
            from_client.commit(got);
            if (error == net::error::eof || error == ssl::error::stream_truncated || closed_) co_return false;
            if (error) throw boost::system::system_error(error);
        }
        throw logged(RequestProblem{431, "Request Header Fields Too Large",
                                    "the request head is over " + std::to_string(limit) + " bytes"});
    }

    // A refusal before there is a request to log (a head that does not parse, the
    // handshake's name): an entry of its own, as a deny.
    Refusal logged(const RequestProblem& problem) const {
        AuditEntry entry;
        entry.session_id = setup_.session_id;
        entry.connection = setup_.connection;
        entry.at_ms = setup_.now();
        entry.host = setup_.host;
        entry.port = setup_.port;
        entry.rule = setup_.rule;
        entry.verdict = Verdict::deny;
        entry.reason = problem.reason;
        spdlog::warn("session {}: {}: {}", setup_.session_id, authority_text(setup_.target), problem.reason);
        setup_.audit->finish(setup_.audit->record(entry), 0, 0, problem.reason);
        return Refusal{problem.status, problem.status_text, problem.reason};
    }

    net::awaitable<void> handshake_upstream() {
        SSL* native = upstream_->native_handle();
        if (is_ip_literal(setup_.host)) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), setup_.host.c_str());
        } else {
            // SSL_set_tlsext_host_name, without the macro's C cast.
            SSL_ctrl(native, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(setup_.host.c_str()));
            SSL_set1_host(native, setup_.host.c_str());
        }
        boost::system::error_code error;
        co_await upstream_->async_handshake(ssl::stream_base::client, net::redirect_error(net::use_awaitable, error));
        if (error) {
            const long verify = SSL_get_verify_result(native);
            std::string why = error.message();
            if (verify != X509_V_OK) why = X509_verify_cert_error_string(verify);
            throw Refusal{502, "Bad Gateway",
                          "TLS to " + setup_.host + ":" + std::to_string(setup_.port) + " failed: " + why};
        }
    }

    // An idle upstream may have closed (or said close_notify) since the last response;
    // a request written into that would be lost, so connect again first.
    bool upstream_usable(const beast::flat_buffer& from_upstream) {
        if (upstream_dead_ || from_upstream.size() > 0 || SSL_pending(upstream_->native_handle()) > 0) return false;
        // Bytes waiting are no sign of an end: a TLS 1.3 server sends its session tickets
        // after the handshake, unasked, and taking them for one cost every intercepted
        // connection a second connection upstream. The connection's state tells: a server
        // that closed (FIN) is in CLOSE_WAIT, one that reset it in CLOSE.
        tcp_info info{};
        socklen_t size = sizeof info;
        return ::getsockopt(upstream_->lowest_layer().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
               info.tcpi_state == TCP_ESTABLISHED;
    }

    net::awaitable<void> reconnect() {
        boost::system::error_code ignored;
        upstream_->lowest_layer().close(ignored);
        upstream_.emplace(tcp::socket(executor_), setup_.tls->impl().client);
        arm(setup_.connect_timeout);
        boost::system::error_code error;
        co_await net::async_connect(upstream_->lowest_layer(), setup_.endpoints,
                                    net::redirect_error(net::use_awaitable, error));
        if (error)
            throw Refusal{502, "Bad Gateway",
                          "cannot connect to " + setup_.host + ":" + std::to_string(setup_.port) + ": " +
                              error.message()};
        upstream_->lowest_layer().set_option(tcp::no_delay(true), ignored);
        co_await handshake_upstream();
        timer_.cancel();
        upstream_dead_ = false;
    }

    // The stand-ins in a request head: swapped for the real value in the bound header
    // of a bound host; anywhere else they stop the request. Returns the key injected.
    std::string inspect(http::request<http::buffer_body>& head, const std::vector<SecretBinding>& bindings,
                        KeyRedactor& redactor) {
        const StandInScanner foreign(bindings, setup_.host);
        auto exfiltration = [&](const SecretBinding& binding) {
            std::string hosts;
            for (const auto& host : binding.hosts) hosts += (hosts.empty() ? "" : ", ") + host;
            return Refusal{403, "Forbidden",
                           "exfiltration attempt: this request to " + setup_.host + " carries the session's stand-in for its " +
                               binding.name + " key, which only ever goes to " + hosts +
                               "; the request was refused and logged"};
        };
        if (const auto* found = foreign.find_in(head.target())) throw exfiltration(*found);
        std::vector<std::pair<std::string, std::string>> replaced;
        std::string injected;
        for (const auto& field : head) {
            const std::string_view value = field.value();
            if (const auto* found = foreign.find_in(value)) throw exfiltration(*found);
            for (const auto& binding : bindings) {
                if (!binding.bound_to(setup_.host) || !beast::iequals(field.name_string(), binding.header) ||
                    value.find(binding.stand_in) == std::string_view::npos)
                    continue;
                auto real = real_value(binding);
                if (!real)
                    throw Refusal{502, "Bad Gateway", "the " + binding.name + " key cannot be read: " + real.error().message};
                if (!KeyRedactor::can_mask(*real))
                    throw Refusal{502, "Bad Gateway",
                                  "the " + binding.name + " key holds a '" + std::string(1, KeyRedactor::kMaskByte) +
                                      "', which Handler masks keys with, so it could not be kept out of the answer; "
                                      "paste the key again"};
                std::string swapped(value);
                for (auto at = swapped.find(binding.stand_in); at != std::string::npos;
                     at = swapped.find(binding.stand_in, at + real->size()))
                    swapped.replace(at, binding.stand_in.size(), *real);
                replaced.emplace_back(std::string(field.name_string()), std::move(swapped));
                redactor.add(std::move(*real), binding.stand_in);
                injected = binding.name;
            }
        }
        for (auto& [name, value] : replaced) head.set(name, value);
        return injected;
    }

    // Read once per connection: a key changed meanwhile applies from the next one.
    Result<std::string> real_value(const SecretBinding& binding) {
        if (auto found = real_values_.find(binding.account_id); found != real_values_.end()) return found->second;
        auto real = setup_.secrets->real_value(binding);
        if (real) real_values_[binding.account_id] = *real;
        return real;
    }

    // One request and its response. False: the connection ends after it.
    net::awaitable<bool> exchange(http::request_parser<http::buffer_body>& request, beast::flat_buffer& from_client,
                                  beast::flat_buffer& from_upstream) {
        auto& head = request.get();
        // A session's stand-ins are made once, at its start: the connection's copy is current.
        const auto& bindings = setup_.bindings;
        AuditEntry entry;
        entry.session_id = setup_.session_id;
        entry.connection = setup_.connection;
        entry.at_ms = setup_.now();
        entry.host = setup_.host;
        entry.port = setup_.port;
        entry.method = std::string(head.method_string());
        entry.path = std::string(head.target());
        entry.rule = setup_.rule;
        KeyRedactor redactor;
        try {
            // Every request, not only a connection's first: its framing, the host it is for,
            // the policy as it is now, and only then the key.
            if (auto problem = framing_problem(head.base()))
                throw Refusal{problem->status, problem->status_text, problem->reason};
            if (auto problem = misdirected(head.base(), setup_.target))
                throw Refusal{problem->status, problem->status_text, problem->reason};
            if (setup_.policy_refusal)
                if (auto refusal = setup_.policy_refusal()) throw Refusal{403, "Forbidden", *refusal};
            entry.secret = inspect(head, bindings, redactor);
        } catch (const Refusal& refusal) {
            entry.verdict = Verdict::deny;
            entry.reason = refusal.reason;
            spdlog::warn("session {}: {}", setup_.session_id, refusal.reason);
            setup_.audit->finish(setup_.audit->record(entry), 0, 0, refusal.reason);
            throw;
        }
        entry.verdict = Verdict::allow;
        const std::int64_t audit_id = setup_.audit->record(entry);
        std::uint64_t sent = 0;
        std::uint64_t received = 0;
        std::optional<Refusal> refused;
        std::exception_ptr failed;
        bool again = false;
        try {
            again = co_await forward(request, from_client, from_upstream, bindings, redactor, sent, received);
        } catch (const Refusal& refusal) {
            refused = refusal;
        } catch (...) {
            failed = std::current_exception();
        }
        setup_.audit->finish(audit_id, sent, received, refused ? refused->reason : std::string());
        if (refused) throw *refused;
        if (failed) std::rethrow_exception(failed);
        co_return again;
    }

    net::awaitable<bool> forward(http::request_parser<http::buffer_body>& request, beast::flat_buffer& from_client,
                                 beast::flat_buffer& from_upstream, const std::vector<SecretBinding>& bindings,
                                 KeyRedactor& redactor, std::uint64_t& sent, std::uint64_t& received) {
        auto& head = request.get();
        const bool expects_continue = beast::iequals(head[http::field::expect], "100-continue");
        if (expects_continue) head.erase(http::field::expect);
        const bool is_head = head.method() == http::verb::head;
        const bool client_keeps_alive = head.keep_alive();
        if (!upstream_usable(from_upstream)) {
            from_upstream.clear();
            co_await reconnect();
        }

        StandInScanner scanner(bindings, setup_.host);
        // A WebSocket is opened without compression, so the frames the client sends can
        // be searched for stand-ins like any other bytes (splice() below).
        if (beast::iequals(head[http::field::upgrade], "websocket")) head.erase(http::field::sec_websocket_extensions);
        http::request_serializer<http::buffer_body> outgoing(head);
        co_await http::async_write_header(*upstream_, outgoing, net::use_awaitable);
        if (expects_continue && !request.is_done()) {
            static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            co_await net::async_write(client_, net::buffer(kContinue), net::use_awaitable);
        }
        boost::system::error_code error;
        while (!outgoing.is_done()) {
            if (!request.is_done()) {
                head.body().data = buffer_.data();
                head.body().size = buffer_.size();
                co_await http::async_read(client_, from_client, request, net::redirect_error(net::use_awaitable, error));
                if (error == http::error::need_buffer) error = {};
                const auto& parse_errors = http::make_error_code(http::error::bad_chunk).category();
                const bool unreadable = error == http::error::buffer_overflow ||
                                        (error && error.category() == parse_errors);
                if (unreadable) {
                    // A body Beast cannot read as its head frames it (a chunk size that is
                    // not hex, signed or too large, a chunk extension that is not one, a
                    // line without CRLF): nothing from there on goes on, and the upstream,
                    // which has had the head and the body before it, is cut off with a
                    // request it can tell is incomplete.
                    upstream_dead_ = true;
                    boost::system::error_code ignored;
                    upstream_->lowest_layer().close(ignored);
                    throw Refusal{400, "Bad Request",
                                  "malformed request body: " +
                                      (error == http::error::buffer_overflow
                                           ? "a chunk's size line is over " +
                                                 std::to_string(from_client.max_size()) + " bytes"
                                           : error.message())};
                }
                if (error) throw boost::system::system_error(error);
                const std::size_t got = buffer_.size() - head.body().size;
                if (const auto* found = scanner.feed({buffer_.data(), got})) {
                    // Nothing of this chunk goes on: the upstream sees a request cut short.
                    upstream_dead_ = true;
                    upstream_->lowest_layer().close(error);
                    std::string hosts;
                    for (const auto& host : found->hosts) hosts += (hosts.empty() ? "" : ", ") + host;
                    throw Refusal{403, "Forbidden",
                                  "exfiltration attempt: the body of this request to " + setup_.host +
                                      " carries the session's stand-in for its " + found->name +
                                      " key, which only ever goes to " + hosts + "; the request was cut and logged"};
                }
                head.body().data = buffer_.data();
                head.body().size = got;
                head.body().more = !request.is_done();
                sent += got;
            } else {
                head.body().data = nullptr;
                head.body().size = 0;
                head.body().more = false;
            }
            co_await http::async_write(*upstream_, outgoing, net::redirect_error(net::use_awaitable, error));
            if (error == http::error::need_buffer) error = {};
            if (error) throw boost::system::system_error(error);
        }

        // The response; interim ones (103, and 100 if the upstream sends it anyway) pass on first.
        std::optional<http::response_parser<http::buffer_body>> response;
        for (;;) {
            response.emplace();
            response->body_limit(std::numeric_limits<std::uint64_t>::max());
            if (is_head) response->skip(true);
            co_await http::async_read_header(*upstream_, from_upstream, *response,
                                             net::redirect_error(net::use_awaitable, error));
            if (error) {
                upstream_dead_ = true;
                throw Refusal{502, "Bad Gateway",
                              "no response from " + setup_.host + ":" + std::to_string(setup_.port) + ": " +
                                  error.message()};
            }
            redact_head(response->get(), redactor);
            const unsigned status = response->get().result_int();
            if (status < 100 || status >= 200 || status == 101) break;
            http::response_serializer<http::buffer_body> interim(response->get());
            co_await http::async_write_header(client_, interim, net::use_awaitable);
        }
        auto& answer = response->get();
        http::response_serializer<http::buffer_body> incoming(answer);
        co_await http::async_write_header(client_, incoming, net::use_awaitable);
        if (answer.result() == http::status::switching_protocols) {
            co_await splice(from_client, from_upstream, WebSocketRedactor(redactor));
            co_return false;
        }
        while (!incoming.is_done()) {
            if (!response->is_done()) {
                answer.body().data = buffer_.data();
                answer.body().size = buffer_.size();
                // What has come goes on at once: a streamed answer (a model's server-sent
                // events) must not wait until the buffer fills or the body ends, as a
                // whole async_read would make it.
                co_await http::async_read_some(*upstream_, from_upstream, *response,
                                               net::redirect_error(net::use_awaitable, error));
                if (error == http::error::need_buffer) error = {};
                // A body that ends when the connection does: many servers close without
                // TLS's close_notify, and that close is still the body's end (as browsers
                // and curl take it). Beast sees only a truncated stream.
                if (error == ssl::error::stream_truncated && response->need_eof()) {
                    error = {};
                    response->put_eof(error);
                }
                if (error) throw boost::system::system_error(error);
                const std::size_t got = buffer_.size() - answer.body().size;
                const auto ready = redactor.feed({buffer_.data(), got}, response->is_done());
                // Nothing to pass on (a read that only took a chunk's size line, or bytes
                // held back): no data, since an empty piece would go out as the last chunk.
                answer.body().data = ready.empty() ? nullptr : const_cast<char*>(ready.data());
                answer.body().size = ready.size();
                answer.body().more = !response->is_done();
                received += got;
            } else {
                answer.body().data = nullptr;
                answer.body().size = 0;
                answer.body().more = false;
            }
            co_await http::async_write(client_, incoming, net::redirect_error(net::use_awaitable, error));
            if (error == http::error::need_buffer) error = {};
            if (error) throw boost::system::system_error(error);
        }
        up_ += sent;
        down_ += received;
        if (!answer.keep_alive() || response->need_eof()) upstream_dead_ = true;
        co_return client_keeps_alive && answer.keep_alive() && !response->need_eof();
    }

    static void redact_head(http::response<http::buffer_body>& head, const KeyRedactor& redactor) {
        if (!redactor.active()) return;
        std::vector<std::pair<std::string, std::string>> replaced;
        for (const auto& field : head) {
            std::string value = redactor.redact(field.value());
            if (value != field.value()) replaced.emplace_back(std::string(field.name_string()), std::move(value));
        }
        for (auto& [name, value] : replaced) head.set(name, value);
    }

    // After 101 (a WebSocket): bytes both ways until either side ends. The frames the
    // client sends are unmasked and searched for another key's stand-in, as a request
    // body is; one found cuts the connection before that chunk goes on. In the frames the
    // server sends, this request's real keys are masked, as in a response body.
    net::awaitable<void> splice(beast::flat_buffer& from_client, beast::flat_buffer& from_upstream,
                                WebSocketRedactor down) {
        upgraded_ = true;
        WebSocketScanner frames(StandInScanner(setup_.bindings, setup_.host));
        const auto search = [&](std::string_view bytes) {
            const auto* found = frames.feed(bytes);
            if (frames.unreadable())
                throw Refusal{403, "Forbidden",
                              "a WebSocket frame to " + setup_.host +
                                  " is compressed though no compression was agreed, so it cannot be searched for "
                                  "stand-ins; the connection was cut"};
            if (!found) return;
            std::string hosts;
            for (const auto& host : found->hosts) hosts += (hosts.empty() ? "" : ", ") + host;
            throw Refusal{403, "Forbidden",
                          "exfiltration attempt: a WebSocket message to " + setup_.host +
                              " carries the session's stand-in for its " + found->name + " key, which only ever goes to " +
                              hosts + "; the connection was cut and logged"};
        };
        if (from_client.size() > 0) {
            search({static_cast<const char*>(from_client.data().data()), from_client.size()});
            co_await net::async_write(*upstream_, from_client.data(), net::use_awaitable);
            from_client.consume(from_client.size());
        }
        auto self = std::static_pointer_cast<InterceptionImpl>(shared_from_this());
        if (from_upstream.size() > 0) {
            const auto ready = down.feed({static_cast<const char*>(from_upstream.data().data()), from_upstream.size()});
            if (down.unreadable()) throw Refusal{502, "Bad Gateway", unreadable_down()};
            co_await net::async_write(client_, net::buffer(ready), net::use_awaitable);
            from_upstream.consume(from_upstream.size());
        }
        net::co_spawn(executor_, pump_down(self, std::move(down)), net::detached);
        std::array<char, 16 * 1024> chunk{};
        for (;;) {
            const std::size_t got = co_await client_.async_read_some(net::buffer(chunk), net::use_awaitable);
            up_ += got;
            search({chunk.data(), got});
            co_await net::async_write(*upstream_, net::buffer(chunk.data(), got), net::use_awaitable);
        }
    }

    std::string unreadable_down() const {
        return "a WebSocket frame from " + setup_.host +
               " is compressed though no compression was agreed, so the session's keys cannot be "
               "kept out of it; the connection was cut";
    }

    static net::awaitable<void> pump_down(std::shared_ptr<InterceptionImpl> self, WebSocketRedactor down) {
        std::array<char, 16 * 1024> chunk{};
        try {
            for (;;) {
                const std::size_t got = co_await self->upstream_->async_read_some(net::buffer(chunk), net::use_awaitable);
                self->down_ += got;
                const auto ready = down.feed({chunk.data(), got});
                if (down.unreadable()) {
                    spdlog::warn("session {}: {}", self->setup_.session_id, self->unreadable_down());
                    break;
                }
                co_await net::async_write(self->client_, net::buffer(ready), net::use_awaitable);
            }
        } catch (const boost::system::system_error&) {
        }
        self->shut();
    }

    InterceptionSetup setup_;
    Done done_;
    net::any_io_executor executor_;
    std::shared_ptr<ssl::context> server_context_;
    ClientStream client_;
    std::optional<UpstreamStream> upstream_;
    net::steady_timer timer_;
    std::vector<char> buffer_;
    std::uint64_t up_ = 0;
    std::uint64_t down_ = 0;
    std::string reason_;
    std::map<std::int64_t, std::string> real_values_;
    bool upstream_dead_ = false;
    bool closed_ = false;
    bool upgraded_ = false; // a WebSocket now: refusals are close frames
};

} // namespace

std::shared_ptr<Interception> Interception::start(InterceptionSetup setup, Done done) {
    // The container already has its "200 Connection established" and is sending its
    // TLS hello; without a certificate all that is left is to close.
    auto server = setup.tls->impl().server_for(setup.host);
    if (!server) {
        spdlog::error("session {}: cannot intercept {}: {}", setup.session_id, setup.host, server.error().message);
        if (done) done(0, 0, server.error().message);
        return nullptr;
    }
    auto interception = std::make_shared<InterceptionImpl>(std::move(setup), std::move(done), std::move(*server));
    interception->begin();
    return interception;
}

} // namespace handler::network
