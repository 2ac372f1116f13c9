// The egress proxy over real sockets: a client on its unix socket, a real upstream on
// 127.0.0.1 (reachable only through an exact rule, with the resolver override mapping a
// test name to it), the audit trail, live policy changes cutting open tunnels, and the
// requests an agent might send to get around it.
#include "network/egress_proxy.hpp"

#include "support/fakes.hpp"
#include "unit/network/client_hello_bytes.hpp"
#include "unit/network/proxy_support.hpp"

#include <handler/handover.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

namespace handler::network {
namespace {

using handler::testing::contains;
using handler::testing::TempDir;
using namespace std::chrono_literals;
using namespace handler::network::testing;

// The settings' pinned names, plus names that resolve to loopback the way a hostile DNS
// server would make them: not pinned, so they get the address check.
class TestResolver final : public Resolver {
public:
    explicit TestResolver(std::unique_ptr<Resolver> pinned) : pinned_(std::move(pinned)) {}
    void resolve(const std::string& host, Done done) override {
        if (host.ends_with("rebound.test")) return done(std::vector<Address>{*parse_address("127.0.0.1")});
        pinned_->resolve(host, std::move(done));
    }
    bool pinned(const std::string& host) const override { return pinned_->pinned(host); }
    // Like [network] resolve's "name:port" = "address:port": a port 443 the test can serve.
    std::optional<HostPort> pinned_endpoint(const std::string& host, std::uint16_t port) const override {
        std::lock_guard lock(mutex_);
        const auto found = endpoints_.find(host + ":" + std::to_string(port));
        if (found == endpoints_.end()) return std::nullopt;
        return found->second;
    }
    void pin(const std::string& host_port, HostPort to) {
        std::lock_guard lock(mutex_);
        endpoints_[host_port] = std::move(to);
    }

private:
    std::unique_ptr<Resolver> pinned_;
    mutable std::mutex mutex_;
    std::map<std::string, HostPort> endpoints_;
};

// A tracer that, once told to hold, keeps every when_traced() waiting until release():
// as the session's channel does while the shim has not answered.
class HoldingTracer final : public ConnectionTracer {
public:
    void trace(std::int64_t connection, std::uint16_t) override {
        std::lock_guard lock(mutex_);
        traced_.push_back(connection);
    }
    void when_traced(std::int64_t connection, std::function<void()> done) override {
        std::lock_guard lock(mutex_);
        asked_.push_back(connection);
        if (!hold) return done();
        waiting_.push_back(std::move(done));
    }
    std::size_t waiting() {
        std::lock_guard lock(mutex_);
        return waiting_.size();
    }
    std::vector<std::int64_t> traced() {
        std::lock_guard lock(mutex_);
        return traced_;
    }
    std::vector<std::int64_t> asked() {
        std::lock_guard lock(mutex_);
        return asked_;
    }
    // Runs what waits, on `io` (where the proxy's handlers run).
    void release(boost::asio::io_context& io) {
        std::lock_guard lock(mutex_);
        for (auto& done : waiting_) boost::asio::post(io, std::move(done));
        waiting_.clear();
    }
    std::atomic<bool> hold{false};

private:
    std::mutex mutex_;
    std::vector<std::int64_t> traced_, asked_;
    std::vector<std::function<void()>> waiting_;
};

class EgressProxyTest : public ::testing::Test {
protected:
    EgressProxyTest() {
        policy_.mode = Mode::filtered;
        policy_.agent = "reviewer";
        policy_.allow = {*parse_rule("upstream.test"), *parse_rule("*.rebound.test"), *parse_rule("api.example.test"),
                         *parse_rule("tls443.test")};
        std::map<std::string, std::vector<Address>> overrides = {
            {"upstream.test", {*parse_address("127.0.0.1")}},
            {"api.example.test", {*parse_address("127.0.0.1")}},
        };
        auto test_resolver = std::make_unique<TestResolver>(make_system_resolver(io_, overrides));
        pins_ = test_resolver.get();
        resolver_ = std::make_unique<CountingResolver>(std::move(test_resolver));
        ProxyOptions options;
        options.socket_path = dir_ / "proxy.sock";
        options.session_id = "s_000001";
        proxy_ = std::make_unique<EgressProxy>(
            io_, options, [this] { std::lock_guard lock(policy_mutex_); return policy_; },
            ProxyServices{resolver_.get(), &audit_, nullptr, nullptr, &tracer_}, [] { return std::int64_t{1000}; },
            std::vector<Address>{});
        EXPECT_TRUE(proxy_->start().ok());
        thread_ = std::thread([this] { io_.run(); });
    }
    ~EgressProxyTest() override {
        boost::asio::post(io_, [this] { proxy_->stop(); });
        work_.reset();
        thread_.join();
    }

    int client() {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", (dir_ / "proxy.sock").c_str());
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        return fd;
    }

