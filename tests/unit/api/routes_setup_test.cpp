// The first-session routes (docs/api.md, "Setup"): an account made with its key in one
// call, account and project removal, the folder browser and the model server test, through
// Routes::handle() with a fake probe. The real probe against a real HTTP server is in
// model_server_probe_test.cpp.
#include "api/model_server_probe.hpp"
#include "api/routes.hpp"

#include "secrets/secret_store.hpp"
#include "store/store.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <optional>

namespace handler::api {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using handler::testing::contains;
using handler::testing::FakeClock;
using handler::testing::TempDir;

// Records what it was asked and answers what the test set, when the test says so.
class FakeProbe final : public ModelServerProbe {
public:
    void probe(std::string kind, std::string base_url, std::function<void(ModelServerReport)> done) override {
        asked.emplace_back(kind, base_url);
        pending = std::move(done);
    }
    std::vector<std::pair<std::string, std::string>> asked;
    std::function<void(ModelServerReport)> pending;
};

class SetupRoutesTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* dir : {"home/u/src/app", "home/u/src/other", "home/u/.hidden", "home/u/.local/share/handler",
                                "home/u/.config/handler", "run/handler"})
            fs::create_directories(dir_ / dir);
        std::ofstream(dir_ / "home/u/a-file.txt") << "x";
        fs::create_directory_symlink(dir_ / "home/u/src/app", dir_ / "home/u/src/link-to-app");
        auto opened = store::Store::open(dir_ / "db/handler.db", clock_);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        store_ = std::move(*opened);
        subscription_ = hub_.subscribe([this](const EventHub::Message& m, const Topic&) { events_.push_back(json::parse(*m).as_object()); });
        DaemonInfo info;
        info.home_dir = dir_ / "home/u";
        info.handler_dirs = {dir_ / "home/u/.local/share/handler", dir_ / "home/u/.config/handler", dir_ / "run/handler"};
        info.secrets = &secrets_;
        info.model_servers = &probe_;
        routes_ = std::make_unique<Routes>(*store_, hub_, clock_, info);
    }

    Response call(const std::string& method, const std::string& target, const std::string& body = "") {
        return routes_->handle(Request{method, target, body, false, {}, {}});
    }
    static json::value parse(const Response& response) {
        return response.body.empty() ? json::value() : json::parse(response.body);
    }
    static std::string message(const Response& response) {
        const auto body = parse(response);
        if (!body.is_object() || !body.as_object().contains("error")) return "<no error: " + response.body + ">";
        return std::string(body.at("error").at("message").as_string());
    }
    std::size_t accounts() {
        auto all = store_->list_accounts();
        return all ? all->size() : 999;
    }
    std::string home() const { return fs::canonical(dir_ / "home/u").string(); }
    static std::string text(const json::value& value) {
        return value.is_string() ? std::string(value.as_string()) : "<not a string: " + json::serialize(value) + ">";
    }
    // The JSON of a folder listing's entry named `name`, or null.
    static json::value entry(const json::value& listing, std::string_view name) {
        for (const auto& item : listing.at("folders").as_array())
            if (item.at("name").as_string() == name) return item;
        return nullptr;
    }

    TempDir dir_;
    FakeClock clock_;
    std::unique_ptr<store::Store> store_;
    EventHub hub_;
    std::uint64_t subscription_ = 0;
    std::vector<json::object> events_;
    secrets::SecretStore secrets_{dir_ / "data/secrets"};
    FakeProbe probe_;
    std::unique_ptr<Routes> routes_;
};

// ---- an account with its key ----------------------------------------------------------

TEST_F(SetupRoutesTest, AnAccountComesWithItsKeyInOneCallAndNeverEchoesIt) {
    const std::string key = "sk-ant-api03-TheRealKeyFromThePage0123";
    auto created = call("POST", "/api/v1/accounts",
                        R"({"name":"anthropic","kind":"anthropic-api-key","secret":"  )" + key + R"(\n"})");
    ASSERT_EQ(created.status, 201u) << created.body;
    EXPECT_EQ(parse(created).at("has_secret"), true);
    EXPECT_FALSE(contains(created.body, "TheRealKey"));
    const auto id = parse(created).at("id").as_int64();
    EXPECT_EQ(*secrets_.get(id), std::optional<std::string>(key)) << "trimmed, as PUT .../secret does";
    for (const auto& event : events_) EXPECT_FALSE(contains(json::serialize(event), "TheRealKey"));
}

