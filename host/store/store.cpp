#include "store/store.hpp"

#include "core/paths.hpp"
#include "store/migrations.hpp"
#include "store/validation.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <random>
#include <sys/stat.h>

namespace handler::store {
namespace fs = std::filesystem;
using sqlite::Transaction;

std::string_view to_string(SessionState state) {
    switch (state) {
    case SessionState::starting: return "starting";
    case SessionState::running: return "running";
    case SessionState::exited: return "exited";
    case SessionState::failed: return "failed";
    case SessionState::lost: return "lost";
    }
    return "lost";
}

std::optional<SessionState> parse_session_state(std::string_view text) {
    for (auto state : {SessionState::starting, SessionState::running, SessionState::exited,
                       SessionState::failed, SessionState::lost})
        if (text == to_string(state)) return state;
    return std::nullopt;
}

namespace {

constexpr std::string_view kProjectColumns =
    "SELECT p.id, p.name, p.path, c.name, p.created_at "
    "FROM projects p LEFT JOIN contexts c ON c.id = p.context_id ";
constexpr std::string_view kAccountColumns =
    "SELECT a.id, a.name, a.kind, c.name, a.base_url, a.created_at "
    "FROM accounts a LEFT JOIN contexts c ON c.id = a.context_id ";
constexpr std::string_view kAgentColumns =
    "SELECT g.id, g.project_id, g.name, g.harness, g.goal, g.instructions, a.name, "
    "g.network_mode, g.created_at, g.updated_at, g.addons, g.model, g.thinking "
    "FROM agents g LEFT JOIN accounts a ON a.id = g.account_id ";
constexpr std::string_view kSessionColumns =
    "SELECT id, agent_id, project_id, harness, state, exit_code, created_at, updated_at, "
    "container_id, mode, tty, image, message, network_mode, learn_until, model_hosts, addon_hosts, "
    "model, thinking, mcp_servers, title, limits "
    "FROM sessions ";

// Lists kept in one column, an entry per line (rules and plugin ids have no line breaks).
std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const auto end = std::min(text.find('\n', start), text.size());
        if (end > start) lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string joined;
    for (const auto& line : lines) joined += line + "\n";
    return joined;
}

std::string sql(std::string_view columns, std::string_view rest) {
    return std::string(columns) + std::string(rest);
}

// Without its allowed hosts: query_projects() reads those.
Project read_project(const sqlite::Statement& row) {
    return Project{row.integer(0), row.text(1), row.text(2), row.optional_text(3), {},
                   row.integer(4)};
}

Account read_account(const sqlite::Statement& row) {
    return Account{row.integer(0),       row.text(1),          row.text(2),
                   row.optional_text(3), row.optional_text(4), row.integer(5)};
}

Agent read_agent(const sqlite::Statement& row) {
    Agent agent;
    agent.id = row.integer(0);
    agent.project_id = row.integer(1);
    agent.name = row.text(2);
    agent.harness = row.text(3);
    agent.goal = row.text(4);
    agent.instructions = row.text(5);
    agent.account = row.optional_text(6);
    // The CHECK constraint keeps this column to the three known values.
    agent.network_mode = network::parse_mode(row.text(7), network::ModeHolder::agent).value_or(NetworkMode::none);
    agent.created_at = row.integer(8);
    agent.updated_at = row.integer(9);
    agent.addons = split_lines(row.text(10));
    agent.model = row.optional_text(11);
    agent.thinking = row.optional_text(12);
    return agent;
}

Session read_session(const sqlite::Statement& row) {
    Session session;
    session.id = row.text(0);
    session.agent_id = row.optional_integer(1);
    session.project_id = row.integer(2);
    session.harness = row.text(3);
    // A state written by a newer handlerd reads as lost rather than failing the list.
    session.state = parse_session_state(row.text(4)).value_or(SessionState::lost);
    session.exit_code = row.optional_integer(5);
    session.created_at = row.integer(6);
    session.updated_at = row.integer(7);
    session.container_id = row.optional_text(8);
    session.mode = row.text(9);
    session.tty = row.integer(10) != 0;
    session.image = row.text(11);
    session.message = row.optional_text(12);
    if (const auto mode = row.optional_text(13)) session.network_mode = network::parse_mode(*mode);
    session.learn_until = row.optional_integer(14);
    session.model_hosts = split_lines(row.text(15));
    session.addon_hosts = split_lines(row.text(16));
    session.model = row.optional_text(17);
    session.thinking = row.optional_text(18);
    session.mcp_servers = row.text(19);
    session.title = row.optional_text(20);
    session.limits = row.text(21);
    return session;
}

// Runs a query and reads every row with `read`.
template <class Read>
auto collect(Result<sqlite::Statement> statement, Read read)
    -> Result<std::vector<decltype(read(*statement))>> {
    if (!statement) return statement.take_error();
    std::vector<decltype(read(*statement))> rows;
    for (;;) {
        auto row = statement->step();
        if (!row) return row.take_error();
        if (!*row) return rows;
        rows.push_back(read(*statement));
    }
}

// The first row, or std::nullopt.
template <class Read>
auto first(Result<sqlite::Statement> statement, Read read)
    -> Result<std::optional<decltype(read(*statement))>> {
    if (!statement) return statement.take_error();
    auto row = statement->step();
    if (!row) return row.take_error();
    if (!*row) return std::optional<decltype(read(*statement))>();
    return std::optional(read(*statement));
}

// `error`, saying in `*out` (when given, and not said already) that it concerns `field`.
Error in_field(std::string* out, Error error, std::string field) {
    if (out != nullptr && out->empty()) *out = std::move(field);
    return error;
}

// Which entry of a host list normalize_allowed_hosts refused ("allowed_hosts[2]"): the first
// that is not a rule or repeats an earlier one; the whole list when it is too long.
std::string host_list_field(const std::vector<std::string>& hosts) {
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < hosts.size() && hosts.size() <= kMaxAllowedHosts; ++i) {
        const std::string field = "allowed_hosts[" + std::to_string(i) + "]";
        auto host = normalize_host_pattern(hosts[i], field);
        if (!host || std::find(seen.begin(), seen.end(), *host) != seen.end()) return field;
        seen.push_back(std::move(*host));
    }
    return "allowed_hosts";
}

// The same for check_addons: the first id that is not one or repeats.
std::string addon_list_field(const std::vector<std::string>& addons) {
    for (std::size_t i = 0; i < addons.size(); ++i)
        if (!check_harness(addons[i]) ||
            std::find(addons.begin(), addons.begin() + static_cast<std::ptrdiff_t>(i), addons[i]) !=
                addons.begin() + static_cast<std::ptrdiff_t>(i))
            return "addons[" + std::to_string(i) + "]";
    return "addons";
}

