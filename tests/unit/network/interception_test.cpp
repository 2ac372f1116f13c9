// TLS interception over real sockets and real TLS: a client on the proxy's unix socket
// that trusts handler's CA, an upstream on 127.0.0.1 with a certificate from a second,
// "public" CA that the proxy trusts through SSL_CERT_FILE (as handlerd would trust the
// system's), and the session's stand-ins trying to leave by every way an agent could send
// them.
#include "network/egress_proxy.hpp"
#include "network/secret_binding.hpp"
#include "tls/ca.hpp"

#include "support/fakes.hpp"
#include "unit/network/proxy_support.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <sys/un.h>

#include <cstdlib>
#include <future>
#include <memory>

namespace handler::network {
namespace {

using handler::testing::contains;
using handler::testing::TempDir;
using namespace handler::network::testing;

const std::string kStandInA = "sk-ant-api03-STANDINaaaaaaaaaaaaaaaaaaaaaaaa";
const std::string kRealA = "sk-ant-api03-REALKEYaaaaaaaaaaaaaaaaaaaaaaaa";
const std::string kStandInB = "sk-STANDINbbbbbbbbbbbbbbbbbbbbbbbb";
const std::string kRealB = "sk-REALKEYbbbbbbbbbbbbbbbbbbbbbbbb";

class FixedSecrets final : public SecretSource {
public:
    std::vector<SecretBinding> bindings() override {
        SecretBinding a{"anthropic-api-key", kStandInA, {"api.test"}, "x-api-key", "", 1};
        SecretBinding b{"openai-api-key", kStandInB, {"other.test"}, "authorization", "Bearer ", 2};
        return {a, b};
    }
    Result<std::string> real_value(const SecretBinding& binding) override {
        return binding.account_id == 1 ? real_a : kRealB;
    }
    std::string real_a = kRealA;
};

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* pointer) const { Free(pointer); }
};
using ContextPtr = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Deleter<SSL_free>>;

ContextPtr server_context(const tls::LeafCertificate& leaf) {
    ContextPtr context(SSL_CTX_new(TLS_server_method()));
    std::unique_ptr<BIO, Deleter<BIO_free>> certificate(
        BIO_new_mem_buf(leaf.certificate_pem.data(), static_cast<int>(leaf.certificate_pem.size())));
    std::unique_ptr<BIO, Deleter<BIO_free>> key(
        BIO_new_mem_buf(leaf.private_key_pem.data(), static_cast<int>(leaf.private_key_pem.size())));
    std::unique_ptr<X509, Deleter<X509_free>> x509(PEM_read_bio_X509(certificate.get(), nullptr, nullptr, nullptr));
    std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>> pkey(PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr));
    SSL_CTX_use_certificate(context.get(), x509.get());
    SSL_CTX_use_PrivateKey(context.get(), pkey.get());
    return context;
}

