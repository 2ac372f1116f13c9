#include "api/routes.hpp"
#include "api/ui_login.hpp"

#include "secrets/secret_store.hpp"

#include "store/store.hpp"
#include "support/fakes.hpp"
#include "support/records.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <stdexcept>

namespace handler::api {
namespace {

using handler::testing::session_of;


namespace fs = std::filesystem;
namespace json = boost::json;
using handler::testing::contains;
using handler::testing::FakeClock;
using handler::testing::TempDir;

class RoutesTest : public ::testing::Test {
protected:
    void SetUp() override {
        fs::create_directories(dir_ / "home/u/src/app");
        fs::create_directories(dir_ / "home/u/src/other");
        auto opened = store::Store::open(database(), clock_);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        store_ = std::move(*opened);
        subscription_ = hub_.subscribe([this](const EventHub::Message& m, const Topic&) {
            events_.push_back(json::parse(*m).as_object());
        });
        routes_ = std::make_unique<Routes>(*store_, hub_, clock_, info());
    }

    DaemonInfo info() {
        DaemonInfo info;
        info.status = [] { return json::object{{"version", "0.1.0"}, {"pid", 42}}; };
        info.plugins = [] {
            plugins::PluginRecord record;
            record.id = "codex";
            record.kind = "harness";
            record.state = plugins::PluginState::refused;
            record.message = "wrong ABI";
            plugins::PluginRecord claude;
            claude.id = "claude-code";
            claude.kind = "harness";
            claude.state = plugins::PluginState::loaded;
            claude.harness = plugins::HarnessDescription{};
            claude.harness->models = {{"sonnet", "Sonnet (latest)"}};
            claude.harness->credentials = {{"anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic API key"}};
            claude.harness->thinking_levels = {"low", "max"};
            claude.harness->events = "structured";
            claude.harness->stdin_protocol = true;
            plugins::PluginRecord broken;
            broken.id = "broken";
            broken.kind = "harness";
            broken.state = plugins::PluginState::loaded;
            broken.description_error = "plugin 'broken': describe: \"models\" must be a list";
            return std::vector<plugins::PluginRecord>{record, claude, broken};
        };
        info.home_dir = dir_ / "home/u";
        return info;
    }

    fs::path database() const { return dir_ / "data/handler.db"; }
    std::string app() const { return fs::canonical(dir_ / "home/u/src/app").string(); }

    Response call(const std::string& method, const std::string& target,
                  const std::string& body = "") {
        return routes_->handle(Request{method, target, body, false, {}, {}});
    }
    static json::value parse(const Response& response) {
        return response.body.empty() ? json::value() : json::parse(response.body);
    }
    // The error message of a response, checking it has the documented error shape.
    static std::string message(const Response& response) {
        const auto body = parse(response);
        if (!body.is_object() || !body.as_object().contains("error")) return "<no error>";
        return std::string(body.at("error").at("message").as_string());
    }
    static std::string code(const Response& response) {
        return std::string(parse(response).at("error").at("code").as_string());
    }

    long long rows(const std::string& table) {
        sqlite3* db = nullptr;
        sqlite3_open(database().c_str(), &db);
        sqlite3_stmt* statement = nullptr;
        sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &statement, nullptr);
        sqlite3_step(statement);
        const long long n = sqlite3_column_int64(statement, 0);
        sqlite3_finalize(statement);
        sqlite3_close(db);
        return n;
    }
    void raw_exec(const std::string& sql) {
        sqlite3* db = nullptr;
        sqlite3_open(database().c_str(), &db);
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
            << sqlite3_errmsg(db);
        sqlite3_close(db);
    }

    std::int64_t make_project(const std::string& extra = "") {
        auto response = call("POST", "/api/v1/projects",
                             R"({"path":")" + app() + "\"" + extra + "}");
        EXPECT_EQ(response.status, 201u) << response.body;
        return parse(response).at("id").as_int64();
    }

    TempDir dir_;
    FakeClock clock_;
    std::unique_ptr<store::Store> store_;
    EventHub hub_;
    std::uint64_t subscription_ = 0;
    std::vector<json::object> events_;
    std::unique_ptr<Routes> routes_;
};

// ---- dispatch ---------------------------------------------------------------------

TEST_F(RoutesTest, StatusAndPluginsComeFromTheDaemon) {
    auto status = call("GET", "/api/v1/status");
    EXPECT_EQ(status.status, 200u);
    EXPECT_EQ(status.content_type, "application/json");
    EXPECT_EQ(parse(status).at("pid").as_int64(), 42);

    auto plugins = call("GET", "/api/v1/plugins");
    ASSERT_EQ(plugins.status, 200u);
    const auto body = parse(plugins);
    const auto& first = body.at("plugins").as_array().at(0);
    EXPECT_EQ(first.at("id").as_string(), "codex");
    EXPECT_EQ(first.at("state").as_string(), "refused");
    EXPECT_EQ(first.at("message").as_string(), "wrong ABI");
    EXPECT_FALSE(first.as_object().contains("harness")) << "a refused plugin describes nothing";
}

// `handler plugins list --json` shows what each loaded harness says of itself.
TEST_F(RoutesTest, PluginsListEachHarnesssModelsCredentialsAndThinkingLevels) {
    const auto body = parse(call("GET", "/api/v1/plugins"));
    const auto& list = body.at("plugins").as_array();
    ASSERT_EQ(list.size(), 3u);
    const auto& harness = list.at(1).at("harness");
    EXPECT_EQ(harness.at("models"), json::parse(R"j([{"id":"sonnet","label":"Sonnet (latest)"}])j"));
    EXPECT_EQ(harness.at("credentials"),
              json::parse(R"([{"kind":"anthropic-api-key","env":"ANTHROPIC_API_KEY","label":"Anthropic API key"}])"));
    EXPECT_EQ(harness.at("thinking_levels"), json::parse(R"(["low","max"])"));
    EXPECT_EQ(harness.at("modes"), json::array());
    EXPECT_EQ(harness.at("events").as_string(), "structured");
    EXPECT_EQ(harness.at("stdin").as_string(), "protocol");
    EXPECT_EQ(list.at(2).at("harness_error").as_string(), "plugin 'broken': describe: \"models\" must be a list");
    EXPECT_FALSE(list.at(2).as_object().contains("harness"));
}

TEST_F(RoutesTest, StatusWithoutADaemonIs503) {
    Routes bare(*store_, hub_, clock_, DaemonInfo{});
    auto response = bare.handle({"GET", "/api/v1/status", "", false, {}, {}});
    EXPECT_EQ(response.status, 503u);
    EXPECT_EQ(code(response), "unavailable");
    EXPECT_EQ(parse(bare.handle({"GET", "/api/v1/plugins", "", false, {}, {}})).at("plugins").as_array().size(), 0u);
}

TEST_F(RoutesTest, UnknownRoutesAre404) {
    for (const char* target : {"/", "/api", "/api/v1", "/api/v2/status", "/api/v1/nope",
                               "/api/v1/agents/1/extra", "/api/v1/agents/", "/status"}) {
        auto response = call("GET", target);
        EXPECT_EQ(response.status, 404u) << target;
        EXPECT_EQ(code(response), "not_found") << target;
    }
    EXPECT_EQ(message(call("GET", "/api/v1/nope")),
              "there is no route GET /api/v1/nope (see docs/api.md)");
}

TEST_F(RoutesTest, UnknownIdsAre404) {
    for (const char* target : {"/api/v1/agents/999", "/api/v1/agents/abc", "/api/v1/agents/-1",
                               "/api/v1/projects/999", "/api/v1/contexts/0",
                               "/api/v1/accounts/99999999999999999999", "/api/v1/sessions/s_000000"}) {
        auto response = call("GET", target);
        EXPECT_EQ(response.status, 404u) << target;
        EXPECT_EQ(code(response), "not_found") << target;
    }
    EXPECT_EQ(message(call("GET", "/api/v1/agents/999")), "agent 999 does not exist");
    EXPECT_EQ(call("PATCH", "/api/v1/agents/999", "{}").status, 404u);
    EXPECT_EQ(call("DELETE", "/api/v1/agents/999").status, 404u);
}

TEST_F(RoutesTest, WrongMethodsAre405WithAllow) {
    const struct {
        const char* method;
        const char* target;
        const char* allow;
    } cases[] = {
        {"POST", "/api/v1/status", "GET"},
        {"DELETE", "/api/v1/plugins", "GET"},
        {"PUT", "/api/v1/contexts", "GET, POST"},
        {"DELETE", "/api/v1/contexts/1", "GET"},
        {"PATCH", "/api/v1/projects", "GET, POST"},
        {"PUT", "/api/v1/projects/1", "GET, PATCH, DELETE"},
        {"DELETE", "/api/v1/accounts", "GET, POST"},
        {"PUT", "/api/v1/accounts/1", "GET, PATCH, DELETE"},
        {"PUT", "/api/v1/agents/1", "GET, PATCH, DELETE"},
        {"DELETE", "/api/v1/agents", "GET, POST"},
        {"PUT", "/api/v1/sessions", "GET, POST"},
        {"PUT", "/api/v1/sessions/s_000000", "GET, DELETE"},
        {"GET", "/api/v1/sessions/s_000000/stop", "POST"},
        {"POST", "/api/v1/events", "GET"},
    };
    for (const auto& c : cases) {
        auto response = call(c.method, c.target, "{}");
        EXPECT_EQ(response.status, 405u) << c.method << " " << c.target;
        EXPECT_EQ(response.headers["Allow"], c.allow) << c.method << " " << c.target;
        EXPECT_EQ(code(response), "invalid_argument");
    }
    EXPECT_EQ(message(call("POST", "/api/v1/status")),
              "POST is not allowed on /api/v1/status; use GET");
}

TEST_F(RoutesTest, EventsNeedsAWebSocketUpgrade) {
    auto response = call("GET", "/api/v1/events");
    EXPECT_EQ(response.status, 400u);
    EXPECT_NE(message(response).find("WebSocket"), std::string::npos);
}

TEST_F(RoutesTest, BadTargetsAndQueriesAre400) {
    EXPECT_EQ(call("GET", "/api/v1/ag ents").status, 400u);
    EXPECT_EQ(call("GET", "not a path").status, 400u);
    auto unknown = call("GET", "/api/v1/agents?projet=3");
    EXPECT_EQ(unknown.status, 400u);
    EXPECT_EQ(message(unknown), "unknown query parameter 'projet'; this route takes project, name");
    EXPECT_EQ(message(call("GET", "/api/v1/contexts?x=1")),
              "unknown query parameter 'x'; this route takes none");
    EXPECT_EQ(message(call("GET", "/api/v1/agents?name=a&name=b")),
              "query parameter 'name' is given twice");
}

// Found by tests/fuzz/fuzz_api_routes: an error quoting a target or a decoded query
// parameter that is not UTF-8 was not JSON (Boost.JSON writes strings as they are), so a
// client could not read why it was refused. Such bytes now read as U+FFFD.
TEST_F(RoutesTest, AnErrorQuotingBytesThatAreNotUtf8IsStillJson) {
    for (const std::string target : {"/api/v1/agents?projet%ff=3", "/api/v1/projec\xffs/1"}) {
        const auto response = call("GET", target);
        EXPECT_EQ(response.status, 400u) << target;
        boost::system::error_code error;
        json::parse(response.body, error);
        EXPECT_FALSE(error) << target << ": " << response.body;
    }
    EXPECT_EQ(message(call("GET", "/api/v1/agents?projet%ff=3")),
              "unknown query parameter 'projet\xef\xbf\xbd'; this route takes project, name");
}

