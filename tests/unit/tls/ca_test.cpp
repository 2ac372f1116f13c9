// The per-install CA: what it writes and what it refuses to load, and leaves that
// OpenSSL's own verifier and a real TLS client accept for their name and nothing else.
#include "tls/ca.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::tls {
namespace {

namespace fs = std::filesystem;
using handler::testing::contains;
using handler::testing::FakeClock;
using handler::testing::TempDir;

constexpr std::int64_t kDayMs = 24LL * 60 * 60 * 1000;

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* pointer) const { Free(pointer); }
};
using CertificatePtr = std::unique_ptr<X509, Deleter<X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreContextPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using SslContextPtr = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Deleter<SSL_free>>;

CertificatePtr parse_certificate(const std::string& pem) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    return CertificatePtr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

KeyPtr parse_key(const std::string& pem) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    return KeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

unsigned mode_of(const fs::path& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
}

std::string contents_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::unique_ptr<CertificateAuthority> open_ca(const fs::path& dir, const Clock& clock) {
    auto ca = CertificateAuthority::load_or_create(dir, clock);
    EXPECT_TRUE(ca.ok()) << dir << ": " << (ca ? "" : ca.error().message);
    return ca ? std::move(*ca) : nullptr;
}

std::shared_ptr<const LeafCertificate> leaf(CertificateAuthority& ca, std::string_view host) {
    auto minted = ca.leaf_for(host);
    EXPECT_TRUE(minted.ok()) << host << ": " << (minted ? "" : minted.error().message);
    return minted ? *minted : nullptr;
}

// What a TLS client's chain check says about `leaf` with only `ca` trusted, at `at_ms`:
// X509_V_OK or the reason.
long verify(X509* ca, X509* leaf, std::int64_t at_ms) {
    StorePtr store(X509_STORE_new());
    StoreContextPtr context(X509_STORE_CTX_new());
    if (!store || !context || X509_STORE_add_cert(store.get(), ca) != 1 ||
        X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr) != 1)
        return -1;
    X509_VERIFY_PARAM* parameters = X509_STORE_CTX_get0_param(context.get());
    X509_VERIFY_PARAM_set_purpose(parameters, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set_time(parameters, static_cast<time_t>(at_ms / 1000));
    const int verified = X509_verify_cert(context.get());
    ERR_clear_error();
    return verified == 1 ? X509_V_OK : X509_STORE_CTX_get_error(context.get());
}

std::string reason(long code) { return X509_verify_cert_error_string(code); }

// Subject names are ignored, so a match proves the subjectAltName.
bool names(X509* certificate, const std::string& host) {
    return X509_check_host(certificate, host.data(), host.size(),
                           X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, nullptr) == 1;
}

