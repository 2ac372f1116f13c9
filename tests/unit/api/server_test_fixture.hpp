// Shared by the server and client tests: a fake RequestHandler, a Server running on its
// own io thread in a private temporary folder, and a raw POSIX socket client that speaks
// just enough HTTP/1.1 and WebSocket to poke at the server byte by byte. The raw client
// keeps Beast out of the tests (they compile in seconds) and tests the wire format the
// server really produces rather than what a Beast client would tolerate.
#pragma once

#include "api/event_hub.hpp"
#include "api/http_types.hpp"
#include "api/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace handler::api::testing {

using namespace std::chrono_literals;

// 64 hex characters, like a real token.
inline const std::string kTestToken(64, 'a');

// Records every request (from the io thread) and answers with `respond`, by default 200
// {"ok":true}.
class FakeHandler final : public RequestHandler {
public:
    Response handle(const Request& request) override {
        std::function<Response(const Request&)> respond;
        {
            std::lock_guard lock(mutex_);
            requests_.push_back(request);
            respond = respond_;
        }
        if (respond) return respond(request);
        return Response{200, R"({"ok":true})", "application/json", {}};
    }
    void respond_with(std::function<Response(const Request&)> respond) {
        std::lock_guard lock(mutex_);
        respond_ = std::move(respond);
    }
    std::vector<Request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<Request> requests_;
    std::function<Response(const Request&)> respond_;
};

// mkdtemp gives a 0700 folder: the private folder the server insists on.
class TemporaryFolder {
public:
    TemporaryFolder() {
        char pattern[] = "/tmp/handler-api-XXXXXX";
        if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A Server on an ephemeral TCP port and a socket in a temporary folder, with io.run() on
// a thread of its own, as in handlerd.
class RunningServer {
public:
    static ServerOptions default_options(const std::filesystem::path& folder) {
        ServerOptions options;
        options.socket_path = folder / "handlerd.sock";
        options.pid_file = folder / "handlerd.pid";
        options.tcp_port = 0;
        options.token = kTestToken;
        options.body_limit_bytes = 64 * 1024;
        options.read_timeout_ms = 5000;
        return options;
    }

    explicit RunningServer(std::function<void(ServerOptions&)> adjust = {},
                           SessionControl* sessions = nullptr, UiLogins* logins = nullptr) {
        options_ = default_options(folder_.path());
        if (adjust) adjust(options_);
        server_ = std::make_unique<Server>(io_, options_, handler_, hub_, sessions, logins);
        auto started = server_->start();
        if (!started) throw std::runtime_error("server did not start: " + started.error().message);
        thread_ = std::thread([this] { io_.run(); });
    }

    ~RunningServer() {
        if (!stop_and_join()) ADD_FAILURE() << "io.run() did not return within 5 s of stop()";
    }

    // Stops the server and waits for io.run() to return; true if it did within `limit`.
    // If it did not, the io_context is stopped by force, so a broken shutdown fails the
    // test instead of hanging the test binary.
    bool stop_and_join(std::chrono::milliseconds limit = 5000ms) {
        if (!thread_.joinable()) return true;
        server_->stop();
        auto joined = std::async(std::launch::async, [this] { thread_.join(); });
        const bool in_time = joined.wait_for(limit) == std::future_status::ready;
        if (!in_time) io_.stop();
        joined.wait();
        return in_time;
    }

    // Runs `work` on the io thread, where the hub and the server may be touched.
    template <class Work>
    auto on_io(Work work) -> decltype(work()) {
        std::packaged_task<decltype(work())()> task(std::move(work));
        auto result = task.get_future();
        boost::asio::post(io_, [&task] { task(); });
        return result.get();
    }

    std::size_t subscribers() {
        return on_io([this] { return hub_.subscriber_count(); });
    }
    std::size_t connections() {
        return on_io([this] { return server_->connection_count(); });
    }

    std::uint16_t port() const { return server_->tcp_port(); }
    std::string host() const { return "127.0.0.1:" + std::to_string(port()); }
    const std::filesystem::path& socket() const { return options_.socket_path; }
    const std::filesystem::path& folder() const { return folder_.path(); }
    const ServerOptions& options() const { return options_; }
    FakeHandler& handler() { return handler_; }
    EventHub& hub() { return hub_; }

private:
    TemporaryFolder folder_;
    ServerOptions options_;
    boost::asio::io_context io_;
    FakeHandler handler_;
    EventHub hub_;
    std::unique_ptr<Server> server_;
    std::thread thread_;
};

// Polls `condition` until it holds or `limit` passes.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return condition();
}

struct HttpReply {
    unsigned status = 0; // 0: no complete response arrived
    std::string head;    // status line and headers
    std::string body;
    std::string header(std::string_view name) const {
        std::string lowered_head, lowered_name;
        for (char c : head) lowered_head.push_back(static_cast<char>(std::tolower(c)));
        for (char c : name) lowered_name.push_back(static_cast<char>(std::tolower(c)));
        const auto at = lowered_head.find("\r\n" + lowered_name + ":");
        if (at == std::string::npos) return {};
        const auto start = head.find_first_not_of(' ', at + 3 + name.size());
        return head.substr(start, head.find("\r\n", start) - start);
    }
};

struct Frame {
    int opcode = -1; // -1: no frame (closed or timed out)
    std::string payload;
    unsigned close_code() const {
        if (opcode != 8 || payload.size() < 2) return 0;
        return static_cast<unsigned>(static_cast<unsigned char>(payload[0])) << 8 |
               static_cast<unsigned char>(payload[1]);
    }
};

// A blocking socket with deadlines, for writing requests by hand.
class RawConnection {
public:
    static RawConnection tcp(std::uint16_t port, int receive_buffer_bytes = 0) {
        RawConnection connection(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (receive_buffer_bytes > 0)
            ::setsockopt(connection.fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes,
                         sizeof receive_buffer_bytes);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(connection.fd_, reinterpret_cast<const sockaddr*>(&address),
                      sizeof address) != 0)
            throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
        return connection;
    }
    static RawConnection unix_socket(const std::filesystem::path& path) {
        RawConnection connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        if (::connect(connection.fd_, reinterpret_cast<const sockaddr*>(&address),
                      sizeof address) != 0)
            throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
        return connection;
    }

