#include "store/store.hpp"

#include "store/migrations.hpp"
#include "store/validation.hpp"
#include "support/fakes.hpp"
#include "support/records.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <thread>
#include <sys/stat.h>

namespace handler::store {
namespace {

using handler::testing::session_of;

store::SessionChanges exited_with(std::int64_t code) {
    store::SessionChanges changes;
    changes.state = store::SessionState::exited;
    changes.exit_code = code;
    return changes;
}


namespace fs = std::filesystem;
using handler::testing::FakeClock;
using handler::testing::TempDir;

// Designated initializers would leave fields out and trip -Wmissing-field-initializers.
AgentChanges changes(std::optional<std::string> name = {},
                     std::optional<std::vector<std::string>> hosts = {},
                     std::optional<NetworkMode> mode = {},
                     std::optional<std::optional<std::string>> account = {}) {
    AgentChanges out;
    out.name = std::move(name);
    out.allowed_hosts = std::move(hosts);
    out.network_mode = mode;
    out.account = std::move(account);
    return out;
}

// A second, raw connection to the same file: what the test uses to look under the
// store's API (pragmas, row counts) and to plant faults.
class RawDb {
public:
    explicit RawDb(const fs::path& file) {
        if (sqlite3_open(file.c_str(), &db_) != SQLITE_OK) std::abort();
        sqlite3_busy_timeout(db_, 2000);
    }
    ~RawDb() { sqlite3_close(db_); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    void exec(const std::string& sql) {
        char* message = nullptr;
        ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
            << (message ? message : "");
    }
    std::string text(const std::string& sql) {
        sqlite3_stmt* statement = nullptr;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) return "?";
        std::string out;
        if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr)
            out = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
        sqlite3_finalize(statement);
        return out;
    }
    // EXPLAIN QUERY PLAN's details, one line each.
    std::string plan(const std::string& sql) {
        sqlite3_stmt* statement = nullptr;
        if (sqlite3_prepare_v2(db_, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &statement, nullptr) != SQLITE_OK)
            return "?";
        std::string out;
        while (sqlite3_step(statement) == SQLITE_ROW)
            out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, 3))) + "\n";
        sqlite3_finalize(statement);
        return out;
    }
    long long count(const std::string& table) {
        return std::stoll(text("SELECT COUNT(*) FROM " + table));
    }

private:
    sqlite3* db_ = nullptr;
};

class StoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto opened = Store::open(file(), clock_);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        store_ = std::move(*opened);
    }
    fs::path file() const { return dir_ / "data/handler.db"; }

    Project project(const std::string& path, std::optional<std::string> context = {}) {
        auto made = store_->create_project({fs::path(path).filename().string(), path, context, {}});
        EXPECT_TRUE(made.ok()) << made.error().message;
        return made.ok() ? *made : Project{};
    }

    TempDir dir_;
    FakeClock clock_;
    std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, OpensInWalModeWithAPrivateFileAndRecordsTheMigration) {
    struct stat info {};
    ASSERT_EQ(::stat(file().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(file().parent_path().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);

    RawDb raw(file());
    EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(store_->schema_version(), static_cast<int>(migrations().size()));
    EXPECT_EQ(raw.text("SELECT group_concat(version || ':' || applied_at) FROM schema_migrations"),
              "1:1700000000000,2:1700000000000,3:1700000000000,4:1700000000000,5:1700000000000,6:1700000000000,7:1700000000000,"
              "8:1700000000000,9:1700000000000,10:1700000000000");
}

TEST_F(StoreTest, ReopeningAppliesNothingTwice) {
    store_.reset();
    clock_.advance(1000);
    auto again = Store::open(file(), clock_);
    ASSERT_TRUE(again.ok()) << again.error().message;
    RawDb raw(file());
    EXPECT_EQ(raw.count("schema_migrations"), static_cast<int>(migrations().size()));
}

// A database made by the first handlerd (schema 1) keeps its sessions through every
// later migration, with the new columns at their defaults.
TEST(Migrations, LaterVersionsKeepTheSessionsOfVersion1) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    const std::array<std::string_view, 1> first = {migrations()[0]};
    ASSERT_TRUE(migrate(*db, first, clock).ok());
    ASSERT_TRUE(db->exec("INSERT INTO contexts (name, created_at) VALUES ('none', 0);"
                         "INSERT INTO projects (name, path, context_id, created_at) "
                         "VALUES ('p', '/srv/p', NULL, 0);"
                         "INSERT INTO sessions VALUES ('s_000001', NULL, 1, 'shell', 'exited', 3, 5, 6)")
                    .ok());
    auto version = migrate(*db, migrations(), clock);
    ASSERT_TRUE(version.ok()) << version.error().message;
    EXPECT_EQ(*version, static_cast<int>(migrations().size()));
    auto row = db->prepare("SELECT state, exit_code, mode, tty, image, container_id IS NULL "
                           "FROM sessions WHERE id = 's_000001'");
    ASSERT_TRUE(row.ok());
    ASSERT_TRUE(row->step().ok());
    EXPECT_EQ(row->text(0), "exited");
    EXPECT_EQ(row->integer(1), 3);
    EXPECT_EQ(row->text(2), "interactive");
    EXPECT_EQ(row->integer(3), 1);
    EXPECT_EQ(row->text(4), "");
    EXPECT_EQ(row->integer(5), 1);
}

TEST_F(StoreTest, RefusesADatabaseFromANewerHandlerd) {
    store_.reset();
    {
        RawDb raw(file());
        raw.exec("INSERT INTO schema_migrations VALUES (99, 0)");
    }
    auto again = Store::open(file(), clock_);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, ErrorCode::incompatible);
    EXPECT_NE(again.error().message.find("schema version 99"), std::string::npos);
    EXPECT_NE(again.error().message.find("Upgrade handlerd"), std::string::npos);
    EXPECT_NE(again.error().message.find(file().string()), std::string::npos);
}

TEST(StoreOpen, RefusesAFileThatIsNotADatabase) {
    TempDir dir;
    FakeClock clock;
    {
        std::FILE* f = std::fopen((dir / "handler.db").c_str(), "w");
        std::fputs("this is not a database, but it is long enough to have a header......", f);
        std::fclose(f);
    }
    auto store = Store::open(dir / "handler.db", clock);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.error().message.find("is damaged or not a database"), std::string::npos)
        << store.error().message;
}

TEST(Migrations, EachRunsInItsOwnTransaction) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    const std::array<std::string_view, 3> list = {
        "CREATE TABLE a (x INTEGER)",
        "CREATE TABLE b (x INTEGER); INSERT INTO missing VALUES (1)",
        "CREATE TABLE c (x INTEGER)",
    };
    auto version = migrate(*db, list, clock);
    ASSERT_FALSE(version.ok());
    EXPECT_NE(version.error().message.find("migration 2 failed"), std::string::npos);
    // The first is kept; the second left nothing behind, not even its first statement.
    EXPECT_EQ(*schema_version(*db), 1);
    EXPECT_TRUE(db->exec("SELECT * FROM a").ok());
    EXPECT_FALSE(db->exec("SELECT * FROM b").ok());

    const std::array<std::string_view, 2> fixed = {list[0], "CREATE TABLE b (x INTEGER)"};
    auto retried = migrate(*db, fixed, clock);
    ASSERT_TRUE(retried.ok()) << retried.error().message;
    EXPECT_EQ(*retried, 2);
}

TEST_F(StoreTest, ForeignKeysAreEnforced) {
    RawDb raw(file());
    // The store's own connection must refuse what a foreign key forbids; seen through
    // the effect: deleting a project cascades to its agents.
    auto p = project("/src/app");
    ASSERT_TRUE(store_->create_agent({p.id, "a", "shell", "", "", {}, NetworkMode::none, {"x.com"}, {}, {}, {}}).ok());
    ASSERT_TRUE(store_->delete_project(p.id).ok());
    EXPECT_EQ(raw.count("agents"), 0);
    EXPECT_EQ(raw.count("agent_allowed_hosts"), 0);
}

