// handlerd's state in SQLite (docs/domain-model.md): contexts, projects and agents with
// their allowed hosts, accounts, sessions, and per-plugin storage.
//
// Every write method is one transaction, checks its rules inside it and either commits
// everything or nothing: a request that fails, or a handlerd killed half-way, never
// leaves half a record (an agent without some of its hosts). Reads of more than one
// table run in a read transaction so they see one consistent state.
//
// Thread-safe: every public method holds one mutex for its whole duration, since
// plugins reach the PluginStorage side from threads of their own (host_services.hpp),
// and a transaction must never interleave with another thread's statements on the
// one connection.
#pragma once

#include "core/clock.hpp"
#include "core/result.hpp"
#include "plugins/plugin_storage.hpp"
#include "store/records.hpp"
#include "store/sqlite.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::store {

struct StoreOptions {
    // How long a statement waits for a lock held by another connection before giving up
    // with `unavailable`. Only a second process (a CLI reading the file, a second
    // handlerd) ever holds one.
    int busy_timeout_ms = 5000;
    // Source of randomness for session ids; empty means a random_device-seeded engine.
    // Tests set it to force collisions.
    std::function<std::uint64_t()> random;
};

class Store final : public plugins::PluginStorage {
public:
    // Opens or creates the database at `file` (its folder is made, mode 0700; the file
    // gets mode 0600) and applies pending migrations. `clock` must outlive the store.
    static Result<std::unique_ptr<Store>> open(const std::filesystem::path& file,
                                               const Clock& clock, StoreOptions options = {});
    // A private database in memory, for tests.
    static Result<std::unique_ptr<Store>> open_in_memory(const Clock& clock,
                                                         StoreOptions options = {});

    int schema_version() const { return schema_version_; }

    // Contexts. Names are unique ignoring case; lookups by name ignore case too.
    Result<Context> create_context(std::string_view name);
    Result<std::vector<Context>> list_contexts();
    Result<Context> get_context(std::int64_t id);
    Result<Context> rename_context(std::int64_t id, std::string_view name);
    // Refused (conflict) while a project or account uses it.
    Result<void> delete_context(std::int64_t id);

    // Projects, written with their allowed hosts in one transaction. `path` must already
    // be canonical (the API layer resolves it).
    //
    // The writes of projects and agents, when they fail over one input field, say which in
    // `*field` (as the API names it: "name", "allowed_hosts[1]", "account"), so that a form
    // puts the message under it (docs/api.md, "Errors"); it stays empty otherwise.
    Result<Project> create_project(const NewProject& project, std::string* field = nullptr);
    Result<std::vector<Project>> list_projects();
    Result<Project> get_project(std::int64_t id);
    Result<std::optional<Project>> find_project_by_path(std::string_view path);
    // The registered project whose folder is `path` or contains it; the deepest wins.
    Result<std::optional<Project>> find_project_containing(std::string_view path);
    // A context change is refused if one of its agents uses an account of another context.
    // `allowed_hosts` replaces the whole list.
    Result<Project> update_project(std::int64_t id, const ProjectChanges& changes,
                                   std::string* field = nullptr);
    // Deletes its agents (and their hosts), its own hosts and its sessions with it.
    Result<void> delete_project(std::int64_t id);

    // Accounts. A local kind (llama-cpp, ollama) always has a base_url: the one given,
    // normalized, or the kind's default; other kinds never have one
    // (validation.hpp, account_base_url).
    Result<Account> create_account(const NewAccount& account);
    Result<std::vector<Account>> list_accounts();
    Result<Account> get_account(std::int64_t id);
    // A change of kind replaces base_url with the new kind's default (or none) unless
    // changes.base_url gives one.
    Result<Account> update_account(std::int64_t id, const AccountChanges& changes);
    // Refused (conflict) while an agent uses it.
    Result<void> delete_account(std::int64_t id);

    // Agents, written with their allowed hosts in one transaction.
    Result<Agent> create_agent(const NewAgent& agent, std::string* field = nullptr);
    Result<std::vector<Agent>> list_agents(const AgentFilter& filter = {});
    Result<Agent> get_agent(std::int64_t id);
    // Empty changes return the agent untouched (updated_at unchanged).
    Result<Agent> update_agent(std::int64_t id, const AgentChanges& changes, std::string* field = nullptr);
    Result<void> delete_agent(std::int64_t id);