Error not_found(std::string message) {
    return make_error(ErrorCode::not_found, std::move(message));
}

Error conflict(std::string message) {
    return make_error(ErrorCode::conflict, std::move(message));
}

std::string context_phrase(const std::optional<std::string>& context) {
    return context ? "context '" + *context + "'" : "no context";
}

// A zero-filled NetworkMode is no mode at all (STYLE.md: zero is never valid).
Result<void> check_network_mode(NetworkMode mode) {
    if (network::may_hold(network::ModeHolder::agent, mode)) return {};
    return make_error(ErrorCode::invalid_argument,
                      "network_mode must be " + network::mode_list(network::ModeHolder::agent));
}

std::int64_t count(sqlite::Database& db, std::string_view query, std::int64_t id) {
    auto statement = db.prepare(query, id);
    if (!statement || !statement->step().ok()) return 0;
    return statement->integer(0);
}

// Where one kind of owner keeps its allowed hosts. Agents and projects share the shape
// (owner, position, host), and so one reader and one writer.
struct HostsTable {
    std::string_view table;
    std::string_view owner_column;
};
constexpr HostsTable kAgentHosts{"agent_allowed_hosts", "agent_id"};
constexpr HostsTable kProjectHosts{"project_allowed_hosts", "project_id"};

// Fills each owner's allowed_hosts, in their stored order.
template <class Owner>
Result<void> read_hosts(sqlite::Database& db, const HostsTable& hosts, std::vector<Owner>& owners) {
    auto statement = db.prepare("SELECT host FROM " + std::string(hosts.table) + " WHERE " +
                                std::string(hosts.owner_column) + " = ?1 ORDER BY position");
    if (!statement) return statement.take_error();
    for (auto& owner : owners) {
        statement->reset();
        statement->bind(1, owner.id);
        for (;;) {
            auto row = statement->step();
            if (!row) return row.take_error();
            if (!*row) break;
            owner.allowed_hosts.push_back(statement->text(0));
        }
    }
    return {};
}

// Replaces an owner's list with `list` (already normalized). Runs inside the caller's
// transaction, so the owner's row and its hosts are written together or not at all.
Result<void> write_hosts(sqlite::Database& db, const HostsTable& hosts, std::int64_t owner_id,
                         const std::vector<std::string>& list) {
    const std::string table(hosts.table);
    const std::string owner(hosts.owner_column);
    auto clear = db.prepare("DELETE FROM " + table + " WHERE " + owner + " = ?1", owner_id);
    if (!clear) return clear.take_error();
    if (auto done = clear->run(); !done) return done.take_error();
    auto insert =
        db.prepare("INSERT INTO " + table + " (" + owner + ", position, host) VALUES (?1, ?2, ?3)");
    if (!insert) return insert.take_error();
    for (std::size_t i = 0; i < list.size(); ++i) {
        insert->reset();
        insert->bind(1, owner_id);
        insert->bind(2, static_cast<std::int64_t>(i));
        insert->bind(3, list[i]);
        if (auto done = insert->run(); !done) return done.take_error();
    }
    return {};
}

} // namespace

Store::Store(sqlite::Database db, const Clock& clock, StoreOptions options)
    : db_(std::move(db)), clock_(&clock), options_(std::move(options)) {
    if (!options_.random) {
        auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
        options_.random = [engine] { return (*engine)(); };
    }
}

Result<std::unique_ptr<Store>> Store::open(const fs::path& file, const Clock& clock,
                                           StoreOptions options) {
    // The database holds the user's account names and, later, secrets: private folder.
    if (auto dir = ensure_private_dir(file.parent_path()); !dir) return dir.take_error();
    auto db = sqlite::Database::open(file.string());
    if (!db) return db.take_error();
    // SQLite creates the file with the umask's mode; its -wal and -shm files copy this.
    ::chmod(file.c_str(), 0600);
    return finish_open(std::move(*db), clock, std::move(options));
}

Result<std::unique_ptr<Store>> Store::open_in_memory(const Clock& clock, StoreOptions options) {
    auto db = sqlite::Database::open(":memory:");
    if (!db) return db.take_error();
    return finish_open(std::move(*db), clock, std::move(options));
}

Result<std::unique_ptr<Store>> Store::finish_open(sqlite::Database db, const Clock& clock,
                                                  StoreOptions options) {
    sqlite3_busy_timeout(db.handle(), options.busy_timeout_ms);
    // WAL: readers (a CLI, a backup) never block the daemon's writes. With WAL,
    // synchronous=NORMAL keeps the database consistent after any crash, kill -9
    // included: a transaction is in the WAL or not at all. What NORMAL gives up is
    // durability of the last commits on *power loss*, never integrity; docs/domain-model.md.
    auto configured = db.exec("PRAGMA journal_mode = WAL;"
                              "PRAGMA synchronous = NORMAL;"
                              "PRAGMA foreign_keys = ON;");
    if (!configured) return configured.take_error();
    auto version = migrate(db, migrations(), clock);
    if (!version) return version.take_error();
    std::unique_ptr<Store> store(new Store(std::move(db), clock, std::move(options)));
    store->schema_version_ = *version;
    return store;
}

template <class Body>
auto Store::in_transaction(Transaction::Kind kind, Body&& body) -> decltype(body()) {
    auto transaction = Transaction::begin(db_, kind);
    if (!transaction) return transaction.take_error();
    auto result = body();
    if (!result) return result; // the guard rolls back
    if (auto committed = transaction->commit(); !committed) return committed.take_error();
    return result;
}

// ---- contexts ---------------------------------------------------------------------

Result<Context> Store::load_context(std::int64_t id) {
    auto found = first(db_.prepare("SELECT id, name, created_at FROM contexts WHERE id = ?1", id),
                       [](const sqlite::Statement& row) {
                           return Context{row.integer(0), row.text(1), row.integer(2)};
                       });
    if (!found) return found.take_error();
    if (!*found) return not_found("context " + std::to_string(id) + " does not exist");
    return std::move(**found);
}

Result<std::optional<std::int64_t>> Store::context_id(const std::optional<std::string>& name) {
    if (!name) return std::optional<std::int64_t>();
    auto found = first(db_.prepare("SELECT id FROM contexts WHERE name = ?1", *name),
                       [](const sqlite::Statement& row) { return row.integer(0); });
    if (!found) return found.take_error();
    if (!*found) return not_found("context '" + *name + "' does not exist; create it first");
    return *found;
}