TEST_F(SetupRoutesTest, ABadKeyLeavesNoAccount) {
    const struct {
        std::string body;
        std::string says;
    } cases[] = {
        {R"({"name":"a","kind":"anthropic-api-key","secret":"short"})", "field 'secret': the key is 5 characters long"},
        {R"({"name":"a","kind":"anthropic-api-key","secret":"has spaces in the key"})", "field 'secret': the key holds spaces"},
        {R"({"name":"a","kind":"anthropic-api-key","secret":""})", "field 'secret': the key is empty"},
        {R"({"name":"a","kind":"anthropic-api-key","secret":12345678})", "field 'secret' must be a string"},
        {R"({"name":"a","kind":"ollama","secret":"abcdefgh12345"})", "field 'secret': an account of kind ollama holds no key"},
        {R"({"name":"a","kind":"chatgpt-login","secret":"abcdefgh12345"})", "field 'secret': an account of kind chatgpt-login"},
        {R"({"name":"a","kind":"no-such-kind","secret":"abcdefgh12345"})", ""},
        {R"({"name":"bad name!","kind":"openai-api-key","secret":"abcdefgh12345"})", ""},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/accounts", c.body);
        EXPECT_EQ(response.status, 400u) << c.body << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.says, 0), 0u) << message(response);
        EXPECT_FALSE(contains(response.body, "abcdefgh12345")) << "the message never quotes the key";
        EXPECT_FALSE(contains(response.body, "has spaces in the key"));
    }
    EXPECT_EQ(accounts(), 0u);
    EXPECT_TRUE(events_.empty());
}

TEST_F(SetupRoutesTest, AKeyThatCannotBeWrittenTakesItsAccountBack) {
    // The key folder is a file: the key's write fails after the account row is in.
    fs::create_directories(dir_ / "data");
    std::ofstream(dir_ / "data/secrets") << "not a folder";
    auto response = call("POST", "/api/v1/accounts", R"({"name":"anthropic","kind":"anthropic-api-key","secret":"sk-ant-0123456789"})");
    EXPECT_GE(response.status, 400u) << response.body;
    EXPECT_EQ(accounts(), 0u) << "nothing half-saved";
    EXPECT_TRUE(events_.empty()) << "no account.created for an account that is gone";
    EXPECT_FALSE(contains(response.body, "sk-ant-0123456789"));
}

TEST_F(SetupRoutesTest, RemovingAnAccountRemovesItsKey) {
    auto created = call("POST", "/api/v1/accounts", R"({"name":"oa","kind":"openai-api-key","secret":"sk-0123456789abc"})");
    ASSERT_EQ(created.status, 201u) << created.body;
    const auto id = parse(created).at("id").as_int64();
    ASSERT_TRUE(secrets_.has(id));
    EXPECT_EQ(call("DELETE", "/api/v1/accounts/" + std::to_string(id)).status, 204u);
    EXPECT_FALSE(secrets_.has(id)) << "a later account given the same rowid must not inherit the key";
    EXPECT_EQ(accounts(), 0u);
    EXPECT_EQ(events_.back().at("type"), "account.deleted");
    EXPECT_EQ(call("DELETE", "/api/v1/accounts/" + std::to_string(id)).status, 404u);
    EXPECT_EQ(call("DELETE", "/api/v1/accounts/nope").status, 404u);

    // One an agent uses stays, with its key, and the message says who uses it.
    ASSERT_EQ(call("POST", "/api/v1/accounts", R"({"name":"used","kind":"openai-api-key","secret":"sk-0123456789abc"})").status, 201u);
    ASSERT_EQ(call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/src/app"})").status, 201u);
    ASSERT_EQ(call("POST", "/api/v1/agents", R"({"name":"codex","project":1,"harness":"codex","account":"used"})").status, 201u);
    auto refused = call("DELETE", "/api/v1/accounts/" + std::to_string(parse(call("GET", "/api/v1/accounts")).at("accounts").at(0).at("id").as_int64()));
    EXPECT_EQ(refused.status, 409u) << refused.body;
    EXPECT_TRUE(contains(message(refused), "is used by agent 'codex'")) << message(refused);
    EXPECT_EQ(accounts(), 1u);
}

