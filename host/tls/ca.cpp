#include "tls/ca.hpp"

#include "core/file_descriptor.hpp"
#include "core/paths.hpp"
#include "core/private_file.hpp"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::tls {
namespace fs = std::filesystem;

namespace {

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* pointer) const { Free(pointer); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using KeyContextPtr = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX_free>>;
using CertificatePtr = std::unique_ptr<X509, Deleter<X509_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;

constexpr std::int64_t kSecondsPerDay = 24 * 60 * 60;
// Backdated so a client whose clock runs a little behind ours still accepts it.
constexpr std::int64_t kBackdateSeconds = 60 * 60;
constexpr std::int64_t kCaLifetimeSeconds = 3650 * kSecondsPerDay;
constexpr std::int64_t kLeafLifetimeSeconds = 30 * kSecondsPerDay;
constexpr std::int64_t kLeafRenewBeforeMs = 7 * kSecondsPerDay * 1000;
// Hosts come from proxy requests; a bound keeps a misbehaving caller from growing the
// cache without limit. Dropping the cache only costs re-minting.
constexpr std::size_t kMaxCachedLeaves = 1024;
// X.520 caps commonName at 64 characters and OpenSSL enforces it.
constexpr std::size_t kMaxCommonName = 64;

// OpenSSL's queued reasons, oldest first, so a failure says more than "failed".
std::string openssl_reasons() {
    std::string reasons;
    while (const unsigned long code = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(code, text, sizeof text);
        if (!reasons.empty()) reasons += "; ";
        reasons += text;
    }
    return reasons.empty() ? "no reason given" : reasons;
}

Error openssl_failure(const std::string& what) {
    return make_error(ErrorCode::internal, what + " (OpenSSL: " + openssl_reasons() + ")");
}

// A host as it may appear in a message: control bytes escaped, length bounded.
std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text.substr(0, 100)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f) {
            out += c;
        } else {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
            out += escaped;
        }
    }
    if (text.size() > 100) out += "...";
    return out;
}

struct LeafHost {
    std::string text; // canonical: what goes into the certificate and the cache key
    bool is_address = false;
};

Result<LeafHost> parse_leaf_host(std::string_view host) {
    const auto refuse = [&](const std::string& why) {
        return make_error(ErrorCode::invalid_argument,
                          "cannot issue a TLS certificate for host \"" + printable(host) +
                              "\": " + why +
                              "; a host must be a lower-case DNS name (letters, digits, '-' "
                              "and dots) or an IPv4 or IPv6 address without brackets or port");
    };
    if (host.empty()) return refuse("it is empty");
    if (host.size() > 253) return refuse("it is longer than 253 characters");
    for (const char c : host) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte <= 0x20 || byte >= 0x7f)
            return refuse("it contains the character '" + printable(std::string_view(&c, 1)) +
                          "'");
    }
    // No NUL inside (checked above), so c_str() sees the whole host.
    const std::string text(host);
    char canonical[INET6_ADDRSTRLEN] = {};
    if (text.find(':') != std::string::npos) {
        in6_addr address{};
        if (::inet_pton(AF_INET6, text.c_str(), &address) != 1 ||
            ::inet_ntop(AF_INET6, &address, canonical, sizeof canonical) == nullptr)
            return refuse("it has a ':' but is not an IPv6 address");
        return LeafHost{canonical, true};
    }
    if (in_addr address{}; ::inet_pton(AF_INET, text.c_str(), &address) == 1 &&
                           ::inet_ntop(AF_INET, &address, canonical, sizeof canonical) != nullptr)
        return LeafHost{canonical, true};

    std::size_t start = 0;
    bool last_label_numeric = false;
    while (true) {
        const std::size_t end = std::min(text.find('.', start), text.size());
        const std::string_view label = std::string_view(text).substr(start, end - start);
        if (label.empty())
            return refuse("it has an empty label (a leading, trailing or doubled dot)");
        if (label.size() > 63) return refuse("it has a label longer than 63 characters");
        if (label.front() == '-' || label.back() == '-')
            return refuse("a label starts or ends with '-'");
        last_label_numeric = true;
        for (const char c : label) {
            if (c >= 'A' && c <= 'Z') return refuse("it has upper-case letters; lower-case it");
            const bool digit = c >= '0' && c <= '9';
            if (!digit && !(c >= 'a' && c <= 'z') && c != '-')
                return refuse(std::string("it contains '") + c + "'");
            last_label_numeric = last_label_numeric && digit;
        }
        if (end == text.size()) break;
        start = end + 1;
    }
    // Clients read "10.1" or "1.2.3.4.5" as (malformed) addresses, never as names.
    if (last_label_numeric)
        return refuse("its last label is all digits, which is neither a name nor an address");
    return LeafHost{text, false};
}