TEST_F(StoreTest, Contexts) {
    auto work = store_->create_context("Work");
    ASSERT_TRUE(work.ok()) << work.error().message;
    EXPECT_EQ(work->name, "Work");
    EXPECT_EQ(work->created_at, 1'700'000'000'000);

    auto duplicate = store_->create_context("work");
    ASSERT_FALSE(duplicate.ok());
    EXPECT_EQ(duplicate.error().code, ErrorCode::conflict);
    EXPECT_EQ(duplicate.error().message,
              "a context named 'Work' exists already (names ignore case)");

    auto invalid = store_->create_context("Wo/rk");
    ASSERT_FALSE(invalid.ok());
    EXPECT_EQ(invalid.error().code, ErrorCode::invalid_argument);

    ASSERT_TRUE(store_->create_context("Personal").ok());
    auto all = store_->list_contexts();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].name, "Personal");

    auto renamed = store_->rename_context(work->id, "Job");
    ASSERT_TRUE(renamed.ok());
    EXPECT_EQ(renamed->name, "Job");
    EXPECT_EQ(store_->rename_context(work->id, "PERSONAL").error().code, ErrorCode::conflict);
    EXPECT_EQ(store_->get_context(999).error().code, ErrorCode::not_found);

    project("/src/app", "job"); // lookups by name ignore case too
    auto in_use = store_->delete_context(work->id);
    ASSERT_FALSE(in_use.ok());
    EXPECT_EQ(in_use.error().code, ErrorCode::conflict);
    EXPECT_EQ(in_use.error().message, "context 'Job' is still used by 1 project(s) and 0 "
                                      "account(s); move them to another context first");
    EXPECT_TRUE(store_->delete_context(all->front().id).ok());
}

TEST_F(StoreTest, Projects) {
    ASSERT_TRUE(store_->create_context("Work").ok());
    auto app = store_->create_project({"app", "/src/app", "Work", {}});
    ASSERT_TRUE(app.ok()) << app.error().message;
    EXPECT_EQ(app->context, "Work");
    EXPECT_EQ(app->path, "/src/app");

    auto again = store_->create_project({"other", "/src/app", std::nullopt, {}});
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, ErrorCode::conflict);
    EXPECT_EQ(again.error().message,
              "the folder /src/app is already project 'app' (id " + std::to_string(app->id) + ")");

    auto unknown = store_->create_project({"x", "/src/x", "Nope", {}});
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
    EXPECT_EQ(unknown.error().message, "context 'Nope' does not exist; create it first");

    EXPECT_EQ(store_->create_project({"x", "src/x", std::nullopt, {}}).error().code,
              ErrorCode::invalid_argument);
    EXPECT_EQ(store_->create_project({"", "/src/x", std::nullopt, {}}).error().code,
              ErrorCode::invalid_argument);

    auto renamed = store_->update_project(app->id, {std::string("App"), std::nullopt, std::nullopt});
    ASSERT_TRUE(renamed.ok());
    EXPECT_EQ(renamed->name, "App");
    EXPECT_EQ(renamed->context, "Work");
    auto untagged = store_->update_project(app->id, {std::nullopt, std::optional<std::string>(), std::nullopt});
    ASSERT_TRUE(untagged.ok());
    EXPECT_FALSE(untagged->context.has_value());
    EXPECT_EQ(store_->list_projects()->size(), 1u);
    EXPECT_EQ(store_->get_project(12345).error().code, ErrorCode::not_found);
}

TEST_F(StoreTest, ProjectsKeepTheirAllowedHostsOnEveryRead) {
    auto app = store_->create_project({"app", "/src/app", std::nullopt,
                                       {"GitHub.com", "*.npmjs.org", "10.0.0.5:8443"}});
    ASSERT_TRUE(app.ok()) << app.error().message;
    const std::vector<std::string> hosts = {"github.com", "*.npmjs.org", "10.0.0.5:8443"};
    EXPECT_EQ(app->allowed_hosts, hosts);
    EXPECT_EQ(store_->get_project(app->id)->allowed_hosts, hosts);
    EXPECT_EQ(store_->list_projects()->front().allowed_hosts, hosts);
    EXPECT_EQ((**store_->find_project_by_path("/src/app")).allowed_hosts, hosts);
    EXPECT_EQ((**store_->find_project_containing("/src/app/x")).allowed_hosts, hosts);
    // Each project reads its own list, and an agent's list is not a project's.
    auto other = project("/src/other");
    EXPECT_TRUE(other.allowed_hosts.empty());
    ASSERT_TRUE(store_->create_agent({app->id, "a", "codex", "", "", {}, NetworkMode::filtered,
                                      {"agent.example"}, {}, {}, {}})
                    .ok());
    EXPECT_EQ(store_->get_project(app->id)->allowed_hosts, hosts);
    EXPECT_TRUE(store_->get_project(other.id)->allowed_hosts.empty());

    // A change of name keeps the list; a new list replaces it whole.
    auto renamed = store_->update_project(app->id, {std::string("App"), std::nullopt, std::nullopt});
    ASSERT_TRUE(renamed.ok());
    EXPECT_EQ(renamed->allowed_hosts, hosts);
    auto replaced = store_->update_project(
        app->id, {std::nullopt, std::nullopt, std::vector<std::string>{"PyPI.org"}});
    ASSERT_TRUE(replaced.ok()) << replaced.error().message;
    EXPECT_EQ(replaced->allowed_hosts, std::vector<std::string>{"pypi.org"});
    EXPECT_EQ(replaced->name, "App");
    auto cleared = store_->update_project(
        app->id, {std::nullopt, std::nullopt, std::vector<std::string>{}});
    ASSERT_TRUE(cleared.ok());
    EXPECT_TRUE(cleared->allowed_hosts.empty());
    EXPECT_TRUE(store_->get_project(app->id)->allowed_hosts.empty());
}