TEST_F(SetupRoutesTest, ProjectsCanBeRemovedWhileNothingHoldsThem) {
    ASSERT_EQ(call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/src/app"})").status, 201u);
    EXPECT_EQ(call("DELETE", "/api/v1/projects/1").status, 204u);
    EXPECT_EQ(events_.back().at("type"), "project.deleted");
    EXPECT_EQ(call("GET", "/api/v1/projects/1").status, 404u);
    EXPECT_EQ(call("DELETE", "/api/v1/projects/1").status, 404u);
    EXPECT_EQ(call("DELETE", "/api/v1/projects/x").status, 404u);
    // One with an agent stays: the store would take the agent (and sessions) with it.
    auto again = call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/src/app"})");
    ASSERT_EQ(again.status, 201u);
    const auto id = std::to_string(parse(again).at("id").as_int64());
    ASSERT_EQ(call("POST", "/api/v1/agents", R"({"name":"sh","project":)" + id + R"(,"harness":"shell"})").status, 201u);
    auto held = call("DELETE", "/api/v1/projects/" + id);
    EXPECT_EQ(held.status, 409u) << held.body;
    EXPECT_TRUE(contains(message(held), "still has 1 agents and 0 sessions")) << message(held);
    EXPECT_TRUE(contains(call("GET", "/api/v1/agents").body, "\"sh\""));
}

// ---- the folders a project may be ---------------------------------------------------------

TEST_F(SetupRoutesTest, ProjectsRefuseHandlersOwnFolders) {
    for (const std::string& path : {home() + "/.local/share/handler", home() + "/.local", home() + "/.config",
                                   fs::canonical(dir_ / "run/handler").string(), fs::canonical(dir_ / "run").string()}) {
        auto response = call("POST", "/api/v1/projects", R"({"path":")" + path + "\"}");
        EXPECT_EQ(response.status, 400u) << path << " -> " << response.body;
        EXPECT_TRUE(contains(message(response), "Handler's own folder")) << message(response);
    }
    auto inside = call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/.local/share/handler"})");
    EXPECT_TRUE(contains(message(inside), " is Handler's own folder")) << message(inside);
    auto holding = call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/.local"})");
    EXPECT_TRUE(contains(message(holding), " holds Handler's own folder")) << message(holding);
    EXPECT_TRUE(store_->list_projects()->empty());
}

TEST_F(SetupRoutesTest, FoldersListsSubfoldersWithTheirReasons) {
    ASSERT_EQ(call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/src/other","name":"Other"})").status, 201u);
    auto at_home = call("GET", "/api/v1/folders");
    ASSERT_EQ(at_home.status, 200u) << at_home.body;
    const auto listing = parse(at_home);
    EXPECT_EQ(text(listing.at("path")), home()) << "starts at home";
    EXPECT_EQ(text(listing.at("home")), home());
    EXPECT_TRUE(contains(std::string(listing.at("refused").as_string()), "is or contains your home folder"));
    // Folders only, by name, hidden ones marked.
    std::vector<std::string> names;
    for (const auto& item : listing.at("folders").as_array()) names.emplace_back(item.at("name").as_string());
    EXPECT_EQ(names, (std::vector<std::string>{".config", ".hidden", ".local", "src"}));
    EXPECT_EQ(entry(listing, ".hidden").at("hidden"), true);
    EXPECT_EQ(entry(listing, "src").at("hidden"), false);
    EXPECT_EQ(entry(listing, "src").at("refused"), nullptr);
    EXPECT_TRUE(contains(std::string(entry(listing, ".config").at("refused").as_string()), "holds Handler's own folder"));
    EXPECT_EQ(listing.at("truncated"), false);

    const auto src = parse(call("GET", "/api/v1/folders?path=" + home() + "/src"));
    EXPECT_EQ(text(src.at("parent")), home());
    EXPECT_EQ(entry(src, "other").at("refused"), "already a project: Other");
    EXPECT_EQ(entry(src, "app").at("refused"), nullptr);
    // A link is the folder it leads to.
    EXPECT_EQ(text(entry(src, "link-to-app").at("path")), home() + "/src/app");

    const auto parent = parse(call("GET", "/api/v1/folders?path=" + fs::canonical(dir_ / "home").string()));
    EXPECT_TRUE(contains(std::string(parent.at("refused").as_string()), "is or contains your home folder"));
    EXPECT_TRUE(contains(std::string(entry(parent, "u").at("refused").as_string()), "is or contains your home folder"));
    const auto root = parse(call("GET", "/api/v1/folders?path=/"));
    EXPECT_EQ(root.at("parent"), nullptr);
    EXPECT_TRUE(contains(std::string(root.at("refused").as_string()), "is or contains your home folder"));
    // What the browser offers, POST /api/v1/projects takes.
    EXPECT_EQ(call("POST", "/api/v1/projects", R"({"path":")" + home() + R"(/src/app"})").status, 201u);
}

