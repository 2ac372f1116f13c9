// The API transport over real sockets: the unix socket, the TCP guards, the limits,
// keep-alive, the events WebSocket and shutdown (docs/api.md).
#include "api/server.hpp"
#include "api/ui_login.hpp"
#include "support/fakes.hpp"

#include "api/client.hpp"
#include "unit/api/server_test_fixture.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace handler::api {
namespace {

using namespace std::chrono_literals;
using testing::Frame;
using testing::HttpReply;
using testing::RawConnection;
using testing::RunningServer;
using testing::bearer;
using testing::eventually;
using testing::http_request;
using testing::kTestToken;
using testing::websocket_upgrade;

bool has_error_code(const HttpReply& reply, const std::string& code) {
    return reply.header("Content-Type") == "application/json" &&
           reply.body.find("{\"error\":{\"code\":\"" + code + "\",\"message\":") == 0;
}

// A socket file with nothing listening, as a killed handlerd leaves behind.
void make_stale_socket(const std::filesystem::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(fd);
}

// --- unix socket ---------------------------------------------------------------------

TEST(ApiServer, UnixSocketIsMode0600) {
    RunningServer server;
    struct stat info {};
    ASSERT_EQ(::lstat(server.socket().c_str(), &info), 0);
    EXPECT_TRUE(S_ISSOCK(info.st_mode));
    EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST(ApiServer, UnixSocketNeedsNoTokenAndNoLoopbackHost) {
    RunningServer server;
    auto connection = RawConnection::unix_socket(server.socket());
    const HttpReply reply = connection.exchange(http_request("GET", "/api/v1/status", "anything"));
    EXPECT_EQ(reply.status, 200u);
    ASSERT_EQ(server.handler().requests().size(), 1u);
    EXPECT_FALSE(server.handler().requests()[0].over_tcp);
}

TEST(ApiServer, SecondServerOnTheSameSocketIsRefused) {
    RunningServer first;
    std::ofstream(first.options().pid_file) << "4242\n";
    boost::asio::io_context io;
    testing::FakeHandler handler;
    EventHub hub;
    Server second(io, first.options(), handler, hub);
    auto started = second.start();
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error().code, ErrorCode::conflict);
    EXPECT_NE(started.error().message.find("handlerd already running"), std::string::npos);
    EXPECT_NE(started.error().message.find("pid 4242"), std::string::npos);
    EXPECT_NE(started.error().message.find(first.socket().string()), std::string::npos);
    // The first one is untouched and still answers.
    auto reply = client::request(first.socket(), "GET", "/api/v1/status", "");
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->status, 200u);
}