Result<KeyPtr> generate_key() {
    KeyContextPtr context(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
    EVP_PKEY* key = nullptr;
    if (!context || EVP_PKEY_keygen_init(context.get()) != 1 ||
        EVP_PKEY_CTX_set_group_name(context.get(), "P-256") != 1 ||
        EVP_PKEY_generate(context.get(), &key) != 1)
        return openssl_failure("cannot generate an EC P-256 key");
    return KeyPtr(key);
}

// Reads everything written into a memory BIO.
Result<std::string> drain(BIO* bio, const char* what) {
    std::string out(BIO_ctrl_pending(bio), '\0');
    if (out.empty() || BIO_read(bio, out.data(), static_cast<int>(out.size())) !=
                           static_cast<int>(out.size()))
        return openssl_failure(std::string("cannot encode ") + what + " as PEM");
    return out;
}

Result<std::string> certificate_to_pem(X509* certificate) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_X509(bio.get(), certificate) != 1)
        return openssl_failure("cannot encode a certificate as PEM");
    return drain(bio.get(), "a certificate");
}

Result<std::string> key_to_pem(EVP_PKEY* key) {
    // The secure-memory BIO wipes its buffer when freed.
    BioPtr bio(BIO_new(BIO_s_secmem()));
    if (!bio ||
        PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
        return openssl_failure("cannot encode a private key as PEM");
    return drain(bio.get(), "a private key");
}

// Never prompt on a terminal for a passphrase, which is OpenSSL's default.
int refuse_passphrase(char*, int, int, void*) { return -1; }

// The fields every certificate here shares: v3, a 128-bit random serial (unguessable,
// so no two certificates collide even across reinstalls), validity and key.
Result<void> fill_common(X509* certificate, EVP_PKEY* public_key, std::int64_t now_seconds,
                         std::int64_t lifetime_seconds) {
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1)
        return openssl_failure("cannot draw random bytes for a certificate serial");
    BignumPtr number(BN_bin2bn(serial, sizeof serial, nullptr));
    if (X509_set_version(certificate, X509_VERSION_3) != 1 || !number ||
        BN_to_ASN1_INTEGER(number.get(), X509_get_serialNumber(certificate)) == nullptr ||
        ASN1_TIME_set(X509_getm_notBefore(certificate),
                      static_cast<std::time_t>(now_seconds - kBackdateSeconds)) == nullptr ||
        ASN1_TIME_set(X509_getm_notAfter(certificate),
                      static_cast<std::time_t>(now_seconds + lifetime_seconds)) == nullptr ||
        X509_set_pubkey(certificate, public_key) != 1)
        return openssl_failure("cannot fill in a certificate");
    return {};
}

// `value` uses openssl.cnf's syntax ("critical,CA:TRUE"). Only fixed strings and hosts
// parse_leaf_host accepted reach it, so nothing from outside can add a clause.
Result<void> add_extension(X509V3_CTX& context, X509* certificate, int nid,
                           const std::string& value) {
    X509_EXTENSION* extension = X509V3_EXT_nconf_nid(nullptr, &context, nid, value.c_str());
    const bool added = extension != nullptr && X509_add_ext(certificate, extension, -1) == 1;
    X509_EXTENSION_free(extension);
    if (!added)
        return openssl_failure(std::string("cannot add ") + OBJ_nid2sn(nid) + " = " + value +
                               " to a certificate");
    return {};
}

Result<void> add_common_name(X509_NAME* name, const std::string& value) {
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(value.data()),
                                   static_cast<int>(value.size()), -1, 0) != 1)
        return openssl_failure("cannot set the certificate's common name to " + value);
    return {};
}