    RawConnection(RawConnection&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}
    RawConnection& operator=(RawConnection&&) = delete;
    ~RawConnection() {
        if (fd_ >= 0) ::close(fd_);
    }

    // False once the peer has closed or reset the connection.
    bool send(std::string_view data) {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    // Sends up to `total` bytes in blocks until the peer stops taking them; returns how
    // many it took. Gives up after `limit` if the peer neither reads nor closes.
    std::size_t pump(std::size_t total, std::chrono::milliseconds limit = 5000ms) {
        const std::string block(64 * 1024, 'x');
        std::size_t sent = 0;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (sent < total && std::chrono::steady_clock::now() < deadline) {
            pollfd poll_fd{fd_, POLLOUT, 0};
            if (::poll(&poll_fd, 1, 50) <= 0) continue;
            if (poll_fd.revents & (POLLERR | POLLHUP)) break;
            const ssize_t n = ::send(fd_, block.data(), std::min(block.size(), total - sent),
                                     MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) break;
            sent += static_cast<std::size_t>(n);
        }
        return sent;
    }

    // Waits until the peer has closed (EOF or reset); buffered data is read and kept.
    bool closed_within(std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (true) {
            const auto result = fill(deadline);
            if (result == Fill::closed) return true;
            if (result == Fill::timed_out) return false;
        }
    }

    // Without reading anything: has the peer sent FIN or RST? (Data may be unread.)
    bool peer_hung_up_within(std::chrono::milliseconds limit) {
        pollfd poll_fd{fd_, POLLRDHUP, 0};
        return ::poll(&poll_fd, 1, static_cast<int>(limit.count())) > 0 &&
               (poll_fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    }

    HttpReply read_reply(std::chrono::milliseconds limit = 3000ms) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        HttpReply reply;
        std::size_t end;
        while ((end = buffer_.find("\r\n\r\n")) == std::string::npos)
            if (fill(deadline) != Fill::data) return reply;
        reply.head = buffer_.substr(0, end + 2);
        buffer_.erase(0, end + 4);
        const std::string length_text = reply.header("Content-Length");
        const std::size_t length = length_text.empty() ? 0 : std::stoul(length_text);
        while (buffer_.size() < length)
            if (fill(deadline) != Fill::data) return reply;
        reply.body = buffer_.substr(0, length);
        buffer_.erase(0, length);
        reply.status = static_cast<unsigned>(std::stoul(reply.head.substr(9, 3)));
        return reply;
    }

    HttpReply exchange(const std::string& request) {
        send(request);
        return read_reply();
    }

    // One server-to-client frame (unmasked, as servers send them).
    Frame read_frame(std::chrono::milliseconds limit = 3000ms) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        auto need = [&](std::size_t bytes) {
            while (buffer_.size() < bytes)
                if (fill(deadline) != Fill::data) return false;
            return true;
        };
        Frame frame;
        if (!need(2)) return frame;
        const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(buffer_[i]); };
        std::size_t header = 2;
        std::uint64_t length = byte(1) & 0x7f;
        if (length == 126) {
            if (!need(4)) return frame;
            length = static_cast<std::uint64_t>(byte(2)) << 8 | byte(3);
            header = 4;
        } else if (length == 127) {
            if (!need(10)) return frame;
            length = 0;
            for (std::size_t i = 2; i < 10; ++i) length = length << 8 | byte(i);
            header = 10;
        }
        if (!need(header + length)) return frame;
        frame.opcode = byte(0) & 0x0f;
        frame.payload = buffer_.substr(header, length);
        buffer_.erase(0, header + length);
        return frame;
    }