Result<Context> Store::create_context(std::string_view name) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_context_name(name); !valid) return valid.take_error();
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Context> {
        auto existing = first(db_.prepare("SELECT name FROM contexts WHERE name = ?1", name),
                              [](const sqlite::Statement& row) { return row.text(0); });
        if (!existing) return existing.take_error();
        if (*existing)
            return conflict("a context named '" + **existing +
                            "' exists already (names ignore case)");
        auto insert = db_.prepare("INSERT INTO contexts (name, created_at) VALUES (?1, ?2)", name,
                                  clock_->now_ms());
        if (!insert) return insert.take_error();
        if (auto done = insert->run(); !done) return done.take_error();
        return load_context(db_.last_insert_rowid());
    });
}

Result<std::vector<Context>> Store::list_contexts() {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare("SELECT id, name, created_at FROM contexts ORDER BY name"),
                   [](const sqlite::Statement& row) {
                       return Context{row.integer(0), row.text(1), row.integer(2)};
                   });
}

Result<Context> Store::get_context(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return load_context(id);
}

Result<Context> Store::rename_context(std::int64_t id, std::string_view name) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_context_name(name); !valid) return valid.take_error();
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Context> {
        auto current = load_context(id);
        if (!current) return current.take_error();
        auto existing = first(
            db_.prepare("SELECT name FROM contexts WHERE name = ?1 AND id != ?2", name, id),
            [](const sqlite::Statement& row) { return row.text(0); });
        if (!existing) return existing.take_error();
        if (*existing)
            return conflict("a context named '" + **existing +
                            "' exists already (names ignore case)");
        auto update = db_.prepare("UPDATE contexts SET name = ?1 WHERE id = ?2", name, id);
        if (!update) return update.take_error();
        if (auto done = update->run(); !done) return done.take_error();
        return load_context(id);
    });
}

Result<void> Store::delete_context(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        auto current = load_context(id);
        if (!current) return current.take_error();
        const auto projects =
            count(db_, "SELECT COUNT(*) FROM projects WHERE context_id = ?1", id);
        const auto accounts =
            count(db_, "SELECT COUNT(*) FROM accounts WHERE context_id = ?1", id);
        if (projects + accounts > 0)
            return conflict("context '" + current->name + "' is still used by " +
                            std::to_string(projects) + " project(s) and " +
                            std::to_string(accounts) +
                            " account(s); move them to another context first");
        auto remove = db_.prepare("DELETE FROM contexts WHERE id = ?1", id);
        if (!remove) return remove.take_error();
        return remove->run();
    });
}

// ---- projects ---------------------------------------------------------------------

Result<std::vector<Project>> Store::query_projects(Result<sqlite::Statement> statement) {
    auto projects = collect(std::move(statement), read_project);
    if (!projects) return projects.take_error();
    if (auto hosts = read_hosts(db_, kProjectHosts, *projects); !hosts) return hosts.take_error();
    return projects;
}

Result<std::optional<Project>> Store::first_project(Result<sqlite::Statement> statement) {
    auto projects = query_projects(std::move(statement));
    if (!projects) return projects.take_error();
    if (projects->empty()) return std::optional<Project>();
    return std::optional(std::move(projects->front()));
}

Result<Project> Store::load_project(std::int64_t id) {
    auto found = first_project(db_.prepare(sql(kProjectColumns, "WHERE p.id = ?1"), id));
    if (!found) return found.take_error();
    if (!*found) return not_found("project " + std::to_string(id) + " does not exist");
    return std::move(**found);
}

Result<Project> Store::create_project(const NewProject& project, std::string* field) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_project_name(project.name); !valid) return in_field(field, valid.take_error(), "name");
    if (auto valid = check_project_path(project.path); !valid) return in_field(field, valid.take_error(), "path");
    auto hosts = normalize_allowed_hosts(project.allowed_hosts);
    if (!hosts) return in_field(field, hosts.take_error(), host_list_field(project.allowed_hosts));
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Project> {
        auto context = context_id(project.context);
        if (!context) return in_field(field, context.take_error(), "context");
        auto existing = first(db_.prepare(sql(kProjectColumns, "WHERE p.path = ?1"), project.path),
                              read_project);
        if (!existing) return existing.take_error();
        if (*existing)
            return conflict("the folder " + project.path + " is already project '" +
                            (*existing)->name + "' (id " + std::to_string((*existing)->id) + ")");
        auto insert = db_.prepare(
            "INSERT INTO projects (name, path, context_id, created_at) VALUES (?1, ?2, ?3, ?4)",
            project.name, project.path, *context, clock_->now_ms());
        if (!insert) return insert.take_error();
        if (auto done = insert->run(); !done) return done.take_error();
        const auto id = db_.last_insert_rowid();
        if (auto written = write_hosts(db_, kProjectHosts, id, *hosts); !written)
            return written.take_error();
        return load_project(id);
    });
}

Result<std::vector<Project>> Store::list_projects() {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::read, [&] {
        return query_projects(db_.prepare(sql(kProjectColumns, "ORDER BY p.id")));
    });
}

Result<Project> Store::get_project(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::read, [&] { return load_project(id); });
}

Result<std::optional<Project>> Store::find_project_by_path(std::string_view path) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::read, [&] {
        return first_project(db_.prepare(sql(kProjectColumns, "WHERE p.path = ?1"), path));
    });
}

Result<std::optional<Project>> Store::find_project_containing(std::string_view path) {
    std::lock_guard lock(mutex_);
    // Compares whole path components: /src/app contains /src/app/x but not /src/apple.
    return in_transaction(Transaction::Kind::read, [&] {
        return first_project(
            db_.prepare(sql(kProjectColumns, "WHERE p.path = ?1 OR substr(?1, 1, length(p.path) + 1) "
                                             "= p.path || '/' ORDER BY length(p.path) DESC LIMIT 1"),
                        path));
    });
}

