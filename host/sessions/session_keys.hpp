// A session's keys (docs/network.md, "Keys"). When a harness asks for a key of some kind
// (LaunchSpec::secret_env), the session gets a stand-in of the same shape, recorded with
// the session, and the account it stands for; the container sees only the stand-in.
// SessionKeys then tells the session's egress proxy which stand-ins exist, where each
// may go, and reads the real value from the secret store when a request needs it.
#pragma once

#include "core/result.hpp"
#include "network/egress_proxy.hpp"
#include "network/policy.hpp"
#include "network/secret_binding.hpp"
#include "secrets/account_kinds.hpp"
#include "store/records.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::store {
class Store;
}
namespace handler::secrets {
class SecretStore;
}

namespace handler::sessions {

// The account whose `kind` key a session uses: its agent's account when it has one (which
// must be of that kind), else the only account of that kind the project may use: one of
// the project's context, untagged counting as a context of its own (docs/domain-model.md,
// "Contexts"). The errors say which command fixes it.
Result<store::Account> account_for(store::Store& store, std::string_view kind,
                                   const std::optional<store::Agent>& agent,
                                   const store::Project& project);

// Makes and records a stand-in for each kind in `kinds`; returns them by kind. A kind
// Handler cannot inject, or an account without a stored key, is refused.
Result<std::map<std::string, std::string>> make_stand_ins(
    store::Store& store, const secrets::SecretStore& secrets, const std::string& session_id,
    const std::vector<std::string>& kinds, const std::optional<store::Agent>& agent,
    const store::Project& project, const secrets::RandomBytes& random);

// A local model server (an account of kind llama-cpp or ollama) as a session reaches it.
// The container's loopback is not the host's, so a server on the host's loopback gets a
// name of its own, "<kind>.handler.internal", which the session's proxy leads back to
// it; any other host stays as it is. Either way an exact rule lets the session in.
struct LocalServer {
    std::string container_url; // what the harness is given
    std::string rule;          // host:port, exact, for the session's model hosts
    std::string name;          // the host part of container_url
    std::uint16_t port = 0;
    std::optional<network::Address> pinned; // where `name` leads (a renamed loopback)
};
inline constexpr const char* kLocalServerDomain = ".handler.internal";
Result<LocalServer> local_server(const store::Account& account);

class SessionKeys final : public network::SecretSource {
public:
    // Both must outlive this.
    SessionKeys(store::Store& store, const secrets::SecretStore& secrets, std::string session_id)
        : store_(store), secrets_(secrets), session_id_(std::move(session_id)) {}

    std::vector<network::SecretBinding> bindings() override;
    Result<std::string> real_value(const network::SecretBinding& binding) override;
    // The renamed local servers of the session: name -> the host's loopback address.
    std::vector<LocalServer> local_servers();

private:
    const std::vector<store::SessionSecret>& rows();

    store::Store& store_;
    const secrets::SecretStore& secrets_;
    const std::string session_id_;
    std::optional<std::vector<store::SessionSecret>> rows_;
};

// The proxy's resolver for one session: the daemon's, plus the session's renamed local
// servers as endpoints, name *and* port: a pinned name alone would let any port of the
// host's loopback through where the mode passes every name (open, learn), handlerd's
// API port among them. Both must outlive it.
class SessionResolver final : public network::Resolver {
public:
    SessionResolver(network::Resolver& base, SessionKeys& keys) : base_(base), keys_(keys) {}
    void resolve(const std::string& host, Done done) override { base_.resolve(host, std::move(done)); }
    bool pinned(const std::string& host) const override { return base_.pinned(host); }
    std::optional<network::HostPort> pinned_endpoint(const std::string& host, std::uint16_t port) const override;

private:
    network::Resolver& base_;
    SessionKeys& keys_;
};

} // namespace handler::sessions