TEST(ApiServer, StaleSocketFileIsReplaced) {
    testing::TemporaryFolder folder;
    make_stale_socket(folder.path() / "handlerd.sock");
    RunningServer server([&](ServerOptions& options) {
        options.socket_path = folder.path() / "handlerd.sock";
    });
    auto reply = client::request(server.socket(), "GET", "/api/v1/status", "");
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->status, 200u);
    struct stat info {};
    ASSERT_EQ(::lstat(server.socket().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST(ApiServer, FileThatIsNotASocketIsNotRemoved) {
    testing::TemporaryFolder folder;
    std::ofstream(folder.path() / "handlerd.sock") << "precious";
    boost::asio::io_context io;
    testing::FakeHandler handler;
    EventHub hub;
    auto options = RunningServer::default_options(folder.path());
    Server server(io, options, handler, hub);
    auto started = server.start();
    ASSERT_FALSE(started.ok());
    EXPECT_NE(started.error().message.find("is not a socket"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(folder.path() / "handlerd.sock"));
}

TEST(ApiServer, SocketFolderOpenToOthersIsRefused) {
    testing::TemporaryFolder folder;
    ASSERT_EQ(::chmod(folder.path().c_str(), 0755), 0);
    boost::asio::io_context io;
    testing::FakeHandler handler;
    EventHub hub;
    Server server(io, RunningServer::default_options(folder.path()), handler, hub);
    auto started = server.start();
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error().code, ErrorCode::forbidden);
    EXPECT_NE(started.error().message.find("chmod 700"), std::string::npos);
}

TEST(ApiServer, NonLoopbackTcpAddressIsRefused) {
    testing::TemporaryFolder folder;
    boost::asio::io_context io;
    testing::FakeHandler handler;
    EventHub hub;
    auto options = RunningServer::default_options(folder.path());
    options.tcp_address = "0.0.0.0";
    Server server(io, options, handler, hub);
    auto started = server.start();
    ASSERT_FALSE(started.ok());
    EXPECT_NE(started.error().message.find("not a loopback address"), std::string::npos);
    // Nothing half-started is left behind.
    EXPECT_FALSE(std::filesystem::exists(options.socket_path));
}

// --- TCP guards ----------------------------------------------------------------------

TEST(ApiServer, TcpWithoutTokenIs401) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply =
        connection.exchange(http_request("POST", "/api/v1/contexts", server.host(), "", "{}"));
    EXPECT_EQ(reply.status, 401u);
    EXPECT_TRUE(has_error_code(reply, "unauthorized")) << reply.body;
    EXPECT_EQ(reply.header("WWW-Authenticate"), "Bearer realm=\"handlerd\"");
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, TcpWithWrongTokenIs401) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request(
        "POST", "/api/v1/contexts", server.host(), bearer(std::string(64, 'b')), "{}"));
    EXPECT_EQ(reply.status, 401u);
    EXPECT_TRUE(has_error_code(reply, "unauthorized")) << reply.body;
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, TcpWithTokenReachesTheHandlerWithItsBody) {
    RunningServer server;
    server.handler().respond_with([](const Request&) {
        return Response{201, R"({"id":7})", "application/json", {{"X-Test", "yes"}}};
    });
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request(
        "POST", "/api/v1/contexts?x=1", server.host(), bearer(), R"({"name":"Work"})"));
    EXPECT_EQ(reply.status, 201u);
    EXPECT_EQ(reply.body, R"({"id":7})");
    EXPECT_EQ(reply.header("X-Test"), "yes");
    EXPECT_EQ(reply.header("X-Content-Type-Options"), "nosniff");
    const auto requests = server.handler().requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/api/v1/contexts?x=1");
    EXPECT_EQ(requests[0].body, R"({"name":"Work"})");
    EXPECT_TRUE(requests[0].over_tcp);
}

TEST(ApiServer, TheRawTokenAsACookieIsRefused) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request(
        "GET", "/api/v1/agents", "localhost:" + std::to_string(server.port()),
        "Cookie: theme=dark; handler_token=" + kTestToken + "\r\n"));
    EXPECT_EQ(reply.status, 401u);
    EXPECT_EQ(server.handler().requests().size(), 0u);
}

// The page's cookie from a real login, on a request and on the events WebSocket; the
// page's files without any credential; the security headers on every answer.
TEST(ApiServer, ASessionCookieFromALoginIsACredential) {
    handler::testing::FakeClock clock;
    UiLogins logins(clock);
    auto token = logins.issue_login_token();
    ASSERT_TRUE(token.ok());
    auto session = logins.redeem(token->token);
    ASSERT_TRUE(session.ok());
    RunningServer server({}, nullptr, &logins);
    const std::string cookie = "Cookie: handler_session=" + *session + "\r\n";
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(http_request("GET", "/api/v1/agents", server.host(), cookie));
        EXPECT_EQ(reply.status, 200u);
        EXPECT_NE(reply.head.find("Content-Security-Policy: default-src 'self'"), std::string::npos) << reply.head;
        EXPECT_NE(reply.head.find("Referrer-Policy: no-referrer"), std::string::npos);
        EXPECT_NE(reply.head.find("Cross-Origin-Opener-Policy: same-origin"), std::string::npos);
        EXPECT_NE(reply.head.find("X-Content-Type-Options: nosniff"), std::string::npos);
    }
    {
        auto connection = RawConnection::tcp(server.port());
        EXPECT_EQ(connection.exchange(websocket_upgrade(server.host(), cookie)).status, 101u);
    }
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(
            http_request("GET", "/api/v1/agents", server.host(), "Cookie: handler_session=" + std::string(64, 'f') + "\r\n"));
        EXPECT_EQ(reply.status, 401u);
    }
    {
        auto connection = RawConnection::tcp(server.port());
        EXPECT_EQ(connection.exchange(websocket_upgrade(server.host(), "")).status, 401u);
    }
    {
        // A page file needs no credential (the handler answers it; here, the recorder).
        auto connection = RawConnection::tcp(server.port());
        EXPECT_EQ(connection.exchange(http_request("GET", "/app.js", server.host(), "")).status, 200u);
        auto other = RawConnection::tcp(server.port());
        EXPECT_EQ(other.exchange(http_request("GET", "/app.js", "evil.example:" + std::to_string(server.port()), "")).status,
                  403u);
    }
}