Result<Project> Store::update_project(std::int64_t id, const ProjectChanges& changes, std::string* field) {
    std::lock_guard lock(mutex_);
    if (changes.name)
        if (auto valid = check_project_name(*changes.name); !valid) return in_field(field, valid.take_error(), "name");
    std::optional<std::vector<std::string>> hosts;
    if (changes.allowed_hosts) {
        auto normalized = normalize_allowed_hosts(*changes.allowed_hosts);
        if (!normalized) return in_field(field, normalized.take_error(), host_list_field(*changes.allowed_hosts));
        hosts = std::move(*normalized);
    }
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Project> {
        auto project = load_project(id);
        if (!project) return project.take_error();
        if (changes.context) {
            auto context = context_id(*changes.context);
            if (!context) return in_field(field, context.take_error(), "context");
            // Every agent's account must already belong to the new context.
            auto users = collect(
                db_.prepare("SELECT g.name, a.name, c.name FROM agents g "
                            "JOIN accounts a ON a.id = g.account_id "
                            "LEFT JOIN contexts c ON c.id = a.context_id "
                            "WHERE g.project_id = ?1 AND a.context_id IS NOT ?2",
                            id, *context),
                [](const sqlite::Statement& row) {
                    return "its agent '" + row.text(0) + "' uses account '" + row.text(1) +
                           "', which belongs to " + context_phrase(row.optional_text(2));
                });
            if (!users) return users.take_error();
            if (!users->empty())
                return in_field(field, conflict("project '" + project->name + "' cannot move to " +
                                         context_phrase(*changes.context) + ": " + users->front()),
                                "context");
            auto update = db_.prepare("UPDATE projects SET context_id = ?1 WHERE id = ?2",
                                      *context, id);
            if (!update) return update.take_error();
            if (auto done = update->run(); !done) return done.take_error();
        }
        if (changes.name) {
            auto update = db_.prepare("UPDATE projects SET name = ?1 WHERE id = ?2",
                                      *changes.name, id);
            if (!update) return update.take_error();
            if (auto done = update->run(); !done) return done.take_error();
        }
        if (hosts)
            if (auto written = write_hosts(db_, kProjectHosts, id, *hosts); !written)
                return written.take_error();
        return load_project(id);
    });
}

Result<void> Store::delete_project(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        auto remove = db_.prepare("DELETE FROM projects WHERE id = ?1", id);
        if (!remove) return remove.take_error();
        if (auto done = remove->run(); !done) return done.take_error();
        if (db_.changes() == 0) return not_found("project " + std::to_string(id) + " does not exist");
        return {};
    });
}

// ---- accounts ---------------------------------------------------------------------

Result<Account> Store::load_account(std::int64_t id) {
    auto found = first(db_.prepare(sql(kAccountColumns, "WHERE a.id = ?1"), id), read_account);
    if (!found) return found.take_error();
    if (!*found) return not_found("account " + std::to_string(id) + " does not exist");
    return std::move(**found);
}

Result<std::optional<Account>> Store::account_by_name(std::string_view name) {
    return first(db_.prepare(sql(kAccountColumns, "WHERE a.name = ?1"), name), read_account);
}

Result<Account> Store::create_account(const NewAccount& account) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_account_name(account.name); !valid) return valid.take_error();
    if (auto valid = check_account_kind(account.kind); !valid) return valid.take_error();
    auto base_url = account_base_url(account.kind, account.base_url);
    if (!base_url) return base_url.take_error();
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Account> {
        auto context = context_id(account.context);
        if (!context) return context.take_error();
        auto existing = account_by_name(account.name);
        if (!existing) return existing.take_error();
        if (*existing) return conflict("an account named '" + account.name + "' exists already");
        auto insert = db_.prepare("INSERT INTO accounts (name, kind, context_id, base_url, "
                                  "created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                                  account.name, account.kind, *context, *base_url,
                                  clock_->now_ms());
        if (!insert) return insert.take_error();
        if (auto done = insert->run(); !done) return done.take_error();
        return load_account(db_.last_insert_rowid());
    });
}

Result<std::vector<Account>> Store::list_accounts() {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare(sql(kAccountColumns, "ORDER BY a.name")), read_account);
}

Result<Account> Store::get_account(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return load_account(id);
}

Result<Account> Store::update_account(std::int64_t id, const AccountChanges& changes) {
    std::lock_guard lock(mutex_);
    if (changes.name)
        if (auto valid = check_account_name(*changes.name); !valid) return valid.take_error();
    if (changes.kind)
        if (auto valid = check_account_kind(*changes.kind); !valid) return valid.take_error();
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Account> {
        auto account = load_account(id);
        if (!account) return account.take_error();
        if (changes.name && *changes.name != account->name) {
            auto existing = account_by_name(*changes.name);
            if (!existing) return existing.take_error();
            if (*existing)
                return conflict("an account named '" + *changes.name + "' exists already");
            auto update = db_.prepare("UPDATE accounts SET name = ?1 WHERE id = ?2",
                                      *changes.name, id);
            if (!update) return update.take_error();
            if (auto done = update->run(); !done) return done.take_error();
        }
        // A new kind starts from its own default (or none); otherwise the URL stays
        // unless one is given.
        const bool kind_changes = changes.kind && *changes.kind != account->kind;
        if (kind_changes || changes.base_url) {
            const std::string& kind = kind_changes ? *changes.kind : account->kind;
            auto base_url = account_base_url(kind, changes.base_url);
            if (!base_url) return base_url.take_error();
            auto update = db_.prepare("UPDATE accounts SET kind = ?1, base_url = ?2 WHERE id = ?3",
                                      kind, *base_url, id);
            if (!update) return update.take_error();
            if (auto done = update->run(); !done) return done.take_error();
        }
        if (changes.context) {
            auto context = context_id(*changes.context);
            if (!context) return context.take_error();
            auto users = collect(
                db_.prepare("SELECT g.name, p.name, c.name FROM agents g "
                            "JOIN projects p ON p.id = g.project_id "
                            "LEFT JOIN contexts c ON c.id = p.context_id "
                            "WHERE g.account_id = ?1 AND p.context_id IS NOT ?2",
                            id, *context),
                [](const sqlite::Statement& row) {
                    return "agent '" + row.text(0) + "' of project '" + row.text(1) +
                           "', which belongs to " + context_phrase(row.optional_text(2)) +
                           ", uses it";
                });
            if (!users) return users.take_error();
            if (!users->empty())
                return conflict("account '" + account->name + "' cannot move to " +
                                context_phrase(*changes.context) + ": " + users->front());
            auto update = db_.prepare("UPDATE accounts SET context_id = ?1 WHERE id = ?2",
                                      *context, id);
            if (!update) return update.take_error();
            if (auto done = update->run(); !done) return done.take_error();
        }
        return load_account(id);
    });
}

Result<void> Store::delete_account(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        auto account = load_account(id);
        if (!account) return account.take_error();
        auto users = collect(db_.prepare("SELECT g.name, p.name FROM agents g "
                                         "JOIN projects p ON p.id = g.project_id "
                                         "WHERE g.account_id = ?1 ORDER BY g.id",
                                         id),
                             [](const sqlite::Statement& row) {
                                 return "agent '" + row.text(0) + "' of project '" +
                                        row.text(1) + "'";
                             });
        if (!users) return users.take_error();
        if (!users->empty())
            return conflict("account '" + account->name + "' is used by " + users->front() +
                            (users->size() > 1
                                 ? " and " + std::to_string(users->size() - 1) + " more"
                                 : "") +
                            "; give them another account first");
        auto remove = db_.prepare("DELETE FROM accounts WHERE id = ?1", id);
        if (!remove) return remove.take_error();
        return remove->run();
    });
}

