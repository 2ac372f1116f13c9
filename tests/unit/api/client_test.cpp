// The CLI's client against a real server on a temporary unix socket.
#include "api/client.hpp"

#include "unit/api/server_test_fixture.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace handler::api {
namespace {

using namespace std::chrono_literals;
using testing::RunningServer;
using testing::TemporaryFolder;
using testing::eventually;

TEST(ApiClient, RoundTripOverTheUnixSocket) {
    RunningServer server;
    server.handler().respond_with([](const Request&) {
        return Response{201, R"({"id":3,"name":"Work"})", "application/json", {{"X-Trace", "t1"}}};
    });
    auto reply = client::request(server.socket(), "POST", "/api/v1/contexts", R"({"name":"Work"})");
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->status, 201u);
    EXPECT_EQ(reply->body, R"({"id":3,"name":"Work"})");
    EXPECT_EQ(reply->content_type, "application/json");
    EXPECT_EQ(reply->headers["X-Trace"], "t1");

    const auto requests = server.handler().requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/api/v1/contexts");
    EXPECT_EQ(requests[0].body, R"({"name":"Work"})");
    EXPECT_FALSE(requests[0].over_tcp);
}

TEST(ApiClient, ApiErrorsAreResponsesNotErrors) {
    RunningServer server([](ServerOptions& options) { options.body_limit_bytes = 10; });
    auto reply =
        client::request(server.socket(), "POST", "/api/v1/contexts", std::string(100, 'x'));
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->status, 413u);
    EXPECT_NE(reply->body.find("too_large"), std::string::npos);
}

TEST(ApiClient, MissingSocketSaysHandlerdIsNotRunning) {
    TemporaryFolder folder;
    const auto socket = folder.path() / "handlerd.sock";
    auto reply = client::request(socket, "GET", "/api/v1/status", "");
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().code, ErrorCode::unavailable);
    EXPECT_EQ(reply.error().message,
              "handlerd is not running (no answer on " + socket.string() +
                  "); start it with `handlerd --detach` (or `handler daemon` in the foreground)");
}

TEST(ApiClient, StaleSocketSaysHandlerdIsNotRunning) {
    TemporaryFolder folder;
    const auto socket = folder.path() / "handlerd.sock";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(fd); // bound, never listened: connect is refused
    auto reply = client::request(socket, "GET", "/api/v1/status", "");
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().code, ErrorCode::unavailable);
    EXPECT_NE(reply.error().message.find("handlerd is not running"), std::string::npos);
}

TEST(ApiClient, DaemonThatNeverAnswersTimesOut) {
    TemporaryFolder folder;
    const auto socket = folder.path() / "handlerd.sock";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(fd, 4), 0); // connections queue in the backlog, nobody answers
    const auto started = std::chrono::steady_clock::now();
    auto reply = client::request(socket, "GET", "/api/v1/status", "", 200);
    const auto took = std::chrono::steady_clock::now() - started;
    ::close(fd);
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().code, ErrorCode::unavailable);
    EXPECT_NE(reply.error().message.find("did not answer within 200 ms"), std::string::npos)
        << reply.error().message;
    EXPECT_LT(took, 2000ms);
}

TEST(ApiClient, FollowEventsDeliversMessagesUntilTheCallbackStops) {
    RunningServer server;
    std::vector<std::string> received;
    Result<void> outcome = make_error(ErrorCode::internal, "not finished");
    std::thread follower([&] {
        outcome = client::follow_events(server.socket(), [&](std::string_view message) {
            received.emplace_back(message);
            return received.size() == 2 ? client::Follow::stop : client::Follow::keep_going;
        });
    });
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));
    server.on_io([&] {
        server.hub().publish(R"({"type":"context.created"})");
        server.hub().publish(R"({"type":"project.created"})");
        server.hub().publish(R"({"type":"never.seen"})");
    });
    follower.join();
    ASSERT_TRUE(outcome.ok()) << outcome.error().message;
    ASSERT_EQ(received.size(), 2u);
    EXPECT_EQ(received[0], R"({"type":"context.created"})");
    EXPECT_EQ(received[1], R"({"type":"project.created"})");
    EXPECT_TRUE(eventually([&] { return server.subscribers() == 0; }));
}

TEST(ApiClient, FollowEventsReportsThatHandlerdStopped) {
    RunningServer server;
    Result<void> outcome;
    std::thread follower([&] {
        outcome = client::follow_events(server.socket(), [](std::string_view) {
            return client::Follow::keep_going;
        });
    });
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));
    EXPECT_TRUE(server.stop_and_join(3000ms));
    follower.join();
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.error().code, ErrorCode::unavailable);
    EXPECT_NE(outcome.error().message.find("handlerd stopped"), std::string::npos)
        << outcome.error().message;
}

TEST(ApiClient, FollowEventsWithoutADaemonSaysNotRunning) {
    TemporaryFolder folder;
    auto outcome = client::follow_events(folder.path() / "handlerd.sock",
                                         [](std::string_view) { return client::Follow::stop; });
    ASSERT_FALSE(outcome.ok());
    EXPECT_NE(outcome.error().message.find("handlerd is not running"), std::string::npos);
}

} // namespace
} // namespace handler::api