TEST_F(SetupRoutesTest, FoldersRefusesBadPaths) {
    const struct {
        std::string target;
        unsigned status;
        std::string says;
    } cases[] = {
        {"/api/v1/folders?path=relative", 400, "query parameter 'path' must be an absolute path"},
        {"/api/v1/folders?path=" + home() + "/missing", 400, "the folder "},
        {"/api/v1/folders?path=" + home() + "/a-file.txt", 400, ""},
        {"/api/v1/folders?path=/&path=/tmp", 400, "query parameter 'path' is given twice"},
        {"/api/v1/folders?dir=/", 400, "unknown query parameter 'dir'"},
        {"/api/v1/folders/x", 404, "there is no route"},
    };
    for (const auto& c : cases) {
        auto response = call("GET", c.target);
        EXPECT_EQ(response.status, c.status) << c.target << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.says, 0), 0u) << message(response);
    }
    EXPECT_TRUE(contains(message(call("GET", "/api/v1/folders?path=" + home() + "/a-file.txt")), "is not a folder"));
    EXPECT_EQ(call("POST", "/api/v1/folders").status, 405u);
}

// ---- the model server test ---------------------------------------------------------------

TEST_F(SetupRoutesTest, AModelServerTestAnswersLaterWithWhatTheProbeSaw) {
    auto response = call("POST", "/api/v1/model-servers/test", R"({"kind":"ollama","base_url":"HTTP://Box:11434/"})");
    ASSERT_TRUE(response.later) << "answered later, off the I/O thread: " << response.body;
    std::optional<Response> answer;
    response.later([&](Response r) { answer = std::move(r); });
    ASSERT_EQ(probe_.asked.size(), 1u);
    EXPECT_EQ(probe_.asked[0], (std::pair<std::string, std::string>{"ollama", "http://box:11434"})) << "normalized as accounts are";
    EXPECT_FALSE(answer) << "not before the probe is done";
    ModelServerReport report;
    report.url = "http://box:11434/api/tags";
    report.reachable = true;
    report.status = 200;
    report.models = {"llama3:latest", "qwen2.5-coder:7b"};
    probe_.pending(report);
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200u);
    const auto body = parse(*answer);
    EXPECT_EQ(body.at("reachable"), true);
    EXPECT_EQ(body.at("status"), 200);
    EXPECT_EQ(body.at("models"), (json::array{"llama3:latest", "qwen2.5-coder:7b"}));
    EXPECT_EQ(body.at("error"), nullptr);

    // Left out, base_url is the kind's default; an unreachable server is an answer too.
    auto defaulted = call("POST", "/api/v1/model-servers/test", R"({"kind":"llama-cpp"})");
    ASSERT_TRUE(defaulted.later);
    defaulted.later([&](Response r) { answer = std::move(r); });
    EXPECT_EQ(probe_.asked.back().second, "http://127.0.0.1:8080");
    ModelServerReport down;
    down.url = "http://127.0.0.1:8080/v1/models";
    down.error = "nothing answers at 127.0.0.1:8080: Connection refused";
    probe_.pending(down);
    EXPECT_EQ(parse(*answer).at("reachable"), false);
    EXPECT_EQ(parse(*answer).at("error"), "nothing answers at 127.0.0.1:8080: Connection refused");
}

TEST_F(SetupRoutesTest, AModelServerTestRefusesBadInputBeforeReachingAnything) {
    const struct {
        std::string body;
        std::string says;
    } cases[] = {
        {R"({})", "field 'kind' is required"},
        {R"({"kind":"anthropic-api-key"})", "field 'kind' must be a local model server"},
        {R"({"kind":7})", "field 'kind' must be a string"},
        {R"({"kind":"ollama","base_url":"file:///etc/passwd"})", "base_url 'file:///etc/passwd' is not valid"},
        {R"({"kind":"ollama","base_url":"http://user:pw@box:11434"})", "base_url "},
        {R"({"kind":"ollama","base_url":"http://box:11434/?q=1"})", "base_url "},
        {R"({"kind":"ollama","base_url":null})", "field 'base_url' must be a string"},
        {R"({"kind":"ollama","url":"http://box"})", "unknown field 'url'"},
        {R"(not json)", ""},
    };
    for (const auto& c : cases) {
        auto response = call("POST", "/api/v1/model-servers/test", c.body);
        EXPECT_FALSE(response.later) << c.body;
        EXPECT_EQ(response.status, 400u) << c.body << " -> " << response.body;
        EXPECT_EQ(message(response).rfind(c.says, 0), 0u) << c.body << " -> " << message(response);
    }
    EXPECT_TRUE(probe_.asked.empty());
    EXPECT_EQ(call("GET", "/api/v1/model-servers/test").status, 405u);
    EXPECT_EQ(call("POST", "/api/v1/model-servers/other", R"({"kind":"ollama"})").status, 404u);
}

} // namespace
} // namespace handler::api