// "Handler local CA (<hostname> <8 hex>)": which machine's CA this is when someone meets
// it in a trust store, and unique per install so two never look alike.
Result<std::string> ca_common_name() {
    char hostname[256] = {};
    if (::gethostname(hostname, sizeof hostname - 1) != 0 || hostname[0] == '\0')
        std::strcpy(hostname, "unknown-host");
    std::string host;
    for (const char* c = hostname; *c != '\0'; ++c) {
        const auto byte = static_cast<unsigned char>(*c);
        host += (byte > 0x20 && byte < 0x7f) ? *c : '-';
    }
    unsigned char random[4];
    if (RAND_bytes(random, sizeof random) != 1)
        return openssl_failure("cannot draw random bytes for the CA's name");
    char suffix[9];
    std::snprintf(suffix, sizeof suffix, "%02x%02x%02x%02x", random[0], random[1], random[2],
                  random[3]);
    const std::string prefix = "Handler local CA (";
    const std::size_t room = kMaxCommonName - prefix.size() - std::strlen(" ") - 8 - 1;
    return prefix + host.substr(0, room) + " " + suffix + ")";
}

struct CaMaterial {
    KeyPtr key;
    CertificatePtr certificate;
};

Result<CaMaterial> make_ca(std::int64_t now_seconds) {
    auto key = generate_key();
    if (!key) return key.take_error();
    auto common_name = ca_common_name();
    if (!common_name) return common_name.take_error();

    CertificatePtr certificate(X509_new());
    NamePtr name(X509_NAME_new());
    if (!certificate || !name) return openssl_failure("cannot allocate the CA certificate");
    if (auto filled = fill_common(certificate.get(), key->get(), now_seconds, kCaLifetimeSeconds);
        !filled)
        return filled.take_error();
    if (auto named = add_common_name(name.get(), *common_name); !named) return named.take_error();
    if (X509_set_subject_name(certificate.get(), name.get()) != 1 ||
        X509_set_issuer_name(certificate.get(), name.get()) != 1)
        return openssl_failure("cannot name the CA certificate");

    X509V3_CTX context{};
    X509V3_set_ctx(&context, certificate.get(), certificate.get(), nullptr, nullptr, 0);
    // pathlen:0: this CA signs leaves only, never another CA.
    for (const auto& [nid, value] : {std::pair<int, std::string>{NID_basic_constraints,
                                                                 "critical,CA:TRUE,pathlen:0"},
                                     {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                     {NID_subject_key_identifier, "hash"}}) {
        if (auto added = add_extension(context, certificate.get(), nid, value); !added)
            return added.take_error();
    }
    if (X509_sign(certificate.get(), key->get(), EVP_sha256()) == 0)
        return openssl_failure("cannot sign the CA certificate");
    return CaMaterial{std::move(*key), std::move(certificate)};
}

Result<std::shared_ptr<const LeafCertificate>> mint_leaf(EVP_PKEY* ca_key, X509* ca_certificate,
                                                         const LeafHost& host,
                                                         std::int64_t now_ms) {
    auto key = generate_key();
    if (!key) return key.take_error();
    const std::int64_t now_seconds = now_ms / 1000;

    CertificatePtr certificate(X509_new());
    NamePtr subject(X509_NAME_new());
    if (!certificate || !subject) return openssl_failure("cannot allocate a leaf certificate");
    if (auto filled = fill_common(certificate.get(), key->get(), now_seconds, kLeafLifetimeSeconds);
        !filled)
        return filled.take_error();
    // Clients match on the subjectAltName alone; the common name is for people reading
    // the certificate. A host too long for it gets an empty subject, which RFC 5280
    // allows only with a critical subjectAltName.
    const bool named = host.text.size() <= kMaxCommonName;
    if (named) {
        if (auto added = add_common_name(subject.get(), host.text); !added)
            return added.take_error();
    }
    if (X509_set_subject_name(certificate.get(), subject.get()) != 1 ||
        X509_set_issuer_name(certificate.get(), X509_get_subject_name(ca_certificate)) != 1)
        return openssl_failure("cannot name the leaf certificate for " + host.text);

    X509V3_CTX context{};
    X509V3_set_ctx(&context, ca_certificate, certificate.get(), nullptr, nullptr, 0);
    const std::string alternative_name =
        std::string(named ? "" : "critical,") + (host.is_address ? "IP:" : "DNS:") + host.text;
    for (const auto& [nid, value] :
         {std::pair<int, std::string>{NID_basic_constraints, "critical,CA:FALSE"},
          {NID_key_usage, "critical,digitalSignature"},
          {NID_ext_key_usage, "serverAuth"},
          {NID_subject_alt_name, alternative_name},
          {NID_authority_key_identifier, "keyid:always"}}) {
        if (auto added = add_extension(context, certificate.get(), nid, value); !added)
            return added.take_error();
    }
    if (X509_sign(certificate.get(), ca_key, EVP_sha256()) == 0)
        return openssl_failure("cannot sign the leaf certificate for " + host.text);

    auto certificate_pem = certificate_to_pem(certificate.get());
    if (!certificate_pem) return certificate_pem.take_error();
    auto key_pem = key_to_pem(key->get());
    if (!key_pem) return key_pem.take_error();
    return std::make_shared<const LeafCertificate>(
        LeafCertificate{std::move(*certificate_pem), std::move(*key_pem),
                        (now_seconds + kLeafLifetimeSeconds) * 1000});
}

bool something_at(const fs::path& path) {
    std::error_code ignored;
    // symlink_status: a dangling link still counts, and is refused when read.
    return fs::symlink_status(path, ignored).type() != fs::file_type::not_found;
}

// The key file is opened without following links and checked on the open descriptor,
// so what is checked is what is read.
Result<std::string> read_private_key_file(const fs::path& path) {
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid())
        return make_error(ErrorCode::internal,
                          "cannot open the CA key " + path.string() + ": " +
                              std::strerror(errno) +
                              (errno == ELOOP ? " (it is a symbolic link; replace it with the "
                                                "file itself)"
                                              : ""));
    // Whoever owns or has copied the key can mint certificates the sessions trust.
    const std::string fix = "remove " + path.parent_path().string() +
                            " to make a new CA (whoever owns or may have copied the key can mint "
                            "certificates your sessions trust)";
    if (auto mine = check_private(fd.get(), path, PrivateKind::file, {"the CA key", fix}); !mine)
        return mine.take_error();
    std::string contents;
    char buffer[4096];
    while (true) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            OPENSSL_cleanse(buffer, sizeof buffer);
            return make_error(ErrorCode::internal,
                              "cannot read the CA key " + path.string() + ": " + std::strerror(errno));
        }
        contents.append(buffer, static_cast<std::size_t>(n));
    }
    OPENSSL_cleanse(buffer, sizeof buffer);
    return contents;
}