TEST(CertificateAuthority, CreatesOnceThenLoadsTheSameCertificate) {
    TempDir temp;
    FakeClock clock;
    const fs::path dir = temp / "tls";
    auto created = open_ca(dir, clock);
    ASSERT_NE(created, nullptr);

    EXPECT_EQ(mode_of(dir), 0700u);
    EXPECT_EQ(mode_of(dir / "ca.key"), 0600u);
    EXPECT_EQ(mode_of(dir / "ca.crt"), 0644u);
    EXPECT_EQ(created->certificate_path(), dir / "ca.crt");
    EXPECT_EQ(contents_of(dir / "ca.crt"), created->certificate_pem());
    EXPECT_TRUE(contains(contents_of(dir / "ca.key"), "-----BEGIN PRIVATE KEY-----"));

    clock.advance(kDayMs);
    auto loaded = open_ca(dir, clock);
    ASSERT_NE(loaded, nullptr);
    EXPECT_EQ(loaded->certificate_pem(), created->certificate_pem());
    auto elsewhere = open_ca(temp / "other", clock);
    ASSERT_NE(elsewhere, nullptr);
    EXPECT_NE(elsewhere->certificate_pem(), created->certificate_pem()) << "one CA per install";

    auto certificate = parse_certificate(created->certificate_pem());
    ASSERT_NE(certificate, nullptr);
    EXPECT_EQ(X509_get_version(certificate.get()), X509_VERSION_3);
    EXPECT_EQ(X509_check_ca(certificate.get()), 1);
    EXPECT_EQ(X509_get_pathlen(certificate.get()), 0);
    EXPECT_EQ(X509_get_key_usage(certificate.get()), std::uint32_t{KU_KEY_CERT_SIGN | KU_CRL_SIGN});
    EXPECT_NE(X509_get0_subject_key_id(certificate.get()), nullptr);
    EXPECT_EQ(EVP_PKEY_get_base_id(X509_get0_pubkey(certificate.get())), EVP_PKEY_EC);
    int days = 0;
    int seconds = 0;
    ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(certificate.get()),
                             X509_get0_notAfter(certificate.get())),
              1);
    EXPECT_GE(days, 3650);
    EXPECT_LE(days, 3652);

    char common_name[128] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(certificate.get()), NID_commonName,
                              common_name, sizeof common_name);
    EXPECT_TRUE(contains(common_name, "Handler local CA (")) << common_name;
    BignumPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate.get()), nullptr));
    ASSERT_NE(serial, nullptr);
    EXPECT_LE(BN_num_bits(serial.get()), 128);
    EXPECT_GT(BN_num_bits(serial.get()), 64) << "random, so short only once in 2^64";
}

TEST(CertificateAuthority, RefusesAKeyOtherUsersCanRead) {
    TempDir temp;
    FakeClock clock;
    ASSERT_NE(open_ca(temp.path(), clock), nullptr);
    const fs::path key = temp / "ca.key";
    ASSERT_EQ(::chmod(key.c_str(), 0644), 0);

    auto refused = CertificateAuthority::load_or_create(temp.path(), clock);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::forbidden);
    EXPECT_TRUE(contains(refused.error().message, key.string())) << refused.error().message;
    EXPECT_TRUE(contains(refused.error().message, "chmod 600 " + key.string()))
        << refused.error().message;
    EXPECT_EQ(mode_of(key), 0644u) << "refused, not silently fixed";

    ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
    EXPECT_TRUE(CertificateAuthority::load_or_create(temp.path(), clock).ok()) << "the fix works";
}

TEST(CertificateAuthority, RefusesACertificateThatDoesNotMatchTheKey) {
    TempDir temp;
    FakeClock clock;
    ASSERT_NE(open_ca(temp / "a", clock), nullptr);
    ASSERT_NE(open_ca(temp / "b", clock), nullptr);
    fs::copy_file(temp / "b" / "ca.crt", temp / "a" / "ca.crt",
                  fs::copy_options::overwrite_existing);

    auto refused = CertificateAuthority::load_or_create(temp / "a", clock);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "does not match")) << refused.error().message;
    EXPECT_TRUE(contains(refused.error().message, (temp / "a" / "ca.crt").string()))
        << refused.error().message;
}

TEST(CertificateAuthority, RefusesHalfACaRatherThanReplacingIt) {
    TempDir temp;
    FakeClock clock;
    ASSERT_NE(open_ca(temp.path(), clock), nullptr);
    const std::string key = contents_of(temp / "ca.key");
    fs::remove(temp / "ca.crt");

    auto refused = CertificateAuthority::load_or_create(temp.path(), clock);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, (temp / "ca.crt").string()))
        << refused.error().message;
    EXPECT_EQ(contents_of(temp / "ca.key"), key);
}