// Blocking TLS over a connected fd.
class TlsStream {
public:
    // A client offers h2 and http/1.1 (ALPN), as curl and Node do, unless told otherwise.
    TlsStream(SSL_CTX* context, int fd, bool server, const std::string& host = {},
              std::string_view alpn = std::string_view("\x02h2\x08http/1.1", 12))
        : ssl_(SSL_new(context)) {
        SSL_set_fd(ssl_.get(), fd);
        if (server) {
            SSL_set_accept_state(ssl_.get());
        } else {
            SSL_set_connect_state(ssl_.get());
            SSL_ctrl(ssl_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(host.c_str()));
            SSL_set1_host(ssl_.get(), host.c_str());
            SSL_set_alpn_protos(ssl_.get(), reinterpret_cast<const unsigned char*>(alpn.data()),
                                static_cast<unsigned>(alpn.size()));
        }
        ok_ = SSL_do_handshake(ssl_.get()) == 1;
    }
    bool ok() const { return ok_; }
    SSL* ssl() const { return ssl_.get(); }
    void write(std::string_view data) {
        if (!data.empty()) SSL_write(ssl_.get(), data.data(), static_cast<int>(data.size()));
    }
    // Reads until `needle` or the end; "" at once after the peer closed.
    std::string read_until(std::string_view needle) {
        while (buffer_.find(needle) == std::string::npos) {
            char chunk[4096];
            const int got = SSL_read(ssl_.get(), chunk, sizeof chunk);
            if (got <= 0) break;
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
        const auto at = buffer_.find(needle);
        const std::size_t end = at == std::string::npos ? buffer_.size() : at + needle.size();
        std::string out = buffer_.substr(0, end);
        buffer_.erase(0, end);
        return out;
    }
    // Whatever comes next (what is buffered first); "" once the peer closed.
    std::string read_some() {
        if (buffer_.empty()) {
            char chunk[4096];
            const int got = SSL_read(ssl_.get(), chunk, sizeof chunk);
            if (got <= 0) return {};
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
        return std::exchange(buffer_, std::string());
    }
    // One HTTP message: the head, then a Content-Length body.
    std::string read_message() {
        std::string message = read_until("\r\n\r\n");
        std::size_t length = 0;
        if (const auto at = message.find("Content-Length: "); at != std::string::npos)
            length = std::stoul(message.substr(at + 16));
        while (buffer_.size() < length) {
            char chunk[4096];
            const int got = SSL_read(ssl_.get(), chunk, sizeof chunk);
            if (got <= 0) break;
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
        message += buffer_.substr(0, length);
        buffer_.erase(0, std::min(length, buffer_.size()));
        return message;
    }

private:
    SslPtr ssl_;
    bool ok_ = false;
    std::string buffer_;
};

class InterceptionTest : public ::testing::Test {
protected:
    InterceptionTest() {
        handler_ca_ = tls::CertificateAuthority::load_or_create(handler_dir_ / "ca", clock_).value();
        public_ca_ = tls::CertificateAuthority::load_or_create(public_dir_ / "ca", clock_).value();
        rogue_ca_ = tls::CertificateAuthority::load_or_create(rogue_dir_ / "ca", clock_).value();
        // The proxy trusts what the system trusts; here the system is the public CA.
        ::setenv("SSL_CERT_FILE", public_ca_->certificate_path().c_str(), 1);
        contexts_ = TlsContexts::create(*handler_ca_).value();
        ::unsetenv("SSL_CERT_FILE");

        policy_.mode = Mode::filtered;
        policy_.agent = "coder";
        for (const char* host : {"api.test", "other.test", "plain.test", "rogue.test"})
            policy_.allow.push_back(*parse_rule(host));
        std::map<std::string, std::vector<Address>> pinned;
        for (const char* host : {"api.test", "other.test", "plain.test", "rogue.test"})
            pinned[host] = {*parse_address("127.0.0.1")};
        resolver_ = std::make_unique<CountingResolver>(make_system_resolver(io_, pinned));
        ProxyOptions options;
        options.socket_path = handler_dir_ / "proxy.sock";
        options.session_id = "s_00000a";
        proxy_ = std::make_unique<EgressProxy>(
            io_, options,
            [this] {
                std::lock_guard lock(policy_mutex_);
                return policy_;
            },
            ProxyServices{resolver_.get(), &audit_, &secrets_, contexts_.get()}, [] { return std::int64_t{1000}; },
            std::vector<Address>{});
        EXPECT_TRUE(proxy_->start().ok());
        client_context_.reset(SSL_CTX_new(TLS_client_method()));
        std::unique_ptr<BIO, Deleter<BIO_free>> pem(BIO_new_mem_buf(
            handler_ca_->certificate_pem().data(), static_cast<int>(handler_ca_->certificate_pem().size())));
        std::unique_ptr<X509, Deleter<X509_free>> ca(PEM_read_bio_X509(pem.get(), nullptr, nullptr, nullptr));
        X509_STORE_add_cert(SSL_CTX_get_cert_store(client_context_.get()), ca.get());
        SSL_CTX_set_verify(client_context_.get(), SSL_VERIFY_PEER, nullptr);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~InterceptionTest() override {
        boost::asio::post(io_, [this] { proxy_->stop(); });
        work_.reset();
        thread_.join();
    }

    int connect_through(const std::string& host, std::uint16_t port) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", (handler_dir_ / "proxy.sock").c_str());
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        send_all(fd, "CONNECT " + host + ":" + std::to_string(port) + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
        EXPECT_EQ(read_until(fd, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
        return fd;
    }

    // An HTTPS upstream for `host` with a certificate from `ca`: it records each request
    // head (and Content-Length body) it gets and answers 200 with the head as the body.
    // With `requests_per_connection`, it then closes without saying so, as idle servers do.
    std::unique_ptr<Upstream> https_upstream(const std::string& host, tls::CertificateAuthority& ca,
                                             int requests_per_connection = 1000) {
        auto context = std::shared_ptr<SSL_CTX>(server_context(**ca.leaf_for(host)).release(), SSL_CTX_free);
        return std::make_unique<Upstream>([this, context, requests_per_connection](int fd) {
            TlsStream stream(context.get(), fd, true);
            if (!stream.ok()) return;
            for (int served = 0; served < requests_per_connection; ++served) {
                std::string request = stream.read_message();
                {
                    std::lock_guard lock(seen_mutex_);
                    if (!request.empty()) seen_.push_back(request);
                }
                if (request.empty()) return;
                stream.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(request.size()) + "\r\n\r\n" +
                             request);
            }
        });
    }

    // An HTTPS upstream for api.test that answers the first request with 101 and then
    // echoes every byte; what it got after the 101 is in websocket_bytes().
    std::unique_ptr<Upstream> websocket_upstream() {
        auto context = std::shared_ptr<SSL_CTX>(server_context(**public_ca_->leaf_for("api.test")).release(), SSL_CTX_free);
        return std::make_unique<Upstream>([this, context](int fd) {
            TlsStream stream(context.get(), fd, true);
            if (!stream.ok()) return;
            const std::string request = stream.read_message();
            {
                std::lock_guard lock(seen_mutex_);
                seen_.push_back(request);
            }
            stream.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
            for (std::string got = stream.read_some(); !got.empty(); got = stream.read_some()) {
                {
                    std::lock_guard lock(seen_mutex_);
                    websocket_bytes_ += got;
                }
                stream.write(got);
            }
        });
    }

    // An HTTPS upstream for api.test that keeps every byte it gets inside TLS, answers
    // nothing, and ends when the proxy does: for what must never reach an upstream.
    std::unique_ptr<Upstream> raw_upstream() {
        auto context = std::shared_ptr<SSL_CTX>(server_context(**public_ca_->leaf_for("api.test")).release(), SSL_CTX_free);
        return std::make_unique<Upstream>([this, context](int fd) {
            TlsStream stream(context.get(), fd, true);
            if (!stream.ok()) return;
            for (std::string got = stream.read_some(); !got.empty(); got = stream.read_some()) {
                std::lock_guard lock(seen_mutex_);
                websocket_bytes_ += got;
            }
        });
    }

    std::string websocket_bytes() {
        std::lock_guard lock(seen_mutex_);
        return websocket_bytes_;
    }

    std::vector<std::string> seen() {
        std::lock_guard lock(seen_mutex_);
        return seen_;
    }

    SystemClock clock_; // leaves must be valid now, for OpenSSL on both ends
    TempDir handler_dir_;
    TempDir public_dir_;
    TempDir rogue_dir_;
    std::unique_ptr<tls::CertificateAuthority> handler_ca_;
    std::unique_ptr<tls::CertificateAuthority> public_ca_;
    std::unique_ptr<tls::CertificateAuthority> rogue_ca_;
    std::unique_ptr<TlsContexts> contexts_;
    ContextPtr client_context_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
        boost::asio::make_work_guard(io_);
    std::mutex policy_mutex_;
    Policy policy_;
    std::unique_ptr<CountingResolver> resolver_;
    RecordingAudit audit_;
    FixedSecrets secrets_;
    std::unique_ptr<EgressProxy> proxy_;
    std::thread thread_;
    std::mutex seen_mutex_;
    std::vector<std::string> seen_;
    std::string websocket_bytes_;
};

// A text frame as a client sends it: masked (RFC 6455 5.3).
std::string client_frame(std::string_view payload) {
    std::string frame = "\x81";
    if (payload.size() < 126) {
        frame += static_cast<char>(0x80 | payload.size());
    } else {
        frame += static_cast<char>(0x80 | 126);
        frame += static_cast<char>(payload.size() >> 8);
        frame += static_cast<char>(payload.size() & 0xff);
    }
    const char mask[4] = {'\x5a', '\x13', '\x7f', '\x21'};
    frame.append(mask, 4);
    for (std::size_t i = 0; i < payload.size(); ++i) frame += static_cast<char>(payload[i] ^ mask[i % 4]);
    return frame;
}

const std::string kUpgrade = "GET /v1/responses HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
                             "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Extensions: permessage-deflate\r\n";

// Asks for a WebSocket on `tls` (to api.test, with the session's stand-in); the answer's head.
std::string open_websocket(TlsStream& tls) {
    tls.write(kUpgrade + "x-api-key: " + kStandInA + "\r\n\r\n");
    return tls.read_until("\r\n\r\n");
}

// Everything until the proxy closes the connection; a proxy that let things through
// would leave it open, and the reads then give up after 5 s.
std::string read_to_close(TlsStream& tls, int fd) {
    timeval limit{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string rest;
    for (std::string got = tls.read_some(); !got.empty(); got = tls.read_some()) rest += got;
    return rest;
}

TEST(StandInScanner, FindsAStandInThatStraddlesChunks) {
    std::vector<SecretBinding> bindings{{"anthropic-api-key", kStandInA, {"api.test"}, "x-api-key", "", 1}};
    StandInScanner scanner(bindings, "elsewhere.test");
    ASSERT_TRUE(scanner.active());
    EXPECT_EQ(scanner.feed("hello " + kStandInA.substr(0, 10)), nullptr);
    EXPECT_EQ(scanner.feed(std::string(5, 'x')), nullptr);
    const auto* found = scanner.feed(std::string(5, 'x'));
    EXPECT_EQ(found, nullptr) << "interrupted: not a stand-in";

    StandInScanner again(bindings, "elsewhere.test");
    EXPECT_EQ(again.feed(std::string(1000, '.') + kStandInA.substr(0, 10)), nullptr);
    EXPECT_EQ(again.feed(kStandInA.substr(10, 5)), nullptr);
    found = again.feed(kStandInA.substr(15) + " tail");
    ASSERT_NE(found, nullptr) << "found across three chunks";
    EXPECT_EQ(found->name, "anthropic-api-key");

    EXPECT_FALSE(StandInScanner(bindings, "api.test").active()) << "a key's own host may see its stand-in";
}

TEST(KeyRedactor, MasksARealKeyComingBackEvenAcrossChunksWithoutChangingLengths) {
    KeyRedactor redactor;
    redactor.add(kRealA, kStandInA);
    std::string out;
    out += redactor.feed("error: bad key " + kRealA.substr(0, 20));
    EXPECT_FALSE(contains(out, kRealA.substr(0, 20))) << "a possible key start waits: " << out;
    out += redactor.feed(kRealA.substr(20) + " (check it)");
    out += redactor.feed("", true);
    EXPECT_EQ(out, "error: bad key " + kStandInA + " (check it)");

    KeyRedactor plain;
    plain.add(kRealA, kStandInA);
    EXPECT_EQ(plain.feed("data: {\"text\":\"hi\"}\n\n"), "data: {\"text\":\"hi\"}\n\n")
        << "ordinary bytes are never held back";
}

// A frame as a server sends it: unmasked; FIN unless `more` follows, text or continuation.
std::string server_frame(std::string_view payload, bool more = false, bool continuation = false) {
    std::string frame(1, static_cast<char>((more ? 0x00 : 0x80) | (continuation ? 0x0 : 0x1)));
    if (payload.size() < 126) {
        frame += static_cast<char>(payload.size());
    } else {
        frame += static_cast<char>(126);
        frame += static_cast<char>(payload.size() >> 8);
        frame += static_cast<char>(payload.size() & 0xff);
    }
    return frame.append(payload);
}

// Everything `redactor` lets out when `stream` comes in pieces of `piece` bytes.
std::string through(WebSocketRedactor redactor, std::string_view stream, std::size_t piece) {
    std::string out;
    for (std::size_t at = 0; at < stream.size(); at += piece) out += redactor.feed(stream.substr(at, piece));
    return out;
}

// A real key an upstream sends back on a WebSocket reaches the container as its stand-in,
// frames and lengths unchanged, however the stream is split; also across the fragments of
// one message, and in a frame the server masked.
TEST(WebSocketRedactor, MasksARealKeyInServerFramesWhateverTheSplit) {
    KeyRedactor keys;
    keys.add(kRealA, kStandInA);
    const std::string long_text(300, 'q');
    const std::string stream = server_frame("{\"error\":\"bad key " + kRealA + "\"}") + server_frame("ok") +
                               server_frame(long_text + kRealA.substr(0, 30), true) +
                               server_frame(kRealA.substr(30) + " end", false, true);
    const std::string expected = server_frame("{\"error\":\"bad key " + kStandInA + "\"}") + server_frame("ok") +
                                 server_frame(long_text + kStandInA.substr(0, 30), true) +
                                 server_frame(kStandInA.substr(30) + " end", false, true);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}, stream.size()})
        EXPECT_EQ(through(WebSocketRedactor(keys), stream, piece), expected) << "in pieces of " << piece;

    // Masked by the server (it should not, but the bytes are read all the same).
    std::string masked = client_frame("key " + kRealA);
    masked[0] = '\x81';
    std::string expected_masked = client_frame("key " + kStandInA);
    EXPECT_EQ(through(WebSocketRedactor(keys), masked, 5), expected_masked);

    // Nothing is held past the end of a message, even bytes that could start a key; and
    // ordinary frames go out at once.
    WebSocketRedactor redactor(keys);
    const std::string tail = server_frame("until " + kRealA.substr(0, 12));
    EXPECT_EQ(redactor.feed(tail), tail);
    const std::string partial = server_frame("starts " + kRealA.substr(0, 12), true);
    EXPECT_EQ(redactor.feed(partial), partial.substr(0, partial.size() - 12)) << "a key's start waits for the rest";
    EXPECT_EQ(redactor.feed(server_frame("!", false, true)), kRealA.substr(0, 12) + server_frame("!", false, true));

    // Compression nobody agreed to: unreadable, and nothing more goes out.
    WebSocketRedactor compressed(keys);
    std::string deflated = server_frame("\x4a\xce\xcf");
    deflated[0] = '\xc1';
    EXPECT_EQ(compressed.feed(server_frame("fine")), server_frame("fine"));
    EXPECT_EQ(compressed.feed(deflated), "");
    EXPECT_TRUE(compressed.unreadable());
    EXPECT_EQ(compressed.feed(server_frame("after")), "");

    // No keys in the request that opened it: everything passes as it is.
    WebSocketRedactor idle{KeyRedactor()};
    EXPECT_FALSE(idle.active());
    EXPECT_EQ(idle.feed(deflated), deflated);
}

TEST_F(InterceptionTest, TheRealKeyGoesOnlyIntoTheBoundHeaderAndTheConnectionStaysOpen) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok()) << "the client trusts handler's CA for api.test";
    const unsigned char* protocol = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(tls.ssl(), &protocol, &length);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(protocol), length), "http/1.1");

    tls.write("GET /v1/models HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\nx-note: " + kStandInA +
              "\r\n\r\n");
    const auto first = tls.read_message();
    EXPECT_TRUE(first.starts_with("HTTP/1.1 200 OK")) << first;
    tls.write("POST /v1/messages HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: " + kStandInA +
              "\r\nContent-Length: 5\r\n\r\nhello");
    const auto second = tls.read_message();
    EXPECT_TRUE(second.starts_with("HTTP/1.1 200 OK")) << second;
    ::close(fd);

    const auto requests = seen();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_TRUE(contains(requests[0], "x-api-key: " + kRealA)) << requests[0];
    EXPECT_TRUE(contains(requests[0], "x-note: " + kStandInA)) << "other headers are left alone";
    EXPECT_TRUE(contains(requests[1], kRealA)) << requests[1];
    EXPECT_TRUE(requests[1].ends_with("hello"));
    // The upstream echoed the head it got, real key and all; the client gets the stand-in.
    EXPECT_FALSE(contains(first, kRealA)) << first;
    EXPECT_TRUE(contains(first, "x-api-key: " + kStandInA)) << first;

    ASSERT_TRUE(eventually([&] { return audit_.finished() == 3; }));
    const auto entries = audit_.entries();
    EXPECT_EQ(entries.at(0).method, "CONNECT");
    EXPECT_EQ(entries.at(1).method, "GET");
    EXPECT_EQ(entries.at(1).path, "/v1/models");
    EXPECT_EQ(entries.at(1).secret, "anthropic-api-key");
    EXPECT_EQ(entries.at(2).method, "POST");
    EXPECT_EQ(entries.at(2).bytes_up, 5u);
}