// Found by fuzz_api_routes: a session id percent-decoded to bytes that are not text was
// handed to the session service, whose answer quoted it back (invalid JSON).
TEST_F(RoutesTest, ASessionIdThatIsNotAnIdNamesNoSession) {
    const std::vector<std::string> targets = {"/api/v1/sessions/s_0861%9602791682954/stop", "/api/v1/sessions/s%20x",
                                              "/api/v1/sessions/s_1%2F..%2F2/events",
                                              "/api/v1/sessions/" + std::string(65, 'a')};
    for (const std::string& target : targets) {
        for (const std::string method : {"GET", "POST", "DELETE"}) {
            const auto response = call(method, target);
            EXPECT_EQ(response.status, 404u) << method << " " << target;
            EXPECT_EQ(message(response), "no such session (session ids look like s_7f3a2c)") << method << " " << target;
        }
    }
}

// ---- bodies -----------------------------------------------------------------------

TEST_F(RoutesTest, MalformedBodiesAre400NamingWhereOrWhichField) {
    const struct {
        const char* body;
        const char* message;
    } cases[] = {
        {"", "the request body is empty; send a JSON object"},
        {"{\"name\": x}", "body is not valid JSON: syntax error at line 1, column 10"},
        {"{\n  \"name\":", "body is not valid JSON: incomplete JSON at line 2, column 10"},
        {"{\"name\":\"a\"} x", "body is not valid JSON: unexpected text after the value at line 1, column 14"},
        {"[\"Work\"]", "the request body must be a JSON object"},
        {"\"Work\"", "the request body must be a JSON object"},
        {"{}", "field 'name' is required"},
        {"{\"name\": 5}", "field 'name' must be a string"},
        {"{\"name\": null}", "field 'name' must be a string"},
        {"{\"name\": \"Work\", \"nmae\": 1}", "unknown field 'nmae'; this request takes name"},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/contexts", c.body);
        EXPECT_EQ(response.status, 400u) << c.body;
        EXPECT_EQ(code(response), "invalid_argument") << c.body;
        EXPECT_EQ(message(response), c.message) << c.body;
    }
    EXPECT_EQ(rows("contexts"), 0);
    EXPECT_TRUE(events_.empty());
}

// ---- contexts, projects, accounts -------------------------------------------------

TEST_F(RoutesTest, Contexts) {
    clock_.set(1234);
    auto made = call("POST", "/api/v1/contexts", R"({"name":"Work"})");
    ASSERT_EQ(made.status, 201u) << made.body;
    const auto id = parse(made).at("id").as_int64();
    EXPECT_EQ(made.headers["Location"], "/api/v1/contexts/" + std::to_string(id));
    EXPECT_EQ(parse(made), json::parse(R"({"id":)" + std::to_string(id) +
                                       R"(,"name":"Work","created_at":1234})"));
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].at("type"), "context.created");
    EXPECT_EQ(events_[0].at("data").at("name"), "Work");
    EXPECT_EQ(events_[0].at("at"), 1234);

    auto duplicate = call("POST", "/api/v1/contexts", R"({"name":"WORK"})");
    EXPECT_EQ(duplicate.status, 409u);
    EXPECT_EQ(code(duplicate), "conflict");
    EXPECT_EQ(call("POST", "/api/v1/contexts", R"({"name":"a/b"})").status, 400u);

    auto list = call("GET", "/api/v1/contexts");
    ASSERT_EQ(list.status, 200u);
    EXPECT_EQ(parse(list).at("contexts").as_array().size(), 1u);
    EXPECT_EQ(call("GET", "/api/v1/contexts/" + std::to_string(id)).status, 200u);
    EXPECT_EQ(events_.size(), 1u);
}

TEST_F(RoutesTest, ProjectsAreStoredCanonical) {
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Work"})").status, 201u);
    fs::create_directory_symlink(dir_ / "home/u/src/app", dir_ / "home/u/link");
    auto made = call("POST", "/api/v1/projects",
                     R"({"path":")" + (dir_ / "home/u/link/").string() + R"(","context":"Work"})");
    ASSERT_EQ(made.status, 201u) << made.body;
    const auto project = parse(made);
    EXPECT_EQ(project.at("path").as_string(), app());
    EXPECT_EQ(project.at("name").as_string(), "app"); // the folder's name
    EXPECT_EQ(project.at("context").as_string(), "Work");
    EXPECT_EQ(events_.back().at("type"), "project.created");

    auto again = call("POST", "/api/v1/projects", R"({"path":")" + app() + R"(","name":"x"})");
    EXPECT_EQ(again.status, 409u);
    EXPECT_EQ(rows("projects"), 1);

    auto inside = call("GET", "/api/v1/projects?path=" + app() + "/deep/er");
    ASSERT_EQ(inside.status, 200u);
    ASSERT_EQ(parse(inside).at("projects").as_array().size(), 1u);
    EXPECT_EQ(parse(inside).at("projects").as_array()[0].at("path").as_string(), app());
    auto outside = call("GET", "/api/v1/projects?path=" + (dir_ / "home/u/src/other").string());
    EXPECT_EQ(parse(outside).at("projects").as_array().size(), 0u);
    EXPECT_EQ(call("GET", "/api/v1/projects?path=relative").status, 400u);
    EXPECT_EQ(parse(call("GET", "/api/v1/projects")).at("projects").as_array().size(), 1u);
    EXPECT_EQ(call("GET", "/api/v1/projects/" + std::to_string(project.at("id").as_int64())).status,
              200u);
}

TEST_F(RoutesTest, ProjectsCarryTheirAllowedHosts) {
    clock_.set(55);
    auto made = call("POST", "/api/v1/projects",
                     R"({"path":")" + app() + R"(","allowed_hosts":["PyPI.org","*.npmjs.org:443"]})");
    ASSERT_EQ(made.status, 201u) << made.body;
    const auto project = parse(made).as_object();
    const auto id = project.at("id").as_int64();
    EXPECT_EQ(json::value(project),
              json::parse(R"({"id":)" + std::to_string(id) + R"(,"name":"app","path":")" + app() +
                          R"(","context":null,"allowed_hosts":["pypi.org","*.npmjs.org:443"],
                          "created_at":55})"));
    EXPECT_EQ(events_.back(), (json::object{{"type", "project.created"}, {"data", project}, {"at", 55}}));
    const std::string target = "/api/v1/projects/" + std::to_string(id);
    EXPECT_EQ(parse(call("GET", target)), json::value(project));
    EXPECT_EQ(parse(call("GET", "/api/v1/projects")).at("projects").at(0), json::value(project));
    EXPECT_EQ(parse(call("GET", "/api/v1/projects?path=" + app() + "/x")).at("projects").at(0),
              json::value(project));

    // Without the field, an empty list.
    auto other = call("POST", "/api/v1/projects",
                      R"({"path":")" + (dir_ / "home/u/src/other").string() + "\"}");
    ASSERT_EQ(other.status, 201u) << other.body;
    EXPECT_EQ(parse(other).at("allowed_hosts").as_array().size(), 0u);
}

TEST_F(RoutesTest, BadProjectHostsAreRefusedNamingTheFieldAndWriteNothing) {
    const struct {
        std::string hosts;
        std::string message;
    } cases[] = {
        {R"("x.com")", "field 'allowed_hosts' must be a list of strings"},
        {R"(["x.com",1])", "field 'allowed_hosts[1]' must be a string"},
        {R"(["x.com","http://y"])", "allowed_hosts[1] 'http://y' is not a host pattern"},
        {R"(["x.com","X.com"])", "allowed_hosts[1] 'X.com' is listed twice"},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/projects",
                             R"({"path":")" + app() + R"(","allowed_hosts":)" + c.hosts + "}");
        EXPECT_EQ(response.status, 400u) << c.hosts << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.message, 0), 0u) << c.hosts << " -> " << message(response);
    }
    EXPECT_EQ(rows("projects"), 0);
    EXPECT_EQ(rows("project_allowed_hosts"), 0);
    EXPECT_TRUE(events_.empty());

    const std::string target = "/api/v1/projects/" + std::to_string(make_project());
    events_.clear();
    for (const auto& c : cases) {
        auto response = call("PATCH", target, R"({"name":"renamed","allowed_hosts":)" + c.hosts + "}");
        EXPECT_EQ(response.status, 400u) << c.hosts << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.message, 0), 0u) << c.hosts << " -> " << message(response);
    }
    EXPECT_EQ(parse(call("GET", target)).at("name").as_string(), "app");
    EXPECT_EQ(rows("project_allowed_hosts"), 0);
    EXPECT_TRUE(events_.empty());
}

TEST_F(RoutesTest, PatchesProjects) {
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Work"})").status, 201u);
    const auto id = make_project(R"(,"allowed_hosts":["one.com"])");
    const std::string target = "/api/v1/projects/" + std::to_string(id);
    events_.clear();

    auto patched = call("PATCH", target, R"({"allowed_hosts":["two.com","Three.com"]})");
    ASSERT_EQ(patched.status, 200u) << patched.body;
    EXPECT_EQ(parse(patched).at("allowed_hosts"), json::parse(R"(["two.com","three.com"])"));
    EXPECT_EQ(parse(patched).at("name").as_string(), "app");
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].at("type"), "project.updated");
    EXPECT_EQ(events_[0].at("data"), parse(patched));

    auto moved = call("PATCH", target, R"({"name":"App","context":"Work"})");
    ASSERT_EQ(moved.status, 200u) << moved.body;
    EXPECT_EQ(parse(moved).at("name").as_string(), "App");
    EXPECT_EQ(parse(moved).at("context").as_string(), "Work");
    EXPECT_EQ(parse(moved).at("allowed_hosts"), json::parse(R"(["two.com","three.com"])"));
    auto untagged = call("PATCH", target, R"({"context":null,"allowed_hosts":[]})");
    ASSERT_EQ(untagged.status, 200u) << untagged.body;
    EXPECT_TRUE(parse(untagged).at("context").is_null());
    EXPECT_EQ(parse(untagged).at("allowed_hosts").as_array().size(), 0u);
    EXPECT_EQ(events_.size(), 3u);

    EXPECT_EQ(call("PATCH", target, "{}").status, 200u);
    EXPECT_EQ(events_.size(), 3u); // nothing changed, nothing published
    auto path_change = call("PATCH", target, R"({"path":"/elsewhere"})");
    EXPECT_EQ(path_change.status, 400u);
    EXPECT_EQ(message(path_change).rfind("field 'path' cannot be changed", 0), 0u);
    EXPECT_EQ(message(call("PATCH", target, R"({"colour":"red"})")),
              "unknown field 'colour'; this request takes name, context, allowed_hosts");
    EXPECT_EQ(call("PATCH", target, R"({"context":"Nope"})").status, 404u);
    EXPECT_EQ(call("PATCH", "/api/v1/projects/999", R"({"allowed_hosts":[]})").status, 404u);
    EXPECT_EQ(call("PATCH", "/api/v1/projects/abc", "{}").status, 404u);
    EXPECT_EQ(events_.size(), 3u);
}

