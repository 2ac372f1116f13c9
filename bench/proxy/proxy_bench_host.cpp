// proxy_bench_host: handlerd's egress proxy alone, for bench/proxy.sh. One
// network::EgressProxy on a unix socket, with what a session with one key has: a
// filtered policy, the per-install CA and TLS contexts for interception, and a key bound
// to one host. What it leaves out is the daemon around it: the audit sink only counts
// (handlerd writes SQLite), and the key source answers from memory (handlerd reads the
// session's keys from SQLite and the key file per request).
//
//   proxy_bench_host --socket PATH --ca-dir DIR --bound-host NAME --stand-in S
//                    --real-key K [--allow RULE]...
//
// NAME is pinned to 127.0.0.1, as the [network] resolve setting does, and allowed by an
// exact rule; so is each --allow. The upstream's TLS is verified against OpenSSL's
// default paths: set SSL_CERT_FILE to the benchmark's own CA. Stops at SIGTERM/SIGINT
// and prints the audit counts.
#include "core/clock.hpp"
#include "network/egress_proxy.hpp"
#include "network/policy.hpp"
#include "network/secret_binding.hpp"
#include "secrets/secret_store.hpp"
#include "tls/ca.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace handler;

class CountingAudit final : public network::AuditSink {
public:
    std::int64_t record(const network::AuditEntry& entry) override {
        ++recorded;
        if (entry.verdict == network::Verdict::deny) {
            if (denied++ == 0) std::cerr << "proxy_bench_host: first refusal: " << entry.reason << "\n";
        }
        if (!entry.secret.empty()) ++injected;
        return ++next_id_;
    }
    void finish(std::int64_t, std::uint64_t, std::uint64_t, const std::string&) override { ++finished; }

    std::uint64_t recorded = 0;
    std::uint64_t denied = 0;
    std::uint64_t injected = 0;
    std::uint64_t finished = 0;

private:
    std::int64_t next_id_ = 0;
};

// One binding, fixed; the real value from the key store (or from memory).
class BenchSecrets final : public network::SecretSource {
public:
    BenchSecrets(network::SecretBinding binding, const secrets::SecretStore* store, std::string real)
        : binding_(std::move(binding)), store_(store), real_(std::move(real)) {}
    std::vector<network::SecretBinding> bindings() override { return {binding_}; }
    Result<std::string> real_value(const network::SecretBinding& binding) override {
        if (!store_) return real_;
        auto value = store_->get(binding.account_id);
        if (!value) return value.take_error();
        if (!*value) return make_error(ErrorCode::not_found, "no key stored for the benchmark's account");
        return std::move(**value);
    }

private:
    network::SecretBinding binding_;
    const secrets::SecretStore* store_;
    std::string real_;
};

struct Options {
    std::string socket_path;
    std::string ca_dir;
    std::string bound_host;
    std::string stand_in;
    std::string real_key;
    std::vector<std::string> allow;
    bool key_in_memory = false;
};

bool parse_options(int argc, char** argv, Options& options) {
    if (argc % 2 == 0) return false;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view name = argv[i];
        std::string value = argv[i + 1];
        if (name == "--socket") options.socket_path = std::move(value);
        else if (name == "--ca-dir") options.ca_dir = std::move(value);
        else if (name == "--bound-host") options.bound_host = std::move(value);
        else if (name == "--stand-in") options.stand_in = std::move(value);
        else if (name == "--real-key") options.real_key = std::move(value);
        else if (name == "--allow") options.allow.push_back(std::move(value));
        else if (name == "--key-in-memory") options.key_in_memory = value == "1";
        else return false;
    }
    return !options.socket_path.empty() && !options.ca_dir.empty() && !options.bound_host.empty() &&
           !options.stand_in.empty() && !options.real_key.empty();
}

int fail(const std::string& message) {
    std::cerr << "proxy_bench_host: " << message << "\n";
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    if (!parse_options(argc, argv, options)) {
        std::cerr << "usage: proxy_bench_host --socket PATH --ca-dir DIR --bound-host NAME --stand-in S"
                     " --real-key K [--allow RULE]... [--key-in-memory 1]\n";
        return 2;
    }
    spdlog::set_level(spdlog::level::warn);

    network::Policy policy;
    policy.mode = network::Mode::filtered;
    options.allow.push_back(options.bound_host);
    for (const auto& text : options.allow) {
        auto rule = network::parse_rule(text);
        if (!rule) return fail("bad --allow '" + text + "': " + rule.error().message);
        policy.allow.push_back(std::move(*rule));
    }

    SystemClock clock;
    auto ca = tls::CertificateAuthority::load_or_create(options.ca_dir, clock);
    if (!ca) return fail(ca.error().message);
    auto tls_contexts = network::TlsContexts::create(**ca);
    if (!tls_contexts) return fail(tls_contexts.error().message);

    network::SecretBinding binding;
    binding.name = "anthropic-api-key";
    binding.stand_in = options.stand_in;
    binding.hosts = {options.bound_host};
    binding.header = "x-api-key";
    binding.account_id = 1;
    secrets::SecretStore key_store(std::filesystem::path(options.ca_dir).parent_path() / "keys");
    if (!options.key_in_memory)
        if (auto stored = key_store.put(binding.account_id, options.real_key); !stored)
            return fail(stored.error().message);
    BenchSecrets secrets(std::move(binding), options.key_in_memory ? nullptr : &key_store, options.real_key);
    CountingAudit audit;

    boost::asio::io_context io(1);
    auto resolver = network::make_system_resolver(io, {{options.bound_host, {*network::parse_address("127.0.0.1")}}});
    network::ProxyOptions proxy_options;
    proxy_options.socket_path = options.socket_path;
    proxy_options.session_id = "bench";
    network::EgressProxy proxy(
        io, proxy_options, [&policy] { return policy; },
        network::ProxyServices{resolver.get(), &audit, &secrets, tls_contexts->get()},
        [&clock] { return clock.now_ms(); }, network::own_addresses());
    if (auto started = proxy.start(); !started) return fail(started.error().message);

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) {
        proxy.stop();
        io.stop();
    });
    io.run();
    std::cout << "proxy_bench_host: decisions=" << audit.recorded << " denied=" << audit.denied
              << " injected=" << audit.injected << " finished=" << audit.finished << std::endl;
    return 0;
}