// ---- agents -----------------------------------------------------------------------

Result<void> Store::check_same_context(const Account& account, const Project& project) {
    // Strict equality, untagged included: an untagged account on a Work project could be
    // someone's personal key, which is exactly the mix-up contexts exist to prevent.
    if (account.context == project.context) return {};
    return conflict("account '" + account.name + "' belongs to " +
                    context_phrase(account.context) + " but project '" + project.name +
                    "' belongs to " +
                    (project.context ? "'" + *project.context + "'" : "no context") +
                    "; pick an account of the project's context");
}

Result<std::vector<Agent>> Store::query_agents(const AgentFilter& filter,
                                               std::optional<std::int64_t> id) {
    auto agents = collect(db_.prepare(sql(kAgentColumns,
                                          "WHERE (?1 IS NULL OR g.project_id = ?1) "
                                          "AND (?2 IS NULL OR g.name = ?2) "
                                          "AND (?3 IS NULL OR g.id = ?3) ORDER BY g.id"),
                                      filter.project_id, filter.name, id),
                          read_agent);
    if (!agents) return agents.take_error();
    if (auto hosts = read_hosts(db_, kAgentHosts, *agents); !hosts) return hosts.take_error();
    return agents;
}

Result<Agent> Store::load_agent(std::int64_t id) {
    auto agents = query_agents({}, id);
    if (!agents) return agents.take_error();
    if (agents->empty()) return not_found("agent " + std::to_string(id) + " does not exist");
    return std::move(agents->front());
}

Result<Agent> Store::create_agent(const NewAgent& agent, std::string* field) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_agent_name(agent.name); !valid) return in_field(field, valid.take_error(), "name");
    if (auto valid = check_harness(agent.harness); !valid) return in_field(field, valid.take_error(), "harness");
    if (auto valid = check_text("goal", agent.goal, kMaxGoalBytes); !valid)
        return in_field(field, valid.take_error(), "goal");
    if (auto valid = check_text("instructions", agent.instructions, kMaxInstructionsBytes); !valid)
        return in_field(field, valid.take_error(), "instructions");
    if (auto valid = check_network_mode(agent.network_mode); !valid)
        return in_field(field, valid.take_error(), "network_mode");
    if (agent.model)
        if (auto valid = check_model_name(*agent.model); !valid) return in_field(field, valid.take_error(), "model");
    if (agent.thinking)
        if (auto valid = check_thinking_level(*agent.thinking); !valid)
            return in_field(field, valid.take_error(), "thinking");
    auto hosts = normalize_allowed_hosts(agent.allowed_hosts);
    if (!hosts) return in_field(field, hosts.take_error(), host_list_field(agent.allowed_hosts));
    auto addons = check_addons(agent.addons);
    if (!addons) return in_field(field, addons.take_error(), addon_list_field(agent.addons));

    return in_transaction(Transaction::Kind::write, [&]() -> Result<Agent> {
        auto project = load_project(agent.project_id);
        if (!project) return project.take_error();
        auto same_name = query_agents({agent.project_id, agent.name}, std::nullopt);
        if (!same_name) return same_name.take_error();
        if (!same_name->empty())
            return in_field(field, conflict("project '" + project->name + "' already has an agent named '" +
                                     agent.name + "'"),
                            "name");
        std::optional<std::int64_t> account_id;
        if (agent.account) {
            auto account = account_by_name(*agent.account);
            if (!account) return account.take_error();
            if (!*account)
                return in_field(field, not_found("account '" + *agent.account + "' does not exist"), "account");
            if (auto same = check_same_context(**account, *project); !same)
                return in_field(field, same.take_error(), "account");
            account_id = (*account)->id;
        }
        const auto now = clock_->now_ms();
        auto insert = db_.prepare(
            "INSERT INTO agents (project_id, name, harness, goal, instructions, account_id, "
            "network_mode, created_at, updated_at, addons, model, thinking) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11)",
            agent.project_id, agent.name, agent.harness, agent.goal, agent.instructions,
            account_id, to_string(agent.network_mode), now, join_lines(*addons), agent.model,
            agent.thinking);
        if (!insert) return insert.take_error();
        if (auto done = insert->run(); !done) return done.take_error();
        const auto id = db_.last_insert_rowid();
        if (auto written = write_hosts(db_, kAgentHosts, id, *hosts); !written)
            return written.take_error();
        return load_agent(id);
    });
}

Result<std::vector<Agent>> Store::list_agents(const AgentFilter& filter) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::read,
                          [&] { return query_agents(filter, std::nullopt); });
}

Result<Agent> Store::get_agent(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::read, [&] { return load_agent(id); });
}