TEST_F(RoutesTest, ProjectFoldersAreChecked) {
    std::ofstream(dir_ / "home/u/file.txt") << "x";
    const struct {
        std::string body;
        unsigned status;
        std::string message_start;
    } cases[] = {
        {R"({"path":"relative/x"})", 400, "field 'path' must be an absolute path"},
        {R"({"path":")" + (dir_ / "missing").string() + "\"}", 400, "the folder "},
        {R"({"path":")" + (dir_ / "home/u/file.txt").string() + "\"}", 400, ""},
        {R"({"path":")" + (dir_ / "home/u").string() + "\"}", 400, "the folder "},
        {R"({"path":")" + (dir_ / "home").string() + "\"}", 400, "the folder "},
        {R"({"path":")" + app() + R"(","context":"Nope"})", 404, "context 'Nope' does not exist"},
        {R"({"path":")" + app() + R"(","context":5})", 400, "field 'context' must be a string or null"},
        {R"({"path":7})", 400, "field 'path' must be a string"},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/projects", c.body);
        EXPECT_EQ(response.status, c.status) << c.body << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.message_start, 0), 0u) << message(response);
    }
    EXPECT_NE(message(call("POST", "/api/v1/projects",
                           R"({"path":")" + (dir_ / "home").string() + "\"}"))
                  .find("home folder"),
              std::string::npos);
    EXPECT_EQ(rows("projects"), 0);
}

TEST_F(RoutesTest, Accounts) {
    auto made = call("POST", "/api/v1/accounts", R"({"name":"claude-perso","kind":"claude-subscription"})");
    ASSERT_EQ(made.status, 201u) << made.body;
    EXPECT_TRUE(parse(made).at("context").is_null());
    EXPECT_EQ(events_.back().at("type"), "account.created");
    EXPECT_EQ(call("POST", "/api/v1/accounts", R"({"name":"x","kind":"aws"})").status, 400u);
    EXPECT_EQ(message(call("POST", "/api/v1/accounts", R"({"name":"x"})")),
              "field 'kind' is required");
    EXPECT_EQ(call("POST", "/api/v1/accounts", R"({"name":"claude-perso","kind":"ollama"})").status,
              409u);
    EXPECT_EQ(parse(call("GET", "/api/v1/accounts")).at("accounts").as_array().size(), 1u);
    EXPECT_EQ(call("GET", "/api/v1/accounts/" + std::to_string(parse(made).at("id").as_int64())).status,
              200u);
    EXPECT_TRUE(parse(made).at("base_url").is_null());
}

TEST_F(RoutesTest, LocalAccountsCarryABaseUrl) {
    auto defaulted = call("POST", "/api/v1/accounts", R"({"name":"o","kind":"ollama"})");
    ASSERT_EQ(defaulted.status, 201u) << defaulted.body;
    EXPECT_EQ(parse(defaulted).at("base_url"), "http://127.0.0.1:11434");
    auto given = call("POST", "/api/v1/accounts",
                      R"({"name":"l","kind":"llama-cpp","base_url":"HTTP://GPU.lan:8081/"})");
    ASSERT_EQ(given.status, 201u) << given.body;
    EXPECT_EQ(parse(given).at("base_url"), "http://gpu.lan:8081");
    EXPECT_EQ(events_.back().at("data").at("base_url"), "http://gpu.lan:8081");
    auto listed = parse(call("GET", "/api/v1/accounts")).at("accounts").as_array();
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed.at(0).at("base_url"), "http://gpu.lan:8081");
    EXPECT_EQ(listed.at(1).at("base_url"), "http://127.0.0.1:11434");
    EXPECT_EQ(parse(call("GET", "/api/v1/accounts/1")).at("base_url"), "http://127.0.0.1:11434");
    auto keyed_null = call("POST", "/api/v1/accounts",
                           R"({"name":"k","kind":"openai-api-key","base_url":null})");
    ASSERT_EQ(keyed_null.status, 201u) << keyed_null.body;
    EXPECT_TRUE(parse(keyed_null).at("base_url").is_null());
}

TEST_F(RoutesTest, RefusedBaseUrlsNameTheFieldAndCreateNothing) {
    const struct {
        const char* body;
        const char* message;
    } cases[] = {
        {R"({"name":"a","kind":"anthropic-api-key","base_url":"http://127.0.0.1:1"})",
         "base_url is only for llama-cpp and ollama accounts; anthropic-api-key accounts have none"},
        {R"({"name":"o","kind":"ollama","base_url":"127.0.0.1:11434"})",
         "base_url '127.0.0.1:11434' is not valid: it does not start with http:// or https://"},
        {R"({"name":"o","kind":"ollama","base_url":"http://host/?a=1"})",
         "base_url 'http://host/?a=1' is not valid: it has a query"},
        {R"({"name":"o","kind":"ollama","base_url":null})",
         "field 'base_url' cannot be null: ollama accounts need their server's URL; leave the "
         "field out for the default, http://127.0.0.1:11434"},
        {R"({"name":"o","kind":"ollama","base_url":11434})", "field 'base_url' must be a string or null"},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/accounts", c.body);
        EXPECT_EQ(response.status, 400u) << c.body;
        EXPECT_EQ(message(response).rfind(c.message, 0), 0u) << message(response);
    }
    EXPECT_EQ(rows("accounts"), 0);
    EXPECT_TRUE(events_.empty());
}

TEST_F(RoutesTest, PatchChangesAnAccountAndItsBaseUrl) {
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"o","kind":"ollama"})").status, 201u);
    auto moved = call("PATCH", "/api/v1/accounts/1", R"({"base_url":"http://10.0.0.5:11434/"})");
    ASSERT_EQ(moved.status, 200u) << moved.body;
    EXPECT_EQ(parse(moved).at("base_url"), "http://10.0.0.5:11434");
    EXPECT_EQ(events_.back().at("type"), "account.updated");

    auto cleared = call("PATCH", "/api/v1/accounts/1", R"({"base_url":null})");
    EXPECT_EQ(cleared.status, 400u);
    EXPECT_EQ(message(cleared), "field 'base_url' cannot be null: ollama accounts need their "
                                "server's URL; leave the field out to keep it");
    auto bad = call("PATCH", "/api/v1/accounts/1", R"({"name":"p","base_url":"http://a b"})");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_NE(message(bad).find("base_url 'http://a b' is not valid"), std::string::npos)
        << message(bad);
    EXPECT_EQ(parse(call("GET", "/api/v1/accounts/1")).at("name"), "o") << "nothing written";

    // A key kind has none; back to a local kind gets that kind's default.
    auto keyed = call("PATCH", "/api/v1/accounts/1", R"({"kind":"openai-api-key","base_url":null})");
    ASSERT_EQ(keyed.status, 200u) << keyed.body;
    EXPECT_TRUE(parse(keyed).at("base_url").is_null());
    auto refused = call("PATCH", "/api/v1/accounts/1", R"({"base_url":"http://127.0.0.1:1"})");
    EXPECT_EQ(refused.status, 400u);
    EXPECT_EQ(message(refused).rfind("base_url is only for llama-cpp and ollama accounts", 0), 0u);
    auto local = call("PATCH", "/api/v1/accounts/1", R"({"kind":"llama-cpp","name":"l"})");
    ASSERT_EQ(local.status, 200u) << local.body;
    EXPECT_EQ(parse(local).at("base_url"), "http://127.0.0.1:8080");
    EXPECT_EQ(parse(local).at("name"), "l");

    const auto before = events_.size();
    EXPECT_EQ(call("PATCH", "/api/v1/accounts/1", "{}").status, 200u);
    EXPECT_EQ(events_.size(), before) << "no change, no event";
    EXPECT_EQ(message(call("PATCH", "/api/v1/accounts/1", R"({"url":"x"})")),
              "unknown field 'url'; this request takes name, kind, context, base_url");
    EXPECT_EQ(call("PATCH", "/api/v1/accounts/9", R"({"name":"x"})").status, 404u);
}

// ---- agents -----------------------------------------------------------------------

TEST_F(RoutesTest, CreatesAnAgentAndPublishesIt) {
    const auto project = make_project();
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"key","kind":"anthropic-api-key"})").status,
              201u);
    clock_.set(777);
    auto made = call("POST", "/api/v1/agents", R"({"name":"reviewer","project":)" +
                                                   std::to_string(project) +
                                                   R"(,"harness":"claude-code","goal":"Review",
        "account":"key","network_mode":"none","allowed_hosts":["GitHub.com","*.npmjs.org:443"],
        "addons":["playwright"]})");
    ASSERT_EQ(made.status, 201u) << made.body;
    const auto agent = parse(made).as_object();
    const auto id = agent.at("id").as_int64();
    EXPECT_EQ(json::value(agent), json::parse(R"({"id":)" + std::to_string(id) + R"(,"name":"reviewer","project":)" +
                                 std::to_string(project) +
                                 R"(,"harness":"claude-code","goal":"Review","instructions":"",
        "account":"key","network_mode":"none","allowed_hosts":["github.com","*.npmjs.org:443"],
        "addons":["playwright"],"model":null,"thinking":null,"created_at":777,"updated_at":777})"));
    EXPECT_EQ(made.headers["Location"], "/api/v1/agents/" + std::to_string(id));
    ASSERT_FALSE(events_.empty());
    EXPECT_EQ(events_.back(), (json::object{{"type", "agent.created"}, {"data", agent}, {"at", 777}}));

    // Defaults, and the project given by path.
    auto second = call("POST", "/api/v1/agents",
                       R"({"name":"b","project":")" + app() + R"(","harness":"codex"})");
    ASSERT_EQ(second.status, 201u) << second.body;
    EXPECT_EQ(parse(second).at("network_mode").as_string(), "filtered");
    EXPECT_TRUE(parse(second).at("account").is_null());
    EXPECT_EQ(parse(second).at("allowed_hosts").as_array().size(), 0u);

    EXPECT_EQ(parse(call("GET", "/api/v1/agents")).at("agents").as_array().size(), 2u);
    EXPECT_EQ(parse(call("GET", "/api/v1/agents?project=" + std::to_string(project) + "&name=b"))
                  .at("agents").as_array().size(), 1u);
    EXPECT_EQ(parse(call("GET", "/api/v1/agents?project=" + app())).at("agents").as_array().size(),
              2u);
    EXPECT_EQ(call("GET", "/api/v1/agents?project=999").status, 404u);
    EXPECT_EQ(call("GET", "/api/v1/agents?project=abc").status, 400u);
    EXPECT_EQ(parse(call("GET", "/api/v1/agents/" + std::to_string(id))), json::value(agent));
}