TEST_F(StoreTest, InvalidProjectHostsAreRefusedAndWriteNothing) {
    RawDb raw(file());
    for (const auto& hosts : {std::vector<std::string>{"ok.com", "https://bad"},
                              std::vector<std::string>{"ok.com", "OK.com"},
                              std::vector<std::string>{"*"}}) {
        auto made = store_->create_project({"app", "/src/app", std::nullopt, hosts});
        ASSERT_FALSE(made.ok());
        EXPECT_EQ(made.error().code, ErrorCode::invalid_argument);
        EXPECT_TRUE(made.error().message.starts_with("allowed_hosts[")) << made.error().message;
    }
    EXPECT_EQ(raw.count("projects"), 0);
    EXPECT_EQ(raw.count("project_allowed_hosts"), 0);

    auto app = store_->create_project({"app", "/src/app", std::nullopt, {"one.com"}});
    ASSERT_TRUE(app.ok());
    auto invalid = store_->update_project(
        app->id, {std::string("renamed"), std::nullopt, std::vector<std::string>{"two.com", "a b"}});
    ASSERT_FALSE(invalid.ok());
    EXPECT_EQ(invalid.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(invalid.error().message.starts_with("allowed_hosts[1]")) << invalid.error().message;
    auto after = store_->get_project(app->id);
    EXPECT_EQ(after->name, "app");
    EXPECT_EQ(after->allowed_hosts, std::vector<std::string>{"one.com"});
    EXPECT_EQ(store_->update_project(999, {std::nullopt, std::nullopt, std::vector<std::string>{}})
                  .error()
                  .code,
              ErrorCode::not_found);
}

// The project row and its hosts are one transaction, as for agents; deleting the
// project deletes its hosts.
TEST_F(StoreTest, AFailureHalfWayThroughAProjectWritesNothingAndDeleteCascades) {
    {
        RawDb raw(file());
        raw.exec("CREATE TRIGGER boom BEFORE INSERT ON project_allowed_hosts "
                 "WHEN NEW.host = 'boom.example' BEGIN SELECT RAISE(ABORT, 'planted fault'); END");
    }
    auto made = store_->create_project(
        {"app", "/src/app", std::nullopt, {"one.com", "two.com", "boom.example"}});
    ASSERT_FALSE(made.ok());
    EXPECT_NE(made.error().message.find("planted fault"), std::string::npos);
    RawDb raw(file());
    EXPECT_EQ(raw.count("projects"), 0);
    EXPECT_EQ(raw.count("project_allowed_hosts"), 0);

    auto app = store_->create_project({"app", "/src/app", std::nullopt, {"one.com", "two.com"}});
    ASSERT_TRUE(app.ok()) << app.error().message;
    auto updated = store_->update_project(
        app->id, {std::string("renamed"), std::nullopt,
                  std::vector<std::string>{"three.com", "boom.example"}});
    ASSERT_FALSE(updated.ok());
    auto after = store_->get_project(app->id);
    EXPECT_EQ(after->name, "app");
    EXPECT_EQ(after->allowed_hosts, (std::vector<std::string>{"one.com", "two.com"}));

    ASSERT_TRUE(store_->delete_project(app->id).ok());
    EXPECT_EQ(raw.count("project_allowed_hosts"), 0);
}

TEST_F(StoreTest, FindsTheDeepestProjectContainingAPath) {
    auto outer = project("/src/app");
    auto inner = project("/src/app/vendor/lib");
    project("/src/apple");

    auto found = store_->find_project_containing("/src/app/vendor/lib/x/y.cpp");
    ASSERT_TRUE(found.ok() && found->has_value());
    EXPECT_EQ((*found)->id, inner.id);
    EXPECT_EQ((**store_->find_project_containing("/src/app")).id, outer.id);
    EXPECT_EQ((**store_->find_project_containing("/src/app/src")).id, outer.id);
    EXPECT_NE((**store_->find_project_containing("/src/apple/x")).id, outer.id);
    EXPECT_FALSE(store_->find_project_containing("/src/ap")->has_value());
    EXPECT_FALSE(store_->find_project_containing("/elsewhere")->has_value());
    EXPECT_EQ((**store_->find_project_by_path("/src/app")).id, outer.id);
    EXPECT_FALSE(store_->find_project_by_path("/src/app/vendor")->has_value());
}

TEST_F(StoreTest, Accounts) {
    ASSERT_TRUE(store_->create_context("Personal").ok());
    auto account =
        store_->create_account({"claude-perso", "claude-subscription", "Personal", std::nullopt});
    ASSERT_TRUE(account.ok()) << account.error().message;
    EXPECT_EQ(account->context, "Personal");
    EXPECT_FALSE(account->base_url.has_value());
    EXPECT_EQ(store_->create_account({"claude-perso", "ollama", std::nullopt, std::nullopt})
                  .error()
                  .code,
              ErrorCode::conflict);
    EXPECT_EQ(store_->create_account({"x", "aws", std::nullopt, std::nullopt}).error().code,
              ErrorCode::invalid_argument);
    EXPECT_EQ(store_->create_account({"bad name", "ollama", std::nullopt, std::nullopt}).error().code,
              ErrorCode::invalid_argument);

    auto changed = store_->update_account(account->id, {std::string("claude-home"),
                                                        std::string("anthropic-api-key"),
                                                        std::optional<std::string>(),
                                                        std::nullopt});
    ASSERT_TRUE(changed.ok()) << changed.error().message;
    EXPECT_EQ(changed->name, "claude-home");
    EXPECT_EQ(changed->kind, "anthropic-api-key");
    EXPECT_FALSE(changed->context.has_value());
    EXPECT_EQ(store_->list_accounts()->size(), 1u);
    EXPECT_TRUE(store_->delete_account(account->id).ok());
    EXPECT_EQ(store_->delete_account(account->id).error().code, ErrorCode::not_found);
}

NewAccount new_account(std::string name, std::string kind,
                       std::optional<std::string> base_url = std::nullopt) {
    return {std::move(name), std::move(kind), std::nullopt, std::move(base_url)};
}

AccountChanges account_changes(std::optional<std::string> name, std::optional<std::string> kind,
                               std::optional<std::string> base_url) {
    return {std::move(name), std::move(kind), std::nullopt, std::move(base_url)};
}

TEST_F(StoreTest, LocalAccountsGetTheirServersDefaultUrl) {
    auto ollama = store_->create_account(new_account("local", "ollama"));
    ASSERT_TRUE(ollama.ok()) << ollama.error().message;
    EXPECT_EQ(ollama->base_url, "http://127.0.0.1:11434");
    auto llama = store_->create_account(new_account("llama", "llama-cpp"));
    ASSERT_TRUE(llama.ok()) << llama.error().message;
    EXPECT_EQ(llama->base_url, "http://127.0.0.1:8080");

    // Every read path carries the column.
    EXPECT_EQ(store_->get_account(ollama->id)->base_url, "http://127.0.0.1:11434");
    auto all = store_->list_accounts();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].base_url, "http://127.0.0.1:8080");
    EXPECT_EQ((*all)[1].base_url, "http://127.0.0.1:11434");
    auto renamed = store_->update_account(ollama->id, account_changes("renamed", {}, {}));
    ASSERT_TRUE(renamed.ok()) << renamed.error().message;
    EXPECT_EQ(renamed->base_url, "http://127.0.0.1:11434");
}

TEST_F(StoreTest, BaseUrlsAreStoredNormalized) {
    auto made = store_->create_account(new_account("gpu", "ollama", "HTTP://GPU-Box.LAN:11434/"));
    ASSERT_TRUE(made.ok()) << made.error().message;
    EXPECT_EQ(made->base_url, "http://gpu-box.lan:11434");
    RawDb raw(file());
    EXPECT_EQ(raw.text("SELECT base_url FROM accounts WHERE name = 'gpu'"), "http://gpu-box.lan:11434");

    auto moved = store_->update_account(made->id, account_changes({}, {}, "https://[::1]/v1/"));
    ASSERT_TRUE(moved.ok()) << moved.error().message;
    EXPECT_EQ(moved->base_url, "https://[::1]/v1");
    EXPECT_EQ(moved->kind, "ollama");
}