TEST(ApiServer, ForeignHostIs403EvenWithToken) {
    RunningServer server;
    for (const std::string& host :
         {"evil.example:" + std::to_string(server.port()), std::string("127.0.0.1"),
          "127.0.0.1:" + std::to_string(server.port() + 1)}) {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply =
            connection.exchange(http_request("GET", "/api/v1/status", host, bearer()));
        EXPECT_EQ(reply.status, 403u) << host;
        EXPECT_TRUE(has_error_code(reply, "forbidden")) << reply.body;
    }
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, BadOriginIs403AndOwnOriginPasses) {
    RunningServer server;
    const std::string port = std::to_string(server.port());
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(http_request(
            "GET", "/api/v1/status", server.host(),
            "Origin: http://evil.example:" + port + "\r\n" + bearer()));
        EXPECT_EQ(reply.status, 403u);
        EXPECT_TRUE(has_error_code(reply, "forbidden")) << reply.body;
        EXPECT_TRUE(server.handler().requests().empty());
    }
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request(
        "GET", "/api/v1/status", server.host(),
        "Origin: http://localhost:" + port + "\r\n" + bearer()));
    EXPECT_EQ(reply.status, 200u);
}

TEST(ApiServer, HostIsCheckedBeforeTheToken) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    // No token and a foreign Host: the Host guard answers, so a rebinding page learns
    // nothing about the token.
    const HttpReply reply = connection.exchange(
        http_request("GET", "/api/v1/status", "evil.example:" + std::to_string(server.port())));
    EXPECT_EQ(reply.status, 403u);
}

TEST(ApiServer, KeepAliveServesSeveralRequestsOnOneConnection) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    for (int i = 0; i < 3; ++i) {
        const HttpReply reply =
            connection.exchange(http_request("GET", "/api/v1/status", server.host(), bearer()));
        ASSERT_EQ(reply.status, 200u) << "request " << i;
    }
    EXPECT_EQ(server.handler().requests().size(), 3u);
}

TEST(ApiServer, TcpConnectionsAreCappedAndTheUnixSocketStillServes) {
    RunningServer server([](ServerOptions& options) { options.max_tcp_connections = 3; });
    std::vector<RawConnection> held;
    for (int i = 0; i < 3; ++i) held.push_back(RawConnection::tcp(server.port()));
    ASSERT_TRUE(eventually([&] { return server.connections() == 3; }));

    auto refused = RawConnection::tcp(server.port()); // the kernel accepts, handlerd closes
    EXPECT_TRUE(refused.closed_within(2000ms));
    auto reply = client::request(server.socket(), "GET", "/api/v1/status", "");
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->status, 200u);

    held.pop_back();
    ASSERT_TRUE(eventually([&] { return server.connections() == 2; }));
    auto next = RawConnection::tcp(server.port());
    EXPECT_EQ(next.exchange(http_request("GET", "/x", server.host(), bearer())).status, 200u);
}

