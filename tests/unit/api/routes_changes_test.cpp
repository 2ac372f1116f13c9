// GET /api/v1/sessions/{id}/changes: answered later (Response::later) from the Changes
// service, here over the fake container runtime; what it refuses, and that the run is
// the read-only, network-less task of the session's own project.
#include "api/routes.hpp"

#include "sessions/changes_service.hpp"
#include "store/store.hpp"
#include "support/fake_container_runtime.hpp"
#include "support/fakes.hpp"
#include "support/records.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <future>

namespace handler::api {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::string_literals;

class ChangesRouteTest : public ::testing::Test {
protected:
    void SetUp() override {
        fs::create_directories(dir_ / "home/u/src/app");
        auto opened = store::Store::open(dir_ / "data/handler.db", clock_);
        ASSERT_TRUE(opened.ok()) << opened.error().message;
        store_ = std::move(*opened);
        runtime_.images.insert("localhost/handler-base:1");
        service_ = std::make_unique<sessions::ChangesService>(
            runtime_, sessions::ChangesServiceOptions{"localhost/handler-base:1", {}, 4});
        DaemonInfo info;
        info.changes = service_.get();
        routes_ = std::make_unique<Routes>(*store_, hub_, clock_, info);
        project_path_ = fs::canonical(dir_ / "home/u/src/app").string();
        auto project = store_->create_project({"app", project_path_, std::nullopt, {}});
        ASSERT_TRUE(project) << project.error().message;
        clock_.advance(61'000);
        auto session = store_->create_session(testing::session_of(std::nullopt, project->id, "shell"));
        ASSERT_TRUE(session) << session.error().message;
        session_ = *session;
    }

    Response call(const std::string& method, const std::string& target) {
        return routes_->handle(Request{method, target, "", false, {}, {}});
    }
    // The deferred answer, as the transport would send it.
    static Response finish(Response response) {
        if (!response.later) return response;
        std::promise<Response> answered;
        response.later([&](Response answer) { answered.set_value(std::move(answer)); });
        return answered.get_future().get();
    }

    testing::TempDir dir_;
    testing::FakeClock clock_;
    std::unique_ptr<store::Store> store_;
    EventHub hub_;
    testing::FakeContainerRuntime runtime_;
    std::unique_ptr<sessions::ChangesService> service_;
    std::unique_ptr<Routes> routes_;
    std::string project_path_;
    store::Session session_;
};

TEST_F(ChangesRouteTest, AnswersLaterWithTheParsedChangesOfTheSessionsProject) {
    runtime_.task_handler = [](const runtime::ContainerSpec&) -> Result<runtime::ExecResult> {
        const std::string numstat = "1\t0\thello.txt\0"s;
        const std::string patch = "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n"
                                  "+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n";
        std::string out = "mode 3\ngit";
        out += "head 41\n0123456789abcdef0123456789abcdef01234567\n";
        out += "status 12\n? hello.txt\0"s;
        out += "numstat " + std::to_string(numstat.size()) + "\n" + numstat;
        out += "patch " + std::to_string(patch.size()) + "\n" + patch;
        out += "sizes 12\n3\thello.txt\0"s;
        out += "files 0\nerr 0\n";
        return runtime::ExecResult{0, out, ""};
    };
    auto response = call("GET", "/api/v1/sessions/" + session_.id + "/changes");
    ASSERT_TRUE(response.later) << "a container run is never answered on the I/O thread: " << response.body;
    EXPECT_TRUE(runtime_.tasks.empty()) << "nothing runs until the transport asks";
    auto answer = finish(std::move(response));
    ASSERT_EQ(answer.status, 200u) << answer.body;
    const auto body = json::parse(answer.body);
    EXPECT_TRUE(body.at("git").as_bool());
    EXPECT_EQ(body.at("head").as_string(), "0123456789abcdef0123456789abcdef01234567");
    const auto& file = body.at("files").at(0);
    EXPECT_EQ(file.at("path").as_string(), "hello.txt");
    EXPECT_EQ(file.at("status").as_string(), "untracked");
    EXPECT_EQ(file.at("added").as_int64(), 1);
    EXPECT_EQ(file.at("size").as_int64(), 3);
    EXPECT_NE(std::string(file.at("diff").as_string()).find("+hi\n"), std::string::npos);
    EXPECT_FALSE(body.at("truncated").as_bool());
    EXPECT_TRUE(body.at("limits").as_object().contains("max_diff_bytes"));

    ASSERT_EQ(runtime_.tasks.size(), 1u);
    const auto& spec = runtime_.tasks[0].spec;
    EXPECT_EQ(spec.project_path, project_path_);
    EXPECT_TRUE(spec.project_read_only);
    EXPECT_EQ(spec.network, runtime::NetworkMode::none);
    EXPECT_EQ(spec.image, "localhost/handler-base:1");
    EXPECT_EQ(spec.argv.at(5), std::to_string(session_.created_at / 1000)) << "changed since the session began";
}

TEST_F(ChangesRouteTest, AFailedRunIsAnErrorInWords) {
    runtime_.fail_next("run_task", make_error(ErrorCode::unavailable, "podman is not installed"));
    auto answer = finish(call("GET", "/api/v1/sessions/" + session_.id + "/changes"));
    EXPECT_EQ(answer.status, 503u);
    EXPECT_NE(answer.body.find("podman is not installed"), std::string::npos) << answer.body;
    runtime_.task_handler = [](const runtime::ContainerSpec&) -> Result<runtime::ExecResult> {
        return runtime::ExecResult{0, "garbage", ""};
    };
    auto garbage = finish(call("GET", "/api/v1/sessions/" + session_.id + "/changes"));
    EXPECT_EQ(garbage.status, 500u);
    EXPECT_NE(garbage.body.find("malformed part header"), std::string::npos) << garbage.body;
}

TEST_F(ChangesRouteTest, RefusesOtherMethodsQueriesAndUnknownSessions) {
    auto post = call("POST", "/api/v1/sessions/" + session_.id + "/changes");
    EXPECT_EQ(post.status, 405u);
    EXPECT_EQ(post.headers["Allow"], "GET");
    EXPECT_FALSE(post.later);
    auto query = call("GET", "/api/v1/sessions/" + session_.id + "/changes?all=1");
    EXPECT_EQ(query.status, 400u);
    EXPECT_FALSE(query.later);
    auto unknown = call("GET", "/api/v1/sessions/s_ffffff/changes");
    EXPECT_EQ(unknown.status, 404u) << unknown.body;
    EXPECT_FALSE(unknown.later);
    EXPECT_TRUE(runtime_.tasks.empty());

    Routes without(*store_, hub_, clock_, DaemonInfo{});
    auto none = without.handle(Request{"GET", "/api/v1/sessions/" + session_.id + "/changes", "", false, {}, {}});
    EXPECT_EQ(none.status, 503u);
    EXPECT_FALSE(none.later);
}

} // namespace
} // namespace handler::api