    void set_policy(const Policy& policy) {
        {
            std::lock_guard lock(policy_mutex_);
            policy_ = policy;
        }
        std::promise<void> done;
        boost::asio::post(io_, [&] {
            proxy_->reevaluate();
            done.set_value();
        });
        done.get_future().wait();
    }

    TempDir dir_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
        boost::asio::make_work_guard(io_);
    std::mutex policy_mutex_;
    Policy policy_;
    std::unique_ptr<CountingResolver> resolver_;
    TestResolver* pins_ = nullptr; // inside resolver_
    RecordingAudit audit_;
    HoldingTracer tracer_;
    std::unique_ptr<EgressProxy> proxy_;
    std::thread thread_;
};

// A program that exits as soon as it has its answer (curl) would be gone before the shim
// looked: a refusal, and an allowed connection's first byte back, wait for the tracer,
// while the decisions, their entries and the upstream connection do not.
// A client's socket closed however the test ends: an upstream that echoes until its
// tunnel ends must not hang the test when an assertion returns early.
struct ClientSocket {
    int fd;
    ~ClientSocket() { close(); }
    void close() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

TEST_F(EgressProxyTest, NothingReachesTheProgramBeforeItsConnectionIsTraced) {
    tracer_.hold = true;
    ClientSocket refused_socket{client()};
    const int refused = refused_socket.fd;
    send_all(refused, "CONNECT blocked.test:443 HTTP/1.1\r\nHost: blocked.test:443\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return tracer_.waiting() == 1; }));
    ASSERT_EQ(audit_.entries().size(), 1u) << "decided and logged at once";
    EXPECT_EQ(audit_.entries().at(0).verdict, Verdict::deny);
    ASSERT_EQ(tracer_.traced().size(), 1u);
    EXPECT_EQ(tracer_.asked(), tracer_.traced()) << "it waits for its own connection's answer";
    EXPECT_EQ(audit_.entries().at(0).connection, tracer_.traced().at(0));

    Upstream upstream(echo);
    ClientSocket allowed_socket{client()};
    const int allowed = allowed_socket.fd;
    send_all(allowed, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return tracer_.waiting() == 2; })) << "connected upstream, it waits for the tracer";
    ASSERT_EQ(audit_.entries().size(), 2u);
    EXPECT_EQ(audit_.entries().at(1).verdict, Verdict::allow) << "decided and logged at once";
    EXPECT_EQ(tracer_.asked(), tracer_.traced());