Result<Agent> Store::update_agent(std::int64_t id, const AgentChanges& changes, std::string* field) {
    std::lock_guard lock(mutex_);
    if (changes.name)
        if (auto valid = check_agent_name(*changes.name); !valid) return in_field(field, valid.take_error(), "name");
    if (changes.harness)
        if (auto valid = check_harness(*changes.harness); !valid) return in_field(field, valid.take_error(), "harness");
    if (changes.goal)
        if (auto valid = check_text("goal", *changes.goal, kMaxGoalBytes); !valid)
            return in_field(field, valid.take_error(), "goal");
    if (changes.instructions)
        if (auto valid = check_text("instructions", *changes.instructions, kMaxInstructionsBytes);
            !valid)
            return in_field(field, valid.take_error(), "instructions");
    if (changes.network_mode)
        if (auto valid = check_network_mode(*changes.network_mode); !valid)
            return in_field(field, valid.take_error(), "network_mode");
    if (changes.model && *changes.model)
        if (auto valid = check_model_name(**changes.model); !valid) return in_field(field, valid.take_error(), "model");
    if (changes.thinking && *changes.thinking)
        if (auto valid = check_thinking_level(**changes.thinking); !valid)
            return in_field(field, valid.take_error(), "thinking");
    std::optional<std::vector<std::string>> hosts;
    if (changes.allowed_hosts) {
        auto normalized = normalize_allowed_hosts(*changes.allowed_hosts);
        if (!normalized) return in_field(field, normalized.take_error(), host_list_field(*changes.allowed_hosts));
        hosts = std::move(*normalized);
    }
    std::optional<std::vector<std::string>> addons;
    if (changes.addons) {
        auto checked = check_addons(*changes.addons);
        if (!checked) return in_field(field, checked.take_error(), addon_list_field(*changes.addons));
        addons = std::move(*checked);
    }

    return in_transaction(Transaction::Kind::write, [&]() -> Result<Agent> {
        auto current = load_agent(id);
        if (!current) return current.take_error();
        if (changes.empty()) return current;
        auto project = load_project(current->project_id);
        if (!project) return project.take_error();

        const std::string name = changes.name.value_or(current->name);
        if (name != current->name) {
            auto same_name = query_agents({current->project_id, name}, std::nullopt);
            if (!same_name) return same_name.take_error();
            if (!same_name->empty())
                return in_field(field, conflict("project '" + project->name + "' already has an agent named '" +
                                         name + "'"),
                                "name");
        }
        const std::optional<std::string> account_name =
            changes.account ? *changes.account : current->account;
        std::optional<std::int64_t> account_id;
        if (account_name) {
            auto account = account_by_name(*account_name);
            if (!account) return account.take_error();
            if (!*account)
                return in_field(field, not_found("account '" + *account_name + "' does not exist"), "account");
            if (auto same = check_same_context(**account, *project); !same)
                return in_field(field, same.take_error(), "account");
            account_id = (*account)->id;
        }
        auto update = db_.prepare(
            "UPDATE agents SET name = ?1, harness = ?2, goal = ?3, instructions = ?4, "
            "account_id = ?5, network_mode = ?6, updated_at = ?7, addons = ?9, model = ?10, "
            "thinking = ?11 WHERE id = ?8",
            name, changes.harness.value_or(current->harness), changes.goal.value_or(current->goal),
            changes.instructions.value_or(current->instructions), account_id,
            to_string(changes.network_mode.value_or(current->network_mode)), clock_->now_ms(), id,
            join_lines(addons.value_or(current->addons)), changes.model.value_or(current->model),
            changes.thinking.value_or(current->thinking));
        if (!update) return update.take_error();
        if (auto done = update->run(); !done) return done.take_error();
        if (hosts)
            if (auto written = write_hosts(db_, kAgentHosts, id, *hosts); !written)
            return written.take_error();
        return load_agent(id);
    });
}

Result<void> Store::delete_agent(std::int64_t id) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        // A live session's policy is read from its agent at every connection; without the
        // agent it would fall back to the project's list in filtered mode, which may be
        // more than the agent allowed (a `none` agent's session would gain hosts).
        auto live = collect(db_.prepare("SELECT id FROM sessions WHERE agent_id = ?1 AND state IN "
                                        "('starting', 'running') ORDER BY created_at",
                                        id),
                            [](sqlite::Statement& row) { return row.text(0); });
        if (!live) return live.take_error();
        if (!live->empty()) {
            std::string ids;
            for (const auto& each : *live) ids += (ids.empty() ? "" : ", ") + each;
            auto name = first(db_.prepare("SELECT name FROM agents WHERE id = ?1", id),
                              [](sqlite::Statement& row) { return row.text(0); });
            const std::string who = name && *name ? "agent '" + **name + "'" : "agent " + std::to_string(id);
            return conflict(who + " has running sessions (" + ids +
                            "); stop them first with `handler session stop ID`");
        }
        auto remove = db_.prepare("DELETE FROM agents WHERE id = ?1", id);
        if (!remove) return remove.take_error();
        if (auto done = remove->run(); !done) return done.take_error();
        if (db_.changes() == 0) return not_found("agent " + std::to_string(id) + " does not exist");
        return {};
    });
}

// ---- sessions ---------------------------------------------------------------------

std::string Store::new_session_id() {
    char id[16];
    std::snprintf(id, sizeof id, "s_%06x", static_cast<unsigned>(options_.random() & 0xffffff));
    return id;
}

Result<Session> Store::load_session(std::string_view id) {
    auto found = first(db_.prepare(sql(kSessionColumns, "WHERE id = ?1"), id), read_session);
    if (!found) return found.take_error();
    if (!*found) return not_found("session '" + std::string(id) + "' does not exist");
    return std::move(**found);
}

Result<Session> Store::create_session(const NewSession& session) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_harness(session.harness); !valid) return valid.take_error();
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Session> {
        auto project = load_project(session.project_id);
        if (!project) return project.take_error();
        if (session.agent_id) {
            auto agent = load_agent(*session.agent_id);
            if (!agent) return agent.take_error();
            if (agent->project_id != session.project_id)
                return make_error(ErrorCode::invalid_argument,
                                  "agent '" + agent->name + "' belongs to project " +
                                      std::to_string(agent->project_id) + ", not to project " +
                                      std::to_string(session.project_id));
        }
        // 16.7 million ids; a collision is rare, and retried with a fresh id.
        constexpr int kAttempts = 32;
        for (int attempt = 0; attempt < kAttempts; ++attempt) {
            const std::string id = new_session_id();
            auto taken = first(db_.prepare("SELECT 1 FROM sessions WHERE id = ?1", id),
                               [](const sqlite::Statement& row) { return row.integer(0); });
            if (!taken) return taken.take_error();
            if (*taken) continue;
            const auto now = clock_->now_ms();
            auto insert = db_.prepare(
                "INSERT INTO sessions (id, agent_id, project_id, harness, state, exit_code, "
                "created_at, updated_at, mode, tty, image, network_mode, learn_until, model, thinking, "
                "mcp_servers) "
                "VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                id, session.agent_id, session.project_id, session.harness,
                to_string(SessionState::starting), now, session.mode,
                std::int64_t{session.tty ? 1 : 0}, session.image,
                session.network_mode ? std::optional<std::string>(to_string(*session.network_mode))
                                     : std::nullopt,
                session.learn_until, session.model, session.thinking, session.mcp_servers);
            if (!insert) return insert.take_error();
            if (auto done = insert->run(); !done) return done.take_error();
            return load_session(id);
        }
        return make_error(ErrorCode::internal, "could not find a free session id in " +
                                                   std::to_string(kAttempts) + " attempts");
    });
}

Result<std::vector<Session>> Store::list_sessions() {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare(sql(kSessionColumns, "ORDER BY created_at, id")), read_session);
}

Result<Session> Store::get_session(std::string_view id) {
    std::lock_guard lock(mutex_);
    return load_session(id);
}