TEST_F(StoreTest, RefusedBaseUrlsWriteNothing) {
    RawDb raw(file());
    auto keyed = store_->create_account(new_account("a", "anthropic-api-key", "http://127.0.0.1:1"));
    ASSERT_FALSE(keyed.ok());
    EXPECT_EQ(keyed.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(keyed.error().message.rfind("base_url is only for llama-cpp and ollama accounts", 0),
              0u)
        << keyed.error().message;
    auto bad = store_->create_account(new_account("o", "ollama", "ftp://127.0.0.1"));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(raw.count("accounts"), 0);

    // An update that fails on its base_url leaves the name it would also have changed.
    auto local = store_->create_account(new_account("o", "ollama", "http://10.0.0.5:11434"));
    ASSERT_TRUE(local.ok()) << local.error().message;
    auto refused = store_->update_account(local->id,
                                          account_changes("p", {}, "http://user:pw@10.0.0.5"));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(refused.error().message.find("user:password@"), std::string::npos)
        << refused.error().message;
    auto unchanged = store_->get_account(local->id);
    EXPECT_EQ(unchanged->name, "o");
    EXPECT_EQ(unchanged->base_url, "http://10.0.0.5:11434");
    auto to_key_kind = store_->update_account(
        local->id, account_changes({}, "openai-api-key", "http://10.0.0.5:11434"));
    ASSERT_FALSE(to_key_kind.ok());
    EXPECT_EQ(store_->get_account(local->id)->kind, "ollama");
}

TEST_F(StoreTest, AKindChangeSetsOrClearsTheBaseUrl) {
    auto account = store_->create_account(new_account("box", "ollama", "http://10.0.0.5:11434"));
    ASSERT_TRUE(account.ok()) << account.error().message;

    // The same kind again changes nothing.
    auto same = store_->update_account(account->id, account_changes({}, "ollama", {}));
    ASSERT_TRUE(same.ok()) << same.error().message;
    EXPECT_EQ(same->base_url, "http://10.0.0.5:11434");

    auto keyed = store_->update_account(account->id, account_changes({}, "anthropic-api-key", {}));
    ASSERT_TRUE(keyed.ok()) << keyed.error().message;
    EXPECT_FALSE(keyed->base_url.has_value());
    RawDb raw(file());
    EXPECT_EQ(raw.text("SELECT base_url IS NULL FROM accounts"), "1");

    auto local = store_->update_account(account->id, account_changes({}, "llama-cpp", {}));
    ASSERT_TRUE(local.ok()) << local.error().message;
    EXPECT_EQ(local->base_url, "http://127.0.0.1:8080");

    auto given = store_->update_account(account->id,
                                        account_changes({}, "ollama", "http://Box:11434"));
    ASSERT_TRUE(given.ok()) << given.error().message;
    EXPECT_EQ(given->kind, "ollama");
    EXPECT_EQ(given->base_url, "http://box:11434");
}

TEST(Migrations, Version4GivesExistingLocalAccountsTheirDefaultUrl) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, migrations().first(3), clock).ok());
    ASSERT_TRUE(db->exec("INSERT INTO accounts (name, kind, created_at) VALUES "
                         "('o', 'ollama', 1), ('l', 'llama-cpp', 1), ('k', 'openai-api-key', 1)")
                    .ok());
    ASSERT_TRUE(migrate(*db, migrations(), clock).ok());
    auto statement = db->prepare("SELECT group_concat(name || '=' || IFNULL(base_url, '-'), ' ') "
                                 "FROM (SELECT * FROM accounts ORDER BY name)");
    ASSERT_TRUE(statement.ok());
    ASSERT_TRUE(statement->step().ok());
    EXPECT_EQ(statement->text(0), "k=- l=http://127.0.0.1:8080 o=http://127.0.0.1:11434");
}

// Entries logged before version 9 keep everything they had and read as untraced
// (connection 0, no origin); the new table starts empty.
TEST(Migrations, Version9LeavesEarlierNetworkEntriesUntraced) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, migrations().first(8), clock).ok());
    ASSERT_TRUE(db->exec("INSERT INTO projects (name, path, context_id, created_at) VALUES ('p', '/srv/p', NULL, 0);"
                         "INSERT INTO sessions (id, project_id, harness, state, created_at, updated_at) "
                         "VALUES ('s_000001', 1, 'shell', 'exited', 5, 6);"
                         "INSERT INTO network_log (id, session_id, at, host, port, method, verdict, secret) "
                         "VALUES (1, 's_000001', 7, 'pypi.org', 443, 'CONNECT', 'allow', 'anthropic')")
                    .ok());
    ASSERT_TRUE(migrate(*db, migrations(), clock).ok());
    auto statement = db->prepare("SELECT host, secret, connection, (SELECT COUNT(*) FROM network_connections) "
                                 "FROM network_log");
    ASSERT_TRUE(statement.ok());
    ASSERT_TRUE(statement->step().ok());
    EXPECT_EQ(statement->text(0), "pypi.org");
    EXPECT_EQ(statement->text(1), "anthropic");
    EXPECT_EQ(statement->integer(2), 0);
    EXPECT_EQ(statement->integer(3), 0);
}

// Agents made before version 10 have no model or thinking level (their sessions use the
// harness's defaults, as before) and keep everything else.
TEST(Migrations, Version10GivesExistingAgentsNoModelOrThinkingLevel) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, migrations().first(9), clock).ok());
    ASSERT_TRUE(db->exec("INSERT INTO projects (name, path, context_id, created_at) VALUES ('p', '/srv/p', NULL, 0);"
                         "INSERT INTO agents (project_id, name, harness, goal, network_mode, created_at, updated_at, "
                         "addons) VALUES (1, 'a', 'codex', 'review', 'none', 3, 4, 'x')")
                    .ok());
    auto version = migrate(*db, migrations(), clock);
    ASSERT_TRUE(version.ok()) << version.error().message;
    EXPECT_EQ(*version, 10);
    auto statement = db->prepare("SELECT name, goal, network_mode, addons, model IS NULL, thinking IS NULL FROM agents");
    ASSERT_TRUE(statement.ok());
    ASSERT_TRUE(statement->step().ok());
    EXPECT_EQ(statement->text(0), "a");
    EXPECT_EQ(statement->text(1), "review");
    EXPECT_EQ(statement->text(2), "none");
    EXPECT_EQ(statement->text(3), "x");
    EXPECT_EQ(statement->integer(4), 1);
    EXPECT_EQ(statement->integer(5), 1);
}

TEST_F(StoreTest, AgentsKeepTheirModelAndThinkingLevelUnderTheSessionRules) {
    auto p = project("/src/app");
    NewAgent agent;
    agent.project_id = p.id;
    agent.name = "a";
    agent.harness = "codex";
    agent.model = "gpt-5.1-codex";
    agent.thinking = "high";
    auto made = store_->create_agent(agent);
    ASSERT_TRUE(made.ok()) << made.error().message;
    EXPECT_EQ(made->model, "gpt-5.1-codex");
    EXPECT_EQ(made->thinking, "high");
    EXPECT_EQ(store_->get_agent(made->id)->model, "gpt-5.1-codex");

    agent.name = "b";
    agent.model = "--dangerous";
    std::string field;
    auto refused = store_->create_agent(agent, &field);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(field, "model");
    agent.model = std::nullopt;
    agent.thinking = "Max";
    field.clear();
    refused = store_->create_agent(agent, &field);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(field, "thinking");
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);

    AgentChanges change;
    change.thinking = std::optional<std::string>(); // back to the harness's default
    auto updated = store_->update_agent(made->id, change);
    ASSERT_TRUE(updated.ok()) << updated.error().message;
    EXPECT_EQ(updated->model, "gpt-5.1-codex");
    EXPECT_FALSE(updated->thinking);
    change = {};
    change.model = std::optional<std::string>("bad model");
    change.goal = "not saved";
    field.clear();
    auto bad = store_->update_agent(made->id, change, &field);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(field, "model");
    EXPECT_EQ(store_->get_agent(made->id)->goal, "");
}

// Which entry of a list, or which field a conflict is about, for the API's "field".
TEST_F(StoreTest, AWriteThatFailsOverOneFieldNamesIt) {
    auto p = project("/src/app");
    NewAgent agent;
    agent.project_id = p.id;
    agent.name = "a";
    agent.harness = "codex";
    ASSERT_TRUE(store_->create_agent(agent).ok());
    const auto field_of = [&](NewAgent changed) {
        std::string field;
        EXPECT_FALSE(store_->create_agent(changed, &field).ok());
        return field;
    };
    EXPECT_EQ(field_of(agent), "name"); // taken
    agent.name = "b";
    auto hosts = agent;
    hosts.allowed_hosts = {"a.com", "b.com", "A.com"};
    EXPECT_EQ(field_of(hosts), "allowed_hosts[2]");
    hosts.allowed_hosts = {"a.com", "not a host"};
    EXPECT_EQ(field_of(hosts), "allowed_hosts[1]");
    hosts.allowed_hosts = std::vector<std::string>(kMaxAllowedHosts + 1, "a.com");
    EXPECT_EQ(field_of(hosts), "allowed_hosts");
    auto addons = agent;
    addons.addons = {"x", "x"};
    EXPECT_EQ(field_of(addons), "addons[1]");
    auto account = agent;
    account.account = "ghost";
    EXPECT_EQ(field_of(account), "account");
    auto goal = agent;
    goal.goal = std::string(kMaxGoalBytes + 1, 'g');
    EXPECT_EQ(field_of(goal), "goal");
    std::string field;
    ProjectChanges rename;
    rename.name = "";
    EXPECT_FALSE(store_->update_project(p.id, rename, &field).ok());
    EXPECT_EQ(field, "name");
    field.clear();
    ProjectChanges context;
    context.context = std::optional<std::string>("Nowhere");
    EXPECT_FALSE(store_->update_project(p.id, context, &field).ok());
    EXPECT_EQ(field, "context");
    field.clear();
    EXPECT_TRUE(store_->update_project(p.id, ProjectChanges{}, &field).ok());
    EXPECT_EQ(field, "") << "a write that works names nothing";
}