// Issue 15, defect 2: "1.2.3" was stored and listed, then silently dropped by the policy;
// IPv6 literals could not be stored. Every rule the API takes is one the policy applies.
TEST_F(RoutesTest, HostRulesThePolicyCannotApplyAreRefusedWithTheirPositionAndIpv6IsTaken) {
    const auto project = make_project();
    const std::string p = std::to_string(project);
    events_.clear();
    for (const char* bad : {"1.2.3", "0x7f.1", "2130706433", "a.com:99999"}) {
        const std::string hosts = std::string(R"(["github.com",")") + bad + R"("])";
        auto made = call("POST", "/api/v1/agents",
                         R"({"name":"a","project":)" + p + R"(,"harness":"codex","allowed_hosts":)" + hosts + "}");
        EXPECT_EQ(made.status, 400u) << bad << " -> " << made.body;
        EXPECT_EQ(message(made).rfind("allowed_hosts[1] '" + std::string(bad) + "' is not a host pattern: ", 0), 0u)
            << message(made);
        auto project_made = call("POST", "/api/v1/projects",
                                 R"({"path":")" + app() + R"(","allowed_hosts":)" + hosts + "}");
        EXPECT_EQ(project_made.status, 400u) << bad << " -> " << project_made.body;
        EXPECT_EQ(message(project_made).rfind("allowed_hosts[1] '" + std::string(bad) + "'", 0), 0u)
            << message(project_made);
    }
    EXPECT_TRUE(handler::testing::contains(
        message(call("POST", "/api/v1/agents",
                     R"({"name":"a","project":)" + p + R"(,"harness":"codex","allowed_hosts":["1.2.3"]})")),
        "read as a number"));
    EXPECT_EQ(rows("agents"), 0);
    EXPECT_TRUE(events_.empty());

    auto made = call("POST", "/api/v1/agents",
                     R"({"name":"a","project":)" + p +
                         R"(,"harness":"codex","allowed_hosts":["FD00::1","[fd00::2]:443","[::1]:80"]})");
    ASSERT_EQ(made.status, 201u) << made.body;
    EXPECT_EQ(parse(made).at("allowed_hosts"), json::parse(R"(["fd00::1","[fd00::2]:443","[::1]:80"])"));
    const std::string agent = "/api/v1/agents/" + std::to_string(parse(made).at("id").as_int64());
    auto patched = call("PATCH", agent, R"({"allowed_hosts":["fd00::1","fd00:0::1"]})");
    EXPECT_EQ(patched.status, 400u) << patched.body;
    EXPECT_EQ(message(patched), "allowed_hosts[1] 'fd00:0::1' is listed twice");
    patched = call("PATCH", agent, R"({"allowed_hosts":["ok.com","127.1"]})");
    EXPECT_EQ(patched.status, 400u) << patched.body;
    EXPECT_EQ(message(patched).rfind("allowed_hosts[1] '127.1' is not a host pattern", 0), 0u) << message(patched);
    EXPECT_EQ(parse(call("GET", agent)).at("allowed_hosts").as_array().size(), 3u);

    const std::string target = "/api/v1/projects/" + p;
    auto project_patched = call("PATCH", target, R"({"allowed_hosts":["[fd00::1]:8443","0x7f.1"]})");
    EXPECT_EQ(project_patched.status, 400u) << project_patched.body;
    EXPECT_EQ(message(project_patched).rfind("allowed_hosts[1] '0x7f.1' is not a host pattern", 0), 0u);
    project_patched = call("PATCH", target, R"({"allowed_hosts":["[FD00::1]:8443"]})");
    ASSERT_EQ(project_patched.status, 200u) << project_patched.body;
    EXPECT_EQ(parse(project_patched).at("allowed_hosts"), json::parse(R"(["[fd00::1]:8443"])"));
}

TEST_F(RoutesTest, BadAgentRequestsWriteNothing) {
    const auto project = make_project();
    const std::string p = std::to_string(project);
    events_.clear();
    const struct {
        std::string body;
        unsigned status;
        std::string message;
    } cases[] = {
        {R"({"project":)" + p + R"(,"harness":"codex"})", 400, "field 'name' is required"},
        {R"({"name":"a","harness":"codex"})", 400, "field 'project' is required"},
        {R"({"name":"a","project":)" + p + "}", 400, "field 'harness' is required"},
        {R"({"name":"a","project":"abc","harness":"codex"})", 400,
         "field 'project' must be a project id (a positive integer) or an absolute path"},
        {R"({"name":"a","project":1.5,"harness":"codex"})", 400,
         "field 'project' must be a project id (a positive integer) or an absolute path"},
        {R"({"name":"a","project":999,"harness":"codex"})", 404, "project 999 does not exist"},
        {R"({"name":"a","project":"/nowhere","harness":"codex"})", 404,
         "no project is registered at /nowhere"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","allowed_hosts":"x.com"})", 400,
         "field 'allowed_hosts' must be a list of strings"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","allowed_hosts":["x.com",1]})", 400,
         "field 'allowed_hosts[1]' must be a string"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","allowed_hosts":["x.com","http://y"]})",
         400, "allowed_hosts[1] 'http://y' is not a host pattern"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","network_mode":"wide"})", 400,
         "field 'network_mode' must be 'none', 'filtered' or 'open', got 'wide'"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","goal":7})", 400,
         "field 'goal' must be a string"},
        {R"({"name":"a b","project":)" + p + R"(,"harness":"codex"})", 400,
         "agent name 'a b' is not valid"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","account":"ghost"})", 404,
         "account 'ghost' does not exist"},
        {R"({"name":"a","project":)" + p + R"(,"harness":"codex","colour":"red"})", 400,
         "unknown field 'colour'"},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/agents", c.body);
        EXPECT_EQ(response.status, c.status) << c.body << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.message, 0), 0u) << c.body << " -> " << message(response);
    }
    EXPECT_EQ(rows("agents"), 0);
    EXPECT_EQ(rows("agent_allowed_hosts"), 0);
    EXPECT_TRUE(events_.empty());
}

TEST_F(RoutesTest, ContextMismatchIs409AndWritesNothing) {
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Work"})").status, 201u);
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Personal"})").status, 201u);
    const auto project = make_project(R"(,"name":"y","context":"Personal")");
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"x","kind":"openai-api-key","context":"Work"})")
                  .status,
              201u);
    auto response = call("POST", "/api/v1/agents",
                         R"({"name":"a","project":)" + std::to_string(project) +
                             R"(,"harness":"codex","account":"x","allowed_hosts":["a.com","b.com"]})");
    EXPECT_EQ(response.status, 409u);
    EXPECT_EQ(code(response), "conflict");
    EXPECT_EQ(message(response),
              "account 'x' belongs to context 'Work' but project 'y' belongs to 'Personal'; pick "
              "an account of the project's context");
    EXPECT_EQ(rows("agents"), 0);
    EXPECT_EQ(rows("agent_allowed_hosts"), 0);
}

TEST_F(RoutesTest, AFailureInsideTheTransactionWritesNothing) {
    const auto project = make_project();
    raw_exec("CREATE TRIGGER boom BEFORE INSERT ON agent_allowed_hosts "
             "WHEN NEW.host = 'boom.example' BEGIN SELECT RAISE(ABORT, 'planted fault'); END");
    auto response = call("POST", "/api/v1/agents",
                         R"({"name":"a","project":)" + std::to_string(project) +
                             R"(,"harness":"codex","allowed_hosts":["a.com","boom.example"]})");
    EXPECT_GE(response.status, 400u);
    EXPECT_NE(message(response).find("planted fault"), std::string::npos);
    EXPECT_EQ(rows("agents"), 0);
    EXPECT_EQ(rows("agent_allowed_hosts"), 0);
}

TEST_F(RoutesTest, PatchesAndDeletesAgents) {
    const auto project = make_project();
    auto made = call("POST", "/api/v1/agents",
                     R"({"name":"a","project":)" + std::to_string(project) +
                         R"(,"harness":"codex","allowed_hosts":["one.com"]})");
    ASSERT_EQ(made.status, 201u);
    const std::string target = "/api/v1/agents/" + std::to_string(parse(made).at("id").as_int64());
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"k","kind":"ollama"})").status, 201u);
    events_.clear();

    clock_.advance(5);
    auto patched = call("PATCH", target,
                        R"({"goal":"new goal","account":"k","allowed_hosts":["two.com","three.com"]})");
    ASSERT_EQ(patched.status, 200u) << patched.body;
    EXPECT_EQ(parse(patched).at("goal").as_string(), "new goal");
    EXPECT_EQ(parse(patched).at("name").as_string(), "a");
    EXPECT_EQ(parse(patched).at("account").as_string(), "k");
    EXPECT_EQ(parse(patched).at("allowed_hosts"), json::parse(R"(["two.com","three.com"])"));
    EXPECT_EQ(parse(patched).at("updated_at").as_int64(), parse(made).at("updated_at").as_int64() + 5);
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].at("type"), "agent.updated");

    auto cleared = call("PATCH", target, R"({"account":null})");
    ASSERT_EQ(cleared.status, 200u);
    EXPECT_TRUE(parse(cleared).at("account").is_null());

    auto unchanged = call("PATCH", target, "{}");
    EXPECT_EQ(unchanged.status, 200u);
    EXPECT_EQ(events_.size(), 2u); // nothing changed, nothing published

    auto project_change = call("PATCH", target, R"({"project":2})");
    EXPECT_EQ(project_change.status, 400u);
    EXPECT_EQ(message(project_change).rfind("field 'project' cannot be changed", 0), 0u);
    auto bad_host = call("PATCH", target, R"({"name":"renamed","allowed_hosts":["*"]})");
    EXPECT_EQ(bad_host.status, 400u);
    EXPECT_EQ(parse(call("GET", target)).at("name").as_string(), "a");
    EXPECT_EQ(call("PATCH", target, R"({"goal":null})").status, 400u);
    EXPECT_EQ(call("PATCH", target, "not json").status, 400u);

    auto deleted = call("DELETE", target);
    EXPECT_EQ(deleted.status, 204u);
    EXPECT_TRUE(deleted.body.empty());
    EXPECT_EQ(events_.back().at("type"), "agent.deleted");
    EXPECT_EQ(call("GET", target).status, 404u);
    EXPECT_EQ(call("DELETE", target).status, 404u);
    EXPECT_EQ(rows("agent_allowed_hosts"), 0);
}

// ---- sessions ---------------------------------------------------------------------

TEST_F(RoutesTest, Sessions) {
    EXPECT_EQ(parse(call("GET", "/api/v1/sessions")).at("sessions").as_array().size(), 0u);
    const auto project = make_project();
    auto session = store_->create_session(session_of(std::nullopt, project, "codex"));
    ASSERT_TRUE(session.ok());
    auto list = parse(call("GET", "/api/v1/sessions")).at("sessions").as_array();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].at("id").as_string(), session->id);
    EXPECT_TRUE(list[0].at("agent").is_null());
    EXPECT_EQ(list[0].at("state").as_string(), "starting");
    EXPECT_TRUE(list[0].at("exit_code").is_null());
    EXPECT_EQ(parse(call("GET", "/api/v1/sessions/" + session->id)).at("project").as_int64(),
              project);

    // The hosts it may reach besides its agent's and project's lists.
    store::SessionChanges hosts;
    hosts.model_hosts = std::vector<std::string>{"api.openai.com"};
    hosts.addon_hosts = std::vector<std::string>{"cdn.example.com", "late.example.com:443"};
    ASSERT_TRUE(store_->update_session(session->id, hosts).ok());
    const auto shown = parse(call("GET", "/api/v1/sessions/" + session->id));
    EXPECT_EQ(shown.at("model_hosts"), (json::array{"api.openai.com"}));
    EXPECT_EQ(shown.at("addon_hosts"), (json::array{"cdn.example.com", "late.example.com:443"}));
}