// --- limits --------------------------------------------------------------------------

TEST(ApiServer, HugeContentLengthIs413BeforeTheBodyIsRead) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const auto started = std::chrono::steady_clock::now();
    ASSERT_TRUE(connection.send("POST /api/v1/contexts HTTP/1.1\r\nHost: " + server.host() +
                                "\r\n" + bearer() + "Content-Length: 104857600\r\n\r\n"));
    const HttpReply reply = connection.read_reply();
    EXPECT_EQ(reply.status, 413u);
    EXPECT_TRUE(has_error_code(reply, "too_large")) << reply.body;
    EXPECT_NE(reply.body.find("104857600"), std::string::npos) << reply.body;
    EXPECT_EQ(reply.header("Connection"), "close");
    EXPECT_TRUE(connection.closed_within(2000ms));
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2000ms);
    EXPECT_TRUE(server.handler().requests().empty());
}

// Content-Length first: the guards must still see the fields after it, so a caller
// with the token learns it is too large, and one without learns nothing.
TEST(ApiServer, GuardsSeeTheFieldsAfterAnOversizedContentLength) {
    RunningServer server;
    auto with_token = RawConnection::tcp(server.port());
    ASSERT_TRUE(with_token.send("POST /api/v1/contexts HTTP/1.1\r\nContent-Length: 104857600\r\n"
                                "Host: " + server.host() + "\r\n" + bearer() + "\r\n"));
    EXPECT_EQ(with_token.read_reply().status, 413u);

    auto without_token = RawConnection::tcp(server.port());
    ASSERT_TRUE(without_token.send("POST /api/v1/contexts HTTP/1.1\r\nContent-Length: 104857600\r\n"
                                   "Host: " + server.host() + "\r\n\r\n"));
    const HttpReply refused = without_token.read_reply();
    EXPECT_EQ(refused.status, 401u);
    EXPECT_EQ(refused.body.find("104857600"), std::string::npos) << refused.body;
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, HugeBodyIsCutOffNotRead) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    constexpr std::size_t kHundredMegabytes = 100 * 1024 * 1024;
    ASSERT_TRUE(connection.send("POST /api/v1/contexts HTTP/1.1\r\nHost: " + server.host() +
                                "\r\n" + bearer() + "Content-Length: " +
                                std::to_string(kHundredMegabytes) + "\r\n\r\n"));
    // The server refuses from the header and closes; the client cannot push the body
    // into it. What it gets rid of at all is socket buffers plus a bounded discard.
    const std::size_t accepted = connection.pump(kHundredMegabytes);
    EXPECT_LT(accepted, std::size_t{40} * 1024 * 1024) << "server took " << accepted << " bytes";
    std::cout << "[          ] the client got " << accepted << " of " << kHundredMegabytes
              << " bytes into the socket before the server cut it off\n";
    EXPECT_TRUE(server.handler().requests().empty());
    EXPECT_TRUE(eventually([&] { return server.connections() == 0; }));
}

TEST(ApiServer, ChunkedBodyOverTheLimitIs413) {
    RunningServer server([](ServerOptions& options) { options.body_limit_bytes = 1000; });
    const std::string chunk(600, 'x');
    const std::string chunked = "258\r\n" + chunk + "\r\n258\r\n" + chunk + "\r\n0\r\n\r\n";
    const std::string head = "POST /api/v1/contexts HTTP/1.1\r\nHost: " + server.host() +
                             "\r\n" + bearer() + "Transfer-Encoding: chunked\r\n\r\n";
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(head + chunked);
        EXPECT_EQ(reply.status, 413u);
        EXPECT_TRUE(has_error_code(reply, "too_large")) << reply.body;
        EXPECT_TRUE(connection.closed_within(2000ms));
        EXPECT_TRUE(server.handler().requests().empty());
    }
    // One chunk fits: chunked bodies as such are fine.
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(head + "258\r\n" + chunk + "\r\n0\r\n\r\n");
    EXPECT_EQ(reply.status, 200u);
    ASSERT_EQ(server.handler().requests().size(), 1u);
    EXPECT_EQ(server.handler().requests()[0].body, chunk);
}