TEST(Migrations, Version5GivesExistingAgentsAndSessionsNoAddons) {
    FakeClock clock;
    auto db = sqlite::Database::open(":memory:");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate(*db, migrations().first(4), clock).ok());
    ASSERT_TRUE(db->exec("INSERT INTO projects (name, path, context_id, created_at) VALUES ('p', '/srv/p', NULL, 0);"
                         "INSERT INTO agents (project_id, name, harness, created_at, updated_at) "
                         "VALUES (1, 'a', 'shell', 0, 0);"
                         "INSERT INTO sessions (id, agent_id, project_id, harness, state, created_at, updated_at, "
                         "model_hosts) VALUES ('s_000001', 1, 1, 'shell', 'exited', 5, 6, 'api.openai.com\n')")
                    .ok());
    ASSERT_TRUE(migrate(*db, migrations(), clock).ok());
    auto statement = db->prepare("SELECT g.addons, s.addon_hosts, s.model_hosts FROM agents g, sessions s");
    ASSERT_TRUE(statement.ok());
    ASSERT_TRUE(statement->step().ok());
    EXPECT_EQ(statement->text(0), "");
    EXPECT_EQ(statement->text(1), "");
    EXPECT_EQ(statement->text(2), "api.openai.com\n");
}

TEST_F(StoreTest, CreatesAgentsWithTheirHostsInOrder) {
    auto p = project("/src/app");
    clock_.set(5000);
    auto agent = store_->create_agent({p.id, "reviewer", "claude-code", "Review", "Be brief",
                                       std::nullopt, NetworkMode::filtered,
                                       {"GitHub.com", "*.npmjs.org", "localhost:8080"}, {}, {}, {}});
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    EXPECT_EQ(agent->name, "reviewer");
    EXPECT_EQ(agent->project_id, p.id);
    EXPECT_EQ(agent->goal, "Review");
    EXPECT_EQ(agent->instructions, "Be brief");
    EXPECT_EQ(agent->network_mode, NetworkMode::filtered);
    EXPECT_EQ(agent->allowed_hosts,
              (std::vector<std::string>{"github.com", "*.npmjs.org", "localhost:8080"}));
    EXPECT_EQ(agent->created_at, 5000);
    EXPECT_EQ(agent->updated_at, 5000);

    auto fetched = store_->get_agent(agent->id);
    ASSERT_TRUE(fetched.ok());
    EXPECT_EQ(fetched->allowed_hosts, agent->allowed_hosts);

    auto duplicate = store_->create_agent({p.id, "reviewer", "codex", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}});
    ASSERT_FALSE(duplicate.ok());
    EXPECT_EQ(duplicate.error().code, ErrorCode::conflict);
    EXPECT_EQ(duplicate.error().message, "project 'app' already has an agent named 'reviewer'");

    // The same name in another project is fine.
    auto other = project("/src/other");
    EXPECT_TRUE(store_->create_agent({other.id, "reviewer", "codex", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}}).ok());

    EXPECT_EQ(store_->list_agents()->size(), 2u);
    EXPECT_EQ(store_->list_agents({p.id, std::nullopt})->size(), 1u);
    EXPECT_EQ(store_->list_agents({std::nullopt, std::string("reviewer")})->size(), 2u);
    EXPECT_EQ(store_->list_agents({other.id, std::string("nobody")})->size(), 0u);
}

TEST_F(StoreTest, InvalidAgentsLeaveNoRow) {
    auto p = project("/src/app");
    RawDb raw(file());
    const struct {
        NewAgent agent;
        ErrorCode code;
    } cases[] = {
        {{p.id, "bad name", "codex", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}}, ErrorCode::invalid_argument},
        {{p.id, "a", "Codex!", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}}, ErrorCode::invalid_argument},
        {{p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {"ok.com", "https://bad"}, {}, {}, {}},
         ErrorCode::invalid_argument},
        {{p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {"ok.com", "OK.com"}, {}, {}, {}}, ErrorCode::invalid_argument},
        {{p.id, "a", "codex", std::string(kMaxGoalBytes + 1, 'g'), "", {}, NetworkMode::filtered, {}, {}, {}, {}},
         ErrorCode::invalid_argument},
        {{p.id + 100, "a", "codex", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}}, ErrorCode::not_found},
        {{p.id, "a", "codex", "", "", std::string("ghost"), NetworkMode::filtered, {"ok.com"}, {}, {}, {}}, ErrorCode::not_found},
        {{p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {}, {"Playwright"}, {}, {}}, ErrorCode::invalid_argument},
        {{p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {}, {"playwright", "playwright"}, {}, {}},
         ErrorCode::invalid_argument},
        // Learning is a session's mode (handler run --network learn), never an agent's.
        {{p.id, "a", "codex", "", "", {}, NetworkMode::learn, {}, {}, {}, {}}, ErrorCode::invalid_argument},
    };
    for (const auto& c : cases) {
        auto made = store_->create_agent(c.agent);
        ASSERT_FALSE(made.ok());
        EXPECT_EQ(made.error().code, c.code) << made.error().message;
    }
    EXPECT_EQ(raw.count("agents"), 0);
    EXPECT_EQ(raw.count("agent_allowed_hosts"), 0);
}

TEST_F(StoreTest, AnAccountMustShareTheProjectsContext) {
    ASSERT_TRUE(store_->create_context("Work").ok());
    ASSERT_TRUE(store_->create_context("Personal").ok());
    auto work_project = project("/src/y", "Personal");
    ASSERT_TRUE(store_->create_account({"x", "anthropic-api-key", "Work", std::nullopt}).ok());
    ASSERT_TRUE(store_->create_account({"untagged", "ollama", std::nullopt, std::nullopt}).ok());
    auto mine = store_->create_account({"mine", "ollama", "Personal", std::nullopt});
    ASSERT_TRUE(mine.ok());

    auto mismatch = store_->create_agent(
        {work_project.id, "a", "codex", "", "", std::string("x"), NetworkMode::filtered, {"h.com"}, {}, {}, {}});
    ASSERT_FALSE(mismatch.ok());
    EXPECT_EQ(mismatch.error().code, ErrorCode::conflict);
    EXPECT_EQ(mismatch.error().message,
              "account 'x' belongs to context 'Work' but project 'y' belongs to 'Personal'; "
              "pick an account of the project's context");

    auto untagged = store_->create_agent(
        {work_project.id, "a", "codex", "", "", std::string("untagged"), NetworkMode::filtered, {}, {}, {}, {}});
    ASSERT_FALSE(untagged.ok());
    EXPECT_EQ(untagged.error().message.rfind("account 'untagged' belongs to no context but "
                                             "project 'y' belongs to 'Personal'",
                                             0),
              0u);

    auto good = store_->create_agent(
        {work_project.id, "a", "codex", "", "", std::string("mine"), NetworkMode::filtered, {}, {}, {}, {}});
    ASSERT_TRUE(good.ok()) << good.error().message;
    EXPECT_EQ(good->account, "mine");

    // Switching to a mismatching account through an update is refused the same way.
    auto switched = store_->update_agent(good->id, changes({}, {}, {}, std::optional<std::string>("x")));
    ASSERT_FALSE(switched.ok());
    EXPECT_EQ(switched.error().code, ErrorCode::conflict);
    EXPECT_EQ(store_->get_agent(good->id)->account, "mine");

    // Moving the project or the account to another context would break the rule.
    auto moved = store_->update_project(work_project.id, {std::nullopt, std::string("Work"), std::nullopt});
    ASSERT_FALSE(moved.ok());
    EXPECT_EQ(moved.error().message,
              "project 'y' cannot move to context 'Work': its agent 'a' uses account 'mine', "
              "which belongs to context 'Personal'");
    auto moved_account = store_->update_account(
        mine->id, {std::nullopt, std::nullopt, std::string("Work"), std::nullopt});
    ASSERT_FALSE(moved_account.ok());
    EXPECT_EQ(moved_account.error().message,
              "account 'mine' cannot move to context 'Work': agent 'a' of project 'y', which "
              "belongs to context 'Personal', uses it");
    auto in_use = store_->delete_account(mine->id);
    ASSERT_FALSE(in_use.ok());
    EXPECT_EQ(in_use.error().message,
              "account 'mine' is used by agent 'a' of project 'y'; give them another account first");
}

