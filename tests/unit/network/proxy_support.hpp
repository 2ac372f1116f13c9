// What the egress proxy's unit tests share: a recording audit sink, a resolver that
// records what it was asked, a threaded TCP upstream on 127.0.0.1, and blocking socket
// helpers with deadlines.
#pragma once

#include "network/egress_proxy.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace handler::network::testing {

using namespace std::chrono_literals;

inline bool eventually(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

class RecordingAudit final : public AuditSink {
public:
    std::int64_t record(const AuditEntry& entry) override {
        std::lock_guard lock(mutex_);
        entries_.push_back(entry);
        return static_cast<std::int64_t>(entries_.size());
    }
    void finish(std::int64_t id, std::uint64_t up, std::uint64_t down, const std::string& reason) override {
        std::lock_guard lock(mutex_);
        auto& entry = entries_.at(static_cast<std::size_t>(id - 1));
        entry.bytes_up = up;
        entry.bytes_down = down;
        if (!reason.empty()) entry.reason = reason;
        ++finished_;
    }
    std::vector<AuditEntry> entries() {
        std::lock_guard lock(mutex_);
        return entries_;
    }
    int finished() {
        std::lock_guard lock(mutex_);
        return finished_;
    }

private:
    std::mutex mutex_;
    std::vector<AuditEntry> entries_;
    int finished_ = 0;
};

// Records every name it is asked to resolve, then asks `inner`: a name refused before
// resolution (docs/network.md) must never show up here.
class CountingResolver final : public Resolver {
public:
    explicit CountingResolver(std::unique_ptr<Resolver> inner) : inner_(std::move(inner)) {}
    void resolve(const std::string& host, Done done) override {
        {
            std::lock_guard lock(mutex_);
            asked_.push_back(host);
        }
        inner_->resolve(host, std::move(done));
    }
    bool pinned(const std::string& host) const override { return inner_->pinned(host); }
    std::optional<HostPort> pinned_endpoint(const std::string& host, std::uint16_t port) const override {
        return inner_->pinned_endpoint(host, port);
    }
    std::vector<std::string> asked() const {
        std::lock_guard lock(mutex_);
        return asked_;
    }
    bool asked_for(const std::string& host) const {
        const auto names = asked();
        return std::find(names.begin(), names.end(), host) != names.end();
    }

private:
    std::unique_ptr<Resolver> inner_;
    mutable std::mutex mutex_;
    std::vector<std::string> asked_;
};

// A TCP server on 127.0.0.1 that runs `serve(fd)` for each connection on its own thread.
class Upstream {
public:
    explicit Upstream(std::function<void(int)> serve) : serve_(std::move(serve)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
        ::listen(fd_, 16);
        socklen_t length = sizeof address;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] {
            for (;;) {
                const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (client < 0) return;
                ++accepted_;
                workers_.emplace_back([this, client] {
                    serve_(client);
                    ::close(client);
                });
            }
        });
    }
    ~Upstream() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
        for (auto& worker : workers_) worker.join();
    }
    std::uint16_t port() const { return port_; }
    // Connections it took: 0 for an upstream nothing reached.
    int accepted() const { return accepted_; }

private:
    std::function<void(int)> serve_;
    std::atomic<int> accepted_{0};
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::vector<std::thread> workers_;
};

inline std::string read_all(int fd, std::chrono::milliseconds limit = 5000ms) {
    std::string out;
    char buffer[65536];
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, 50) <= 0) continue;
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got <= 0) break;
        out.append(buffer, static_cast<std::size_t>(got));
    }
    return out;
}

inline std::string read_until(int fd, std::string_view needle, std::chrono::milliseconds limit = 5000ms) {
    std::string out;
    char c;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (out.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, 50) <= 0) continue;
        if (::read(fd, &c, 1) != 1) break;
        out.push_back(c);
    }
    return out;
}

// Exactly `count` bytes, or what came before the end or the deadline.
inline std::string read_exactly(int fd, std::size_t count, std::chrono::milliseconds limit = 5000ms) {
    std::string out;
    char buffer[65536];
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, 50) <= 0) continue;
        const ssize_t got = ::read(fd, buffer, std::min(sizeof buffer, count - out.size()));
        if (got <= 0) break;
        out.append(buffer, static_cast<std::size_t>(got));
    }
    return out;
}

inline void send_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        ASSERT_GT(sent, 0);
        data.remove_prefix(static_cast<std::size_t>(sent));
    }
}

inline void echo(int fd) {
    char buffer[65536];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got <= 0) return;
        send_all(fd, std::string_view(buffer, static_cast<std::size_t>(got)));
    }
}

// The framing shapes of request smuggling (docs/network.md, "Requests") as the fields
// (and body) that follow a request line and its Host, each with what its refusal says.
struct SmugglingShape {
    std::string fields;
    std::string why;
};
inline const std::vector<SmugglingShape> kSmugglingShapes = {
    {"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\nbody", "malformed request"}, // Beast's own
    {"Transfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nbody", "both Content-Length and Transfer-Encoding"},
    {"Content-Length: 4\r\nContent-Length: 4\r\n\r\nbody", "more than one Content-Length (even equal ones"},
    {"Content-Length: +4\r\n\r\nbody", "malformed request"}, // Beast's own
    {"Transfer-Encoding: chunked, gzip\r\n\r\n", "exactly one 'chunked'"},
    {"X-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", "obs-fold"},
    {"X-A: 1\nX-B: 2\r\n\r\n", "bare LF"},
};

// An upstream that keeps every byte it was sent, over all its connections, each read
// until the other side is done (or 2 s).
class RecordingUpstream {
public:
    RecordingUpstream()
        : upstream_([this](int fd) {
              const std::string got = read_all(fd, 2000ms);
              std::lock_guard lock(mutex_);
              bytes_ += got;
          }) {}
    std::uint16_t port() const { return upstream_.port(); }
    int accepted() const { return upstream_.accepted(); }
    std::string bytes() {
        std::lock_guard lock(mutex_);
        return bytes_;
    }

private:
    std::mutex mutex_;
    std::string bytes_;
    Upstream upstream_; // last: its threads use the two above
};

} // namespace handler::network::testing