TEST_F(InterceptionTest, AnotherKeysStandInInAHeaderIsRefusedAndLogged) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    tls.write("GET /steal HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + kStandInB + "\r\n\r\n");
    const auto reply = tls.read_message();
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
    EXPECT_TRUE(contains(reply, "exfiltration attempt")) << reply;
    EXPECT_TRUE(contains(reply, "openai-api-key")) << reply;
    EXPECT_TRUE(seen().empty()) << "nothing reached the upstream";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    const auto entries = audit_.entries();
    EXPECT_EQ(entries.at(1).verdict, Verdict::deny);
    EXPECT_TRUE(contains(entries.at(1).reason, "exfiltration attempt")) << entries.at(1).reason;
}

// A key stored before '*' was refused at intake: the redactor could not promise to keep
// it out of the answer, so it is not sent at all.
TEST_F(InterceptionTest, AKeyHoldingTheMaskByteIsNeverSent) {
    secrets_.real_a = "sk-ant-api03-REAL*KEYaaaaaaaaaaaaaaaaaaaaaaa";
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    tls.write("GET /v1/models HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
    const auto reply = tls.read_message();
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 502")) << reply;
    EXPECT_TRUE(contains(reply, "anthropic-api-key key holds a '*'")) << reply;
    EXPECT_FALSE(contains(reply, secrets_.real_a)) << reply;
    EXPECT_TRUE(seen().empty()) << "nothing reached the upstream";
}

TEST_F(InterceptionTest, AnotherKeysStandInInAnInterceptedBodyIsCut) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    const std::string body = "{\"prompt\":\"" + std::string(3000, 'a') + kStandInB + "\"}";
    tls.write("POST /v1/messages HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA +
              "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const auto reply = tls.read_message();
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
    EXPECT_TRUE(contains(reply, "openai-api-key")) << reply;
    for (const auto& request : seen()) EXPECT_FALSE(contains(request, kStandInB)) << request;
}

// A WebSocket on a key's host: the key goes into the upgrade request, no compression is
// asked for (so frames stay searchable), and frames pass both ways.
TEST_F(InterceptionTest, AWebSocketOpensWithTheKeyAndWithoutCompressionAndCarriesFrames) {
    auto upstream = websocket_upstream();
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    const auto answer = open_websocket(tls);
    ASSERT_TRUE(answer.starts_with("HTTP/1.1 101")) << answer;
    const std::string frame = client_frame("{\"type\":\"response.create\",\"input\":\"" + std::string(300, 'q') + "\"}");
    tls.write(frame);
    std::string back;
    while (back.size() < frame.size()) {
        const auto got = tls.read_some();
        if (got.empty()) break;
        back += got;
    }
    EXPECT_EQ(back, frame) << "the frame went up and its echo came down unchanged";

    // The upstream sends the real key back (here: its echo of a frame that holds it): the
    // client gets the stand-in in its place.
    const std::string quoting = client_frame("{\"error\":\"invalid key " + kRealA + "\"}");
    tls.write(quoting);
    back.clear();
    while (back.size() < quoting.size()) {
        const auto got = tls.read_some();
        if (got.empty()) break;
        back += got;
    }
    EXPECT_EQ(back, client_frame("{\"error\":\"invalid key " + kStandInA + "\"}"));
    EXPECT_FALSE(contains(back, kRealA));
    ::close(fd);
    const auto requests = seen();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_TRUE(contains(requests[0], "x-api-key: " + kRealA)) << requests[0];
    EXPECT_FALSE(contains(requests[0], "permessage-deflate")) << requests[0];
    EXPECT_FALSE(contains(requests[0], kStandInA)) << requests[0];
}

// Another key's stand-in in a WebSocket message, split across two writes and masked: the
// connection is cut before the write that completes it goes on, with a close frame.
TEST_F(InterceptionTest, AnotherKeysStandInInAWebSocketMessageCutsTheConnection) {
    auto upstream = websocket_upstream();
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    ASSERT_TRUE(open_websocket(tls).starts_with("HTTP/1.1 101"));
    const std::string harmless = client_frame("ping");
    tls.write(harmless);
    ASSERT_TRUE(eventually([&] { return websocket_bytes().size() == harmless.size(); }));
    const std::string frame = client_frame("{\"text\":\"" + std::string(200, 'a') + kStandInB + "\"}");
    const std::size_t split = 2 + 2 + 4 + 200; // the head, then the payload up to the stand-in
    tls.write(frame.substr(0, split));
    ASSERT_TRUE(eventually([&] { return websocket_bytes().size() == harmless.size() + split; }));
    tls.write(frame.substr(split));
    const std::string rest = read_to_close(tls, fd);
    ::close(fd);
    // The echo of "ping", then handler's close frame: 1008, policy violation.
    ASSERT_TRUE(rest.starts_with("\x81")) << "the echo of ping first: " << rest;
    const auto close = rest.find("\x88");
    ASSERT_NE(close, std::string::npos) << "no close frame";
    EXPECT_EQ(rest.substr(close + 2, 2), std::string("\x03\xf0"));
    EXPECT_EQ(websocket_bytes().size(), harmless.size() + split) << "the part that completes the stand-in never left";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    const auto entries = audit_.entries();
    EXPECT_TRUE(contains(entries.at(1).reason, "exfiltration attempt: a WebSocket message")) << entries.at(1).reason;
    EXPECT_TRUE(contains(entries.at(1).reason, "openai-api-key")) << entries.at(1).reason;
}

// A frame with a reserved bit set claims compression nobody agreed to: its payload cannot
// be searched, so it does not go on, whatever it holds.
TEST_F(InterceptionTest, ACompressedWebSocketFrameNobodyAgreedToIsCut) {
    auto upstream = websocket_upstream();
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    ASSERT_TRUE(open_websocket(tls).starts_with("HTTP/1.1 101"));
    std::string frame = client_frame("\x4a\xce\xcf\x4b\xcb\x4c\x07\x00 (deflated, in effect)");
    frame[0] = '\xc1'; // FIN, RSV1, text
    tls.write(frame);
    const std::string rest = read_to_close(tls, fd);
    ::close(fd);
    const auto close = rest.find("\x88");
    ASSERT_NE(close, std::string::npos) << "no close frame: " << rest;
    EXPECT_EQ(rest.substr(close + 2, 2), std::string("\x03\xf0"));
    EXPECT_EQ(websocket_bytes(), "") << "the frame never reached the upstream";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    EXPECT_TRUE(contains(audit_.entries().at(1).reason, "compressed though no compression was agreed"))
        << audit_.entries().at(1).reason;
}

// An event stream whose end is the connection's (no length, no chunks), closed without
// TLS's close_notify as many servers do: the client still gets all of it.
TEST_F(InterceptionTest, ABodyThatEndsWithAnUncleanCloseArrivesWhole) {
    const std::string events = "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n";
    auto context = std::shared_ptr<SSL_CTX>(server_context(**public_ca_->leaf_for("api.test")).release(), SSL_CTX_free);
    Upstream upstream([context, events](int fd) {
        TlsStream stream(context.get(), fd, true);
        if (!stream.ok()) return;
        stream.read_message();
        stream.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
        stream.write(events);
        // Returning closes the socket with no close_notify.
    });
    const int fd = connect_through("api.test", upstream.port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    tls.write("POST /v1/messages HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA +
              "\r\nContent-Length: 2\r\n\r\n{}");
    const std::string answer = read_to_close(tls, fd);
    ::close(fd);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK")) << answer;
    EXPECT_TRUE(answer.ends_with("\r\n\r\n" + events)) << answer;
}

// A model streams its answer: each event must reach the container when it comes, not when
// the proxy's buffer fills or the answer ends. The upstream sends the rest only once the
// client has the first event, so a proxy that held it would make the client's read time out.
TEST_F(InterceptionTest, AStreamedAnswerGoesOnEventByEvent) {
    const std::string first = "event: message_start\ndata: {}\n\n";
    const std::string rest = "event: message_stop\ndata: {}\n\n";
    auto context = std::shared_ptr<SSL_CTX>(server_context(**public_ca_->leaf_for("api.test")).release(), SSL_CTX_free);
    std::promise<void> first_arrived;
    auto arrived = first_arrived.get_future().share();
    Upstream upstream([context, first, rest, arrived](int fd) {
        TlsStream stream(context.get(), fd, true);
        if (!stream.ok()) return;
        stream.read_message();
        stream.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        const auto chunk = [](const std::string& data) {
            char size[16];
            std::snprintf(size, sizeof size, "%zx\r\n", data.size());
            return size + data + "\r\n";
        };
        stream.write(chunk(first));
        arrived.wait_for(5s);
        stream.write(chunk(rest) + "0\r\n\r\n");
    });
    const int fd = connect_through("api.test", upstream.port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    timeval limit{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    tls.write("POST /v1/messages HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA +
              "\r\nContent-Length: 2\r\n\r\n{}");
    const std::string head_and_first = tls.read_until(first);
    const bool first_came_alone = head_and_first.ends_with(first);
    first_arrived.set_value();
    const std::string after = tls.read_until("0\r\n\r\n");
    ::close(fd);
    EXPECT_TRUE(head_and_first.starts_with("HTTP/1.1 200 OK")) << head_and_first;
    EXPECT_TRUE(first_came_alone) << "the first event waited for the rest: " << head_and_first;
    EXPECT_TRUE(contains(after, rest)) << after;
}

TEST_F(InterceptionTest, AnUpstreamThatClosedWhileIdleIsConnectedAgain) {
    auto upstream = https_upstream("api.test", *public_ca_, 1);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    for (int round = 0; round < 3; ++round) {
        tls.write("GET /" + std::to_string(round) + " HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA +
                  "\r\n\r\n");
        const auto reply = tls.read_message();
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << round << ": " << reply;
        std::this_thread::sleep_for(50ms); // the upstream closes meanwhile
    }
    ::close(fd);
    EXPECT_EQ(seen().size(), 3u);
}

TEST_F(InterceptionTest, APolicyChangeCutsAnInterceptedConnection) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    {
        std::lock_guard lock(policy_mutex_);
        policy_.allow.clear();
    }
    std::promise<void> done;
    boost::asio::post(io_, [&] {
        proxy_->reevaluate();
        done.set_value();
    });
    done.get_future().wait();
    EXPECT_EQ(tls.read_until("never"), "") << "closed";
    ::close(fd);
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    EXPECT_TRUE(contains(audit_.entries().at(0).reason, "cut")) << audit_.entries().at(0).reason;
}

TEST_F(InterceptionTest, AStandInInARawTunnelIsCutBeforeAllOfItLeaves) {
    std::promise<std::string> received;
    Upstream upstream([&](int fd) {
        // Plain TCP: other.test's own key is not this one, and plain.test is bound to none.
        received.set_value(read_all(fd, 3000ms));
    });
    const int fd = connect_through("plain.test", upstream.port());
    send_all(fd, "POST /upload HTTP/1.1\r\nContent-Length: 300\r\n\r\nsome data " + std::string(100, '.') +
                     kStandInA.substr(0, 12));
    std::this_thread::sleep_for(100ms);
    send_all(fd, kStandInA.substr(12) + " more");
    EXPECT_EQ(read_all(fd, 2000ms), "") << "the tunnel was cut";
    ::close(fd);
    const auto bytes = received.get_future().get();
    EXPECT_TRUE(contains(bytes, "some data")) << bytes;
    EXPECT_FALSE(contains(bytes, kStandInA.substr(12))) << "its second half never left: " << bytes;
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    const auto entries = audit_.entries();
    EXPECT_TRUE(contains(entries.at(1).reason, "exfiltration attempt")) << entries.at(1).reason;
    EXPECT_TRUE(contains(entries.at(0).reason, "cut: exfiltration")) << entries.at(0).reason;
}

TEST_F(InterceptionTest, PlainHttpCarryingAStandInIsRefused) {
    Upstream upstream(echo);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", (handler_dir_ / "proxy.sock").c_str());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    send_all(fd, "GET http://plain.test:" + std::to_string(upstream.port()) + "/?k=" + kStandInB +
                     " HTTP/1.1\r\nHost: plain.test\r\n\r\n");
    const auto reply = read_all(fd);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
    EXPECT_TRUE(contains(reply, "exfiltration attempt")) << reply;
}

TEST_F(InterceptionTest, AnUpstreamWhoseCertificateDoesNotVerifyGetsNoKey) {
    auto upstream = https_upstream("api.test", *rogue_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test");
    ASSERT_TRUE(tls.ok());
    tls.write("GET / HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
    const auto reply = tls.read_message();
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 502")) << reply;
    EXPECT_TRUE(contains(reply, "certificate")) << reply;
    EXPECT_TRUE(seen().empty());
}

TEST_F(InterceptionTest, OtherAllowedHostsAreTunnelledUntouched) {
    // plain.test has no key: the client's TLS goes through as it is, so it must trust the
    // upstream's own CA, and handler's CA would not do.
    auto upstream = https_upstream("plain.test", *public_ca_);
    const int fd = connect_through("plain.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "plain.test");
    EXPECT_FALSE(tls.ok()) << "handler did not terminate TLS for plain.test";
    ::close(fd);
}

// Sends `request` over TLS for api.test on `fd` (a tunnel just opened) and returns all
// that comes back until the proxy closes it.
std::string only_request(int fd, SSL_CTX* context, const std::string& request) {
    TlsStream tls(context, fd, false, "api.test");
    EXPECT_TRUE(tls.ok());
    tls.write(request);
    return read_to_close(tls, fd);
}

// The Host a request names is the site a shared front serves it from: through a tunnel
// to api.test (where the key goes in), a request for another host gets 421 and goes
// nowhere, key or not; and nobody resolves the other name.
TEST_F(InterceptionTest, ARequestForAnotherHostIsMisdirectedAndGetsNoKey) {
    auto upstream = https_upstream("api.test", *public_ca_);
    for (const std::string host : {"other.test", "evil.example", "api.test:8443", "API.test.evil"}) {
        const int fd = connect_through("api.test", upstream->port());
        const auto reply = only_request(fd, client_context_.get(),
                                        "GET /v1/models HTTP/1.1\r\nHost: " + host + "\r\nx-api-key: " + kStandInA +
                                            "\r\n\r\n");
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 421 Misdirected Request")) << host << ": " << reply;
        EXPECT_TRUE(contains(reply, "opened to api.test:" + std::to_string(upstream->port()))) << reply;
    }
    EXPECT_TRUE(seen().empty()) << "nothing reached the upstream, so no key left";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 8; }));
    const auto entries = audit_.entries();
    EXPECT_EQ(entries.at(1).verdict, Verdict::deny);
    EXPECT_EQ(entries.at(1).host, "api.test");
    EXPECT_EQ(entries.at(1).path, "/v1/models");
    EXPECT_TRUE(contains(entries.at(1).reason, "a request for other.test:")) << entries.at(1).reason;
    EXPECT_EQ(entries.at(1).secret, "") << "no key was put in";
    EXPECT_FALSE(resolver_->asked_for("other.test"));
    EXPECT_FALSE(resolver_->asked_for("evil.example"));
}

// Not only a connection's first request: each one on a kept-alive connection has its
// Host checked, and the policy asked again.
TEST_F(InterceptionTest, EveryRequestOnAKeptAliveConnectionIsChecked) {
    auto upstream = https_upstream("api.test", *public_ca_);
    {
        const int fd = connect_through("api.test", upstream->port());
        TlsStream tls(client_context_.get(), fd, false, "api.test");
        ASSERT_TRUE(tls.ok());
        tls.write("GET /first HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
        EXPECT_TRUE(tls.read_message().starts_with("HTTP/1.1 200"));
        tls.write("GET /second HTTP/1.1\r\nHost: other.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
        EXPECT_TRUE(read_to_close(tls, fd).starts_with("HTTP/1.1 421")) << "the second, for another host";
        ::close(fd);
    }
    {
        const int fd = connect_through("api.test", upstream->port());
        TlsStream tls(client_context_.get(), fd, false, "api.test");
        ASSERT_TRUE(tls.ok());
        tls.write("GET /third HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
        EXPECT_TRUE(tls.read_message().starts_with("HTTP/1.1 200"));
        {
            // The policy changes and nobody has told the proxy yet (reevaluate() not called).
            std::lock_guard lock(policy_mutex_);
            policy_.allow.erase(policy_.allow.begin());
        }
        tls.write("GET /fourth HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA + "\r\n\r\n");
        const auto refused = read_to_close(tls, fd);
        EXPECT_TRUE(refused.starts_with("HTTP/1.1 403")) << refused;
        EXPECT_TRUE(contains(refused, "is not allowed for agent coder")) << refused;
        ::close(fd);
    }
    const auto requests = seen();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_TRUE(requests[0].starts_with("GET /first"));
    EXPECT_TRUE(requests[1].starts_with("GET /third"));
}

// A TLS handshake for another host through a tunnel to api.test: refused by the
// ClientHello's SNI before the handshake, and logged.
TEST_F(InterceptionTest, AHandshakeForAnotherHostIsRefused) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "other.test");
    EXPECT_FALSE(tls.ok());
    ::close(fd);
    EXPECT_TRUE(seen().empty());
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    EXPECT_TRUE(contains(audit_.entries().at(1).reason, "is for other.test (SNI)")) << audit_.entries().at(1).reason;
    EXPECT_FALSE(resolver_->asked_for("other.test"));
}

// The request-smuggling shapes inside an intercepted connection: each refused (400, or
// 505 for a version) before its head reaches the upstream, and logged.
TEST_F(InterceptionTest, RequestSmugglingShapesAreRefusedBeforeTheUpstream) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const std::string key = "x-api-key: " + kStandInA + "\r\n";
    std::vector<std::pair<std::string, std::string>> cases = {
        {"GET / HTTP/1.1\r\nHost: api.test\r\n" + key + "X-A: 1\r\n Host: other.test\r\n\r\n", "obs-fold"},
        {"GET / HTTP/1.1\nHost: api.test\n" + key + "\n", "bare LF"},
        {"GET https://other.test/ HTTP/1.1\r\nHost: api.test\r\n" + key + "\r\n", "origin form"},
        {"GET / HTTP/1.1\r\nHost: api.test\r\nHost: other.test\r\n" + key + "\r\n", "more than one Host"},
        {"GET / HTTP/1.1\r\n" + key + "\r\n", "no Host"},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "bad version"}, // HTTP/2's preface: Beast's refusal
        {"GET / HTTP/1.2\r\nHost: api.test\r\n" + key + "\r\n", "bad version"},
    };
    for (const auto& shape : kSmugglingShapes)
        cases.emplace_back("POST / HTTP/1.1\r\nHost: api.test\r\n" + key + shape.fields, shape.why);
    for (const auto& [request, why] : cases) {
        const int fd = connect_through("api.test", upstream->port());
        const auto reply = only_request(fd, client_context_.get(), request);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 400") || reply.starts_with("HTTP/1.1 505")) << request << ": " << reply;
        EXPECT_TRUE(contains(reply, why)) << request << ": " << reply;
    }
    EXPECT_TRUE(seen().empty()) << seen().front();
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2 * static_cast<int>(cases.size()); }));
    for (const auto& entry : audit_.entries())
        if (entry.method != "CONNECT") {
            EXPECT_EQ(entry.verdict, Verdict::deny) << entry.reason;
        }
}