TEST(TlsLeaf, VerifiesAgainstTheCaForItsNameOnly) {
    TempDir temp;
    FakeClock clock;
    auto ca = open_ca(temp.path(), clock);
    ASSERT_NE(ca, nullptr);
    auto minted = leaf(*ca, "api.example.com");
    ASSERT_NE(minted, nullptr);
    auto ca_certificate = parse_certificate(ca->certificate_pem());
    auto certificate = parse_certificate(minted->certificate_pem);
    auto key = parse_key(minted->private_key_pem);
    ASSERT_TRUE(ca_certificate && certificate && key);

    const long verified = verify(ca_certificate.get(), certificate.get(), clock.now_ms());
    EXPECT_EQ(verified, X509_V_OK) << reason(verified);
    EXPECT_TRUE(names(certificate.get(), "api.example.com"));
    EXPECT_FALSE(names(certificate.get(), "other.example.com"));
    EXPECT_FALSE(names(certificate.get(), "example.com"));
    // X509_check_ca alone would pass a CA:TRUE leaf that lacks keyCertSign.
    const std::uint32_t flags = X509_get_extension_flags(certificate.get());
    EXPECT_NE(flags & EXFLAG_BCONS, 0u) << "basicConstraints present";
    EXPECT_EQ(flags & EXFLAG_CA, 0u) << "basicConstraints CA:FALSE";
    EXPECT_EQ(X509_check_ca(certificate.get()), 0);
    EXPECT_EQ(X509_check_purpose(certificate.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
    EXPECT_NE(X509_get0_authority_key_id(certificate.get()), nullptr);
    EXPECT_EQ(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(certificate.get()),
                                    X509_get0_subject_key_id(ca_certificate.get())),
              0);
    EXPECT_EQ(X509_check_private_key(certificate.get(), key.get()), 1);
    EXPECT_TRUE(contains(minted->private_key_pem, "-----BEGIN PRIVATE KEY-----")) << "PKCS#8";
    EXPECT_EQ(EVP_PKEY_get_base_id(key.get()), EVP_PKEY_EC);

    int days = 0;
    int seconds = 0;
    ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(certificate.get()),
                             X509_get0_notAfter(certificate.get())),
              1);
    EXPECT_LE(days, 398) << "Go and Node refuse longer leaves";
    EXPECT_EQ(minted->not_after_ms, clock.now_ms() + 30 * kDayMs);

    auto stranger = open_ca(temp / "stranger", clock);
    ASSERT_NE(stranger, nullptr);
    auto stranger_certificate = parse_certificate(stranger->certificate_pem());
    EXPECT_NE(verify(stranger_certificate.get(), certificate.get(), clock.now_ms()), X509_V_OK);
    EXPECT_EQ(verify(ca_certificate.get(), certificate.get(), clock.now_ms() + 31 * kDayMs),
              X509_V_ERR_CERT_HAS_EXPIRED);
}

TEST(TlsLeaf, CoversAnIpAddressAsAnIpAlternativeName) {
    TempDir temp;
    FakeClock clock;
    auto ca = open_ca(temp.path(), clock);
    ASSERT_NE(ca, nullptr);
    auto ca_certificate = parse_certificate(ca->certificate_pem());

    auto v4 = leaf(*ca, "10.1.2.3");
    ASSERT_NE(v4, nullptr);
    auto certificate = parse_certificate(v4->certificate_pem);
    const long verified = verify(ca_certificate.get(), certificate.get(), clock.now_ms());
    EXPECT_EQ(verified, X509_V_OK) << reason(verified);
    EXPECT_EQ(X509_check_ip_asc(certificate.get(), "10.1.2.3", 0), 1);
    EXPECT_EQ(X509_check_ip_asc(certificate.get(), "10.1.2.4", 0), 0);
    EXPECT_FALSE(names(certificate.get(), "10.1.2.3")) << "an IP SAN, not a DNS one";

    auto v6 = leaf(*ca, "fd00::7");
    ASSERT_NE(v6, nullptr);
    auto certificate6 = parse_certificate(v6->certificate_pem);
    EXPECT_EQ(X509_check_ip_asc(certificate6.get(), "fd00:0:0::7", 0), 1);
    EXPECT_EQ(leaf(*ca, "fd00:0::7"), v6) << "one leaf per address however it is spelled";
}

