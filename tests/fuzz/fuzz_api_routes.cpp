// The v1 API's route table (api/routes.hpp) with every route's JSON body, on a real store
// (a fresh copy for each input), a key store in a private folder and a session service
// that answers every call (the sessions themselves are host/sessions', tested on their own).
//
// Input: "METHOD TARGET\n" then the body. "$ROOT" in either stands for the folder the
// projects live in ($ROOT/home/u is the user's home, $ROOT/home/u/src/app and .../other
// exist), "$SESSION" for a session in the store. Each input starts from the same store:
// context "Work", project 1 ($ROOT/home/u/src/app), account 1 "work"
// (anthropic-api-key), agent 1 "claude", session $SESSION.
//
// Properties: no request is a 500 (Routes turns an exception, that is a bug, into one);
// a JSON answer parses; an error answer is {"error":{"code","message"}} with strings; a
// 201 says where the record is, and reading it there gives what the 201 gave; a 200 to a
// PATCH is what reading the record gives afterwards.
#include "api/routes.hpp"

#include "secrets/secret_store.hpp"
#include "store/store.hpp"

#include "fuzz/fuzz_support.hpp"
#include "support/fakes.hpp"

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using handler::fuzz::check;
using namespace handler;
using namespace handler::api;

// The session service: every call succeeds, answering about one session.
class AnsweringSessions final : public SessionControl {
public:
    Result<store::Session> start(const StartRequest& request) override {
        store::Session session;
        session.id = "s_00000f";
        session.project_id = 1;
        session.harness = request.harness.value_or("shell");
        session.mode = request.conversation ? "conversation" : request.prompt.empty() ? "interactive" : "headless";
        return session;
    }
    Result<store::Session> stop(std::string_view id) override { return running(id); }
    Result<void> remove(std::string_view) override { return {}; }
    Result<SessionLog> log(std::string_view) override { return SessionLog{"output\n", 7, false}; }
    Result<Attached> attach(std::string_view, std::weak_ptr<TerminalClient>, const AttachOptions&) override {
        return make_error(ErrorCode::unavailable, "no terminals here");
    }
    void detach(std::uint64_t) override {}
    void input(std::uint64_t, std::string_view) override {}
    void input_eof(std::uint64_t) override {}
    void resize(std::uint64_t, std::uint16_t, std::uint16_t) override {}
    Result<void> answer(std::string_view, std::string_view, std::string_view) override { return {}; }
    Result<SubmittedPrompt> prompt(std::string_view, const Prompt&) override { return SubmittedPrompt{"p_1", false}; }
    Result<void> withdraw(std::string_view, std::string_view) override { return {}; }
    Result<void> cancel(std::string_view) override { return {}; }
    Result<store::Session> resume(std::string_view id) override { return running(id); }
    Result<Applied> configure(std::string_view, std::string_view, std::string_view) override { return Applied::now; }

private:
    static store::Session running(std::string_view id) {
        store::Session session;
        session.id = std::string(id);
        session.project_id = 1;
        session.state = store::SessionState::running;
        return session;
    }
};

// The folders the projects live in, and the store every input starts from: made once,
// then copied for each input (migrating and filling a store takes far longer).
struct Folders {
    testing::TempDir root;
    fs::path database_template;
    std::string session_id;
    Folders();
};

std::string replaced(std::string text, std::string_view name, const std::string& value) {
    for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
        text.replace(at, name.size(), value);
    return text;
}

struct Api {
    testing::FakeClock clock;
    std::unique_ptr<store::Store> store;
    EventHub events;
    secrets::SecretStore keys;
    AnsweringSessions sessions;
    std::unique_ptr<Routes> routes;

    Api(const Folders& folders, const fs::path& database) : keys(folders.root / "data/secrets") {
        store::StoreOptions options;
        options.random = [next = std::uint64_t{0}]() mutable { return ++next; };
        auto opened = store::Store::open(database, clock, std::move(options));
        check(opened.ok(), "the store opens", opened ? "" : opened.error().message);
        store = std::move(*opened);
        DaemonInfo info;
        info.status = [] { return json::object{{"version", "0.1.0"}, {"pid", 1}}; };
        info.home_dir = folders.root / "home/u";
        info.sessions = &sessions;
        info.secrets = &keys;
        routes = std::make_unique<Routes>(*store, events, clock, info);
    }

    Response call(const std::string& method, const std::string& target, const std::string& body = "") {
        return routes->handle(Request{method, target, body, false, {}, {}});
    }
};