// A conversation's events page forward from a seq (as before), back from one, or from the
// end; each page oldest first.
TEST_F(RoutesTest, SessionEventsPageForwardBackAndFromTheEnd) {
    const auto project = make_project();
    auto session = store_->create_session(session_of(std::nullopt, project, "claude-code"));
    ASSERT_TRUE(session.ok());
    std::vector<std::pair<std::string, std::string>> events;
    for (int index = 1; index <= 30; ++index)
        events.emplace_back("agent_message_chunk", R"({"content":{"type":"text","text":")" +
                                                       std::to_string(index) + R"("}})");
    ASSERT_TRUE(store_->add_session_events(session->id, 42, events).ok());
    const std::string target = "/api/v1/sessions/" + session->id + "/events";
    const auto seqs = [&](const std::string& query) {
        const auto response = call("GET", target + query);
        std::vector<std::int64_t> out;
        if (response.status != 200u) {
            ADD_FAILURE() << query << ": " << response.status << " " << message(response);
            return out;
        }
        // The parsed body is kept: a range-for over parse(...).at(...) would walk a temporary
        // that is gone before the loop starts.
        const auto body = parse(response);
        for (const auto& event : body.at("events").as_array()) out.push_back(event.at("seq").as_int64());
        return out;
    };
    using Seqs = std::vector<std::int64_t>;
    EXPECT_EQ(seqs("?after=27"), (Seqs{28, 29, 30}));
    EXPECT_EQ(seqs("?after=3&limit=2"), (Seqs{4, 5}));
    EXPECT_EQ(seqs("?before=11&limit=3"), (Seqs{8, 9, 10}));
    EXPECT_EQ(seqs("?limit=2&before=3"), (Seqs{1, 2}));
    EXPECT_EQ(seqs("?before=1"), Seqs{});
    EXPECT_EQ(seqs("?before=5").size(), 4u) << "the default limit, 1000, is more than there are";
    EXPECT_EQ(seqs("?tail=4"), (Seqs{27, 28, 29, 30}));
    EXPECT_EQ(seqs("?tail=10000").size(), 30u);
    EXPECT_EQ(seqs("?before=31&limit=0"), (Seqs{30})) << "limit is clamped to 1..10000, as with after";

    const auto page = parse(call("GET", target + "?tail=1")).at("events").as_array();
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].at("session").as_string(), session->id);
    EXPECT_EQ(page[0].at("at").as_int64(), 42);
    EXPECT_EQ(page[0].at("kind").as_string(), "agent_message_chunk");
    EXPECT_EQ(page[0].at("payload").at("content").at("text").as_string(), "30");
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_999999/events?tail=5").status, 404u);
}

TEST_F(RoutesTest, SessionEventsRefuseQueriesThatDoNotSayOnePage) {
    const auto project = make_project();
    auto session = store_->create_session(session_of(std::nullopt, project, "claude-code"));
    ASSERT_TRUE(session.ok());
    const std::string target = "/api/v1/sessions/" + session->id + "/events";
    const std::vector<std::pair<std::string, std::string>> refused = {
        {"?before=5&after=2", "query parameters 'after' and 'before' do not go together"},
        {"?after=2&before=5", "query parameters 'after' and 'before' do not go together"},
        {"?tail=5&limit=3", "query parameter 'tail' goes alone"},
        {"?tail=5&before=9", "query parameter 'tail' goes alone"},
        {"?after=1&tail=5", "query parameter 'tail' goes alone"},
        {"?tail=0", "query parameter 'tail' must be from 1 to 10000, not 0"},
        {"?tail=10001", "query parameter 'tail' must be from 1 to 10000, not 10001"},
        {"?tail=-1", "query parameter 'tail' must be a whole number"},
        {"?tail=", "query parameter 'tail' must be a whole number"},
        {"?tail=5x", "query parameter 'tail' must be a whole number"},
        {"?before=0", "query parameter 'before' must be a seq, 1 or more"},
        {"?before=-3", "query parameter 'before' must be a whole number"},
        {"?before=1.5", "query parameter 'before' must be a whole number"},
        {"?before=99999999999999999999", "query parameter 'before' must be a whole number"},
        {"?before=4&before=5", "query parameter 'before' is given twice"},
        {"?tail=4&tail=4", "query parameter 'tail' is given twice"},
        {"?limit=ten", "query parameter 'limit' must be a whole number"},
        {"?from=3", "unknown query parameter 'from'; this route takes after, before, limit, tail"},
    };
    for (const auto& [query, expected] : refused) {
        const auto response = call("GET", target + query);
        EXPECT_EQ(response.status, 400u) << query;
        EXPECT_EQ(code(response), "invalid_argument") << query;
        EXPECT_NE(message(response).find(expected), std::string::npos) << query << ": " << message(response);
    }
    // The network log takes after and limit only, as before.
    const auto network = call("GET", "/api/v1/sessions/" + session->id + "/network?before=3");
    EXPECT_EQ(network.status, 400u);
    EXPECT_EQ(message(network), "unknown query parameter 'before'; this route takes after, limit");
    EXPECT_EQ(call("GET", "/api/v1/sessions/" + session->id + "/network?after=0&limit=5").status, 200u);
}

