#include "store/migrations.hpp"

#include <array>
#include <string>

namespace handler::store {
namespace {

// STRICT tables make SQLite refuse a value of the wrong type instead of storing it.
// Foreign keys without ON DELETE restrict deletion: a context still used by a project,
// or an account still used by an agent, cannot disappear from under it.
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE contexts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL COLLATE NOCASE UNIQUE,
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    path        TEXT NOT NULL UNIQUE,
    context_id  INTEGER REFERENCES contexts(id),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX projects_context ON projects(context_id);

CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    context_id  INTEGER REFERENCES contexts(id),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX accounts_context ON accounts(context_id);

CREATE TABLE agents (
    id            INTEGER PRIMARY KEY,
    project_id    INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    harness       TEXT NOT NULL,
    goal          TEXT NOT NULL DEFAULT '',
    instructions  TEXT NOT NULL DEFAULT '',
    account_id    INTEGER REFERENCES accounts(id),
    network_mode  TEXT NOT NULL DEFAULT 'filtered'
                  CHECK (network_mode IN ('none', 'filtered', 'open')),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (project_id, name)
) STRICT;
CREATE INDEX agents_account ON agents(account_id);

CREATE TABLE agent_allowed_hosts (
    agent_id  INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    host      TEXT NOT NULL,
    PRIMARY KEY (agent_id, position),
    UNIQUE (agent_id, host)
) STRICT, WITHOUT ROWID;

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    agent_id    INTEGER REFERENCES agents(id) ON DELETE SET NULL,
    project_id  INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    harness     TEXT NOT NULL,
    state       TEXT NOT NULL,
    exit_code   INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_agent ON sessions(agent_id);
CREATE INDEX sessions_project ON sessions(project_id);

CREATE TABLE plugin_storage (
    plugin_id  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      BLOB NOT NULL,
    PRIMARY KEY (plugin_id, key)
) STRICT, WITHOUT ROWID;
)sql";

// Sessions become real containers: which container, how it was started (a terminal or
// pipes), from which image, and a person-readable reason when it failed or was lost.
constexpr std::string_view kVersion2 = R"sql(
ALTER TABLE sessions ADD COLUMN container_id TEXT;
ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'interactive';
ALTER TABLE sessions ADD COLUMN tty INTEGER NOT NULL DEFAULT 1;
ALTER TABLE sessions ADD COLUMN image TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN message TEXT;
)sql";

// The egress proxy: a session's own network mode (`handler run --network`), the end of
// its learning window, its harness's model hosts (kept so a restarted handlerd decides
// as the first one did), and every decision the proxy made.
constexpr std::string_view kVersion3 = R"sql(
ALTER TABLE sessions ADD COLUMN network_mode TEXT
    CHECK (network_mode IS NULL OR network_mode IN ('none', 'filtered', 'open', 'learn'));
ALTER TABLE sessions ADD COLUMN learn_until INTEGER;
ALTER TABLE sessions ADD COLUMN model_hosts TEXT NOT NULL DEFAULT '';
CREATE TABLE network_log (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    host        TEXT NOT NULL,
    port        INTEGER NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL DEFAULT '',
    verdict     TEXT NOT NULL CHECK (verdict IN ('allow', 'deny', 'learned')),
    rule        TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    bytes_up    INTEGER NOT NULL DEFAULT 0,
    bytes_down  INTEGER NOT NULL DEFAULT 0,
    ended_at    INTEGER
) STRICT;
CREATE INDEX network_log_session ON network_log(session_id, id);
)sql";

// Keys: the stand-in each session got for each kind of key (so a restarted handlerd's
// proxy recognises what the running container holds), and which key the proxy put into
// an intercepted request. And a project's own allow-list, kept like an agent's and
// merged into the policy of every session in the project. And where a local model
// server (llama-cpp, ollama) listens; accounts made before get the server's default
// (secrets/account_kinds.cpp).
constexpr std::string_view kVersion4 = R"sql(
CREATE TABLE session_secrets (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    stand_in    TEXT NOT NULL,
    PRIMARY KEY (session_id, kind)
) STRICT, WITHOUT ROWID;
ALTER TABLE network_log ADD COLUMN secret TEXT NOT NULL DEFAULT '';
CREATE TABLE project_allowed_hosts (
    project_id  INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    host        TEXT NOT NULL,
    PRIMARY KEY (project_id, position),
    UNIQUE (project_id, host)
) STRICT, WITHOUT ROWID;
ALTER TABLE accounts ADD COLUMN base_url TEXT;
UPDATE accounts SET base_url = 'http://127.0.0.1:8080' WHERE kind = 'llama-cpp';
UPDATE accounts SET base_url = 'http://127.0.0.1:11434' WHERE kind = 'ollama';
)sql";