    // Sessions. create_session records the session in state `starting`, before anything
    // is started, and picks a fresh id like "s_7f3a2c".
    Result<Session> create_session(const NewSession& session);
    Result<std::vector<Session>> list_sessions();
    Result<Session> get_session(std::string_view id);
    Result<Session> update_session(std::string_view id, const SessionChanges& changes);
    Result<void> delete_session(std::string_view id);

    // The egress proxy's decisions (deleted with their session), written in bulk, in one
    // transaction: `added` with the ids the caller gave them (above
    // last_network_entry_id(), in order), then `finished`. The proxy decides thousands of
    // connections a second; a transaction per decision cost more than the proxy itself.
    Result<std::int64_t> last_network_entry_id();
    // `origins` last: who made a connection (one row each; a second one for the same
    // connection replaces the first).
    Result<void> write_network_batch(const std::vector<NetworkEntry>& added,
                                     const std::vector<NetworkFinish>& finished,
                                     const std::vector<NetworkOrigin>& origins = {});
    // Entries after `after_id`, oldest first, at most `limit`, each with its
    // connection's origin when that is known.
    Result<std::vector<NetworkEntry>> network_log(std::string_view session_id,
                                                  std::int64_t after_id, std::int64_t limit);
    Result<std::vector<LearnedHost>> learned_hosts(std::string_view session_id);
    // A session's events (deleted with it), appended in one transaction; each gets the
    // next seq of its session, which is returned in the records.
    Result<std::vector<SessionEvent>> add_session_events(std::string_view session_id, TimeMs at,
                                                         const std::vector<std::pair<std::string, std::string>>& events);
    // The bytes of payload a session's events hold.
    Result<std::int64_t> session_events_bytes(std::string_view session_id);
    // Events with seq > `after`, oldest first, at most `limit`.
    Result<std::vector<SessionEvent>> session_events(std::string_view session_id, std::int64_t after,
                                                     std::int64_t limit);
    // The `limit` events just before seq `before` (all of the last ones for
    // kSessionEventsEnd), oldest first: a client that opens a long conversation at its end
    // and pages back from there. One walk of the primary key (session_id, seq) backwards.
    static constexpr std::int64_t kSessionEventsEnd = std::numeric_limits<std::int64_t>::max();
    Result<std::vector<SessionEvent>> session_events_before(std::string_view session_id, std::int64_t before,
                                                            std::int64_t limit);
    // The stand-ins a session holds (written once, at its start).
    Result<void> add_session_secret(const SessionSecret& secret);
    Result<std::vector<SessionSecret>> session_secrets(std::string_view session_id);

    // plugins::PluginStorage. Keys up to kMaxPluginKeyBytes, values up to
    // kMaxPluginValueBytes of any bytes.
    Result<std::optional<std::string>> get(std::string_view plugin_id,
                                           std::string_view key) override;
    Result<void> set(std::string_view plugin_id, std::string_view key,
                     std::string_view value) override;
    Result<void> remove(std::string_view plugin_id, std::string_view key) override;

    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    // An account may serve a project only in the same context, untagged counting as a
    // context of its own (docs/domain-model.md, "Contexts"); conflict otherwise. Also
    // what the session service checks at start.
    static Result<void> check_same_context(const Account& account, const Project& project);

private:
    Store(sqlite::Database db, const Clock& clock, StoreOptions options);
    static Result<std::unique_ptr<Store>> finish_open(sqlite::Database db, const Clock& clock,
                                                      StoreOptions options);

    // Runs `body` in a transaction and commits if it succeeded.
    template <class Body>
    auto in_transaction(sqlite::Transaction::Kind kind, Body&& body) -> decltype(body());

    // Lookups used inside transactions.
    Result<std::optional<std::int64_t>> context_id(const std::optional<std::string>& name);
    Result<Context> load_context(std::int64_t id);
    Result<Project> load_project(std::int64_t id);
    // Runs a query of kProjectColumns and reads each project's allowed hosts too.
    Result<std::vector<Project>> query_projects(Result<sqlite::Statement> statement);
    Result<std::optional<Project>> first_project(Result<sqlite::Statement> statement);
    Result<Account> load_account(std::int64_t id);
    Result<std::optional<Account>> account_by_name(std::string_view name);
    Result<Agent> load_agent(std::int64_t id);
    Result<std::vector<Agent>> query_agents(const AgentFilter& filter,
                                             std::optional<std::int64_t> id);
    Result<Session> load_session(std::string_view id);
    std::string new_session_id();

    sqlite::Database db_;
    const Clock* clock_;
    StoreOptions options_;
    int schema_version_ = 0;
    std::mutex mutex_;
};

} // namespace handler::store