// A conversation's prompt may carry images: its route alone has the larger limit, and
// nothing that merely looks like it (another method, a deeper path) gets it.
TEST(ApiServer, APromptsBodyHasALimitOfItsOwn) {
    RunningServer server([](ServerOptions& options) {
        options.body_limit_bytes = 1000;
        options.prompt_body_limit_bytes = 5000;
    });
    const auto post = [&](const std::string& method, const std::string& target, std::size_t bytes) {
        auto connection = RawConnection::tcp(server.port());
        return connection
            .exchange(method + " " + target + " HTTP/1.1\r\nHost: " + server.host() + "\r\n" + bearer() +
                      "Content-Length: " + std::to_string(bytes) + "\r\n\r\n" + std::string(bytes, 'x'))
            .status;
    };
    EXPECT_EQ(post("POST", "/api/v1/sessions/s_1/prompts", 3000), 200u);
    EXPECT_EQ(post("POST", "/api/v1/sessions/s_1/prompts?x=1", 3000), 200u);
    EXPECT_EQ(post("POST", "/api/v1/sessions/s_1/prompts", 6000), 413u);
    EXPECT_EQ(post("PUT", "/api/v1/sessions/s_1/prompts", 3000), 413u);
    EXPECT_EQ(post("POST", "/api/v1/sessions/s_1/answers", 3000), 413u);
    EXPECT_EQ(post("POST", "/api/v1/sessions/s_1/prompts/p_1", 3000), 413u);
    EXPECT_EQ(post("POST", "/api/v1/contexts/prompts", 3000), 413u);
    EXPECT_EQ(server.handler().requests().size(), 2u);
}

TEST(ApiServer, HeaderOverTheLimitIs413) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request(
        "GET", "/api/v1/status", server.host(),
        bearer() + "X-Big: " + std::string(17 * 1024, 'y') + "\r\n"));
    EXPECT_EQ(reply.status, 413u);
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, ReadTimeoutClosesAHalfSentRequest) {
    RunningServer server([](ServerOptions& options) { options.read_timeout_ms = 200; });
    auto connection = RawConnection::tcp(server.port());
    const auto started = std::chrono::steady_clock::now();
    ASSERT_TRUE(connection.send("POST /api/v1/contexts HTTP/1.1\r\nHost: " + server.host() +
                                "\r\nContent-Le"));
    EXPECT_TRUE(connection.closed_within(2000ms));
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 1500ms);
    EXPECT_TRUE(server.handler().requests().empty());
}

TEST(ApiServer, MalformedRequestIs400) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply =
        connection.exchange("GET /x HTTP/1.1\r\nHost " + server.host() + "\r\n\r\n");
    EXPECT_EQ(reply.status, 400u);
    EXPECT_TRUE(has_error_code(reply, "invalid_argument")) << reply.body;
}

TEST(ApiServer, AbsoluteFormTargetIs400) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(
        http_request("GET", "http://evil.example/api/v1/status", server.host(), bearer()));
    EXPECT_EQ(reply.status, 400u);
    EXPECT_TRUE(server.handler().requests().empty());
}

// --- handler failures ----------------------------------------------------------------

TEST(ApiServer, HandlerThatThrowsGives500JsonAndTheServerLivesOn) {
    RunningServer server;
    server.handler().respond_with([](const Request& request) -> Response {
        if (request.target == "/boom") throw std::runtime_error("database is on fire");
        return Response{200, R"({"ok":true})", "application/json", {}};
    });
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply =
        connection.exchange(http_request("GET", "/boom", server.host(), bearer()));
    EXPECT_EQ(reply.status, 500u);
    EXPECT_TRUE(has_error_code(reply, "internal")) << reply.body;
    EXPECT_NE(reply.body.find("database is on fire"), std::string::npos);
    // Same connection, next request.
    const HttpReply next =
        connection.exchange(http_request("GET", "/fine", server.host(), bearer()));
    EXPECT_EQ(next.status, 200u);
}

