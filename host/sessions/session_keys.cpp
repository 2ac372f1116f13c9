#include "sessions/session_keys.hpp"

#include "secrets/secret_store.hpp"
#include "store/store.hpp"
#include "store/validation.hpp"

#include <spdlog/spdlog.h>

#include <boost/url/parse.hpp>

#include <algorithm>

namespace handler::sessions {

Result<store::Account> account_for(store::Store& store, std::string_view kind,
                                   const std::optional<store::Agent>& agent,
                                   const store::Project& project) {
    const std::string wanted(kind);
    auto accounts = store.list_accounts();
    if (!accounts) return accounts.take_error();
    if (agent && agent->account) {
        const auto account = std::find_if(accounts->begin(), accounts->end(),
                                          [&](const store::Account& each) { return each.name == *agent->account; });
        if (account == accounts->end())
            return make_error(ErrorCode::not_found, "agent '" + agent->name + "' runs on account '" +
                                                        *agent->account + "', which no longer exists");
        if (account->kind != wanted)
            return make_error(ErrorCode::invalid_argument,
                              "agent '" + agent->name + "' runs on account '" + account->name + "', a " +
                                  account->kind + " account, but its harness needs a " + wanted +
                                  " key; choose another with `handler agent edit " + agent->name +
                                  " --account NAME`");
        return std::move(*account);
    }
    std::vector<store::Account> usable;
    for (auto& account : *accounts)
        if (account.kind == wanted && account.context == project.context)
            usable.push_back(std::move(account));
    if (usable.size() == 1) return std::move(usable.front());
    if (usable.empty())
        return make_error(ErrorCode::not_found,
                          "the harness needs a " + wanted + " key and no account holds one; add it with "
                          "`handler account add NAME --kind " + wanted + " --api-key-stdin`");
    std::string names;
    for (const auto& account : usable) names += (names.empty() ? "" : ", ") + account.name;
    return make_error(ErrorCode::invalid_argument,
                      "several accounts hold a " + wanted + " key (" + names +
                          "); give the agent one with `handler agent edit AGENT --account NAME`");
}

Result<std::map<std::string, std::string>> make_stand_ins(
    store::Store& store, const secrets::SecretStore& secrets, const std::string& session_id,
    const std::vector<std::string>& kinds, const std::optional<store::Agent>& agent,
    const store::Project& project, const secrets::RandomBytes& random) {
    std::map<std::string, std::string> stand_ins;
    // A resumed conversation's: the stand-ins it was given stay (its harness may have
    // written them down, and the proxy knows them).
    auto given = store.session_secrets(session_id);
    if (!given) return given.take_error();
    for (const auto& secret : *given)
        if (!secret.stand_in.empty()) stand_ins[secret.kind] = secret.stand_in;
    for (const auto& kind : kinds) {
        if (stand_ins.contains(kind)) continue;
        if (!secrets::provider_for(kind))
            return make_error(ErrorCode::invalid_argument,
                              "the harness asks for a " + kind + " key, which Handler cannot put into requests");
        auto account = account_for(store, kind, agent, project);
        if (!account) return account.take_error();
        auto real = secrets.get(account->id);
        if (!real) return real.take_error();
        if (!*real)
            return make_error(ErrorCode::not_found, "account '" + account->name +
                                                        "' has no key yet; store it with `handler account set-key " +
                                                        account->name + "`");
        store::SessionSecret secret{session_id, kind, account->id, secrets::make_stand_in(**real, random)};
        if (auto added = store.add_session_secret(secret); !added) return added.take_error();
        stand_ins[kind] = std::move(secret.stand_in);
    }
    return stand_ins;
}

Result<LocalServer> local_server(const store::Account& account) {
    if (!secrets::is_local_server(account.kind) || !account.base_url)
        return make_error(ErrorCode::invalid_argument, "account '" + account.name + "' has no local server URL");
    auto url = boost::urls::parse_absolute_uri(*account.base_url);
    if (!url || !url->has_authority() || (url->scheme() != "http" && url->scheme() != "https"))
        return make_error(ErrorCode::invalid_argument,
                          "account '" + account.name + "': '" + *account.base_url + "' is not an http(s) URL");
    LocalServer server;
    const bool secure = url->scheme() == "https";
    server.port = url->has_port() ? url->port_number() : (secure ? 443 : 80);
    std::string host(url->host_type() == boost::urls::host_type::ipv6 ? url->host_ipv6_address().to_string()
                                                                     : std::string(url->host()));
    std::optional<network::Address> address = network::parse_address(host == "localhost" ? "127.0.0.1" : host);
    static const auto v6_loopback = *network::parse_address("::1");
    const bool loopback = address && (address->v6 ? address->bytes == v6_loopback.bytes : address->bytes[0] == 127);
    if (loopback) {
        server.name = account.kind + kLocalServerDomain;
        server.pinned = address;
    } else {
        server.name = host;
    }
    const std::string authority = (server.name.find(':') != std::string::npos ? "[" + server.name + "]" : server.name) +
                                  ":" + std::to_string(server.port);
    server.rule = authority;
    server.container_url = std::string(url->scheme()) + "://" + authority + std::string(url->encoded_path());
    return server;
}

std::vector<LocalServer> SessionKeys::local_servers() {
    std::vector<LocalServer> servers;
    for (const auto& secret : rows()) {
        if (!secrets::is_local_server(secret.kind)) continue;
        auto account = store_.get_account(secret.account_id);
        if (!account) continue;
        if (auto server = local_server(*account)) servers.push_back(std::move(*server));
    }
    return servers;
}

std::optional<network::HostPort> SessionResolver::pinned_endpoint(const std::string& host,
                                                                  std::uint16_t port) const {
    for (const auto& server : keys_.local_servers())
        if (server.pinned && server.name == host && server.port == port)
            return network::HostPort{network::to_string(*server.pinned), port};
    return base_.pinned_endpoint(host, port);
}

const std::vector<store::SessionSecret>& SessionKeys::rows() {
    // Written once, before the session's proxy takes its first connection, and never
    // changed: read them once rather than at every connection.
    if (!rows_) {
        auto secrets = store_.session_secrets(session_id_);
        if (!secrets) {
            spdlog::error("session {}: cannot read its keys: {}", session_id_, secrets.error().message);
            static const std::vector<store::SessionSecret> kNone;
            return kNone;
        }
        rows_ = std::move(*secrets);
    }
    return *rows_;
}

std::vector<network::SecretBinding> SessionKeys::bindings() {
    std::vector<network::SecretBinding> bindings;
    for (const auto& secret : rows()) {
        const auto* provider = secrets::provider_for(secret.kind);
        if (!provider) continue;
        network::SecretBinding binding;
        binding.name = secret.kind;
        binding.stand_in = secret.stand_in;
        binding.hosts.assign(provider->hosts.begin(), provider->hosts.end());
        binding.header = provider->header;
        binding.value_prefix = provider->value_prefix;
        binding.account_id = secret.account_id;
        bindings.push_back(std::move(binding));
    }
    return bindings;
}

Result<std::string> SessionKeys::real_value(const network::SecretBinding& binding) {
    auto value = secrets_.get(binding.account_id);
    if (!value) return value.take_error();
    if (!*value)
        return make_error(ErrorCode::not_found,
                          "the account's key was removed; store one with `handler account set-key`");
    return std::move(**value);
}

} // namespace handler::sessions