Folders::Folders() {
    fs::create_directories(root / "home/u/src/app");
    fs::create_directories(root / "home/u/src/other");
    fs::create_directories(root / "data/secrets");
    database_template = root / "template/handler.db";
    Api api(*this, database_template);
    const std::string app = fs::canonical(root / "home/u/src/app").string();
    for (const auto& [target, body] : std::initializer_list<std::pair<const char*, std::string>>{
             {"/api/v1/contexts", R"({"name":"Work"})"},
             {"/api/v1/projects", R"({"path":")" + app + R"(","context":"Work"})"},
             {"/api/v1/accounts", R"({"name":"work","kind":"anthropic-api-key","context":"Work"})"},
             {"/api/v1/agents", R"({"name":"claude","project":1,"harness":"claude-code","account":"work"})"}})
        check(api.call("POST", target, body).status == 201, "the store is set up", target);
    store::NewSession session;
    session.project_id = 1;
    session.agent_id = 1;
    session.harness = "claude-code";
    auto made = api.store->create_session(session);
    check(made.ok(), "the session is recorded");
    session_id = made->id;
}

// A copy of the template, and no keys.
fs::path fresh_database(const Folders& folders) {
    const fs::path database = folders.root / "input/handler.db";
    fs::create_directories(database.parent_path());
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(database.string() + suffix);
    fs::copy_file(folders.database_template, database, fs::copy_options::overwrite_existing);
    for (const auto& key : fs::directory_iterator(folders.root / "data/secrets")) fs::remove(key.path());
    return database;
}

void check_answer(const Request& request, const Response& response) {
    const std::string what = request.method + " " + request.target + "\n" + request.body + "\n-> " +
                             std::to_string(response.status) + " " + response.body;
    check(response.status != 500, "no request is an internal error", what);
    if (response.content_type != "application/json" || response.body.empty()) return;
    boost::system::error_code error;
    const json::value body = json::parse(response.body, error);
    check(!error, "a JSON answer parses", what);
    if (response.status >= 400) {
        const auto* object = body.if_object();
        const auto* failure = object ? object->if_contains("error") : nullptr;
        check(failure && failure->is_object() && failure->as_object().contains("code") &&
                  failure->as_object().at("code").is_string() && failure->as_object().contains("message") &&
                  failure->as_object().at("message").is_string(),
              "an error answer has a code and a message", what);
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // The store's files go to memory where the machine has /dev/shm: writing them to disk
    // would be most of the time an input takes.
    std::error_code error;
    if (fs::is_directory("/dev/shm", error)) ::setenv("TMPDIR", "/dev/shm", 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Folders folders;
    const std::string_view input = handler::fuzz::as_text(data, size);
    const auto line_end = input.find('\n');
    const std::string_view line = input.substr(0, line_end);
    const auto space = line.find(' ');
    if (space == std::string_view::npos) return 0;
    // A request that wrote nothing (a GET, or any refused request: each write is one
    // transaction) leaves the store as it was, so the next input may start from it.
    static std::unique_ptr<Api> live;
    static bool written = true;
    if (written) {
        live.reset();
        live = std::make_unique<Api>(folders, fresh_database(folders));
    }
    Api& api = *live;
    const std::string root = folders.root.path().string();
    auto expand = [&](std::string_view text) {
        return replaced(replaced(std::string(text), "$ROOT", root), "$SESSION", folders.session_id);
    };
    Request request{std::string(line.substr(0, space)), expand(line.substr(space + 1)),
                    line_end == std::string_view::npos ? std::string() : expand(input.substr(line_end + 1)), false, {}, {}};
    const Response response = api.routes->handle(request);
    written = request.method != "GET" && response.status < 400;
    check_answer(request, response);

    // What an answer says was written is what the store then reads back.
    std::string location;
    if (response.status == 201) {
        const auto found = response.headers.find("Location");
        check(found != response.headers.end(), "a 201 says where the record is", request.target);
        location = found->second;
        // A session's record is the session service's; the store holds only $SESSION.
        if (location.starts_with("/api/v1/sessions/")) location.clear();
    } else if (response.status == 200 && request.method == "PATCH") {
        location = request.target.substr(0, request.target.find('?'));
    }
    if (!location.empty()) {
        const Response read = api.call("GET", location);
        check(read.status == 200 && read.body == response.body, "the record reads back as it was answered",
              location + "\n" + response.body + "\n" + read.body);
    }
    return 0;
}