TEST(ApiServer, HandlerHeaderWithNewlineCannotSplitTheResponse) {
    RunningServer server;
    server.handler().respond_with([](const Request&) {
        return Response{200, "{}", "application/json", {{"X-Echo", "a\r\nSet-Cookie: x=1"}}};
    });
    auto connection = RawConnection::tcp(server.port());
    const HttpReply reply = connection.exchange(http_request("GET", "/x", server.host(), bearer()));
    EXPECT_EQ(reply.status, 500u);
    EXPECT_EQ(reply.head.find("Set-Cookie"), std::string::npos);
}

// --- events WebSocket ----------------------------------------------------------------

TEST(ApiServer, WebSocketWithTokenReceivesPublishedEvents) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    const HttpReply handshake = connection.exchange(websocket_upgrade(server.host(), bearer()));
    ASSERT_EQ(handshake.status, 101u) << handshake.head;
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));

    server.on_io([&] {
        server.hub().publish(R"({"type":"agent.created","data":{"id":1}})");
        server.hub().publish(R"({"type":"agent.deleted","data":{"id":1}})");
    });
    const Frame first = connection.read_frame();
    EXPECT_EQ(first.opcode, 1); // text
    EXPECT_EQ(first.payload, R"({"type":"agent.created","data":{"id":1}})");
    const Frame second = connection.read_frame();
    EXPECT_EQ(second.payload, R"({"type":"agent.deleted","data":{"id":1}})");

    // A client that leaves is answered and unsubscribed.
    connection.send_close(1000);
    const Frame echo = connection.read_frame();
    EXPECT_EQ(echo.opcode, 8);
    EXPECT_EQ(echo.close_code(), 1000u);
    EXPECT_TRUE(eventually([&] { return server.subscribers() == 0; }));
    connection.shutdown_write();
    EXPECT_TRUE(eventually([&] { return server.connections() == 0; }));
}

TEST(ApiServer, WebSocketOverUnixSocketNeedsNoToken) {
    RunningServer server;
    auto connection = RawConnection::unix_socket(server.socket());
    const HttpReply handshake = connection.exchange(websocket_upgrade("localhost", ""));
    EXPECT_EQ(handshake.status, 101u) << handshake.head;
}

TEST(ApiServer, WebSocketUpgradeWithoutTokenOrWithForeignHostIsRefused) {
    RunningServer server;
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(websocket_upgrade(server.host(), ""));
        EXPECT_EQ(reply.status, 401u);
    }
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(
            websocket_upgrade("evil.example:" + std::to_string(server.port()), bearer()));
        EXPECT_EQ(reply.status, 403u);
    }
    {
        auto connection = RawConnection::tcp(server.port());
        const HttpReply reply = connection.exchange(websocket_upgrade(
            server.host(),
            "Origin: http://evil.example\r\nCookie: handler_token=" + kTestToken + "\r\n"));
        EXPECT_EQ(reply.status, 403u);
    }
    EXPECT_EQ(server.subscribers(), 0u);
}

TEST(ApiServer, WebSocketClientThatFallsBehindIsClosedWith1008) {
    RunningServer server;
    auto connection = RawConnection::tcp(server.port());
    ASSERT_EQ(connection.exchange(websocket_upgrade(server.host(), bearer())).status, 101u);
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));

    // 1100 events in one go, while the client reads nothing.
    const std::size_t subscribers_after = server.on_io([&] {
        for (int i = 0; i < 1100; ++i)
            server.hub().publish(R"({"type":"agent.updated","data":{"n":)" +
                                 std::to_string(i) + "}}");
        return server.hub().subscriber_count();
    });
    EXPECT_EQ(subscribers_after, 0u) << "the session should leave the hub at once";

    int text_frames = 0;
    Frame frame;
    while ((frame = connection.read_frame()).opcode == 1) ++text_frames;
    EXPECT_EQ(frame.opcode, 8) << "expected a close frame";
    EXPECT_EQ(frame.close_code(), 1008u);
    EXPECT_LE(text_frames, 1024);
    connection.send_close(1008);
    connection.shutdown_write();
    EXPECT_TRUE(eventually([&] { return server.connections() == 0; }));
}