TEST(TlsLeaf, IsCachedAndMintedAgainWhenLessThanAWeekIsLeft) {
    TempDir temp;
    FakeClock clock;
    auto ca = open_ca(temp.path(), clock);
    ASSERT_NE(ca, nullptr);

    const auto started = std::chrono::steady_clock::now();
    auto first = leaf(*ca, "api.example.com");
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_NE(first, nullptr);
    std::cout << "[          ] one leaf took "
              << std::chrono::duration<double, std::milli>(took).count() << " ms to mint\n";

    EXPECT_EQ(leaf(*ca, "api.example.com"), first);
    EXPECT_NE(leaf(*ca, "example.com"), first);

    clock.advance(20 * kDayMs);
    EXPECT_EQ(leaf(*ca, "api.example.com"), first) << "10 days left: still served";

    clock.advance(4 * kDayMs);
    auto renewed = leaf(*ca, "api.example.com");
    ASSERT_NE(renewed, nullptr);
    EXPECT_NE(renewed, first) << "6 days left: minted again";
    EXPECT_EQ(renewed->not_after_ms, clock.now_ms() + 30 * kDayMs);
    EXPECT_EQ(leaf(*ca, "api.example.com"), renewed);

    auto ca_certificate = parse_certificate(ca->certificate_pem());
    auto certificate = parse_certificate(renewed->certificate_pem);
    const long verified = verify(ca_certificate.get(), certificate.get(), clock.now_ms());
    EXPECT_EQ(verified, X509_V_OK) << reason(verified);
}

TEST(TlsLeaf, RefusesHostsThatAreNeitherNamesNorAddresses) {
    TempDir temp;
    FakeClock clock;
    auto ca = open_ca(temp.path(), clock);
    ASSERT_NE(ca, nullptr);

    const std::string refused_hosts[] = {
        "", "a b", "exa_mple..com", "-x.com", "[::1", std::string("\x01", 1), "[::1]",
        "x-.com", "Example.com", "*.example.com", "example.com.", ".example.com",
        "example.com:443", "1.2.3", "999.1.1.1", "fe80::1%eth0", std::string("a.com\0.evil", 11),
        "a,DNS:evil.com", std::string(64, 'a') + ".com", std::string(300, 'a')};
    for (const std::string& host : refused_hosts) {
        auto refused = ca->leaf_for(host);
        ASSERT_FALSE(refused.ok()) << "accepted \"" << host << "\"";
        EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument) << host;
        EXPECT_TRUE(contains(refused.error().message, "cannot issue a TLS certificate for host"))
            << refused.error().message;
    }
    auto control = ca->leaf_for(std::string("\x01", 1));
    ASSERT_FALSE(control.ok());
    EXPECT_TRUE(contains(control.error().message, "\"\\x01\"")) << control.error().message;

    for (const char* host : {"localhost", "a-b.example", "xn--bcher-kva.example", "1.example",
                             "127.0.0.1", "::1", "2001:db8::1"})
        EXPECT_NE(leaf(*ca, host), nullptr) << host;
    EXPECT_NE(leaf(*ca, std::string(63, 'a') + "." + std::string(63, 'b') + ".example"), nullptr)
        << "a host too long for a common name still gets a leaf";
}