// Each network log entry says who made its connection: the process and its parents,
// the tool call, or why neither is known.
TEST_F(RoutesTest, NetworkEntriesCarryTheirConnectionsOrigin) {
    const auto project = make_project();
    auto session = store_->create_session(session_of(std::nullopt, project, "claude-code"));
    ASSERT_TRUE(session.ok());
    std::vector<store::NetworkEntry> entries;
    for (std::int64_t id = 1; id <= 5; ++id) {
        store::NetworkEntry entry;
        entry.id = id;
        entry.session_id = session->id;
        entry.host = "example.com";
        entry.port = 443;
        entry.method = "CONNECT";
        entry.verdict = "allow";
        entry.connection = id == 5 ? 0 : 100 + id;
        entries.push_back(entry);
    }
    store::NetworkOrigin by_tool;
    by_tool.session_id = session->id;
    by_tool.connection = 101;
    by_tool.pid = 40;
    by_tool.command = "curl -s https://example.com";
    by_tool.parents = R"([{"pid":39,"command":"bash -c curl -s https://example.com"}])";
    by_tool.tool_call_id = "toolu_9";
    by_tool.tool_call_title = "Bash: curl -s https://example.com";
    store::NetworkOrigin by_harness = by_tool;
    by_harness.connection = 102;
    by_harness.pid = 10;
    by_harness.command = "claude -p hi";
    by_harness.parents = "[]";
    by_harness.tool_call_id.clear();
    by_harness.tool_call_title.clear();
    by_harness.note = "no tool call: the harness itself, or a process no running tool call started";
    store::NetworkOrigin unknown;
    unknown.session_id = session->id;
    unknown.connection = 103;
    unknown.note = "unknown: the shim did not answer within 2000 ms";
    ASSERT_TRUE(store_->write_network_batch(entries, {}, {by_tool, by_harness, unknown}).ok());

    const auto list = parse(call("GET", "/api/v1/sessions/" + session->id + "/network")).at("entries").as_array();
    ASSERT_EQ(list.size(), 5u);
    EXPECT_EQ(list[0].at("origin"), "tool_call");
    EXPECT_EQ(list[0].at("connection"), 101);
    EXPECT_EQ(list[0].at("process"), json::parse(R"({"pid":40,"command":"curl -s https://example.com",
        "parents":[{"pid":39,"command":"bash -c curl -s https://example.com"}]})"));
    EXPECT_EQ(list[0].at("tool_call"), json::parse(R"({"id":"toolu_9","title":"Bash: curl -s https://example.com"})"));
    EXPECT_EQ(list[1].at("origin"), "no_tool_call");
    EXPECT_EQ(list[1].at("process").at("pid"), 10);
    EXPECT_TRUE(list[1].at("tool_call").is_null());
    EXPECT_EQ(list[1].at("origin_note").as_string(), by_harness.note);
    EXPECT_EQ(list[2].at("origin"), "unknown");
    EXPECT_TRUE(list[2].at("process").is_null());
    EXPECT_EQ(list[2].at("origin_note").as_string(), unknown.note);
    EXPECT_EQ(list[3].at("origin"), "pending");
    EXPECT_EQ(list[4].at("origin"), "untraced");
}

// ---- failures on the server side --------------------------------------------------

TEST_F(RoutesTest, StoreFailuresAre500WithAMessage) {
    raw_exec("ALTER TABLE accounts RENAME TO accounts_moved");
    auto response = call("GET", "/api/v1/accounts");
    EXPECT_EQ(response.status, 500u);
    EXPECT_EQ(code(response), "internal");
    EXPECT_NE(message(response).find("accounts"), std::string::npos) << response.body;
}

TEST_F(RoutesTest, ExceptionsBecome500) {
    DaemonInfo info;
    info.status = []() -> json::object { throw std::runtime_error("status exploded"); };
    Routes routes(*store_, hub_, clock_, info);
    auto response = routes.handle({"GET", "/api/v1/status", "", false, {}, {}});
    EXPECT_EQ(response.status, 500u);
    EXPECT_EQ(message(response),
              "internal error while handling GET /api/v1/status: status exploded");
}

TEST_F(RoutesTest, AFailingSubscriberDoesNotFailTheWrite) {
    hub_.subscribe([](const EventHub::Message&, const Topic&) { throw std::runtime_error("slow client"); });
    auto response = call("POST", "/api/v1/contexts", R"({"name":"Work"})");
    EXPECT_EQ(response.status, 201u);
    EXPECT_EQ(rows("contexts"), 1);
}

// ---- session routes over a fake session service -----------------------------------

class RecordingSessions final : public SessionControl {
public:
    Result<store::Session> start(const StartRequest& request) override {
        started.push_back(request);
        if (request.name && *request.name == "nobody")
            return make_error(ErrorCode::not_found, "no agent named 'nobody'");
        store::Session session;
        session.id = "s_00000a";
        session.project_id = 1;
        session.harness = "shell";
        return session;
    }
    Result<store::Session> stop(std::string_view id) override {
        if (id != "s_00000a") return make_error(ErrorCode::conflict, "session s_x is not running (exited)");
        store::Session session;
        session.id = std::string(id);
        session.state = store::SessionState::running;
        return session;
    }
    Result<void> remove(std::string_view id) override {
        removed.emplace_back(id);
        return {};
    }
    Result<SessionLog> log(std::string_view) override {
        return SessionLog{"line 1\nline 2\n", 1014, true};
    }
    Result<Attached> attach(std::string_view, std::weak_ptr<TerminalClient>, const AttachOptions&) override {
        return make_error(ErrorCode::unavailable, "-");
    }
    void detach(std::uint64_t) override {}
    void input(std::uint64_t, std::string_view) override {}
    void input_eof(std::uint64_t) override {}
    void resize(std::uint64_t, std::uint16_t, std::uint16_t) override {}
    Result<void> answer(std::string_view id, std::string_view tool_call_id, std::string_view option_id) override {
        if (tool_call_id != "call_1")
            return make_error(ErrorCode::not_found, "session " + std::string(id) + " has no open permission request");
        answers.push_back(std::string(id) + " " + std::string(tool_call_id) + " " + std::string(option_id));
        return {};
    }

    Result<SubmittedPrompt> prompt(std::string_view id, const Prompt& prompt) override {
        std::string call = "prompt " + std::string(id) + " " + prompt.text;
        for (const auto& image : prompt.images) call += " [" + image.mime_type + " " + image.data + "]";
        calls.push_back(std::move(call));
        return SubmittedPrompt{"p_1", true};
    }
    Result<void> withdraw(std::string_view id, std::string_view prompt_id) override {
        calls.push_back("withdraw " + std::string(id) + " " + std::string(prompt_id));
        if (prompt_id == "p_started") return make_error(ErrorCode::conflict, "prompt p_started has started");
        return {};
    }
    Result<void> cancel(std::string_view id) override {
        calls.push_back("cancel " + std::string(id));
        return {};
    }
    Result<store::Session> resume(std::string_view id) override {
        calls.push_back("resume " + std::string(id));
        store::Session session;
        session.id = std::string(id);
        session.mode = "conversation";
        session.title = "first question";
        return session;
    }
    Result<Applied> configure(std::string_view id, std::string_view name, std::string_view value) override {
        calls.push_back("configure " + std::string(id) + " " + std::string(name) + "=" + std::string(value));
        return Applied::on_resume;
    }
    std::vector<ImageBuild> image_builds() const override { return builds; }

    std::vector<ImageBuild> builds;
    Result<store::Session> set_network(std::string_view id, std::string_view mode,
                                       std::optional<std::int64_t> minutes) override {
        calls.push_back("network " + std::string(id) + " " + std::string(mode) +
                        (minutes ? " " + std::to_string(*minutes) : std::string()));
        if (mode == "open") return make_error(ErrorCode::invalid_argument, "a running session cannot be made open");
        store::Session session;
        session.id = std::string(id);
        session.network_mode = network::parse_mode(mode);
        if (mode == "learn") session.learn_until = 900000;
        return session;
    }

    std::vector<StartRequest> started;
    std::vector<std::string> answers;
    std::vector<std::string> removed;
    std::vector<std::string> calls;
};

class SessionRoutesTest : public RoutesTest {
protected:
    void SetUp() override {
        RoutesTest::SetUp();
        auto with_sessions = info();
        with_sessions.sessions = &sessions_;
        routes_ = std::make_unique<Routes>(*store_, hub_, clock_, with_sessions);
    }
    RecordingSessions sessions_;
};

TEST_F(SessionRoutesTest, StartTakesTheFieldsItNeedsAndAnswersCreated) {
    auto response = call("POST", "/api/v1/sessions",
                         R"({"name":"reviewer","directory":"/srv/app","prompt":"make test",)"
                         R"("args":["-x"],"rows":40,"cols":100,"model":"anthropic/claude-opus-4-7:high",)"
                         R"("thinking":"xhigh"})");
    EXPECT_EQ(response.status, 201u) << response.body;
    EXPECT_EQ(response.headers["Location"], "/api/v1/sessions/s_00000a");
    ASSERT_EQ(sessions_.started.size(), 1u);
    const auto& request = sessions_.started[0];
    EXPECT_EQ(request.name, "reviewer");
    EXPECT_EQ(request.directory, "/srv/app");
    EXPECT_EQ(request.prompt, "make test");
    EXPECT_EQ(request.args, std::vector<std::string>{"-x"});
    EXPECT_EQ(request.rows, 40);
    EXPECT_EQ(request.cols, 100);
    EXPECT_EQ(request.model, "anthropic/claude-opus-4-7:high");
    EXPECT_EQ(request.thinking, "xhigh");
}

TEST_F(SessionRoutesTest, StartRefusesBadBodiesWithTheField) {
    const std::pair<std::string, std::string> cases[] = {
        {R"({"prompt":"x"})", "'directory'"},
        {R"({"directory":"/a","agent":"a","harness":"shell"})", "at most one"},
        {R"({"directory":"/a","rows":0})", "'rows'"},
        {R"({"directory":"/a","cols":"wide"})", "'cols'"},
        {R"({"directory":"/a","colour":"red"})", "colour"},
        {R"({"directory":"/a","args":"-x"})", "'args'"},
        // A model is a word on the harness's command line, never an option of its own.
        {R"({"directory":"/a","model":"--dangerously-skip-permissions"})", "not a model name"},
        {R"({"directory":"/a","model":"gpt 5"})", "not a model name"},
        {R"({"directory":"/a","model":""})", "not a model name"},
        {R"({"directory":"/a","model":7})", "'model'"},
        {R"({"directory":"/a","thinking":"--effort=max"})", "not one"},
        {R"({"directory":"/a","thinking":"High"})", "not one"},
    };
    for (const auto& [body, expected] : cases) {
        auto response = call("POST", "/api/v1/sessions", body);
        EXPECT_EQ(response.status, 400u) << body;
        EXPECT_NE(message(response).find(expected), std::string::npos) << body << ": " << message(response);
    }
    EXPECT_TRUE(sessions_.started.empty());
    auto unknown = call("POST", "/api/v1/sessions", R"({"directory":"/a","name":"nobody"})");
    EXPECT_EQ(unknown.status, 404u);
}

TEST_F(SessionRoutesTest, AConversationStartsTakesPromptsCancelsResumesAndChangesSettings) {
    auto started = call("POST", "/api/v1/sessions",
                        R"({"directory":"/srv/app","conversation":true,)"
                        R"("mcp_servers":[{"name":"files","command":"mcp-files","args":[],"env":[]}]})");
    EXPECT_EQ(started.status, 201u) << started.body;
    ASSERT_EQ(sessions_.started.size(), 1u);
    EXPECT_TRUE(sessions_.started[0].conversation);
    EXPECT_EQ(sessions_.started[0].mcp_servers, R"([{"name":"files","command":"mcp-files","args":[],"env":[]}])");
    for (const auto& [body, expected] : std::vector<std::pair<std::string, std::string>>{
             {R"({"directory":"/a","conversation":"yes"})", "'conversation'"},
             {R"({"directory":"/a","mcp_servers":{"name":"x"}})", "'mcp_servers'"},
             {R"({"directory":"/a","prompt":")" + std::string(256 * 1024 + 1, 'x') + "\"}", "at most 262144 bytes"}}) {
        auto refused = call("POST", "/api/v1/sessions", body);
        EXPECT_NE(refused.status, 201u);
        EXPECT_NE(message(refused).find(expected), std::string::npos) << message(refused);
    }

    auto prompted = call("POST", "/api/v1/sessions/s_00000a/prompts", R"({"text":"run the tests"})");
    EXPECT_EQ(prompted.status, 202u) << prompted.body;
    EXPECT_EQ(json::parse(prompted.body), json::parse(R"({"promptId":"p_1","queued":true})"));
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/prompts", R"({"text":""})").status, 400u);
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/prompts", R"({"prompt":"x"})").status, 400u);
    auto huge = call("POST", "/api/v1/sessions/s_00000a/prompts", "{\"text\":\"" + std::string(256 * 1024 + 1, 'y') + "\"}");
    EXPECT_EQ(huge.status, 413u) << huge.body;
    EXPECT_EQ(call("DELETE", "/api/v1/sessions/s_00000a/prompts/p_1").status, 204u);
    EXPECT_EQ(call("DELETE", "/api/v1/sessions/s_00000a/prompts/p_started").status, 409u);
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_00000a/prompts").status, 405u);
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/cancel/p_1").status, 404u) << "no other action goes deeper";
    EXPECT_EQ(call("DELETE", "/api/v1/sessions/s_00000a/prompts/p_1/x").status, 404u);
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/cancel").status, 202u);
    auto resumed = call("POST", "/api/v1/sessions/s_00000a/resume");
    EXPECT_EQ(resumed.status, 202u);
    EXPECT_EQ(json::parse(resumed.body).at("title"), "first question");
    auto configured = call("POST", "/api/v1/sessions/s_00000a/config", R"({"name":"model","value":"opus"})");
    EXPECT_EQ(configured.status, 200u);
    EXPECT_EQ(json::parse(configured.body), json::parse(R"({"applied":"on_resume"})"));
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/config", R"({"name":"model"})").status, 400u);
    EXPECT_EQ(sessions_.calls, (std::vector<std::string>{"prompt s_00000a run the tests", "withdraw s_00000a p_1",
                                                         "withdraw s_00000a p_started", "cancel s_00000a",
                                                         "resume s_00000a", "configure s_00000a model=opus"}));
}

// A 1×1 PNG and a GIF header, in base64.
constexpr const char* kPngBase64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

TEST_F(SessionRoutesTest, APromptCarriesCheckedImages) {
    const std::string png = kPngBase64;
    auto sent = call("POST", "/api/v1/sessions/s_00000a/prompts",
                     R"({"text":"what is this?","images":[{"mimeType":"image/png","data":")" + png + "\"}]}");
    EXPECT_EQ(sent.status, 202u) << sent.body;
    auto alone = call("POST", "/api/v1/sessions/s_00000a/prompts",
                      R"({"images":[{"mimeType":"image/png","data":")" + png + "\"}]}");
    EXPECT_EQ(alone.status, 202u) << "an image needs no text: " << alone.body;
    EXPECT_EQ(sessions_.calls, (std::vector<std::string>{"prompt s_00000a what is this? [image/png " + png + "]",
                                                         "prompt s_00000a  [image/png " + png + "]"}));
    for (const auto& [images, expected] : std::vector<std::pair<std::string, std::string>>{
             {R"({"mimeType":"image/svg+xml","data":"PHN2Zz4="})", "images[0].mimeType is 'image/svg+xml'"},
             {R"({"mimeType":"image/jpeg","data":")" + png + "\"}", "images[0] is not a image/jpeg file"},
             {R"({"mimeType":"image/png","data":"not base64!"})", "images[0].data is not base64"},
             {R"({"mimeType":"image/png","data":"iVBO=RwK"})", "images[0].data is not base64"},
             {R"({"mimeType":"image/png"})", "images[0]: field 'data'"},
             {R"({"mimeType":"image/png","data":"x","url":"http://x"})", "images[0]: "},
             {R"("just a string")", "images[0] must be an object"}}) {
        auto refused = call("POST", "/api/v1/sessions/s_00000a/prompts", R"({"text":"x","images":[)" + images + "]}");
        EXPECT_EQ(refused.status, 400u) << images;
        EXPECT_NE(message(refused).find(expected), std::string::npos) << message(refused);
    }
    std::string nine;
    for (int i = 0; i < 9; ++i) nine += std::string(i ? "," : "") + R"({"mimeType":"image/png","data":")" + png + "\"}";
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/prompts", R"({"text":"x","images":[)" + nine + "]}").status, 413u);
    const std::string big(8 * 1024 * 1024, 'A');
    auto large = call("POST", "/api/v1/sessions/s_00000a/prompts",
                      R"({"text":"x","images":[{"mimeType":"image/png","data":")" + big + "\"}]}");
    EXPECT_EQ(large.status, 413u);
    EXPECT_NE(message(large).find("larger than 5 MiB"), std::string::npos) << message(large);
    EXPECT_EQ(sessions_.calls.size(), 2u) << "no refused prompt reached the session";
}

TEST_F(SessionRoutesTest, AnAnswerNamesTheToolCallAndOneOfItsOptions) {
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/answers", R"({"toolCallId":"call_1","optionId":"allow"})").status,
              204u);
    EXPECT_EQ(sessions_.answers, std::vector<std::string>{"s_00000a call_1 allow"});
    auto unknown = call("POST", "/api/v1/sessions/s_00000a/answers", R"({"toolCallId":"call_2","optionId":"allow"})");
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_NE(unknown.body.find("no open permission request"), std::string::npos) << unknown.body;
    auto missing = call("POST", "/api/v1/sessions/s_00000a/answers", R"({"toolCallId":"call_1"})");
    EXPECT_EQ(missing.status, 400u);
    EXPECT_NE(missing.body.find("optionId"), std::string::npos) << missing.body;
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/answers", R"({"toolCallId":"call_1","optionId":"allow","x":1})").status,
              400u);
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_00000a/answers").status, 405u);
    EXPECT_EQ(sessions_.answers.size(), 1u);
}