TEST(ApiServer, WebSocketClientThatNeverReadsIsDroppedEvenIfTheCloseFrameCannotBeSent) {
    RunningServer server;
    // A small receive window and a message far bigger than every socket buffer: the
    // write never completes, so the close frame queued behind it never leaves.
    auto connection = RawConnection::tcp(server.port(), 4096);
    ASSERT_EQ(connection.exchange(websocket_upgrade(server.host(), bearer())).status, 101u);
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));
    server.on_io([&] {
        server.hub().publish(std::string(16 * 1024 * 1024, 'x'));
        for (int i = 0; i < 1100; ++i) server.hub().publish("{}");
    });
    EXPECT_TRUE(connection.peer_hung_up_within(3000ms));
    EXPECT_TRUE(eventually([&] { return server.connections() == 0; }, 3000ms));
    EXPECT_EQ(server.subscribers(), 0u);
}

// --- shutdown ------------------------------------------------------------------------

TEST(ApiServer, StopClosesEverythingAndRunReturns) {
    RunningServer server;
    auto idle = RawConnection::tcp(server.port());
    ASSERT_EQ(idle.exchange(http_request("GET", "/x", server.host(), bearer())).status, 200u);
    auto events = RawConnection::tcp(server.port());
    ASSERT_EQ(events.exchange(websocket_upgrade(server.host(), bearer())).status, 101u);
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));

    // The events client answers the close frame like any real client, by echoing it.
    std::thread reader([&] {
        const Frame frame = events.read_frame(3000ms);
        EXPECT_EQ(frame.opcode, 8);
        EXPECT_EQ(frame.close_code(), 1001u); // going away
        events.send_close(1001);
        events.shutdown_write();
    });
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(server.stop_and_join(3000ms));
    // Well under the one-second grace for clients that do not answer: this one did.
    EXPECT_LT(std::chrono::steady_clock::now() - started, 800ms);
    reader.join();
    EXPECT_TRUE(idle.closed_within(1000ms));
    EXPECT_FALSE(std::filesystem::exists(server.socket()));
}

TEST(ApiServer, StopDoesNotWaitForAWebSocketClientThatDoesNotAnswer) {
    RunningServer server;
    auto events = RawConnection::tcp(server.port());
    ASSERT_EQ(events.exchange(websocket_upgrade(server.host(), bearer())).status, 101u);
    ASSERT_TRUE(eventually([&] { return server.subscribers() == 1; }));
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(server.stop_and_join(3000ms));
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2000ms);
}

// A route that answers later (Response::later, the model server test): the I/O thread is
// not held meanwhile, another connection is answered, and the late answer arrives whole on
// its own connection, sent from another thread.
TEST(ApiServer, ALaterAnswerHoldsNothingAndArrivesOnItsConnection) {
    RunningServer server;
    std::mutex mutex;
    std::function<void(Response)> pending;
    server.handler().respond_with([&](const Request& request) {
        if (request.target != "/api/v1/slow") return Response{200, R"({"fast":true})", "application/json", {}};
        Response response;
        response.later = [&](std::function<void(Response)> reply) {
            std::lock_guard lock(mutex);
            pending = std::move(reply);
        };
        return response;
    });
    auto slow = RawConnection::tcp(server.port());
    ASSERT_TRUE(slow.send(http_request("GET", "/api/v1/slow", server.host(), bearer())));
    ASSERT_TRUE(testing::eventually([&] { std::lock_guard lock(mutex); return pending != nullptr; }));
    auto fast = RawConnection::tcp(server.port());
    const HttpReply first = fast.exchange(http_request("GET", "/api/v1/fast", server.host(), bearer()));
    EXPECT_EQ(first.status, 200u);
    EXPECT_EQ(first.body, R"({"fast":true})");
    std::thread worker([&] {
        std::lock_guard lock(mutex);
        pending(Response{200, R"({"late":true})", "application/json", {{"X-Late", "1"}}});
    });
    worker.join();
    const HttpReply late = slow.read_reply();
    EXPECT_EQ(late.status, 200u);
    EXPECT_EQ(late.body, R"({"late":true})");
    EXPECT_EQ(late.header("X-Late"), "1");
    EXPECT_EQ(late.header("X-Content-Type-Options"), "nosniff") << "the same headers as every answer";
    // Still keep-alive: the connection takes the next request.
    const HttpReply again = slow.exchange(http_request("GET", "/api/v1/fast", server.host(), bearer()));
    EXPECT_EQ(again.body, R"({"fast":true})");
}

} // namespace
} // namespace handler::api