// A socket pair end, closed when the test is done with it.
class Socket {
public:
    explicit Socket(int fd) : fd_(fd) {}
    ~Socket() { if (fd_ >= 0) ::close(fd_); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int fd() const { return fd_; }

private:
    int fd_;
};

struct Handshake {
    bool client_done = false;
    bool server_done = false;
    long verify_result = -1;
    std::string echoed;
};

// A TLS server presenting `leaf` and a client that trusts only `ca_pem` and checks the
// name `expected_host`, over a non-blocking socket pair in this thread.
Handshake shake_hands(const std::string& ca_pem, const LeafCertificate& leaf,
                      const std::string& expected_host) {
    Handshake result;
    SslContextPtr server_context(SSL_CTX_new(TLS_server_method()));
    SslContextPtr client_context(SSL_CTX_new(TLS_client_method()));
    auto certificate = parse_certificate(leaf.certificate_pem);
    auto key = parse_key(leaf.private_key_pem);
    auto ca = parse_certificate(ca_pem);
    if (!server_context || !client_context || !certificate || !key || !ca ||
        SSL_CTX_use_certificate(server_context.get(), certificate.get()) != 1 ||
        SSL_CTX_use_PrivateKey(server_context.get(), key.get()) != 1 ||
        X509_STORE_add_cert(SSL_CTX_get_cert_store(client_context.get()), ca.get()) != 1) {
        ADD_FAILURE() << "cannot set up the TLS contexts";
        return result;
    }
    SSL_CTX_set_verify(client_context.get(), SSL_VERIFY_PEER, nullptr);

    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
        ADD_FAILURE() << "socketpair: " << std::strerror(errno);
        return result;
    }
    const Socket server_socket(fds[0]);
    const Socket client_socket(fds[1]);
    SslPtr server(SSL_new(server_context.get()));
    SslPtr client(SSL_new(client_context.get()));
    if (!server || !client || SSL_set_fd(server.get(), server_socket.fd()) != 1 ||
        SSL_set_fd(client.get(), client_socket.fd()) != 1 ||
        SSL_set1_host(client.get(), expected_host.c_str()) != 1) {
        ADD_FAILURE() << "cannot set up the TLS connections";
        return result;
    }
    SSL_set_accept_state(server.get());
    SSL_set_connect_state(client.get());

    bool failed = false;
    const auto step = [&failed](SSL* ssl, bool& done) {
        if (done || failed) return;
        const int rc = SSL_do_handshake(ssl);
        if (rc == 1) {
            done = true;
            return;
        }
        const int error = SSL_get_error(ssl, rc);
        failed = error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE;
    };
    for (int round = 0; round < 50 && !failed && !(result.client_done && result.server_done);
         ++round) {
        step(client.get(), result.client_done);
        step(server.get(), result.server_done);
    }
    result.verify_result = SSL_get_verify_result(client.get());
    if (result.client_done && result.server_done) {
        const std::string ping = "ping";
        char received[16] = {};
        if (SSL_write(client.get(), ping.data(), static_cast<int>(ping.size())) ==
                static_cast<int>(ping.size())) {
            const int n = SSL_read(server.get(), received, sizeof received);
            if (n > 0) result.echoed.assign(received, static_cast<std::size_t>(n));
        }
    }
    ERR_clear_error();
    return result;
}

TEST(TlsHandshake, SucceedsForTheLeafsNameAndFailsForAnother) {
    TempDir temp;
    SystemClock clock; // a real client checks validity against the real time
    auto ca = open_ca(temp.path(), clock);
    ASSERT_NE(ca, nullptr);
    auto minted = leaf(*ca, "api.example.com");
    ASSERT_NE(minted, nullptr);

    const Handshake good = shake_hands(ca->certificate_pem(), *minted, "api.example.com");
    EXPECT_TRUE(good.client_done && good.server_done);
    EXPECT_EQ(good.verify_result, X509_V_OK) << reason(good.verify_result);
    EXPECT_EQ(good.echoed, "ping");

    const Handshake wrong_name = shake_hands(ca->certificate_pem(), *minted, "evil.example.com");
    EXPECT_FALSE(wrong_name.client_done);
    EXPECT_EQ(wrong_name.verify_result, X509_V_ERR_HOSTNAME_MISMATCH)
        << reason(wrong_name.verify_result);

    auto stranger = open_ca(temp / "stranger", clock);
    ASSERT_NE(stranger, nullptr);
    const Handshake wrong_ca = shake_hands(stranger->certificate_pem(), *minted, "api.example.com");
    EXPECT_FALSE(wrong_ca.client_done);
    EXPECT_NE(wrong_ca.verify_result, X509_V_OK);
}

} // namespace
} // namespace handler::tls