Result<Session> Store::update_session(std::string_view id, const SessionChanges& changes) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<Session> {
        auto current = load_session(id);
        if (!current) return current.take_error();
        const auto network_mode = changes.network_mode ? *changes.network_mode : current->network_mode;
        auto update = db_.prepare(
            "UPDATE sessions SET state = ?1, exit_code = ?2, updated_at = ?3, container_id = ?5, "
            "message = ?6, model_hosts = ?7, addon_hosts = ?8, title = ?9, model = ?10, thinking = ?11, "
            "limits = ?12, network_mode = ?13, learn_until = ?14 WHERE id = ?4",
            to_string(changes.state.value_or(current->state)),
            changes.exit_code ? *changes.exit_code : current->exit_code, clock_->now_ms(), id,
            changes.container_id ? *changes.container_id : current->container_id,
            changes.message ? *changes.message : current->message,
            join_lines(changes.model_hosts.value_or(current->model_hosts)),
            join_lines(changes.addon_hosts.value_or(current->addon_hosts)),
            changes.title ? *changes.title : current->title, changes.model ? *changes.model : current->model,
            changes.thinking ? *changes.thinking : current->thinking, changes.limits.value_or(current->limits),
            network_mode ? std::optional<std::string>(to_string(*network_mode)) : std::nullopt,
            changes.learn_until ? *changes.learn_until : current->learn_until);
        if (!update) return update.take_error();
        if (auto done = update->run(); !done) return done.take_error();
        return load_session(id);
    });
}

Result<void> Store::delete_session(std::string_view id) {
    std::lock_guard lock(mutex_);
    auto remove = db_.prepare("DELETE FROM sessions WHERE id = ?1", id);
    if (!remove) return remove.take_error();
    if (auto done = remove->run(); !done) return done.take_error();
    if (db_.changes() == 0) return not_found("session '" + std::string(id) + "' does not exist");
    return {};
}

// ---- network log ------------------------------------------------------------------

namespace {
NetworkEntry read_network_entry(const sqlite::Statement& row) {
    NetworkEntry entry;
    entry.id = row.integer(0);
    entry.session_id = row.text(1);
    entry.at = row.integer(2);
    entry.host = row.text(3);
    entry.port = row.integer(4);
    entry.method = row.text(5);
    entry.path = row.text(6);
    entry.verdict = row.text(7);
    entry.rule = row.text(8);
    entry.reason = row.text(9);
    entry.bytes_up = row.integer(10);
    entry.bytes_down = row.integer(11);
    entry.ended_at = row.optional_integer(12);
    entry.secret = row.text(13);
    entry.connection = row.integer(14);
    if (row.optional_integer(15)) {
        NetworkOrigin origin;
        origin.session_id = entry.session_id;
        origin.connection = entry.connection;
        origin.pid = row.optional_integer(16);
        origin.command = row.text(17);
        origin.parents = row.text(18);
        origin.tool_call_id = row.text(19);
        origin.tool_call_title = row.text(20);
        origin.note = row.text(21);
        entry.origin = std::move(origin);
    }
    return entry;
}
} // namespace

Result<std::vector<NetworkEntry>> Store::network_log(std::string_view session_id,
                                                     std::int64_t after_id, std::int64_t limit) {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare("SELECT l.id, l.session_id, l.at, l.host, l.port, l.method, l.path, l.verdict, "
                               "l.rule, l.reason, l.bytes_up, l.bytes_down, l.ended_at, l.secret, l.connection, "
                               "c.connection, c.pid, c.command, c.parents, c.tool_call_id, c.tool_call_title, c.note "
                               "FROM network_log l LEFT JOIN network_connections c "
                               "ON c.session_id = l.session_id AND c.connection = l.connection AND l.connection != 0 "
                               "WHERE l.session_id = ?1 AND l.id > ?2 ORDER BY l.id LIMIT ?3",
                               session_id, after_id, limit),
                   read_network_entry);
}

Result<std::vector<SessionEvent>> Store::add_session_events(
    std::string_view session_id, TimeMs at, const std::vector<std::pair<std::string, std::string>>& events) {
    std::lock_guard lock(mutex_);
    std::vector<SessionEvent> added;
    auto written = in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        auto last = db_.prepare("SELECT COALESCE(MAX(seq), 0) FROM session_events WHERE session_id = ?1",
                                session_id);
        if (!last) return last.take_error();
        if (auto row = last->step(); !row) return row.take_error();
        std::int64_t seq = last->integer(0);
        auto insert = db_.prepare("INSERT INTO session_events (session_id, seq, at, kind, payload) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5)");
        if (!insert) return insert.take_error();
        for (const auto& [kind, payload] : events) {
            SessionEvent event{std::string(session_id), ++seq, at, kind, payload};
            insert->reset();
            insert->bind(1, event.session_id);
            insert->bind(2, event.seq);
            insert->bind(3, event.at);
            insert->bind(4, event.kind);
            insert->bind(5, event.payload);
            if (auto ran = insert->run(); !ran) return ran.take_error();
            added.push_back(std::move(event));
        }
        return {};
    });
    if (!written) return written.take_error();
    return added;
}

Result<std::int64_t> Store::session_events_bytes(std::string_view session_id) {
    std::lock_guard lock(mutex_);
    auto statement = db_.prepare("SELECT COALESCE(SUM(length(CAST(payload AS BLOB))), 0) FROM session_events "
                                 "WHERE session_id = ?1",
                                 session_id);
    if (!statement) return statement.take_error();
    auto row = statement->step();
    if (!row) return row.take_error();
    return statement->integer(0);
}

namespace {
SessionEvent read_session_event(const sqlite::Statement& row) {
    return SessionEvent{row.text(0), row.integer(1), row.integer(2), row.text(3), row.text(4)};
}
} // namespace

Result<std::vector<SessionEvent>> Store::session_events(std::string_view session_id, std::int64_t after,
                                                        std::int64_t limit) {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare("SELECT session_id, seq, at, kind, payload FROM session_events "
                               "WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                               session_id, after, limit),
                   read_session_event);
}

Result<std::vector<SessionEvent>> Store::session_events_before(std::string_view session_id, std::int64_t before,
                                                               std::int64_t limit) {
    std::lock_guard lock(mutex_);
    auto events = collect(db_.prepare("SELECT session_id, seq, at, kind, payload FROM session_events "
                                      "WHERE session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
                                      session_id, before, limit),
                          read_session_event);
    if (events) std::reverse(events->begin(), events->end());
    return events;
}

Result<std::int64_t> Store::last_network_entry_id() {
    std::lock_guard lock(mutex_);
    auto statement = db_.prepare("SELECT COALESCE(MAX(id), 0) FROM network_log");
    if (!statement) return statement.take_error();
    auto row = statement->step();
    if (!row) return row.take_error();
    return statement->integer(0);
}