namespace handler::api {
namespace {

using testing::HttpReply;
using testing::RawConnection;
using testing::RunningServer;
using testing::http_request;

// A route that answers later (Response::later, a container run): the io thread serves other
// requests meanwhile, the answer comes when the worker calls back from its own thread, and
// the connection then carries the next request.
TEST(ApiServer, AnAnswerGivenLaterDoesNotHoldUpTheIoThread) {
    RunningServer server;
    std::promise<std::function<void(Response)>> waiting;
    server.handler().respond_with([&](const Request& request) {
        if (request.target != "/api/v1/slow") return Response{200, R"({"fast":true})", "application/json", {}};
        Response response;
        response.later = [&](std::function<void(Response)> reply) { waiting.set_value(std::move(reply)); };
        return response;
    });
    auto slow = RawConnection::unix_socket(server.socket());
    ASSERT_TRUE(slow.send(http_request("GET", "/api/v1/slow", "x")));
    auto reply = waiting.get_future().get();
    // Meanwhile another client is answered at once.
    auto other = RawConnection::unix_socket(server.socket());
    const HttpReply fast = other.exchange(http_request("GET", "/api/v1/status", "x"));
    EXPECT_EQ(fast.status, 200u);
    EXPECT_EQ(fast.body, R"({"fast":true})");
    EXPECT_EQ(slow.read_reply(200ms).status, 0u) << "nothing is sent before the answer";
    std::thread worker([&] { reply(Response{200, R"({"late":true})", "application/json", {}}); });
    worker.join();
    const HttpReply late = slow.read_reply();
    EXPECT_EQ(late.status, 200u);
    EXPECT_EQ(late.body, R"({"late":true})");
    EXPECT_NE(late.head.find("Content-Security-Policy"), std::string::npos) << "the usual headers";
    const HttpReply again = slow.exchange(http_request("GET", "/api/v1/status", "x"));
    EXPECT_EQ(again.body, R"({"fast":true})") << "keep-alive goes on after a late answer";
}

// handlerd stops before the answer: the stop is not held up, and the late reply, given
// once the io thread has ended (the Changes service ends before the io_context does), is
// dropped with its connection.
TEST(ApiServer, ALateAnswerDoesNotHoldUpAStop) {
    RunningServer server;
    std::function<void(Response)> reply;
    std::promise<void> asked;
    server.handler().respond_with([&](const Request&) {
        Response response;
        response.later = [&](std::function<void(Response)> r) { reply = std::move(r); asked.set_value(); };
        return response;
    });
    auto connection = RawConnection::unix_socket(server.socket());
    ASSERT_TRUE(connection.send(http_request("GET", "/api/v1/slow", "x")));
    asked.get_future().wait();
    EXPECT_TRUE(server.stop_and_join()) << "a pending late answer does not hold up the stop";
    ASSERT_TRUE(reply);
    reply(Response{200, "{}", "application/json", {}});
    EXPECT_TRUE(connection.closed_within(1000ms));
}

} // namespace
} // namespace handler::api