    // What a client does once the close handshake is done: end its side of the TCP
    // connection (the server waits for this before closing its own).
    void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

    // A client frame (masked with a zero key, which leaves the payload as it is): opcode 1
    // text, 2 binary.
    bool send_frame(int opcode, std::string_view payload) {
        std::string frame = {static_cast<char>(0x80 | opcode)};
        if (payload.size() < 126) {
            frame.push_back(static_cast<char>(0x80 | payload.size()));
        } else if (payload.size() <= 0xffff) {
            frame.push_back(static_cast<char>(0x80 | 126));
            frame.push_back(static_cast<char>(payload.size() >> 8));
            frame.push_back(static_cast<char>(payload.size() & 0xff));
        } else {
            frame.push_back(static_cast<char>(0x80 | 127));
            for (int shift = 56; shift >= 0; shift -= 8)
                frame.push_back(static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> shift) & 0xff));
        }
        frame.append(4, '\0');
        frame.append(payload);
        return send(frame);
    }
    bool send_text(std::string_view text) { return send_frame(1, text); }
    bool send_binary(std::string_view bytes) { return send_frame(2, bytes); }

    // A masked close frame, as a client must send it.
    bool send_close(unsigned code) {
        const char frame[] = {'\x88', '\x82', 0, 0, 0, 0, static_cast<char>(code >> 8),
                              static_cast<char>(code & 0xff)};
        return send(std::string_view(frame, sizeof frame));
    }

private:
    enum class Fill { data = 1, closed, timed_out };

    explicit RawConnection(int fd) : fd_(fd) {
        if (fd_ < 0) throw std::runtime_error("socket() failed");
    }

    Fill fill(std::chrono::steady_clock::time_point deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return Fill::timed_out;
        pollfd poll_fd{fd_, POLLIN, 0};
        if (::poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) return Fill::timed_out;
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) return Fill::closed;
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return Fill::data;
    }

    int fd_;
    std::string buffer_;
};

// A request as a browser or curl would send it over TCP.
inline std::string http_request(const std::string& method, const std::string& target,
                                const std::string& host, const std::string& extra_headers = {},
                                const std::string& body = {}) {
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" +
                          extra_headers;
    if (!body.empty() || method == "POST")
        request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    return request + "\r\n" + body;
}

inline std::string bearer(const std::string& token = kTestToken) {
    return "Authorization: Bearer " + token + "\r\n";
}

inline std::string websocket_upgrade(const std::string& host, const std::string& extra_headers,
                                     const std::string& target = "/api/v1/events") {
    return "GET " + target + " HTTP/1.1\r\nHost: " + host +
           "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
           extra_headers + "\r\n";
}

} // namespace handler::api::testing
