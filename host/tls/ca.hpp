// The per-install certificate authority the egress proxy uses to terminate TLS for the
// hosts that have a bound secret, so it can swap a container's stand-in API key for the
// real one. Containers trust this CA's certificate and nothing signed by it leaves the
// machine; the key stays in one private file.
#pragma once

#include "core/clock.hpp"
#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace handler::tls {

// What a TLS server needs for one host, as PEM so the caller can hand it to any
// SSL_CTX without sharing OpenSSL objects across threads.
struct LeafCertificate {
    std::string certificate_pem; // the leaf alone: clients already hold the CA
    std::string private_key_pem; // PKCS#8 ("BEGIN PRIVATE KEY")
    std::int64_t not_after_ms = 0;
};

class CertificateAuthority {
public:
    // Loads the CA from `dir` (ca.key 0600, ca.crt 0644) or, when neither file exists,
    // creates one there (`dir` itself is made private, 0700). A key file other users
    // can read or write, or that is not ours, is refused rather than fixed: something
    // already went wrong and the person should look. So is a certificate that does not
    // belong to the key. `clock` must outlive the CA.
    static Result<std::unique_ptr<CertificateAuthority>> load_or_create(
        const std::filesystem::path& dir, const Clock& clock);

    ~CertificateAuthority();
    CertificateAuthority(const CertificateAuthority&) = delete;
    CertificateAuthority& operator=(const CertificateAuthority&) = delete;

    // What containers must trust.
    const std::string& certificate_pem() const { return certificate_pem_; }
    const std::filesystem::path& certificate_path() const { return certificate_path_; }

    // A leaf for `host` (a lower-case DNS name, or an IPv4/IPv6 literal without brackets,
    // which gets an IP subjectAltName), valid from an hour ago for 30 days: Go and Node
    // refuse leaves over 398 days, and short ones limit what a leaked key is worth.
    // Leaves are cached and minted again once they have less than 7 days left, so a
    // long-running daemon never serves an expired one. `host` comes from a proxy
    // request, so anything else is refused. Safe to call from several threads.
    Result<std::shared_ptr<const LeafCertificate>> leaf_for(std::string_view host);

private:
    struct Keys; // the OpenSSL key and certificate, kept out of this header

    CertificateAuthority(std::unique_ptr<Keys> keys, std::string certificate_pem,
                         std::filesystem::path certificate_path, const Clock& clock);

    std::unique_ptr<Keys> keys_;
    std::string certificate_pem_;
    std::filesystem::path certificate_path_;
    const Clock& clock_;

    std::mutex mutex_; // guards leaves_ and signing with keys_
    std::unordered_map<std::string, std::shared_ptr<const LeafCertificate>> leaves_;
};

} // namespace handler::tls