Result<CaMaterial> load_ca(const fs::path& key_path, const fs::path& certificate_path,
                           std::int64_t now_seconds) {
    const std::string start_over =
        "remove " + key_path.parent_path().string() +
        " to make a new CA (sessions started before then must be restarted to trust it)";
    auto key_text = read_private_key_file(key_path);
    if (!key_text) return key_text.take_error();
    BioPtr key_bio(BIO_new_mem_buf(key_text->data(), static_cast<int>(key_text->size())));
    KeyPtr key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, refuse_passphrase, nullptr)
                       : nullptr);
    OPENSSL_cleanse(key_text->data(), key_text->size());
    if (!key)
        return make_error(ErrorCode::conflict,
                          "the CA key " + key_path.string() +
                              " is not an unencrypted PEM private key (OpenSSL: " +
                              openssl_reasons() + "); " + start_over);

    auto certificate_text = read_file(certificate_path);
    if (!certificate_text) return certificate_text.take_error();
    BioPtr certificate_bio(
        BIO_new_mem_buf(certificate_text->data(), static_cast<int>(certificate_text->size())));
    CertificatePtr certificate(
        certificate_bio ? PEM_read_bio_X509(certificate_bio.get(), nullptr, nullptr, nullptr)
                        : nullptr);
    if (!certificate)
        return make_error(ErrorCode::conflict,
                          "the CA certificate " + certificate_path.string() +
                              " is not a PEM certificate (OpenSSL: " + openssl_reasons() +
                              "); " + start_over);
    if (X509_check_private_key(certificate.get(), key.get()) != 1) {
        ERR_clear_error();
        return make_error(ErrorCode::conflict,
                          "the CA certificate " + certificate_path.string() +
                              " does not match the key " + key_path.string() +
                              "; restore the pair that belongs together, or " + start_over);
    }
    if (X509_check_ca(certificate.get()) == 0)
        return make_error(ErrorCode::conflict, "the certificate " + certificate_path.string() +
                                                   " is not a CA certificate; " + start_over);
    auto now = static_cast<std::time_t>(now_seconds);
    if (X509_cmp_time(X509_get0_notAfter(certificate.get()), &now) <= 0)
        return make_error(ErrorCode::conflict,
                          "the CA certificate " + certificate_path.string() + " has expired; " +
                              start_over);
    return CaMaterial{std::move(key), std::move(certificate)};
}

} // namespace