TEST_F(SessionRoutesTest, StopDeleteAndLog) {
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/stop").status, 202u);
    auto not_running = call("POST", "/api/v1/sessions/s_00000b/stop");
    EXPECT_EQ(not_running.status, 409u);
    EXPECT_EQ(call("DELETE", "/api/v1/sessions/s_00000a").status, 204u);
    EXPECT_EQ(sessions_.removed, std::vector<std::string>{"s_00000a"});
    auto log = call("GET", "/api/v1/sessions/s_00000a/log");
    EXPECT_EQ(log.status, 200u);
    EXPECT_EQ(log.body, "line 1\nline 2\n");
    EXPECT_EQ(log.content_type, "application/octet-stream");
    EXPECT_EQ(log.headers["X-Handler-Log-End"], "1014");
    EXPECT_EQ(log.headers["X-Handler-Log-Truncated"], "1");
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_00000a/terminal").status, 400u);
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_00000a/nothing").status, 404u);
}

TEST_F(RoutesTest, WithoutASessionServiceTheSessionActionsAre503) {
    EXPECT_EQ(call("POST", "/api/v1/sessions", R"({"directory":"/a"})").status, 503u);
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_1/stop").status, 503u);
    EXPECT_EQ(call("GET", "/api/v1/sessions/s_1/log").status, 503u);
}

// ---- account keys ---------------------------------------------------------------

class AccountKeyRoutesTest : public RoutesTest {
protected:
    void SetUp() override {
        RoutesTest::SetUp();
        auto with_secrets = info();
        with_secrets.secrets = &secrets_;
        routes_ = std::make_unique<Routes>(*store_, hub_, clock_, with_secrets);
    }
    secrets::SecretStore secrets_{dir_ / "data/secrets"};
};

TEST_F(AccountKeyRoutesTest, AKeyIsStoredNeverEchoedAndShownOnlyAsHasSecret) {
    auto created = call("POST", "/api/v1/accounts", R"({"name":"anthropic","kind":"anthropic-api-key"})");
    ASSERT_EQ(created.status, 201u) << created.body;
    EXPECT_EQ(parse(created).at("has_secret"), false);
    const std::string key = "sk-ant-api03-ThisIsTheRealKey0123456789";
    auto stored = call("PUT", "/api/v1/accounts/1/secret", R"({"value":"  )" + key + R"(\n"})");
    EXPECT_EQ(stored.status, 204u) << stored.body;
    EXPECT_EQ(*secrets_.get(1), std::optional<std::string>(key)) << "trimmed";
    auto listed = call("GET", "/api/v1/accounts");
    EXPECT_EQ(parse(listed).at("accounts").at(0).at("has_secret"), true);
    EXPECT_FALSE(contains(listed.body, "ThisIsTheRealKey"));
    for (const auto& event : events_)
        EXPECT_FALSE(contains(json::serialize(event), "ThisIsTheRealKey")) << "events never carry it";
    EXPECT_EQ(call("DELETE", "/api/v1/accounts/1/secret").status, 204u);
    EXPECT_FALSE(secrets_.has(1));
}

TEST_F(AccountKeyRoutesTest, KeysAreRefusedWhereTheyMakeNoSense) {
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"local","kind":"ollama"})").status, 201u);
    auto no_key_kind = call("PUT", "/api/v1/accounts/1/secret", R"({"value":"abcdefgh12345"})");
    EXPECT_EQ(no_key_kind.status, 400u);
    EXPECT_TRUE(contains(message(no_key_kind), "holds no key")) << message(no_key_kind);
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"oa","kind":"openai-api-key"})").status, 201u);
    auto bad = call("PUT", "/api/v1/accounts/2/secret", R"({"value":"has spaces in it"})");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_FALSE(contains(bad.body, "has spaces in it")) << "the message never quotes the value";
    EXPECT_EQ(call("PUT", "/api/v1/accounts/99/secret", R"({"value":"abcdefgh12345"})").status, 404u);
    EXPECT_EQ(call("GET", "/api/v1/accounts/2/secret").status, 405u) << "a key is never read back";
}

// A running session's network mode (docs/api.md, "Network"): the body is checked here,
// the transition by the session service (sessions/network_change.hpp).
TEST_F(SessionRoutesTest, PostNetworkChangesARunningSessionsMode) {
    const auto learn = call("POST", "/api/v1/sessions/s_00000a/network", R"({"mode":"learn","minutes":5})");
    EXPECT_EQ(learn.status, 200u) << learn.body;
    EXPECT_EQ(parse(learn).at("network_mode"), "learn");
    EXPECT_EQ(parse(learn).at("learn_until"), 900000);
    const auto back = call("POST", "/api/v1/sessions/s_00000a/network", R"({"mode":"filtered"})");
    EXPECT_EQ(back.status, 200u) << back.body;
    EXPECT_EQ(sessions_.calls, (std::vector<std::string>{"network s_00000a learn 5", "network s_00000a filtered"}));

    const std::pair<std::string, std::string> bad[] = {
        {R"({})", "'mode'"},
        {R"({"mode":3})", "'mode'"},
        {R"({"mode":"learn","minutes":"ten"})", "'minutes'"},
        {R"({"mode":"learn","minutes":1.5})", "'minutes'"},
        {R"({"mode":"learn","until":5})", "until"},
        {"not json", "JSON"},
    };
    for (const auto& [body, needle] : bad) {
        const auto response = call("POST", "/api/v1/sessions/s_00000a/network", body);
        EXPECT_EQ(response.status, 400u) << body;
        EXPECT_NE(response.body.find(needle), std::string::npos) << body << " -> " << response.body;
    }
    EXPECT_EQ(sessions_.calls.size(), 2u) << "a bad body reaches no session";
    const auto open = call("POST", "/api/v1/sessions/s_00000a/network", R"({"mode":"open"})");
    EXPECT_EQ(open.status, 400u);
    EXPECT_NE(open.body.find("cannot be made open"), std::string::npos) << open.body;
    const auto put = call("PUT", "/api/v1/sessions/s_00000a/network", R"({"mode":"learn"})");
    EXPECT_EQ(put.status, 405u);
    EXPECT_EQ(put.headers.at("Allow"), "GET, POST");
    EXPECT_EQ(call("POST", "/api/v1/sessions/s_00000a/learned", R"({"mode":"learn"})").status, 405u);
}

} // namespace
} // namespace handler::api

namespace handler::api {
namespace {

// The web page's login routes and its files, through the route table (docs/api.md, "The
// web page"). The cookie as a credential is the transport's: server_test.cpp.
class UiRoutesTest : public RoutesTest {
protected:
    Response ui_call(const std::string& method, const std::string& target, const std::string& body,
                     bool over_tcp, const std::string& cookie = {}) {
        DaemonInfo ui_info = info();
        ui_info.ui_logins = &logins_;
        ui_info.tcp_port = [] { return std::uint16_t{7420}; };
        Routes routes(*store_, hub_, clock_, ui_info);
        Request request;
        request.method = method;
        request.target = target;
        request.body = body;
        request.over_tcp = over_tcp;
        request.session_cookie = cookie;
        return routes.handle(request);
    }
    UiLogins logins_{clock_};
};

TEST_F(UiRoutesTest, ALoginLinkIsMadeOnlyOverTheUnixSocket) {
    const Response over_tcp = ui_call("POST", "/api/v1/ui/login-tokens", "{}", true);
    EXPECT_EQ(over_tcp.status, 403u);
    EXPECT_EQ(logins_.login_token_count(), 0u);

    const Response made = ui_call("POST", "/api/v1/ui/login-tokens", "{}", false);
    ASSERT_EQ(made.status, 201u) << made.body;
    const auto body = json::parse(made.body).as_object();
    const std::string token(body.at("token").as_string());
    EXPECT_EQ(body.at("url").as_string(), "http://127.0.0.1:7420/#login=" + token);
    EXPECT_EQ(body.at("expires_at").as_int64(), clock_.now_ms() + UiLogins::kLoginTokenLifetimeMs);
    EXPECT_EQ(ui_call("POST", "/api/v1/ui/login-tokens", R"({"x":1})", false).status, 400u);
    EXPECT_EQ(ui_call("GET", "/api/v1/ui/login-tokens", "", false).status, 405u);
}

TEST_F(UiRoutesTest, TheTokenIsTradedOnceForAnHttpOnlyStrictCookie) {
    const auto made = json::parse(ui_call("POST", "/api/v1/ui/login-tokens", "", false).body).as_object();
    const std::string token(made.at("token").as_string());
    const std::string body = R"({"token":")" + token + R"("})";

    EXPECT_EQ(ui_call("POST", "/api/v1/ui/login", body, false).status, 400u) << "not over the unix socket";
    const Response login = ui_call("POST", "/api/v1/ui/login", body, true);
    ASSERT_EQ(login.status, 204u) << login.body;
    const std::string set_cookie = login.headers.at("Set-Cookie");
    ASSERT_TRUE(set_cookie.starts_with("handler_session=")) << set_cookie;
    EXPECT_TRUE(set_cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/")) << set_cookie;
    const std::string session = set_cookie.substr(16, set_cookie.find(';') - 16);
    EXPECT_TRUE(logins_.session_valid(session));
    EXPECT_EQ(set_cookie.find(token), std::string::npos);

    const Response again = ui_call("POST", "/api/v1/ui/login", body, true);
    EXPECT_EQ(again.status, 401u);
    EXPECT_EQ(again.headers.count("Set-Cookie"), 0u);
    EXPECT_EQ(ui_call("POST", "/api/v1/ui/login", R"({"token":7})", true).status, 400u);
    EXPECT_EQ(ui_call("POST", "/api/v1/ui/login", R"({})", true).status, 400u);

    const Response logout = ui_call("POST", "/api/v1/ui/logout", "", true, session);
    EXPECT_EQ(logout.status, 204u);
    EXPECT_TRUE(logout.headers.at("Set-Cookie").find("Max-Age=0") != std::string::npos);
    EXPECT_FALSE(logins_.session_valid(session));
}

TEST_F(UiRoutesTest, WithoutTcpThereIsNoLink) {
    DaemonInfo ui_info = info();
    ui_info.ui_logins = &logins_;
    ui_info.tcp_port = [] { return std::uint16_t{0}; };
    Routes routes(*store_, hub_, clock_, ui_info);
    Request request;
    request.method = "POST";
    request.target = "/api/v1/ui/login-tokens";
    const Response response = routes.handle(request);
    EXPECT_EQ(response.status, 409u);
    EXPECT_NE(response.body.find("[api] tcp = true"), std::string::npos) << response.body;
}

TEST_F(UiRoutesTest, PathsOutsideTheApiAreThePagesFiles) {
    const Response page = call("GET", "/");
    EXPECT_EQ(page.status, 404u);
    EXPECT_NE(page.body.find("without its page"), std::string::npos) << page.body;
    EXPECT_EQ(call("GET", "/api/v1/ui/nothing").status, 404u);
}


// ---- the field a mistake is in (docs/api.md, "Errors") ------------------------------

// The "field" of an error response, or "" when it has none.
std::string field_of(const Response& response) {
    const auto body = json::parse(response.body);
    const auto* field = body.at("error").as_object().if_contains("field");
    return field ? std::string(field->as_string()) : std::string();
}

TEST_F(RoutesTest, EachKindOfMistakeInAnAgentNamesItsField) {
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Work"})").status, 201u);
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Personal"})").status, 201u);
    const std::string p = std::to_string(make_project(R"(,"context":"Personal")"));
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"work-key","kind":"anthropic-api-key","context":"Work"})")
                  .status,
              201u);
    ASSERT_EQ(call("POST", "/api/v1/agents", R"({"name":"taken","project":)" + p + R"(,"harness":"codex"})").status,
              201u);
    events_.clear();
    const std::string base = R"({"project":)" + p + R"(,"harness":"codex",)";
    const struct {
        std::string body;
        unsigned status;
        std::string field;
    } cases[] = {
        {R"({"project":)" + p + R"(,"harness":"codex"})", 400, "name"},             // missing
        {base + R"("name":7})", 400, "name"},                                        // wrong type
        {base + R"("name":"a b"})", 400, "name"},                                    // the store's rule
        {base + R"("name":"taken"})", 409, "name"},                                  // already there
        {R"({"name":"a","harness":"codex"})", 400, "project"},
        {R"({"name":"a","project":999,"harness":"codex"})", 404, "project"},
        {R"({"name":"a","project":)" + p + "}", 400, "harness"},
        {base + R"("name":"a","harness":"Not An Id"})", 400, "harness"},
        {base + R"("name":"a","goal":7})", 400, "goal"},
        {base + R"("name":"a","goal":")" + std::string(5000, 'g') + R"("})", 400, "goal"},
        {base + R"("name":"a","instructions":false})", 400, "instructions"},
        {base + R"("name":"a","network_mode":"wide"})", 400, "network_mode"},
        {base + R"("name":"a","allowed_hosts":"x.com"})", 400, "allowed_hosts"},
        {base + R"("name":"a","allowed_hosts":["x.com",1]})", 400, "allowed_hosts[1]"},
        {base + R"("name":"a","allowed_hosts":["x.com","http://y"]})", 400, "allowed_hosts[1]"},
        {base + R"("name":"a","allowed_hosts":["x.com","y.com","X.com"]})", 400, "allowed_hosts[2]"},
        {base + R"("name":"a","addons":["ok","Bad Id"]})", 400, "addons[1]"},
        {base + R"("name":"a","account":"ghost"})", 404, "account"},
        {base + R"("name":"a","account":"work-key"})", 409, "account"},              // another context
        {base + R"("name":"a","model":"-rf"})", 400, "model"},
        {base + R"("name":"a","model":5})", 400, "model"},
        {base + R"("name":"a","thinking":"HIGH"})", 400, "thinking"},
        {base + R"("name":"a","colour":"red"})", 400, "colour"},                     // unknown field
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/agents", c.body);
        EXPECT_EQ(response.status, c.status) << c.body.substr(0, 200) << " -> " << response.body.substr(0, 300);
        EXPECT_EQ(field_of(response), c.field) << c.body.substr(0, 200) << " -> " << response.body.substr(0, 300);
        EXPECT_FALSE(message(response).empty());
    }
    // A mistake that concerns no one field has none: the page shows it at the top.
    auto not_json = call("POST", "/api/v1/agents", "{\"name\":");
    EXPECT_EQ(not_json.status, 400u);
    EXPECT_EQ(field_of(not_json), "");
    EXPECT_EQ(rows("agents"), 1);
    EXPECT_TRUE(events_.empty());
}