TEST_F(StoreTest, UpdatesAgentsPartially) {
    auto p = project("/src/app");
    auto agent = store_->create_agent({p.id, "a", "codex", "g", "i", {}, NetworkMode::filtered,
                                       {"one.com", "two.com"}, {}, {}, {}});
    ASSERT_TRUE(agent.ok());

    clock_.advance(10);
    auto same = store_->update_agent(agent->id, {});
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->updated_at, agent->updated_at);

    auto changed = store_->update_agent(
        agent->id, changes("b", std::vector<std::string>{"three.com"}, NetworkMode::open));
    ASSERT_TRUE(changed.ok()) << changed.error().message;
    EXPECT_EQ(changed->name, "b");
    EXPECT_EQ(changed->goal, "g");
    EXPECT_EQ(changed->harness, "codex");
    EXPECT_EQ(changed->network_mode, NetworkMode::open);
    EXPECT_EQ(changed->allowed_hosts, std::vector<std::string>{"three.com"});
    EXPECT_EQ(changed->created_at, agent->created_at);
    EXPECT_EQ(changed->updated_at, agent->updated_at + 10);

    auto invalid = store_->update_agent(agent->id, changes({}, std::vector<std::string>{"*"}));
    ASSERT_FALSE(invalid.ok());
    EXPECT_EQ(store_->get_agent(agent->id)->allowed_hosts, std::vector<std::string>{"three.com"});
    EXPECT_EQ(store_->update_agent(999, changes("x")).error().code,
              ErrorCode::not_found);

    ASSERT_TRUE(store_->delete_agent(agent->id).ok());
    EXPECT_EQ(store_->delete_agent(agent->id).error().code, ErrorCode::not_found);
    RawDb raw(file());
    EXPECT_EQ(raw.count("agent_allowed_hosts"), 0);
}

// A failure half-way through the writes of one agent (planted with a trigger that
// aborts on one host) rolls back the agent row too.
TEST_F(StoreTest, AFailureHalfWayThroughAnAgentWritesNothing) {
    auto p = project("/src/app");
    {
        RawDb raw(file());
        raw.exec("CREATE TRIGGER boom BEFORE INSERT ON agent_allowed_hosts "
                 "WHEN NEW.host = 'boom.example' BEGIN SELECT RAISE(ABORT, 'planted fault'); END");
    }
    auto made = store_->create_agent(
        {p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {"one.com", "two.com", "boom.example"}, {}, {}, {}});
    ASSERT_FALSE(made.ok());
    EXPECT_NE(made.error().message.find("planted fault"), std::string::npos);
    RawDb raw(file());
    EXPECT_EQ(raw.count("agents"), 0);
    EXPECT_EQ(raw.count("agent_allowed_hosts"), 0);

    auto agent = store_->create_agent({p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {"one.com", "two.com"}, {}, {}, {}});
    ASSERT_TRUE(agent.ok());
    clock_.advance(1);
    auto updated = store_->update_agent(
        agent->id, changes("renamed", std::vector<std::string>{"three.com", "boom.example"}));
    ASSERT_FALSE(updated.ok());
    auto after = store_->get_agent(agent->id);
    EXPECT_EQ(after->name, "a");
    EXPECT_EQ(after->allowed_hosts, (std::vector<std::string>{"one.com", "two.com"}));
    EXPECT_EQ(after->updated_at, agent->updated_at);
}

TEST_F(StoreTest, AgentsKeepTheirAddonsInOrderAndAnEditReplacesThem) {
    auto p = project("/src/app");
    auto agent = store_->create_agent(
        {p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {}, {"shopify-cli", "playwright"}, {}, {}});
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    EXPECT_EQ(agent->addons, (std::vector<std::string>{"shopify-cli", "playwright"}));
    EXPECT_EQ(store_->get_agent(agent->id)->addons, agent->addons);

    AgentChanges changes;
    changes.addons = std::vector<std::string>{"playwright"};
    auto edited = store_->update_agent(agent->id, changes);
    ASSERT_TRUE(edited.ok()) << edited.error().message;
    EXPECT_EQ(edited->addons, std::vector<std::string>{"playwright"});
    changes.addons = std::vector<std::string>{"playwright", "Bad"};
    auto refused = store_->update_agent(agent->id, changes);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("addons[1]: 'Bad'"), std::string::npos) << refused.error().message;
    EXPECT_EQ(store_->get_agent(agent->id)->addons, std::vector<std::string>{"playwright"}) << "nothing lost";
}

TEST_F(StoreTest, ASessionKeepsItsLimitsOnceRecorded) {
    auto p = project("/src/app");
    auto session = store_->create_session(session_of(std::nullopt, p.id, "codex"));
    ASSERT_TRUE(session.ok());
    EXPECT_EQ(session->limits, "") << "none until its container started";
    SessionChanges changes;
    changes.limits = R"([{"name":"tmp","value":"1024 MiB","holds":true,"how":"tmpfs"}])";
    ASSERT_TRUE(store_->update_session(session->id, changes).ok());
    SessionChanges later;
    later.state = SessionState::exited;
    ASSERT_TRUE(store_->update_session(session->id, later).ok());
    EXPECT_EQ(store_->get_session(session->id)->limits, *changes.limits) << "another change leaves them";
}

TEST_F(StoreTest, ASessionKeepsItsModelAndAddonHostsApart) {
    auto p = project("/src/app");
    auto session = store_->create_session(session_of(std::nullopt, p.id, "codex"));
    ASSERT_TRUE(session.ok());
    SessionChanges changes;
    changes.model_hosts = std::vector<std::string>{"api.openai.com"};
    changes.addon_hosts = std::vector<std::string>{"cdn.shopify.com:443", "*.playwright.dev"};
    ASSERT_TRUE(store_->update_session(session->id, changes).ok());
    auto read = store_->get_session(session->id);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->model_hosts, std::vector<std::string>{"api.openai.com"});
    EXPECT_EQ(read->addon_hosts, (std::vector<std::string>{"cdn.shopify.com:443", "*.playwright.dev"}));
    // A later change of something else leaves both lists as they were.
    ASSERT_TRUE(store_->update_session(session->id, exited_with(0)).ok());
    EXPECT_EQ(store_->get_session(session->id)->addon_hosts, read->addon_hosts);
}

TEST_F(StoreTest, Sessions) {
    auto p = project("/src/app");
    auto agent = store_->create_agent({p.id, "a", "codex", "", "", {}, NetworkMode::filtered, {}, {}, {}, {}});
    ASSERT_TRUE(agent.ok());

    auto session = store_->create_session(session_of(agent->id, p.id, "codex"));
    ASSERT_TRUE(session.ok()) << session.error().message;
    ASSERT_EQ(session->id.size(), 8u);
    EXPECT_EQ(session->id.substr(0, 2), "s_");
    EXPECT_EQ(session->id.find_first_not_of("0123456789abcdef", 2), std::string::npos);
    EXPECT_EQ(session->state, SessionState::starting);
    EXPECT_FALSE(session->exit_code.has_value());

    clock_.advance(50);
    auto exited = store_->update_session(session->id, exited_with(3));
    ASSERT_TRUE(exited.ok());
    EXPECT_EQ(exited->state, SessionState::exited);
    EXPECT_EQ(exited->exit_code, 3);
    EXPECT_EQ(exited->updated_at, session->created_at + 50);

    // Deleting the agent keeps the session's history, without the agent.
    ASSERT_TRUE(store_->delete_agent(agent->id).ok());
    auto kept = store_->get_session(session->id);
    ASSERT_TRUE(kept.ok());
    EXPECT_FALSE(kept->agent_id.has_value());

    EXPECT_EQ(store_->get_session("s_000000").error().code, ErrorCode::not_found);
    EXPECT_EQ(store_->create_session(session_of(std::nullopt, p.id + 1, "codex")).error().code,
              ErrorCode::not_found);

    // Deleting the project deletes its sessions.
    ASSERT_TRUE(store_->delete_project(p.id).ok());
    EXPECT_EQ(store_->list_sessions()->size(), 0u);
}