// Chunk sizes Beast cannot read as hex, signed ones, ones that overflow, extensions that
// are none, a size line without CRLF or too long to hold: 400, the upstream cut, and none
// of the bytes from the bad chunk on ever reach it.
TEST_F(InterceptionTest, MalformedChunksAreRefusedAndGoNoFurther) {
    auto upstream = raw_upstream();
    const std::string head = "POST /v1/messages HTTP/1.1\r\nHost: api.test\r\nx-api-key: " + kStandInA +
                             "\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nGOOD\r\n";
    std::string long_extension = "5";
    while (long_extension.size() < 100 * 1024) long_extension += ";a=b";
    const std::string cases[] = {
        "+5\r\nEVIL!\r\n0\r\n\r\n", "-5\r\nEVIL!\r\n0\r\n\r\n", "fffffffffffffffffffff\r\nEVIL!\r\n0\r\n\r\n",
        "5x\r\nEVIL!\r\n0\r\n\r\n", "0x5\r\nEVIL!\r\n0\r\n\r\n", "5;\r\nEVIL!\r\n0\r\n\r\n",
        "5 ; a=\"b\"c\r\nEVIL!\r\n0\r\n\r\n", "5\nEVIL!\r\n0\r\n\r\n", long_extension + "\r\nEVIL!\r\n0\r\n\r\n",
    };
    int connections = 0;
    for (const auto& bad : cases) {
        const int fd = connect_through("api.test", upstream->port());
        ++connections;
        TlsStream tls(client_context_.get(), fd, false, "api.test");
        ASSERT_TRUE(tls.ok());
        tls.write(head + bad);
        const auto reply = read_to_close(tls, fd);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << bad.substr(0, 40) << ": " << reply;
        EXPECT_TRUE(contains(reply, "malformed request body")) << reply;
        ASSERT_TRUE(eventually([&] { return contains(websocket_bytes(), "POST /v1/messages"); }))
            << "the head went on before its body was read";
        EXPECT_FALSE(contains(websocket_bytes(), "EVIL")) << bad.substr(0, 40);
        EXPECT_FALSE(contains(websocket_bytes(), "0\r\n\r\n")) << "the upstream never saw the body end";
        std::lock_guard lock(seen_mutex_);
        websocket_bytes_.clear();
    }
    EXPECT_EQ(connections, static_cast<int>(std::size(cases)));
}

// Interception speaks HTTP/1.1 only: a client that offers only h2 gets no protocol
// (ALPN), and HTTP/2's preface is then refused as the malformed HTTP/1.1 it is.
TEST_F(InterceptionTest, AClientThatOffersOnlyHttp2GetsNoHttp2) {
    auto upstream = https_upstream("api.test", *public_ca_);
    const int fd = connect_through("api.test", upstream->port());
    TlsStream tls(client_context_.get(), fd, false, "api.test", std::string_view("\x02h2", 3));
    ASSERT_TRUE(tls.ok());
    const unsigned char* protocol = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(tls.ssl(), &protocol, &length);
    EXPECT_EQ(length, 0u) << "no ALPN answer: h2 is never chosen";
    tls.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const auto reply = read_to_close(tls, fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
    EXPECT_TRUE(contains(reply, "bad version")) << reply;
    ::close(fd);
    EXPECT_TRUE(seen().empty());
}

} // namespace
} // namespace handler::network