    EXPECT_EQ(read_all(refused, 300ms), "") << "nothing reached the refused client before the tracer answered";
    EXPECT_EQ(read_all(allowed, 300ms), "") << "nor the allowed one";
    tracer_.release(io_);
    EXPECT_EQ(read_until(allowed, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    send_all(allowed, "ping");
    EXPECT_EQ(read_until(allowed, "ping"), "ping") << "the tunnel works once traced";
    allowed_socket.close();
    const auto answer = read_all(refused);
    EXPECT_EQ(answer.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << answer;
    EXPECT_NE(answer.find("blocked.test:443 is not allowed for agent reviewer"), std::string::npos) << answer;
}

TEST_F(EgressProxyTest, ConnectToAnAllowedHostTunnelsBothWaysAndIsAudited) {
    Upstream upstream(echo);
    const int fd = client();
    send_all(fd, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\nHost: x\r\n\r\nearly");
    const auto established = read_until(fd, "\r\n\r\n");
    EXPECT_EQ(established, "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_EQ(read_until(fd, "early"), "early") << "bytes sent right behind CONNECT go through";
    // Enough that reads fill the proxy's buffer and the tunnel moves on to splice(2); a
    // pattern, so a byte lost, doubled or out of order on the way shows.
    std::string big(4 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
    std::thread writer([&] { send_all(fd, big); ::shutdown(fd, SHUT_WR); });
    const auto back = read_all(fd);
    writer.join();
    ::close(fd);
    EXPECT_EQ(back.size(), big.size());
    EXPECT_TRUE(back == big) << "the bytes came back changed";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    const auto entry = audit_.entries().at(0);
    EXPECT_EQ(entry.verdict, Verdict::allow);
    EXPECT_EQ(entry.host, "upstream.test");
    EXPECT_EQ(entry.method, "CONNECT");
    EXPECT_EQ(entry.rule, "upstream.test");
    EXPECT_EQ(entry.session_id, "s_000001");
    EXPECT_EQ(entry.bytes_up, big.size() + 5);
    EXPECT_EQ(entry.bytes_down, big.size() + 5);
}

TEST_F(EgressProxyTest, ARefusedHostGetsA403ThatSaysHowToAllowIt) {
    const int fd = client();
    send_all(fd, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n");
    const auto reply = read_all(fd);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403 Forbidden")) << reply;
    EXPECT_TRUE(contains(reply, "evil.example:443")) << reply;
    EXPECT_TRUE(contains(reply, "handler network allow reviewer evil.example")) << reply;
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    EXPECT_EQ(audit_.entries().at(0).verdict, Verdict::deny);
}

TEST_F(EgressProxyTest, PlainHttpIsFilteredLikeConnectAndForwardedInOriginForm) {
    std::promise<std::string> seen;
    Upstream upstream([&](int fd) {
        seen.set_value(read_until(fd, "\r\n\r\n"));
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    const int fd = client();
    send_all(fd, "GET http://upstream.test:" + std::to_string(upstream.port()) +
                     "/a/b?c=d HTTP/1.1\r\nHost: upstream.test\r\nProxy-Connection: keep-alive\r\n"
                     "Proxy-Authorization: Basic eDp5\r\n\r\n");
    const auto reply = read_all(fd);
    ::close(fd);
    ASSERT_TRUE(reply.starts_with("HTTP/1.1 200 OK")) << reply;
    EXPECT_TRUE(reply.ends_with("ok"));
    const auto head = seen.get_future().get();
    EXPECT_TRUE(head.starts_with("GET /a/b?c=d HTTP/1.1\r\n")) << head;
    EXPECT_FALSE(contains(head, "Proxy-")) << head;
    EXPECT_TRUE(contains(head, "Connection: close")) << head;

    const int refused = client();
    send_all(refused, "GET http://blocked.example/ HTTP/1.1\r\nHost: blocked.example\r\n\r\n");
    EXPECT_TRUE(read_all(refused).starts_with("HTTP/1.1 403"));
    ::close(refused);
}

TEST_F(EgressProxyTest, LoopbackIsReachedOnlyThroughAnExactRule) {
    Upstream upstream(echo);
    Policy open = policy_;
    open.mode = Mode::open;
    set_policy(open);
    // rebound.test resolves to 127.0.0.1 as a hostile DNS answer would (the resolver below
    // is not the settings' pinned map): open mode and the wildcard both refuse it.
    for (const std::string host : {"rebound.test", "x.rebound.test", "127.0.0.1", "[::1]"}) {
        const int fd = client();
        send_all(fd, "CONNECT " + host + ":" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
        const auto reply = read_all(fd);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << host << ": " << reply;
        EXPECT_TRUE(contains(reply, "loopback, private or link-local")) << reply;
    }
}

TEST_F(EgressProxyTest, ANamePinnedInTheSettingsMayBeLoopbackUnderAnyRule) {
    Upstream upstream(echo);
    Policy open = policy_;
    open.mode = Mode::open;
    open.allow.clear();
    set_policy(open);
    const int fd = client();
    send_all(fd, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(contains(read_until(fd, "\r\n\r\n"), "200"));
    ::close(fd);
}

TEST_F(EgressProxyTest, APolicyChangeCutsOpenTunnelsToNowRefusedHosts) {
    Upstream upstream(echo);
    const int fd = client();
    send_all(fd, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
    const auto established = read_until(fd, "\r\n\r\n");
    ASSERT_TRUE(contains(established, "200")) << established;
    send_all(fd, "ping");
    EXPECT_EQ(read_until(fd, "ping"), "ping");
    Policy closed = policy_;
    closed.allow.clear();
    set_policy(closed);
    EXPECT_EQ(read_all(fd, 2000ms), "") << "the tunnel is closed";
    ::close(fd);
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    EXPECT_TRUE(contains(audit_.entries().at(0).reason, "cut")) << audit_.entries().at(0).reason;
}

// What handlerd's heap keeper reads (daemon/heap.hpp): the most connections open at once
// since the last look, after which the count starts again from those open now.
TEST_F(EgressProxyTest, ThePeakOfOpenConnectionsIsKeptUntilTakenThenStartsFromThoseOpen) {
    Upstream upstream(echo);
    const auto on_io = [&](const std::function<std::size_t()>& what) {
        std::promise<std::size_t> answer;
        boost::asio::post(io_, [&] { answer.set_value(what()); });
        return answer.get_future().get();
    };
    const auto take = [&] { return on_io([&] { return proxy_->take_peak_connections(); }); };
    const auto open = [&] { return on_io([&] { return proxy_->open_connections(); }); };
    std::vector<int> fds;
    for (int i = 0; i < 3; ++i) {
        fds.push_back(client());
        send_all(fds.back(), "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
        const auto established = read_until(fds.back(), "\r\n\r\n");
        ASSERT_TRUE(contains(established, "200")) << established;
    }
    EXPECT_EQ(take(), 3u);
    ::close(fds[0]);
    ::close(fds[1]);
    ASSERT_TRUE(eventually([&] { return open() == 1; }));
    EXPECT_EQ(take(), 3u) << "three were open at once since the last look";
    EXPECT_EQ(take(), 1u) << "then the count starts from the one still open";
    ::close(fds[2]);
    ASSERT_TRUE(eventually([&] { return open() == 0; }));
    EXPECT_EQ(take(), 1u);
    EXPECT_EQ(take(), 0u);
}

// What handler-shim does with each connection a program makes: one zero byte carrying
// the TCP socket. Returns the unix connection it went over.
int hand_over(const std::filesystem::path& socket_path, int fd) {
    const int unix_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
    EXPECT_EQ(::connect(unix_fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    if (fd >= 0) EXPECT_TRUE(shim::send_handover(unix_fd, fd));
    else EXPECT_EQ(::send(unix_fd, "", 1, MSG_NOSIGNAL), 1); // the zero byte alone
    return unix_fd;
}

TEST_F(EgressProxyTest, AHandedOverTcpConnectionIsServedDirectly) {
    Upstream upstream(echo);
    // The program's connection: a TCP pair on loopback; the proxy gets the accepted end.
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener, 1), 0);
    socklen_t length = sizeof address;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    const int program = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(program, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    ::close(listener);
    const int unix_fd = hand_over(dir_ / "proxy.sock", accepted);
    ::close(accepted); // the proxy holds its own copy now, as the shim does
    EXPECT_EQ(read_all(unix_fd, 1000ms), "") << "the unix connection only carried the socket";
    ::close(unix_fd);

    send_all(program, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_until(program, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    send_all(program, "ping");
    EXPECT_EQ(read_until(program, "ping"), "ping");
    ::close(program);
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    EXPECT_EQ(audit_.entries().at(0).verdict, Verdict::allow);
}

TEST_F(EgressProxyTest, AHandOverOfAnythingButOneTcpConnectionIsRefused) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const int file = ::open((dir_ / "proxy.sock").c_str(), O_PATH | O_CLOEXEC);
    // Each would be served like a program's connection if taken: a request written into
    // the far end of the pipe or the socket pair would then be decided (an audit entry)
    // and, on the socket pair, answered.
    const std::string request = "CONNECT upstream.test:1 HTTP/1.1\r\n\r\n";
    ASSERT_EQ(::write(pipe_fds[1], request.data(), request.size()), static_cast<ssize_t>(request.size()));
    send_all(pair[1], request);
    for (const int fd : {pipe_fds[0], pair[0], file, -1}) {
        const int unix_fd = hand_over(dir_ / "proxy.sock", fd);
        EXPECT_EQ(read_all(unix_fd, 1000ms), "") << "fd " << fd << ": closed without an answer";
        ::close(unix_fd);
    }
    EXPECT_EQ(read_all(pair[1], 1000ms), "") << "the socket pair was not served";
    for (const int fd : {pipe_fds[0], pipe_fds[1], pair[0], pair[1], file}) ::close(fd);

    // A TCP connection whose peer is not loopback: what an open-mode session could open
    // to a server outside and pass on, to have that server drive the proxy.
    for (const auto& own : own_addresses()) {
        if (own.v6 || own.bytes[0] == 127) continue;
        const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        std::memcpy(&address.sin_addr, own.bytes.data(), 4);
        ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        ASSERT_EQ(::listen(listener, 1), 0);
        socklen_t length = sizeof address;
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
        const int outside = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_EQ(::connect(outside, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        const int unix_fd = hand_over(dir_ / "proxy.sock", accepted);
        EXPECT_EQ(read_all(unix_fd, 2000ms), "");
        send_all(outside, "CONNECT upstream.test:1 HTTP/1.1\r\n\r\n");
        EXPECT_EQ(read_all(outside, 1000ms), "") << "the proxy did not serve a connection from " << to_string(own);
        for (const int fd : {unix_fd, accepted, outside, listener}) ::close(fd);
        break;
    }
    EXPECT_TRUE(audit_.entries().empty()) << "nothing was decided for them";
}

// A TCP listener on `address` (port 0: any), and its port.
std::pair<int, std::uint16_t> tcp_listener(const char* address_text, std::uint16_t port = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    ::inet_pton(AF_INET, address_text, &address.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << address_text;
    EXPECT_EQ(::listen(fd, 16), 0);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    return {fd, ntohs(address.sin_port)};
}

int tcp_connect(const char* address_text, std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    ::inet_pton(AF_INET, address_text, &address.sin_addr);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
}

// What handler-shim does first: offer its listeners on a new unix connection. Returns
// that connection; the proxy answers kLeaseByte on it when it takes them.
int offer_lease(const std::filesystem::path& socket_path, std::vector<int> fds) {
    const int unix_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
    EXPECT_EQ(::connect(unix_fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_TRUE(shim::send_fds(unix_fd, shim::kLeaseByte, fds.data(), fds.size()));
    return unix_fd;
}

// Whether a connection waits in `listener`'s queue, untaken: it is then accepted here.
bool waits_in_queue(int listener) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return false;
    ::close(fd);
    return true;
}

TEST_F(EgressProxyTest, ALeasedListenerIsAcceptedFromUntilTheLeaseEnds) {
    Upstream upstream(echo);
    const auto [listener, port] = tcp_listener("127.0.0.1");
    const int lease = offer_lease(dir_ / "proxy.sock", {listener});
    EXPECT_EQ(read_until(lease, std::string(1, shim::kLeaseByte)), std::string(1, shim::kLeaseByte))
        << "the proxy answers when it takes the lease";

    for (int round = 0; round < 3; ++round) {
        const int program = tcp_connect("127.0.0.1", port);
        send_all(program, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
        EXPECT_EQ(read_until(program, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
        send_all(program, "ping");
        EXPECT_EQ(read_until(program, "ping"), "ping");
        ::close(program);
    }
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 3; }));

    // The shim's end closes (the session ended, or the shim restarts): the proxy lets go
    // of the listener, and a new connection waits for whoever accepts next.
    ::close(lease);
    // Named copies: clang 14 cannot capture a structured binding.
    ASSERT_TRUE(eventually([&, leased = listener, leased_port = port] {
        // Sends the start of a head, never a whole one: the listener defers a connection
        // until its first bytes, and a probe the proxy still took leaves no decision.
        const int probe = tcp_connect("127.0.0.1", leased_port);
        send_all(probe, "C");
        std::this_thread::sleep_for(50ms);
        const bool untaken = waits_in_queue(leased);
        ::close(probe);
        return untaken;
    })) << "the proxy still accepts after the lease ended";
    const int late = tcp_connect("127.0.0.1", port);
    send_all(late, "CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_all(late, 500ms), "");
    EXPECT_TRUE(waits_in_queue(listener));
    ::close(late);
    EXPECT_EQ(audit_.entries().size(), 3u);
    ::close(listener);
}

TEST_F(EgressProxyTest, ALeaseOfAnythingButALoopbackListenerIsRefused) {
    // Each is offered on its own; a refusal closes the connection unanswered, and
    // nothing is accepted from what was offered.
    const auto [connected_listener, connected_port] = tcp_listener("127.0.0.1");
    const int connected = tcp_connect("127.0.0.1", connected_port);
    const int unix_listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un unix_address{};
    unix_address.sun_family = AF_UNIX;
    std::snprintf(unix_address.sun_path, sizeof unix_address.sun_path, "%s", (dir_ / "other.sock").c_str());
    ASSERT_EQ(::bind(unix_listener, reinterpret_cast<sockaddr*>(&unix_address), sizeof unix_address), 0);
    ASSERT_EQ(::listen(unix_listener, 4), 0);
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    const auto [good, good_port] = tcp_listener("127.0.0.1");
    std::vector<std::pair<std::string, std::vector<int>>> offers = {
        {"a connected socket", {connected}},
        {"a unix listener", {unix_listener}},
        {"a pipe", {pipe_fds[0]}},
        {"a loopback listener with a pipe", {good, pipe_fds[0]}},
        {"three listeners", {good, good, good}},
    };
    // A listener on one of this machine's other addresses: connections to it would come
    // from outside the container's loopback.
    int outside = -1;
    for (const auto& own : own_addresses()) {
        if (own.v6 || own.bytes[0] == 127) continue;
        outside = tcp_listener(to_string(own).c_str()).first;
        offers.push_back({"a listener on " + to_string(own), {outside}});
        break;
    }
    for (const auto& [what, fds] : offers) {
        const int lease = offer_lease(dir_ / "proxy.sock", fds);
        EXPECT_EQ(read_all(lease, 2000ms), "") << what << ": refused without an answer";
        ::close(lease);
    }
    const int program = tcp_connect("127.0.0.1", good_port);
    EXPECT_TRUE(waits_in_queue(good)) << "the loopback listener offered with a pipe was not taken";
    EXPECT_TRUE(audit_.entries().empty());
    for (const int fd : {connected_listener, connected, unix_listener, pipe_fds[0], pipe_fds[1], good, outside, program})
        if (fd >= 0) ::close(fd);
}

TEST_F(EgressProxyTest, OnlyTheShimsPortIsTakenWhenTheProxyKnowsIt) {
    const auto [other, other_port] = tcp_listener("127.0.0.1");
    const auto [shim_listener, shim_port] = tcp_listener("127.0.0.1");
    ProxyOptions options;
    options.socket_path = dir_ / "pinned.sock";
    options.session_id = "s_000002";
    options.listener_port = shim_port;
    EgressProxy pinned(io_, options, [this] { std::lock_guard lock(policy_mutex_); return policy_; },
                       ProxyServices{resolver_.get(), &audit_, nullptr, nullptr}, [] { return std::int64_t{1000}; },
                       std::vector<Address>{});
    std::promise<bool> started;
    boost::asio::post(io_, [&] { started.set_value(pinned.start().ok()); });
    ASSERT_TRUE(started.get_future().get());

    const int refused = offer_lease(options.socket_path, {other});
    EXPECT_EQ(read_all(refused, 2000ms), "") << "a listener on port " << other_port << " is not the shim's";
    const int taken = offer_lease(options.socket_path, {shim_listener});
    EXPECT_EQ(read_until(taken, std::string(1, shim::kLeaseByte)), std::string(1, shim::kLeaseByte));

    const int program = tcp_connect("127.0.0.1", shim_port);
    send_all(program, "CONNECT refused.test:443 HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(read_until(program, "\r\n\r\n").starts_with("HTTP/1.1 403")) << "served by the proxy";

    std::promise<void> stopped;
    boost::asio::post(io_, [&] {
        pinned.stop();
        stopped.set_value();
    });
    stopped.get_future().wait();
    EXPECT_EQ(read_all(taken, 2000ms), "") << "stopping the proxy ends the lease";
    for (const int fd : {other, shim_listener, refused, taken, program}) ::close(fd);
}

TEST_F(EgressProxyTest, RequestsThatAreNotProxyRequestsAreRefusedClearly) {
    const std::pair<std::string, std::string> cases[] = {
        {"GET / HTTP/1.1\r\nHost: upstream.test\r\n\r\n", "absolute http:// URL"},
        {"GET https://upstream.test/ HTTP/1.1\r\n\r\n", "CONNECT"},
        {"CONNECT upstream.test HTTP/1.1\r\n\r\n", "host:port"},
        {"CONNECT upstream.test:99999 HTTP/1.1\r\n\r\n", "1 to 65535"},
        {"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", "usual form"},
        {"NONSENSE\r\n\r\n", "malformed"},
    };
    for (const auto& [request, expected] : cases) {
        const int fd = client();
        send_all(fd, request);
        const auto reply = read_all(fd);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << request << ": " << reply;
        EXPECT_TRUE(contains(reply, expected)) << request << ": " << reply;
    }
    const int big = client();
    send_all(big, "GET http://upstream.test/ HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n");
    EXPECT_TRUE(read_all(big).starts_with("HTTP/1.1 431"));
    ::close(big);
}

// Opens a tunnel: the 200, or the refusal.
std::string open_tunnel(int fd, const std::string& authority) {
    send_all(fd, "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    return read_until(fd, "\r\n\r\n");
}

const std::string kUnrecognizedName("\x15\x03\x03\x00\x02\x02\x70", 7);

// Domain fronting by SNI: a tunnel to an allowed host whose ClientHello names another
// host. Refused before a byte of it leaves, with a TLS alert the client understands, a
// log entry of its own, and no DNS query for the name in the SNI.
TEST_F(EgressProxyTest, ATunnelWhoseClientHelloNamesAnotherHostIsRefused) {
    RecordingUpstream upstream;
    const int fd = client();
    ASSERT_TRUE(contains(open_tunnel(fd, "upstream.test:" + std::to_string(upstream.port())), "200"));
    send_all(fd, fixture("curl-sni.bin")); // curl's real hello, for api.example.test
    EXPECT_EQ(read_all(fd), kUnrecognizedName) << "a fatal unrecognized_name alert, then the end";
    ::close(fd);
    ASSERT_TRUE(eventually([&] { return upstream.accepted() == 1; }));
    EXPECT_EQ(upstream.bytes(), "") << "nothing of the hello reached the upstream";
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    const auto entries = audit_.entries();
    EXPECT_EQ(entries.at(1).verdict, Verdict::deny);
    EXPECT_EQ(entries.at(1).host, "upstream.test");
    EXPECT_TRUE(contains(entries.at(1).reason, "is for api.example.test (SNI)")) << entries.at(1).reason;
    EXPECT_TRUE(contains(entries.at(0).reason, "cut: ")) << entries.at(0).reason;
    EXPECT_FALSE(resolver_->asked_for("api.example.test")) << "the SNI's name was never resolved";
}

// The same hello to the host it names goes through whole, in whatever pieces it came;
// one split over four records (OpenSSL's 512-byte fragments) too.
TEST_F(EgressProxyTest, ATunnelWhoseClientHelloNamesItsHostPassesUntouched) {
    for (const char* name : {"curl-sni.bin", "openssl-fragmented.bin"}) {
        Upstream upstream(echo);
        const int fd = client();
        ASSERT_TRUE(contains(open_tunnel(fd, "API.Example.Test.:" + std::to_string(upstream.port())), "200"));
        const std::string hello = fixture(name);
        for (std::size_t at = 0; at < hello.size(); at += 100) {
            send_all(fd, hello.substr(at, 100));
            std::this_thread::sleep_for(5ms);
        }
        EXPECT_EQ(read_exactly(fd, hello.size()), hello) << name << ": the echo of every byte";
        ::close(fd);
    }
}

// An address rule: a ClientHello without a name passes (curl sends none for an address),
// one with a name does not, since that name was never decided.
TEST_F(EgressProxyTest, ATunnelToAnAddressTakesOnlyAClientHelloWithoutAName) {
    Policy with_address = policy_;
    with_address.allow.push_back(*parse_rule("127.0.0.1"));
    set_policy(with_address);
    Upstream upstream(echo);
    const std::string ip = fixture("curl-ip.bin");
    const int fd = client();
    ASSERT_TRUE(contains(open_tunnel(fd, "127.0.0.1:" + std::to_string(upstream.port())), "200"));
    send_all(fd, ip);
    EXPECT_EQ(read_exactly(fd, ip.size()), ip);
    ::close(fd);

    const int named = client();
    ASSERT_TRUE(contains(open_tunnel(named, "127.0.0.1:" + std::to_string(upstream.port())), "200"));
    send_all(named, fixture("curl-sni.bin"));
    EXPECT_EQ(read_all(named), kUnrecognizedName);
    ::close(named);

    const int nameless = client();
    ASSERT_TRUE(contains(open_tunnel(nameless, "upstream.test:" + std::to_string(upstream.port())), "200"));
    send_all(nameless, fixture("openssl-no-sni.bin"));
    EXPECT_EQ(read_all(nameless), kUnrecognizedName) << "a name's tunnel needs its name in the hello";
    ::close(nameless);
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 5; }));
    EXPECT_TRUE(contains(audit_.entries().back().reason, "no SNI")) << audit_.entries().back().reason;
}

TEST_F(EgressProxyTest, AnEncryptedOrMalformedClientHelloIsRefused) {
    RecordingUpstream upstream;
    Parts encrypted = split(fixture("curl-sni.bin"));
    encrypted.extensions.emplace_back(0xfe0d, std::string(40, 'e'));
    Parts doubled = split(fixture("curl-sni.bin"));
    doubled.extensions.emplace_back(0, server_name_extension("upstream.test"));
    const std::pair<std::string, std::string> cases[] = {
        {join(encrypted), kUnrecognizedName},
        {join(doubled), std::string("\x15\x03\x03\x00\x02\x02\x32", 7)}, // decode_error
    };
    for (const auto& [hello, alert] : cases) {
        const int fd = client();
        ASSERT_TRUE(contains(open_tunnel(fd, "api.example.test:" + std::to_string(upstream.port())), "200"));
        send_all(fd, hello);
        EXPECT_EQ(read_all(fd), alert);
        ::close(fd);
    }
    ASSERT_TRUE(eventually([&] { return upstream.accepted() == 2; }));
    EXPECT_EQ(upstream.bytes(), "");
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 4; }));
    const auto entries = audit_.entries();
    EXPECT_TRUE(contains(entries.at(1).reason, "Encrypted ClientHello")) << entries.at(1).reason;
    EXPECT_TRUE(contains(entries.at(3).reason, "malformed")) << entries.at(3).reason;
}

// Port 443 is TLS's: what is not a ClientHello does not pass there (and goes on on other
// ports, which may carry other protocols: ConnectToAnAllowedHostTunnelsBothWaysAndIsAudited).
TEST_F(EgressProxyTest, ATunnelToPort443ThatDoesNotBeginWithTlsIsRefused) {
    RecordingUpstream upstream;
    pins_->pin("tls443.test:443", HostPort{"127.0.0.1", upstream.port()});
    const int fd = client();
    ASSERT_TRUE(contains(open_tunnel(fd, "tls443.test:443"), "200"));
    send_all(fd, "GET / HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n");
    EXPECT_EQ(read_all(fd), "") << "closed, without a word of TLS";
    ::close(fd);
    ASSERT_TRUE(eventually([&] { return upstream.accepted() == 1; }));
    EXPECT_EQ(upstream.bytes(), "");
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 2; }));
    EXPECT_TRUE(contains(audit_.entries().at(1).reason, "not a TLS ClientHello")) << audit_.entries().at(1).reason;
}

// Whatever follows a refused CONNECT is never read as a request: the connection ends with
// the refusal, so a request pipelined behind it reaches nothing and nobody resolves it.
TEST_F(EgressProxyTest, BytesPipelinedAfterARefusedConnectAreNeverParsed) {
    Upstream upstream(echo);
    const int fd = client();
    const std::string port = std::to_string(upstream.port());
    send_all(fd, "CONNECT evil.example:443 HTTP/1.1\r\n\r\nCONNECT upstream.test:" + port +
                     " HTTP/1.1\r\n\r\nGET http://upstream.test:" + port + "/ HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
    const auto reply = read_all(fd);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
    EXPECT_EQ(reply.find("HTTP/1.1", 1), std::string::npos) << "one answer only: " << reply;
    ASSERT_TRUE(eventually([&] { return audit_.finished() == 1; }));
    EXPECT_EQ(audit_.entries().size(), 1u);
    EXPECT_EQ(upstream.accepted(), 0);
    EXPECT_TRUE(resolver_->asked().empty()) << "not even the refused name was resolved";
}

// The request-smuggling shapes of RFC 9112 on the proxy's own heads (a CONNECT, a
// plain-HTTP request): each refused with 400 before anything is resolved or connected.
TEST_F(EgressProxyTest, RequestSmugglingShapesAreRefusedBeforeAnythingIsConnected) {
    Upstream upstream(echo);
    const std::string url = "http://upstream.test:" + std::to_string(upstream.port()) + "/";
    std::vector<std::pair<std::string, std::string>> cases = {
        {"GET " + url + " HTTP/1.1\nHost: upstream.test\n\n", "bare LF"},
        {"CONNECT upstream.test:" + std::to_string(upstream.port()) + " HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
         "a CONNECT carries no body"},
        {"GET " + url + " HTTP/2.0\r\nHost: upstream.test\r\n\r\n", "bad version"}, // Beast: 1.0 and 1.1 only
    };
    for (const auto& shape : kSmugglingShapes)
        cases.emplace_back("POST " + url + " HTTP/1.1\r\nHost: upstream.test\r\n" + shape.fields, shape.why);
    for (const auto& [request, why] : cases) {
        const int fd = client();
        send_all(fd, request);
        const auto reply = read_all(fd);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 400") || reply.starts_with("HTTP/1.1 505")) << request << ": " << reply;
        EXPECT_TRUE(contains(reply, why)) << request << ": " << reply;
    }
    EXPECT_EQ(upstream.accepted(), 0);
    EXPECT_TRUE(resolver_->asked().empty());
}

// A plain-HTTP request goes to the host its URL names, with that Host (RFC 9112 3.2.2),
// and its body as far as its Content-Length: a request pipelined behind it never leaves.
TEST_F(EgressProxyTest, PlainHttpCarriesItsUrlsHostAndNothingPastItsBody) {
    std::promise<std::string> seen;
    std::atomic<bool> first{true};
    Upstream upstream([&](int fd) {
        std::string got = read_until(fd, "body");
        got += read_all(fd, 500ms); // anything more that came behind it
        if (first.exchange(false)) seen.set_value(got);
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
    const int fd = client();
    send_all(fd, "POST http://upstream.test:" + std::to_string(upstream.port()) +
                     "/in HTTP/1.1\r\nHost: other.example\r\nContent-Length: 4\r\n\r\nbody"
                     "GET /smuggled HTTP/1.1\r\nHost: other.example\r\n\r\n");
    const auto reply = read_all(fd);
    ::close(fd);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 OK")) << reply;
    const auto head = seen.get_future().get();
    EXPECT_TRUE(contains(head, "Host: upstream.test:" + std::to_string(upstream.port()) + "\r\n")) << head;
    EXPECT_FALSE(contains(head, "other.example")) << head;
    EXPECT_TRUE(head.ends_with("\r\n\r\nbody")) << head;
    EXPECT_FALSE(contains(head, "smuggled")) << head;

    const int chunked = client();
    send_all(chunked, "POST http://upstream.test:" + std::to_string(upstream.port()) +
                          "/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n");
    const auto refused = read_all(chunked);
    ::close(chunked);
    EXPECT_TRUE(refused.starts_with("HTTP/1.1 411")) << refused;
}

// Names are decided before DNS: a name the policy refuses, one that is no name (an
// invalid A-label), a number in disguise; none of them is ever asked of a resolver.
TEST_F(EgressProxyTest, ARefusedNameNeverReachesTheResolver) {
    for (const std::string host : {"evil.example:443", "xn--zz.example:443", "0x7f.1:443", "EVIL.example.:443"}) {
        const int fd = client();
        send_all(fd, "CONNECT " + host + " HTTP/1.1\r\n\r\n");
        const auto reply = read_all(fd);
        ::close(fd);
        EXPECT_TRUE(reply.starts_with("HTTP/1.1 4")) << host << ": " << reply;
    }
    const int fd = client();
    send_all(fd, "GET http://evil.example/ HTTP/1.1\r\nHost: upstream.test\r\n\r\n");
    EXPECT_TRUE(read_all(fd).starts_with("HTTP/1.1 403"));
    ::close(fd);
    EXPECT_TRUE(resolver_->asked().empty()) << resolver_->asked().front();
    // And a name that passes is asked once, in its canonical form.
    Upstream upstream(echo);
    const int allowed = client();
    ASSERT_TRUE(contains(open_tunnel(allowed, "UPSTREAM.test.:" + std::to_string(upstream.port())), "200"));
    ::close(allowed);
    EXPECT_EQ(resolver_->asked(), std::vector<std::string>{"upstream.test"});
}

} // namespace
} // namespace handler::network