TEST(StoreSessions, RetriesWhenARandomIdIsTaken) {
    FakeClock clock;
    std::vector<std::uint64_t> draws = {0x7f3a2c, 0x7f3a2c, 0x123456};
    std::size_t next = 0;
    StoreOptions options;
    options.random = [&] { return draws[std::min(next++, draws.size() - 1)]; };
    auto store = Store::open_in_memory(clock, options);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto p = (*store)->create_project({"app", "/src/app", std::nullopt, {}});
    ASSERT_TRUE(p.ok());
    auto first = (*store)->create_session(session_of(std::nullopt, p->id, "codex"));
    auto second = (*store)->create_session(session_of(std::nullopt, p->id, "codex"));
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(first->id, "s_7f3a2c");
    EXPECT_EQ(second->id, "s_123456");
}

TEST(StoreMemory, InMemoryDatabaseWorks) {
    FakeClock clock;
    auto store = Store::open_in_memory(clock);
    ASSERT_TRUE(store.ok()) << store.error().message;
    EXPECT_TRUE((*store)->create_context("Work").ok());
    EXPECT_EQ((*store)->list_contexts()->size(), 1u);
}

TEST_F(StoreTest, PluginStorage) {
    plugins::PluginStorage& storage = *store_;
    EXPECT_FALSE(storage.get("codex", "k")->has_value());
    const std::string binary("a\0b\xff", 4);
    ASSERT_TRUE(storage.set("codex", "k", binary).ok());
    EXPECT_EQ(storage.get("codex", "k")->value(), binary);
    ASSERT_TRUE(storage.set("codex", "k", "v2").ok());
    EXPECT_EQ(storage.get("codex", "k")->value(), "v2");
    EXPECT_FALSE(storage.get("pi", "k")->has_value()); // per plugin
    ASSERT_TRUE(storage.remove("codex", "k").ok());
    EXPECT_FALSE(storage.get("codex", "k")->has_value());
    EXPECT_TRUE(storage.remove("codex", "k").ok()); // removing nothing is fine

    EXPECT_EQ(storage.set("", "k", "v").error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(storage.set("codex", "", "v").error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(storage.set("codex", "k", std::string(kMaxPluginValueBytes + 1, 'x')).error().code,
              ErrorCode::too_large);
}

// Plugins use their storage from threads of their own while the io thread writes
// agents; neither may see the other's half-done transaction.
TEST_F(StoreTest, PluginStorageIsSafeFromOtherThreads) {
    auto p = project("/src/app");
    std::vector<std::thread> plugins;
    for (int t = 0; t < 4; ++t)
        plugins.emplace_back([this, t] {
            for (int i = 0; i < 100; ++i)
                EXPECT_TRUE(store_->set("p" + std::to_string(t), "k" + std::to_string(i), "v").ok());
        });
    for (int i = 0; i < 50; ++i)
        EXPECT_TRUE(store_->create_agent({p.id, "a" + std::to_string(i), "codex", "", "", {},
                                          NetworkMode::filtered, {"one.com", "two.com"}, {}, {}, {}})
                        .ok());
    for (auto& thread : plugins) thread.join();
    RawDb raw(file());
    EXPECT_EQ(raw.count("plugin_storage"), 400);
    EXPECT_EQ(raw.count("agents"), 50);
    EXPECT_EQ(raw.count("agent_allowed_hosts"), 100);
}

TEST_F(StoreTest, NetworkEntriesAreRecordedFinishedListedAndGoWithTheirSession) {
    auto p = project("/srv/network-log-test");
    auto session = store_->create_session(session_of(std::nullopt, p.id, "shell"));
    ASSERT_TRUE(session.ok()) << session.error().message;
    NetworkEntry entry;
    entry.session_id = session->id;
    entry.at = 10;
    entry.host = "pypi.org";
    entry.port = 443;
    entry.method = "CONNECT";
    entry.verdict = "learned";
    entry.rule = "learn mode";
    ASSERT_EQ(store_->last_network_entry_id().value(), 0);
    const std::int64_t first = 1;
    entry.id = first;
    std::vector<NetworkEntry> batch{entry};
    entry.id = 2;
    entry.at = 20;
    batch.push_back(entry);
    ASSERT_TRUE(store_->write_network_batch(batch, {}).ok());
    entry.id = 3;
    entry.host = "github.com";
    entry.verdict = "allow";
    entry.reason = "cut: the policy changed"; // an entry that ended before it was written
    entry.bytes_down = 7;
    entry.ended_at = 25;
    ASSERT_TRUE(store_->write_network_batch({entry}, {{first, 100, 2000, "", 30}}).ok());
    EXPECT_EQ(store_->last_network_entry_id().value(), 3);

    auto all = store_->network_log(session->id, 0, 100);
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ(all->at(0).bytes_down, 2000);
    EXPECT_EQ(all->at(0).ended_at, 30);
    EXPECT_FALSE(all->at(1).ended_at.has_value());
    EXPECT_EQ(all->at(2).bytes_down, 7);
    EXPECT_EQ(all->at(2).reason, "cut: the policy changed");
    EXPECT_EQ(store_->network_log(session->id, first, 100)->size(), 2u) << "after an id";

    auto learned = store_->learned_hosts(session->id);
    ASSERT_TRUE(learned.ok());
    ASSERT_EQ(learned->size(), 1u);
    EXPECT_EQ(learned->at(0).host, "pypi.org");
    EXPECT_EQ(learned->at(0).count, 2);
    EXPECT_EQ(learned->at(0).first_seen, 10);
    EXPECT_EQ(learned->at(0).last_seen, 20);

    entry.verdict = "maybe";
    entry.id = 4;
    NetworkEntry fine = entry;
    fine.id = 5;
    fine.verdict = "deny";
    EXPECT_FALSE(store_->write_network_batch({fine, entry}, {}).ok()) << "the verdict is checked";
    EXPECT_EQ(store_->network_log(session->id, 0, 100)->size(), 3u) << "a failed batch writes nothing";
    ASSERT_TRUE(store_->delete_session(session->id).ok());
    EXPECT_TRUE(store_->network_log(session->id, 0, 100)->empty());
}


// Who made a connection: one row per connection, read with each of its entries; a later
// answer for the same connection replaces the first; gone with the session; one for a
// session already removed is skipped without failing the batch.
TEST_F(StoreTest, ConnectionOriginsAreReadWithTheirEntries) {
    auto p = project("/srv/origin-test");
    auto session = store_->create_session(session_of(std::nullopt, p.id, "shell"));
    ASSERT_TRUE(session.ok()) << session.error().message;
    NetworkEntry entry;
    entry.session_id = session->id;
    entry.host = "pypi.org";
    entry.port = 443;
    entry.method = "GET";
    entry.verdict = "allow";
    std::vector<NetworkEntry> batch;
    for (std::int64_t id : {1, 2, 3}) {
        entry.id = id;
        entry.connection = id == 3 ? 0 : 77; // two requests on one connection, one untraced
        batch.push_back(entry);
    }
    ASSERT_TRUE(store_->write_network_batch(batch, {}).ok());
    auto log = *store_->network_log(session->id, 0, 10);
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0].connection, 77);
    EXPECT_FALSE(log[0].origin) << "not answered yet";

    NetworkOrigin origin;
    origin.session_id = session->id;
    origin.connection = 77;
    origin.pid = 4242;
    origin.command = "curl -s https://pypi.org/simple/";
    origin.parents = R"([{"pid":4241,"command":"bash -c curl"}])";
    origin.tool_call_id = "toolu_1";
    origin.tool_call_title = "Bash: curl";
    NetworkOrigin elsewhere = origin;
    elsewhere.session_id = "s_gone";
    ASSERT_TRUE(store_->write_network_batch({}, {}, {origin, elsewhere}).ok());
    log = *store_->network_log(session->id, 0, 10);
    ASSERT_TRUE(log[0].origin && log[1].origin);
    EXPECT_EQ(log[1].origin->pid, 4242);
    EXPECT_EQ(log[1].origin->command, origin.command);
    EXPECT_EQ(log[1].origin->parents, origin.parents);
    EXPECT_EQ(log[1].origin->tool_call_id, "toolu_1");
    EXPECT_EQ(log[1].origin->tool_call_title, "Bash: curl");
    EXPECT_FALSE(log[2].origin) << "an untraced entry has none";

    NetworkOrigin unknown;
    unknown.session_id = session->id;
    unknown.connection = 77;
    unknown.note = "unknown: the shim did not answer";
    ASSERT_TRUE(store_->write_network_batch({}, {}, {unknown}).ok());
    log = *store_->network_log(session->id, 0, 10);
    ASSERT_TRUE(log[0].origin);
    EXPECT_FALSE(log[0].origin->pid);
    EXPECT_EQ(log[0].origin->note, unknown.note);
    EXPECT_EQ(log[0].origin->parents, "[]");

    ASSERT_TRUE(store_->delete_session(session->id).ok());
    RawDb raw(file());
    EXPECT_EQ(raw.count("network_connections"), 0);
}