struct CertificateAuthority::Keys {
    KeyPtr key;
    CertificatePtr certificate;
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<Keys> keys, std::string certificate_pem,
                                           fs::path certificate_path, const Clock& clock)
    : keys_(std::move(keys)), certificate_pem_(std::move(certificate_pem)),
      certificate_path_(std::move(certificate_path)), clock_(clock) {}

CertificateAuthority::~CertificateAuthority() = default;

Result<std::unique_ptr<CertificateAuthority>> CertificateAuthority::load_or_create(
    const fs::path& dir, const Clock& clock) {
    if (auto made = ensure_private_dir(dir, 0700); !made) return made.take_error();
    const fs::path key_path = dir / "ca.key";
    const fs::path certificate_path = dir / "ca.crt";
    const std::int64_t now_seconds = clock.now_ms() / 1000;

    const bool have_key = something_at(key_path);
    const bool have_certificate = something_at(certificate_path);
    if (have_key != have_certificate) {
        const fs::path& present = have_key ? key_path : certificate_path;
        const fs::path& missing = have_key ? certificate_path : key_path;
        return make_error(ErrorCode::conflict,
                          "found " + present.string() + " but not " + missing.string() +
                              "; a CA needs both. Restore the missing file, or remove " +
                              dir.string() + " to make a new CA");
    }

    Result<CaMaterial> material = have_key ? load_ca(key_path, certificate_path, now_seconds)
                                           : make_ca(now_seconds);
    if (!material) return material.take_error();
    auto certificate_pem = certificate_to_pem(material->certificate.get());
    if (!certificate_pem) return certificate_pem.take_error();

    if (!have_key) {
        auto key_pem = key_to_pem(material->key.get());
        if (!key_pem) return key_pem.take_error();
        // The key first: a crash between the two leaves a key without a certificate,
        // which the next start reports rather than silently replacing.
        auto key_written = write_file_atomic(key_path, *key_pem, 0600);
        OPENSSL_cleanse(key_pem->data(), key_pem->size());
        if (!key_written) return key_written.take_error();
        if (auto written = write_file_atomic(certificate_path, *certificate_pem, 0644); !written)
            return written.take_error();
    }

    auto keys = std::make_unique<Keys>(
        Keys{std::move(material->key), std::move(material->certificate)});
    return std::unique_ptr<CertificateAuthority>(new CertificateAuthority(
        std::move(keys), std::move(*certificate_pem), certificate_path, clock));
}

Result<std::shared_ptr<const LeafCertificate>> CertificateAuthority::leaf_for(
    std::string_view host) {
    auto parsed = parse_leaf_host(host);
    if (!parsed) return parsed.take_error();

    const std::lock_guard lock(mutex_);
    const std::int64_t now_ms = clock_.now_ms();
    if (const auto found = leaves_.find(parsed->text);
        found != leaves_.end() && found->second->not_after_ms - now_ms >= kLeafRenewBeforeMs)
        return found->second;

    auto leaf = mint_leaf(keys_->key.get(), keys_->certificate.get(), *parsed, now_ms);
    if (!leaf) return leaf.take_error();
    if (leaves_.size() >= kMaxCachedLeaves && !leaves_.contains(parsed->text)) leaves_.clear();
    leaves_[parsed->text] = *leaf;
    return *leaf;
}

} // namespace handler::tls