// Addons: the ones enabled for an agent (plugin ids, one per line, in order), and the
// hosts they asked for in each session, which join its allow-list (one rule per line,
// like model_hosts).
constexpr std::string_view kVersion5 = R"sql(
ALTER TABLE agents ADD COLUMN addons TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN addon_hosts TEXT NOT NULL DEFAULT '';
)sql";

// Session events: what a headless harness did, normalised by its plugin (ACP's
// session/update vocabulary, docs/contracts.md), numbered per session from 1 so a client
// can ask for what came after the last one it has.
constexpr std::string_view kVersion6 = R"sql(
CREATE TABLE session_events (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
)sql";

// Conversations (docs/conversations.md): what a resumed one starts with again (the model,
// the thinking level, the editor's MCP servers as ACP's JSON), and its title, the first
// line of its first prompt, for lists.
constexpr std::string_view kVersion7 = R"sql(
ALTER TABLE sessions ADD COLUMN model TEXT;
ALTER TABLE sessions ADD COLUMN thinking TEXT;
ALTER TABLE sessions ADD COLUMN mcp_servers TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN title TEXT;
)sql";

// The limits a session's container runs under and whether each holds on the machine
// (runtime/confinement.hpp), as JSON, once its container has started.
constexpr std::string_view kVersion8 = R"sql(
ALTER TABLE sessions ADD COLUMN limits TEXT NOT NULL DEFAULT '';
)sql";

// Who made each connection (docs/network.md, "Who made a connection"): the network log's
// entries name their connection, and each connection gets one row once the shim has said
// which process holds it (or why it cannot). A row per connection, not columns on every
// entry: the answer arrives after the connection's first entry may be written, and one
// connection carries many requests.
constexpr std::string_view kVersion9 = R"sql(
ALTER TABLE network_log ADD COLUMN connection INTEGER NOT NULL DEFAULT 0;
CREATE TABLE network_connections (
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    connection       INTEGER NOT NULL,
    pid              INTEGER,
    command          TEXT NOT NULL DEFAULT '',
    parents          TEXT NOT NULL DEFAULT '[]',
    tool_call_id     TEXT NOT NULL DEFAULT '',
    tool_call_title  TEXT NOT NULL DEFAULT '',
    note             TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, connection)
) STRICT, WITHOUT ROWID;
)sql";

// An agent's model and thinking level: the default of each new session of the agent (a
// session's own value wins; docs/domain-model.md). NULL: the harness's default, which
// is what every agent made before had.
constexpr std::string_view kVersion10 = R"sql(
ALTER TABLE agents ADD COLUMN model TEXT;
ALTER TABLE agents ADD COLUMN thinking TEXT;
)sql";

constexpr std::array<std::string_view, 10> kMigrations = {kVersion1, kVersion2, kVersion3, kVersion4, kVersion5,
                                                          kVersion6, kVersion7, kVersion8, kVersion9, kVersion10};

Result<void> ensure_migrations_table(sqlite::Database& db) {
    return db.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                   " version INTEGER PRIMARY KEY,"
                   " applied_at INTEGER NOT NULL) STRICT");
}

} // namespace

std::span<const std::string_view> migrations() { return kMigrations; }

Result<int> schema_version(sqlite::Database& db) {
    if (auto created = ensure_migrations_table(db); !created) return created.take_error();
    auto statement = db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!statement) return statement.take_error();
    auto row = statement->step();
    if (!row) return row.take_error();
    return static_cast<int>(statement->integer(0));
}

Result<int> migrate(sqlite::Database& db, std::span<const std::string_view> list,
                    const Clock& clock) {
    const int known = static_cast<int>(list.size());
    for (;;) {
        // The version is read inside the write transaction: if two handlerd start at
        // once, the second sees what the first applied and does not apply it again.
        if (auto created = ensure_migrations_table(db); !created) return created.take_error();
        auto transaction = sqlite::Transaction::begin(db, sqlite::Transaction::Kind::write);
        if (!transaction) return transaction.take_error();
        auto version = schema_version(db);
        if (!version) return version.take_error();
        if (*version > known)
            return make_error(ErrorCode::incompatible,
                              "the database " + db.file() + " has schema version " +
                                  std::to_string(*version) + ", but this handlerd knows versions "
                                  "up to " + std::to_string(known) +
                                  ": a newer handlerd has used it. Upgrade handlerd; do not "
                                  "delete the database, it holds your projects and agents");
        if (*version == known) return *version;

        const int next = *version + 1;
        if (auto applied = db.exec(list[static_cast<std::size_t>(*version)]); !applied)
            return make_error(applied.error().code,
                              "database migration " + std::to_string(next) + " failed: " +
                                  applied.error().message);
        auto record = db.prepare("INSERT INTO schema_migrations (version, applied_at) "
                                 "VALUES (?1, ?2)",
                                 next, clock.now_ms());
        if (!record) return record.take_error();
        if (auto inserted = record->run(); !inserted) return inserted.take_error();
        if (auto committed = transaction->commit(); !committed) return committed.take_error();
    }
}

} // namespace handler::store