// A running session's policy comes from its agent; deleting the agent under it would
// leave the session on the project's list in filtered mode, more than a `none` agent
// allowed. So an agent with live sessions stays until they end.
TEST_F(StoreTest, AnAgentWithRunningSessionsIsNotDeleted) {
    auto p = project("/src/app");
    auto agent = store_->create_agent({p.id, "locked", "shell", "", "", {}, NetworkMode::none, {}, {}, {}, {}});
    ASSERT_TRUE(agent.ok()) << agent.error().message;
    auto session = store_->create_session(session_of(agent->id, p.id, "shell"));
    ASSERT_TRUE(session.ok());
    auto refused = store_->delete_agent(agent->id);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::conflict);
    EXPECT_EQ(refused.error().message, "agent 'locked' has running sessions (" + session->id +
                                           "); stop them first with `handler session stop ID`");
    EXPECT_TRUE(store_->get_agent(agent->id).ok());
    ASSERT_TRUE(store_->update_session(session->id, exited_with(0)).ok());
    EXPECT_TRUE(store_->delete_agent(agent->id).ok());
}

} // namespace
} // namespace handler::store

namespace handler::store {
namespace {

// Events are numbered per session from 1, read back after any seq, and go with their
// session.
TEST_F(StoreTest, SessionEventsAreNumberedPerSessionAndDeletedWithIt) {
    auto project = store_->create_project({"events", "/tmp/events-project", {}, {}});
    ASSERT_TRUE(project.ok()) << project.error().message;
    NewSession record;
    record.project_id = project->id;
    record.harness = "shell";
    auto first = store_->create_session(record);
    auto second = store_->create_session(record);
    ASSERT_TRUE(first.ok() && second.ok());
    auto added = store_->add_session_events(first->id, 5, {{"user_prompt", R"({"a":1})"}, {"result", R"({"b":2})"}});
    ASSERT_TRUE(added.ok()) << added.error().message;
    ASSERT_EQ(added->size(), 2u);
    EXPECT_EQ((*added)[0].seq, 1);
    EXPECT_EQ((*added)[1].seq, 2);
    ASSERT_TRUE(store_->add_session_events(second->id, 6, {{"error", "{}"}}).ok());
    auto more = store_->add_session_events(first->id, 7, {{"agent_message_chunk", "{}"}});
    ASSERT_TRUE(more.ok());
    EXPECT_EQ(more->front().seq, 3);

    auto all = store_->session_events(first->id, 0, 100);
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ((*all)[0].kind, "user_prompt");
    EXPECT_EQ((*all)[0].payload, R"({"a":1})");
    EXPECT_EQ((*all)[0].at, 5);
    EXPECT_EQ((*all)[2].at, 7);
    auto after = store_->session_events(first->id, 1, 1);
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->size(), 1u);
    EXPECT_EQ(after->front().kind, "result");
    EXPECT_EQ(store_->session_events(second->id, 0, 100)->size(), 1u);

    ASSERT_TRUE(store_->delete_session(first->id).ok());
    EXPECT_TRUE(store_->session_events(first->id, 0, 100)->empty());
    EXPECT_EQ(store_->session_events(second->id, 0, 100)->size(), 1u);
}

// A long conversation is opened at its end and paged back: the events just before a seq,
// oldest first, of that session only.
TEST_F(StoreTest, SessionEventsPageBackFromASeqOrTheEnd) {
    auto made = store_->create_project({"paging", "/tmp/paging-project", {}, {}});
    ASSERT_TRUE(made.ok()) << made.error().message;
    NewSession record;
    record.project_id = made->id;
    record.harness = "shell";
    auto session = store_->create_session(record);
    auto other = store_->create_session(record);
    ASSERT_TRUE(session.ok() && other.ok());
    std::vector<std::pair<std::string, std::string>> events;
    for (int index = 1; index <= 25; ++index)
        events.emplace_back("agent_message_chunk", R"({"n":)" + std::to_string(index) + "}");
    ASSERT_TRUE(store_->add_session_events(session->id, 9, events).ok());
    ASSERT_TRUE(store_->add_session_events(other->id, 9, {{"error", "{}"}, {"result", "{}"}}).ok());
    const auto seqs = [](const Result<std::vector<SessionEvent>>& page) {
        std::vector<std::int64_t> out;
        if (page) for (const auto& event : *page) out.push_back(event.seq);
        return out;
    };

    auto page = store_->session_events_before(session->id, 11, 4);
    ASSERT_TRUE(page.ok()) << page.error().message;
    EXPECT_EQ(seqs(page), (std::vector<std::int64_t>{7, 8, 9, 10}));
    EXPECT_EQ(page->front().payload, R"({"n":7})");
    EXPECT_EQ(page->front().session_id, session->id);
    EXPECT_EQ(seqs(store_->session_events_before(session->id, Store::kSessionEventsEnd, 5)),
              (std::vector<std::int64_t>{21, 22, 23, 24, 25}));
    EXPECT_EQ(seqs(store_->session_events_before(session->id, 3, 10)), (std::vector<std::int64_t>{1, 2}))
        << "fewer than asked at the start";
    EXPECT_TRUE(store_->session_events_before(session->id, 1, 10)->empty());
    EXPECT_EQ(store_->session_events_before(session->id, 1000, 100)->size(), 25u);
    EXPECT_EQ(seqs(store_->session_events_before(other->id, Store::kSessionEventsEnd, 100)),
              (std::vector<std::int64_t>{1, 2}))
        << "another session's events are not in it";
    EXPECT_TRUE(store_->session_events_before("s_none", Store::kSessionEventsEnd, 10)->empty());

    // The page is a walk of the primary key backwards: no scan, no sort (store.cpp's query).
    RawDb raw(file());
    EXPECT_EQ(raw.plan("SELECT session_id, seq, at, kind, payload FROM session_events "
                       "WHERE session_id = 's_1' AND seq < 11 ORDER BY seq DESC LIMIT 4"),
              "SEARCH session_events USING PRIMARY KEY (session_id=? AND seq<?)\n");
}

} // namespace
} // namespace handler::store