Result<void> Store::write_network_batch(const std::vector<NetworkEntry>& added,
                                        const std::vector<NetworkFinish>& finished,
                                        const std::vector<NetworkOrigin>& origins) {
    std::lock_guard lock(mutex_);
    return in_transaction(Transaction::Kind::write, [&]() -> Result<void> {
        auto insert = db_.prepare(
            "INSERT INTO network_log (id, session_id, at, host, port, method, path, verdict, rule, reason, "
            "secret, bytes_up, bytes_down, ended_at, connection) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
            "?11, ?12, ?13, ?14, ?15)");
        if (!insert) return insert.take_error();
        for (const auto& entry : added) {
            insert->reset();
            insert->bind(1, entry.id);
            insert->bind(2, entry.session_id);
            insert->bind(3, entry.at);
            insert->bind(4, entry.host);
            insert->bind(5, entry.port);
            insert->bind(6, entry.method);
            insert->bind(7, entry.path);
            insert->bind(8, entry.verdict);
            insert->bind(9, entry.rule);
            insert->bind(10, entry.reason);
            insert->bind(11, entry.secret);
            insert->bind(12, entry.bytes_up);
            insert->bind(13, entry.bytes_down);
            insert->bind(14, entry.ended_at);
            insert->bind(15, entry.connection);
            if (auto done = insert->run(); !done) return done.take_error();
        }
        auto update = db_.prepare("UPDATE network_log SET bytes_up = ?2, bytes_down = ?3, ended_at = ?4, "
                                  "reason = CASE WHEN ?5 = '' THEN reason ELSE ?5 END WHERE id = ?1");
        if (!update) return update.take_error();
        for (const auto& end : finished) {
            update->reset();
            update->bind(1, end.id);
            update->bind(2, end.bytes_up);
            update->bind(3, end.bytes_down);
            update->bind(4, end.ended_at);
            update->bind(5, end.reason);
            if (auto done = update->run(); !done) return done.take_error();
        }
        if (origins.empty()) return {};
        // A session removed meanwhile has no row to hang an origin on: skipped, not an
        // error that would cost the batch.
        auto origin_insert = db_.prepare(
            "INSERT OR REPLACE INTO network_connections (session_id, connection, pid, command, parents, "
            "tool_call_id, tool_call_title, note) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 "
            "WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)");
        if (!origin_insert) return origin_insert.take_error();
        for (const auto& origin : origins) {
            origin_insert->reset();
            origin_insert->bind(1, origin.session_id);
            origin_insert->bind(2, origin.connection);
            origin_insert->bind(3, origin.pid);
            origin_insert->bind(4, origin.command);
            origin_insert->bind(5, origin.parents.empty() ? std::string("[]") : origin.parents);
            origin_insert->bind(6, origin.tool_call_id);
            origin_insert->bind(7, origin.tool_call_title);
            origin_insert->bind(8, origin.note);
            if (auto done = origin_insert->run(); !done) return done.take_error();
        }
        return {};
    });
}

Result<void> Store::add_session_secret(const SessionSecret& secret) {
    std::lock_guard lock(mutex_);
    auto insert = db_.prepare("INSERT INTO session_secrets (session_id, kind, account_id, stand_in) "
                              "VALUES (?1, ?2, ?3, ?4)",
                              secret.session_id, secret.kind, secret.account_id, secret.stand_in);
    if (!insert) return insert.take_error();
    return insert->run();
}

Result<std::vector<SessionSecret>> Store::session_secrets(std::string_view session_id) {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare("SELECT session_id, kind, account_id, stand_in FROM session_secrets "
                               "WHERE session_id = ?1 ORDER BY kind",
                               session_id),
                   [](const sqlite::Statement& row) {
                       return SessionSecret{row.text(0), row.text(1), row.integer(2), row.text(3)};
                   });
}

Result<std::vector<LearnedHost>> Store::learned_hosts(std::string_view session_id) {
    std::lock_guard lock(mutex_);
    return collect(db_.prepare("SELECT host, port, COUNT(*), MIN(at), MAX(at) FROM network_log "
                               "WHERE session_id = ?1 AND verdict = 'learned' "
                               "GROUP BY host, port ORDER BY MIN(at), host, port",
                               session_id),
                   [](const sqlite::Statement& row) {
                       return LearnedHost{row.text(0), row.integer(1), row.integer(2),
                                          row.integer(3), row.integer(4)};
                   });
}

// ---- plugin storage ---------------------------------------------------------------

namespace {

Result<void> check_plugin_key(std::string_view plugin_id, std::string_view key) {
    if (plugin_id.empty())
        return make_error(ErrorCode::invalid_argument, "plugin storage needs a plugin id");
    if (key.empty() || key.size() > kMaxPluginKeyBytes)
        return make_error(ErrorCode::invalid_argument,
                          "plugin '" + std::string(plugin_id) + "': a storage key must be 1 to " +
                              std::to_string(kMaxPluginKeyBytes) + " bytes long");
    return {};
}

} // namespace

Result<std::optional<std::string>> Store::get(std::string_view plugin_id, std::string_view key) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_plugin_key(plugin_id, key); !valid) return valid.take_error();
    return first(db_.prepare("SELECT value FROM plugin_storage WHERE plugin_id = ?1 AND key = ?2",
                             plugin_id, key),
                 [](const sqlite::Statement& row) { return row.text(0); });
}

Result<void> Store::set(std::string_view plugin_id, std::string_view key, std::string_view value) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_plugin_key(plugin_id, key); !valid) return valid.take_error();
    if (value.size() > kMaxPluginValueBytes)
        return make_error(ErrorCode::too_large,
                          "plugin '" + std::string(plugin_id) + "': the value for '" +
                              std::string(key) + "' is " + std::to_string(value.size()) +
                              " bytes; at most " + std::to_string(kMaxPluginValueBytes) +
                              " may be stored");
    // One statement: atomic on its own, no explicit transaction needed.
    auto upsert = db_.prepare("INSERT INTO plugin_storage (plugin_id, key, value) "
                              "VALUES (?1, ?2, ?3) "
                              "ON CONFLICT (plugin_id, key) DO UPDATE SET value = excluded.value",
                              plugin_id, key);
    if (!upsert) return upsert.take_error();
    upsert->bind_blob(3, value);
    return upsert->run();
}

Result<void> Store::remove(std::string_view plugin_id, std::string_view key) {
    std::lock_guard lock(mutex_);
    if (auto valid = check_plugin_key(plugin_id, key); !valid) return valid.take_error();
    auto remove = db_.prepare("DELETE FROM plugin_storage WHERE plugin_id = ?1 AND key = ?2",
                              plugin_id, key);
    if (!remove) return remove.take_error();
    return remove->run();
}

} // namespace handler::store