TEST_F(RoutesTest, AnAgentEditWithOneBadFieldSavesNoneOfIt) {
    const std::string p = std::to_string(make_project());
    auto made = call("POST", "/api/v1/agents", R"({"name":"a","project":)" + p + R"(,"harness":"codex","goal":"old"})");
    ASSERT_EQ(made.status, 201u) << made.body;
    const std::string target = "/api/v1/agents/" + std::to_string(parse(made).at("id").as_int64());
    const auto before = parse(call("GET", target));
    events_.clear();
    for (const auto& [body, field] :
         std::vector<std::pair<std::string, std::string>>{
             {R"({"goal":"new","model":"sonnet","allowed_hosts":["ok.com","bad host"]})", "allowed_hosts[1]"},
             {R"({"goal":"new","thinking":"very high"})", "thinking"},
             {R"({"goal":"new","project":3})", "project"},
             {R"({"goal":"new","name":"x y"})", "name"},
             {R"({"goal":"new","network_mode":"learn"})", "network_mode"}}) {
        auto response = call("PATCH", target, body);
        EXPECT_EQ(response.status, 400u) << body << " -> " << response.body;
        EXPECT_EQ(field_of(response), field) << body << " -> " << response.body;
    }
    EXPECT_EQ(parse(call("GET", target)), before);
    EXPECT_TRUE(events_.empty());
}

TEST_F(RoutesTest, EachKindOfMistakeInAProjectNamesItsField) {
    ASSERT_EQ(call("POST", "/api/v1/contexts", R"({"name":"Work"})").status, 201u);
    const std::string target = "/api/v1/projects/" + std::to_string(make_project());
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"k","kind":"anthropic-api-key"})").status, 201u);
    ASSERT_EQ(call("POST", "/api/v1/agents", R"({"name":"a","project":)" + target.substr(target.rfind('/') + 1) +
                                                 R"(,"harness":"codex","account":"k"})")
                  .status,
              201u);
    const auto before = parse(call("GET", target));
    const struct {
        std::string body;
        unsigned status;
        std::string field;
    } cases[] = {
        {R"({"name":""})", 400, "name"},
        {R"({"name":" padded"})", 400, "name"},
        {R"({"name":3})", 400, "name"},
        {R"({"context":"Nowhere"})", 404, "context"},
        {R"({"context":"Work"})", 409, "context"}, // its agent's account is of no context
        {R"({"context":1})", 400, "context"},
        {R"({"allowed_hosts":["a.com","*"]})", 400, "allowed_hosts[1]"},
        {R"({"allowed_hosts":["a.com","a.com"]})", 400, "allowed_hosts[1]"},
        {R"({"path":"/elsewhere"})", 400, "path"},
        {R"({"colour":"red"})", 400, "colour"},
    };
    for (const auto& c : cases) {
        // With a good change beside the bad one, which must not be saved either.
        const std::string body = c.body.starts_with(R"({"name")") ? c.body : R"({"name":"renamed",)" + c.body.substr(1);
        auto response = call("PATCH", target, body);
        EXPECT_EQ(response.status, c.status) << c.body << " -> " << response.body;
        EXPECT_EQ(field_of(response), c.field) << c.body << " -> " << response.body;
    }
    EXPECT_EQ(parse(call("GET", target)), before);
    auto created = call("POST", "/api/v1/projects", R"({"path":"relative/path"})");
    EXPECT_EQ(created.status, 400u);
    EXPECT_EQ(field_of(created), "path");
}

// ---- an agent's model and thinking level --------------------------------------------

TEST_F(RoutesTest, AnAgentKeepsItsModelAndThinkingLevelAndClearsThemWithNull) {
    const std::string p = std::to_string(make_project());
    auto made = call("POST", "/api/v1/agents",
                     R"({"name":"a","project":)" + p + R"(,"harness":"claude-code","model":"sonnet","thinking":"max"})");
    ASSERT_EQ(made.status, 201u) << made.body;
    EXPECT_EQ(parse(made).at("model"), "sonnet");
    EXPECT_EQ(parse(made).at("thinking"), "max");
    const std::string target = "/api/v1/agents/" + std::to_string(parse(made).at("id").as_int64());
    events_.clear();
    auto patched = call("PATCH", target, R"({"model":"anthropic/claude-opus-4-7:high"})");
    ASSERT_EQ(patched.status, 200u) << patched.body;
    EXPECT_EQ(parse(patched).at("model"), "anthropic/claude-opus-4-7:high");
    EXPECT_EQ(parse(patched).at("thinking"), "max"); // left out: kept
    ASSERT_EQ(events_.size(), 1u);
    EXPECT_EQ(events_[0].at("data").at("model"), "anthropic/claude-opus-4-7:high");
    auto cleared = call("PATCH", target, R"({"model":null,"thinking":null})");
    ASSERT_EQ(cleared.status, 200u) << cleared.body;
    EXPECT_TRUE(parse(cleared).at("model").is_null());
    EXPECT_TRUE(parse(cleared).at("thinking").is_null());
    EXPECT_TRUE(parse(call("GET", target)).at("model").is_null());
}

// ---- image builds ---------------------------------------------------------------------

TEST_F(SessionRoutesTest, ImagesListsTheBuildsWithTheirLogs) {
    ImageBuild building;
    building.id = 1;
    building.harness = "pi";
    building.session = "s_00000a";
    building.state = "building";
    building.log = "STEP 1/3: FROM localhost/handler-base:1\n";
    building.started_at = 10;
    ImageBuild failed;
    failed.id = 2;
    failed.harness = "codex";
    failed.session = "s_00000b";
    failed.state = "failed";
    failed.message = "building the codex image failed: npm ERR! 404";
    failed.log = "npm ERR! 404\n";
    failed.log_truncated = true;
    failed.started_at = 20;
    failed.ended_at = 30;
    sessions_.builds = {building, failed};

    auto all = call("GET", "/api/v1/images");
    ASSERT_EQ(all.status, 200u) << all.body;
    EXPECT_EQ(parse(all), json::parse(R"({"images":[
        {"id":1,"harness":"pi","session":"s_00000a","image":null,"state":"building","message":null,
         "started_at":10,"ended_at":null,"log":"STEP 1/3: FROM localhost/handler-base:1\n","log_truncated":false},
        {"id":2,"harness":"codex","session":"s_00000b","image":null,"state":"failed",
         "message":"building the codex image failed: npm ERR! 404","started_at":20,"ended_at":30,
         "log":"npm ERR! 404\n","log_truncated":true}]})"));
    auto one = parse(call("GET", "/api/v1/images?session=s_00000b")).at("images").as_array();
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].at("id"), 2);
    EXPECT_EQ(parse(call("GET", "/api/v1/images/2")).at("state"), "failed");
    EXPECT_EQ(call("GET", "/api/v1/images/3").status, 404u);
    EXPECT_EQ(call("GET", "/api/v1/images/x").status, 404u);
    EXPECT_EQ(call("GET", "/api/v1/images?harness=pi").status, 400u);
    EXPECT_EQ(call("GET", "/api/v1/images?session=a&session=b").status, 400u);
    auto post = call("POST", "/api/v1/images");
    EXPECT_EQ(post.status, 405u);
    EXPECT_EQ(post.headers["Allow"], "GET");
    EXPECT_EQ(call("GET", "/api/v1/images/1/log").status, 404u);
}

TEST_F(RoutesTest, ImagesWithoutASessionServiceIsAnEmptyList) {
    auto all = call("GET", "/api/v1/images");
    ASSERT_EQ(all.status, 200u);
    EXPECT_EQ(parse(all), json::parse(R"({"images":[]})"));
}

} // namespace
} // namespace handler::api
