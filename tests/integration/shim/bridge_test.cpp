// The egress bridge of the real, statically linked handler-shim from this build, run on the
// host (no podman). The test plays handlerd twice over: a minimal control socket (RESUME
// after HELLO, EXIT_ACK after EXIT) and a fake egress proxy listening on the unix socket
// given as --proxy-socket, which takes each handed-over TCP connection and then serves it
// directly, as handlerd does. TCP clients connect to 127.0.0.1:--proxy-port like a
// session's tools would.
// Usage: shim_bridge_test PATH_TO_HANDLER_SHIM [gtest flags]
// The shim first offers the proxy a lease of its listeners; the fake proxy refuses it
// (as an older handlerd would) in the tests of the handover, and takes it in the lease's.
// The binary also serves as a session program: `shim_bridge_test --client PORT` connects
// to 127.0.0.1:PORT once, at once, sends "hello" and prints what comes back.
#include "support.hpp"

#include <handler/handover.hpp>
#include <handler/shim_protocol.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace handler::shim {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Its own prefix, so a leftover folder says which test program left it.
struct TempDir : testing::TempDir {
    TempDir() : testing::TempDir("handler-bridge-it") {}
};

std::string g_shim_path;
std::string g_self_path;
constexpr auto kTimeout = 10s;
// Blocking socket calls in this test give up after this long rather than hang the run.
constexpr int kSocketTimeoutSeconds = 20;
// What the shim promises (bridge.hpp); the test checks the behaviour, not the constant.

void set_timeouts(int fd) {
    timeval timeout{kSocketTimeoutSeconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

void set_nonblocking(int fd, bool on) {
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

std::string read_text_file(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

std::size_t count_of(const std::string& text, std::string_view what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
    return count;
}

// An fd closed when it goes out of scope.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        reset();
        fd_ = std::exchange(other.fd_, -1);
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    bool ok() const { return fd_ >= 0; }
    void reset() {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

// The fake egress proxy: a unix socket listener. Like an older handlerd it refuses the
// shim's lease unless told to take it; then, like handlerd, it accepts the programs'
// connections on the leased listeners itself.
class ProxyListener {
public:
    explicit ProxyListener(std::string path, int backlog = 16, bool take_leases = false)
        : path_(std::move(path)), take_leases_(take_leases) {
        fd_ = Fd(testing::listen_unix(path_, backlog));
    }
    ~ProxyListener() { unlink(path_.c_str()); }
    // Stops listening but leaves the socket file, as a handlerd that died would.
    void stop_listening() { fd_.reset(); }

    // The next connection of a program: one the shim handed over (its TCP socket came with
    // one zero byte), or one accepted on a leased listener. An invalid Fd after the
    // timeout, or when the shim sent anything else.
    Fd accept(std::chrono::milliseconds timeout = kTimeout) {
        const auto deadline = Clock::now() + timeout;
        while (Clock::now() < deadline) {
            std::vector<pollfd> fds{{fd_.get(), POLLIN, 0}};
            for (const auto& listener : leased_) fds.push_back({listener.get(), POLLIN, 0});
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (poll(fds.data(), fds.size(), static_cast<int>(std::max<long>(left.count(), 0))) <= 0) return {};
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if (fds[i].revents == 0) continue;
                const int fd = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
                if (fd < 0) continue;
                ++direct_;
                set_timeouts(fd);
                return Fd(fd);
            }
            if (fds[0].revents == 0) continue;
            Fd unix_side(accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!unix_side.ok()) continue;
            set_timeouts(unix_side.get());
            auto handover = receive_handover(unix_side.get(), 0);
            if (handover.lease()) {
                take_or_refuse(std::move(unix_side), handover.fds);
                continue;
            }
            if (!handover.well_formed()) {
                for (const int extra : handover.fds) close(extra);
                return {};
            }
            const int fd = handover.fds[0];
            set_nonblocking(fd, false); // the shim's accept made it non-blocking
            set_timeouts(fd);
            ++handed_over_;
            return Fd(fd);
        }
        return {};
    }

    // Serves the unix socket until the shim's next lease offer arrives and is taken (or
    // refused); false after the timeout.
    bool await_lease(std::chrono::milliseconds timeout = kTimeout) {
        const std::size_t before = offers_;
        while (offers_ == before) {
            Fd unix_side(testing::accept_within(fd_.get(), timeout));
            if (!unix_side.ok()) return false;
            auto handover = receive_handover(unix_side.get(), 0);
            if (!handover.lease()) {
                ADD_FAILURE() << "a connection came while waiting for the lease";
                for (const int extra : handover.fds) close(extra);
                continue;
            }
            take_or_refuse(std::move(unix_side), handover.fds);
        }
        return true;
    }

    // Ends the lease, as a handlerd that stopped would: the connection and the listeners'
    // copies are closed.
    void end_lease() {
        lease_.reset();
        leased_.clear();
    }

    std::size_t offers() const { return offers_; }
    std::size_t direct() const { return direct_; }
    std::size_t handed_over() const { return handed_over_; }
    std::size_t leased_listeners() const { return leased_.size(); }

private:
    void take_or_refuse(Fd unix_side, const std::vector<int>& fds) {
        ++offers_;
        if (!take_leases_) {
            for (const int fd : fds) close(fd);
            return; // closing the connection unanswered is the refusal
        }
        end_lease();
        for (const int fd : fds) leased_.emplace_back(fd);
        const char ack = kLeaseByte;
        if (::send(unix_side.get(), &ack, 1, MSG_NOSIGNAL) != 1) ADD_FAILURE() << "cannot answer the lease";
        lease_ = std::move(unix_side);
    }

    std::string path_;
    bool take_leases_;
    Fd fd_;
    Fd lease_;
    std::vector<Fd> leased_;
    std::size_t offers_ = 0;
    std::size_t direct_ = 0;
    std::size_t handed_over_ = 0;
};

// handlerd's side of the control socket, just enough to keep the shim content: RESUME
// after HELLO, EXIT_ACK after EXIT. Runs on its own thread; collects the output.
class FakeHandlerd {
public:
    explicit FakeHandlerd(std::string path) : path_(std::move(path)) {
        listen_fd_ = Fd(testing::listen_unix(path_, 4));
        int wake[2];
        if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) std::abort();
        wake_read_ = Fd(wake[0]);
        wake_write_ = Fd(wake[1]);
        thread_ = std::thread([this] { run(); });
    }
    FakeHandlerd(const FakeHandlerd&) = delete;
    FakeHandlerd& operator=(const FakeHandlerd&) = delete;
    ~FakeHandlerd() {
        stop_ = true;
        wake();
        thread_.join();
        unlink(path_.c_str());
    }

    // The shim said HELLO: it listens on the proxy port by now, and its program runs.
    bool wait_hello(std::chrono::milliseconds timeout = kTimeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return hellos_ > 0; });
    }
    bool wait_output(const std::string& text, std::chrono::milliseconds timeout = kTimeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout,
                                 [&] { return output_.find(text) != std::string::npos; });
    }
    std::optional<int> wait_exit(std::chrono::milliseconds timeout = kTimeout) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, timeout, [&] { return exit_code_.has_value(); });
        return exit_code_;
    }
    std::string output() {
        std::lock_guard lock(mutex_);
        return output_;
    }
    void send_input(std::string_view bytes) {
        {
            std::lock_guard lock(mutex_);
            append_frame(pending_, FrameType::input, bytes);
        }
        wake();
    }
    // Asks the shim who holds the connection from 127.0.0.1:port (WHO) and waits for its
    // OWNER.
    std::optional<OwnerAnswer> who(std::uint16_t port, std::chrono::milliseconds timeout = kTimeout) {
        std::uint32_t query = 0;
        {
            std::lock_guard lock(mutex_);
            query = ++queries_;
            pending_ += encode_who({query, port});
        }
        wake();
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, timeout, [&] { return answers_.contains(query); });
        if (!answers_.contains(query)) return std::nullopt;
        return answers_.at(query);
    }

private:
    void wake() { [[maybe_unused]] auto written = write(wake_write_.get(), "x", 1); }

    void send(const std::string& bytes) {
        if (!connection_.ok()) return;
        if (::send(connection_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(bytes.size()))
            connection_.reset();
    }

    void run() {
        FrameDecoder decoder;
        while (!stop_) {
            pollfd fds[3] = {{wake_read_.get(), POLLIN, 0},
                             {connection_.ok() ? -1 : listen_fd_.get(), POLLIN, 0},
                             {connection_.get(), POLLIN, 0}};
            if (poll(fds, 3, -1) < 0) continue;
            if (fds[0].revents != 0) {
                char drain[64];
                while (read(wake_read_.get(), drain, sizeof drain) > 0) {}
            }
            if (fds[1].revents != 0) {
                connection_ = Fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
                decoder = FrameDecoder();
            }
            if (connection_.ok() && fds[2].fd == connection_.get() && fds[2].revents != 0) {
                char buffer[65536];
                const ssize_t count = recv(connection_.get(), buffer, sizeof buffer, 0);
                if (count <= 0) {
                    connection_.reset();
                    continue;
                }
                decoder.feed(std::string_view(buffer, static_cast<std::size_t>(count)));
                while (auto frame = decoder.next()) on_frame(*frame);
            }
            std::string pending;
            {
                std::lock_guard lock(mutex_);
                if (connection_.ok() && resumed_) pending.swap(pending_);
            }
            send(pending);
        }
    }

    void on_frame(const Frame& frame) {
        std::unique_lock lock(mutex_);
        switch (frame.type) {
        case FrameType::hello: {
            ++hellos_;
            resumed_ = true;
            const auto from = output_.size();
            lock.unlock();
            send(encode_resume(from));
            break;
        }
        case FrameType::output:
            if (auto output = decode_output(frame.payload)) output_.append(output->data);
            break;
        case FrameType::exit:
            exit_code_ = decode_i32(frame.payload);
            lock.unlock();
            send(encode_empty(FrameType::exit_ack));
            break;
        case FrameType::owner:
            if (auto answer = decode_owner(frame.payload)) answers_[answer->query] = *answer;
            else ADD_FAILURE() << "the shim sent a malformed OWNER";
            break;
        default:
            break;
        }
        changed_.notify_all();
    }

    std::string path_;
    Fd listen_fd_, wake_read_, wake_write_, connection_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable changed_;
    int hellos_ = 0;
    bool resumed_ = false;
    std::string output_;
    std::string pending_;
    std::uint32_t queries_ = 0;
    std::map<std::uint32_t, OwnerAnswer> answers_;
    std::optional<int> exit_code_;
};

class ShimProcess {
public:
    ShimProcess(const std::vector<std::string>& args, const std::string& log_path) {
        std::vector<char*> argv;
        argv.push_back(g_shim_path.data());
        for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        pid_ = fork();
        if (pid_ == 0) {
            if (log >= 0) dup2(log, STDERR_FILENO);
            execv(argv[0], argv.data());
            _exit(99);
        }
        if (log >= 0) close(log);
    }
    ShimProcess(const ShimProcess&) = delete;
    ShimProcess& operator=(const ShimProcess&) = delete;
    ~ShimProcess() {
        if (status_) return;
        // SIGTERM first, so the shim ends its program too.
        kill(pid_, SIGTERM);
        if (!wait(5s)) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }

    pid_t pid() const { return pid_; }
    bool running() { return !poll_status(); }

    std::optional<int> wait(std::chrono::milliseconds timeout = kTimeout) {
        const auto deadline = Clock::now() + timeout;
        while (!poll_status() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
        return status_;
    }
    // SIGTERM, which the shim passes on to its program; the shim then ends with the
    // program's status once the (fake) handlerd has acknowledged the exit.
    std::optional<int> terminate() {
        kill(pid_, SIGTERM);
        return wait();
    }

private:
    bool poll_status() {
        if (status_) return true;
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
    }

    pid_t pid_ = -1;
    std::optional<int> status_;
};

// A port nobody listens on right now (the kernel's pick for port 0).
std::uint16_t free_port() {
    Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0)
        std::abort();
    return ntohs(address.sin_port);
}

// A blocking TCP connection to the bridge, with timeouts; invalid if refused.
Fd tcp_connect(std::uint16_t port, int family = AF_INET) {
    Fd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int result = -1;
    if (family == AF_INET) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        result = connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
    } else {
        sockaddr_in6 address{};
        address.sin6_family = AF_INET6;
        address.sin6_port = htons(port);
        address.sin6_addr = in6addr_loopback;
        result = connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
    }
    if (result != 0) return Fd();
    set_timeouts(fd.get());
    return fd;
}

bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t count = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (count <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(count));
    }
    return true;
}

// Everything until the end of file; nullopt on an error, a reset or a timeout.
std::optional<std::string> read_to_eof(int fd) {
    std::string all;
    char buffer[4096];
    while (true) {
        const ssize_t count = recv(fd, buffer, sizeof buffer, 0);
        if (count == 0) return all;
        if (count < 0) return std::nullopt;
        all.append(buffer, static_cast<std::size_t>(count));
    }
}

std::optional<std::string> read_exactly(int fd, std::size_t size) {
    std::string all(size, '\0');
    std::size_t have = 0;
    while (have < size) {
        const ssize_t count = recv(fd, all.data() + have, size - have, 0);
        if (count <= 0) return std::nullopt;
        have += static_cast<std::size_t>(count);
    }
    return all;
}

// Whether the peer has ended the connection (end of file or reset) within `timeout`.
bool closed_within(int fd, std::chrono::milliseconds timeout) {
    pollfd polled{fd, POLLIN, 0};
    if (poll(&polled, 1, static_cast<int>(timeout.count())) != 1) return false;
    char byte;
    const ssize_t count = recv(fd, &byte, 1, MSG_DONTWAIT);
    return count == 0 || (count < 0 && errno != EAGAIN);
}

// A reproducible stream of pseudo-random bytes: the receiver regenerates it to check every
// byte, so a loss, duplicate, reordering or corruption anywhere fails the test.
class Pattern {
public:
    explicit Pattern(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull | 1) {}
    void fill(char* out, std::size_t size) {
        for (std::size_t i = 0; i < size; ++i) {
            if (left_ == 0) {
                state_ ^= state_ >> 12;
                state_ ^= state_ << 25;
                state_ ^= state_ >> 27;
                word_ = state_ * 0x2545F4914F6CDD1Dull;
                left_ = 8;
            }
            out[i] = static_cast<char>(word_ >> (8 * --left_));
        }
    }

private:
    std::uint64_t state_;
    std::uint64_t word_ = 0;
    int left_ = 0;
};

constexpr std::size_t kChunk = 64 * 1024;

bool send_pattern(int fd, std::uint64_t seed, std::size_t total) {
    Pattern pattern(seed);
    std::vector<char> chunk(kChunk);
    for (std::size_t sent = 0; sent < total;) {
        const std::size_t size = std::min(kChunk, total - sent);
        pattern.fill(chunk.data(), size);
        if (!send_all(fd, std::string_view(chunk.data(), size))) return false;
        sent += size;
    }
    return true;
}

// Reads `total` bytes and compares them with the pattern; "" when they match.
std::string receive_pattern(int fd, std::uint64_t seed, std::size_t total) {
    Pattern pattern(seed);
    std::vector<char> expected(kChunk), got(kChunk);
    for (std::size_t have = 0; have < total;) {
        const ssize_t count = recv(fd, got.data(), std::min(kChunk, total - have), 0);
        if (count <= 0)
            return "the stream ended after " + std::to_string(have) + " of " +
                   std::to_string(total) + " bytes: " +
                   (count == 0 ? std::string("end of file") : std::strerror(errno));
        const auto size = static_cast<std::size_t>(count);
        pattern.fill(expected.data(), size);
        if (std::memcmp(expected.data(), got.data(), size) != 0)
            return "the bytes differ within [" + std::to_string(have) + ", " +
                   std::to_string(have + size) + ")";
        have += size;
    }
    return {};
}

// The shim's resident memory, in bytes.
std::size_t resident_bytes(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
    return 0;
}

// One session: the control socket, the fake proxy's path, the shim's stderr, the port.
struct Session {
    TempDir dir;
    std::string control = dir / "control";
    std::string proxy = dir / "proxy";
    std::string log = dir / "shim.log";
    std::uint16_t port = free_port();

    std::vector<std::string> args(std::vector<std::string> command) const {
        std::vector<std::string> args{"--connect", control, "--proxy-port", std::to_string(port),
                                      "--proxy-socket", proxy, "--exit-grace-ms", "2000", "--"};
        args.insert(args.end(), command.begin(), command.end());
        return args;
    }
    std::string shim_log() const { return read_text_file(log); }
};

// Case 1: 8 MiB each way at once, with both readers starting late so every buffer on the
// way fills up: a bridge that blocked, or stopped reading one side for good while the
// other was full, would deadlock here.
TEST(ShimBridge, CarriesEightMebibytesEachWayAtOnce) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());

    Fd client = tcp_connect(session.port);
    ASSERT_TRUE(client.ok()) << "cannot connect to 127.0.0.1:" << session.port;
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok()) << "the shim did not pass the connection on";

    constexpr std::size_t kTotal = 8 * 1024 * 1024;
    bool up_sent = false, down_sent = false;
    std::string up_result = "not run", down_result = "not run";
    std::thread up_writer([&] { up_sent = send_pattern(client.get(), 1, kTotal); });
    std::thread down_writer([&] { down_sent = send_pattern(server.get(), 2, kTotal); });
    std::thread up_reader([&] {
        std::this_thread::sleep_for(300ms);
        up_result = receive_pattern(server.get(), 1, kTotal);
    });
    std::this_thread::sleep_for(300ms);
    down_result = receive_pattern(client.get(), 2, kTotal);
    up_writer.join();
    down_writer.join();
    up_reader.join();
    EXPECT_TRUE(up_sent) << "sending to the bridge failed";
    EXPECT_TRUE(down_sent) << "sending from the proxy failed";
    EXPECT_EQ(up_result, "") << "program → proxy";
    EXPECT_EQ(down_result, "") << "proxy → program";

    // Both ends finish cleanly: each end of file is passed on.
    shutdown(client.get(), SHUT_WR);
    EXPECT_EQ(read_to_eof(server.get()), std::string());
    shutdown(server.get(), SHUT_WR);
    EXPECT_EQ(read_to_eof(client.get()), std::string());
    EXPECT_TRUE(shim.running());
    EXPECT_EQ(shim.terminate(), 128 + SIGTERM);
}

// Back-pressure bounds the shim's memory: with the proxy not reading, the program's
// writes stall instead of piling up in the shim, and nothing is lost once the proxy
// reads again.
TEST(ShimBridge, StallsTheWriterWhileTheProxyDoesNotRead) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());
    Fd client = tcp_connect(session.port);
    ASSERT_TRUE(client.ok());
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok());
    const std::size_t resident_before = resident_bytes(shim.pid());
    ASSERT_GT(resident_before, 0u);

    // Far more than the kernel's socket buffers on the way can hold.
    constexpr std::size_t kCap = 128 * 1024 * 1024;
    set_nonblocking(client.get(), true);
    Pattern pattern(3);
    std::vector<char> chunk(kChunk);
    std::size_t sent = 0, chunk_sent = kChunk;
    bool stalled = false;
    while (sent < kCap) {
        if (chunk_sent == kChunk) {
            pattern.fill(chunk.data(), kChunk);
            chunk_sent = 0;
        }
        const ssize_t count =
            send(client.get(), chunk.data() + chunk_sent, kChunk - chunk_sent, MSG_NOSIGNAL);
        if (count > 0) {
            sent += static_cast<std::size_t>(count);
            chunk_sent += static_cast<std::size_t>(count);
            continue;
        }
        ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
        pollfd polled{client.get(), POLLOUT, 0};
        if (poll(&polled, 1, 500) == 0) {
            stalled = true;
            break;
        }
    }
    ASSERT_TRUE(stalled) << "the shim took " << sent << " bytes the proxy never read";
    const std::size_t resident_after = resident_bytes(shim.pid());
    EXPECT_LT(resident_after, resident_before + 8 * 1024 * 1024)
        << "the shim grew from " << resident_before << " to " << resident_after
        << " bytes while " << sent << " bytes waited for the proxy";

    set_nonblocking(client.get(), false);
    std::thread rest([&] {
        // What was cut off mid-chunk is sent, so the stream stays the pattern's prefix.
        send_all(client.get(), std::string_view(chunk.data() + chunk_sent, kChunk - chunk_sent));
        shutdown(client.get(), SHUT_WR);
    });
    EXPECT_EQ(receive_pattern(server.get(), 3, sent + (kChunk - chunk_sent)), "");
    rest.join();
    EXPECT_EQ(read_to_eof(server.get()), std::string());
}

// Case 2: a half-close travels in either direction, and the other direction keeps
// working until it is closed too.
TEST(ShimBridge, PassesHalfClosesOnAndKeepsTheOtherDirectionOpen) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());
    {
        SCOPED_TRACE("the program ends its request first");
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok());
        Fd server = proxy.accept();
        ASSERT_TRUE(server.ok());
        ASSERT_TRUE(send_all(client.get(), "GET / HTTP/1.0\r\n\r\n"));
        ASSERT_EQ(shutdown(client.get(), SHUT_WR), 0);
        EXPECT_EQ(read_to_eof(server.get()), "GET / HTTP/1.0\r\n\r\n");
        // The proxy answers after the end of the request, then closes.
        ASSERT_TRUE(send_all(server.get(), "HTTP/1.0 200 OK\r\n\r\nbody"));
        server.reset();
        EXPECT_EQ(read_to_eof(client.get()), "HTTP/1.0 200 OK\r\n\r\nbody")
            << "the program must read the whole answer, then a clean end of file";
    }
    {
        SCOPED_TRACE("the proxy ends its side first");
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok());
        Fd server = proxy.accept();
        ASSERT_TRUE(server.ok());
        ASSERT_TRUE(send_all(server.get(), "banner"));
        ASSERT_EQ(shutdown(server.get(), SHUT_WR), 0);
        EXPECT_EQ(read_to_eof(client.get()), "banner");
        ASSERT_TRUE(send_all(client.get(), "still talking"));
        client.reset();
        EXPECT_EQ(read_to_eof(server.get()), "still talking");
    }
    EXPECT_TRUE(shim.running());
}

// Case 3: with nothing listening on the proxy socket (handlerd down), a connection is
// reset at once, the failure is logged once per streak, and the shim carries on.
TEST(ShimBridge, ResetsConnectionsWhileTheProxyIsDownAndRecovers) {
    Session session;
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());

    for (int attempt = 0; attempt < 3; ++attempt) {
        SCOPED_TRACE("no socket file, attempt " + std::to_string(attempt));
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok()) << "the shim stopped listening";
        const auto start = Clock::now();
        EXPECT_TRUE(closed_within(client.get(), 1s)) << "the connection was left hanging";
        EXPECT_LT(Clock::now() - start, 1s);
    }
    EXPECT_TRUE(shim.running());
    EXPECT_EQ(count_of(session.shim_log(), "cannot reach the egress proxy"), 1u)
        << session.shim_log();

    {
        ProxyListener proxy(session.proxy);
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok());
        Fd server = proxy.accept();
        ASSERT_TRUE(server.ok()) << "the shim did not try the proxy again";
        ASSERT_TRUE(send_all(client.get(), "ping"));
        EXPECT_EQ(read_exactly(server.get(), 4), "ping");
        ASSERT_TRUE(send_all(server.get(), "pong"));
        EXPECT_EQ(read_exactly(client.get(), 4), "pong");
        // The shim says so after it has handed the connection over, so possibly after
        // the bytes above went through.
        for (int wait = 0; wait < 200 && session.shim_log().find("answers again") == std::string::npos; ++wait)
            std::this_thread::sleep_for(10ms);
        EXPECT_NE(session.shim_log().find("answers again"), std::string::npos) << session.shim_log();

        // handlerd dies: the socket file stays, nobody listens (ECONNREFUSED). The
        // established pair is not affected by that.
        proxy.stop_listening();
        Fd refused = tcp_connect(session.port);
        ASSERT_TRUE(refused.ok());
        EXPECT_TRUE(closed_within(refused.get(), 1s));
        ASSERT_TRUE(send_all(client.get(), "again"));
        EXPECT_EQ(read_exactly(server.get(), 5), "again");
    }
    EXPECT_EQ(count_of(session.shim_log(), "cannot reach the egress proxy"), 2u)
        << "a new streak of failures is logged once more: " << session.shim_log();
    EXPECT_EQ(shim.terminate(), 128 + SIGTERM) << "the shim must still end normally";
}

// Case 4: the bridge listens before the program starts, so the program's very first
// connection works. The program here is this binary in --client mode: one connect, no
// retry.
TEST(ShimBridge, TheProgramCanConnectFromItsFirstInstruction) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({g_self_path, "--client", std::to_string(session.port)}),
                     session.log);
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok()) << "the program's connection never reached the proxy; "
                             << handlerd.output() << session.shim_log();
    EXPECT_EQ(read_to_eof(server.get()), "hello");
    ASSERT_TRUE(send_all(server.get(), "world"));
    server.reset();
    EXPECT_EQ(handlerd.wait_exit(), 0) << handlerd.output();
    EXPECT_NE(handlerd.output().find("reply:world"), std::string::npos) << handlerd.output();
    EXPECT_EQ(shim.wait(), 0);
}

// Who opened a connection (WHO/OWNER): the shim reads /proc and names the program that
// holds the socket, then its parents up to the shim; after the program closed it, the
// connection is gone and the answer says so.
TEST(ShimBridge, NamesTheProcessThatOpenedAConnectionAndItsParents) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    // The shell stays (commands follow the client), so it is the client's parent; it
    // waits for a line so the shim is still there to answer after the client ended.
    ShimProcess shim(
        session.args({"sh", "-c", g_self_path + " --client " + std::to_string(session.port) + "; echo done; read x"}),
        session.log);
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok()) << session.shim_log();
    sockaddr_in peer{};
    socklen_t size = sizeof peer;
    ASSERT_EQ(getpeername(server.get(), reinterpret_cast<sockaddr*>(&peer), &size), 0);
    const std::uint16_t program_port = ntohs(peer.sin_port);
    ASSERT_TRUE(handlerd.wait_hello());

    auto answer = handlerd.who(program_port);
    ASSERT_TRUE(answer) << "no OWNER; " << session.shim_log();
    ASSERT_EQ(answer->status, OwnerStatus::found);
    ASSERT_GE(answer->processes.size(), 2u);
    EXPECT_EQ(answer->processes[0].command,
              g_self_path + std::string(1, '\0') + "--client" + std::string(1, '\0') + std::to_string(session.port));
    EXPECT_EQ(answer->processes[1].command.rfind(std::string("sh\0-c\0", 6), 0), 0u) << answer->processes[1].command;
    for (const auto& process : answer->processes)
        EXPECT_NE(static_cast<pid_t>(process.pid), shim.pid()) << "the shim itself is not in the chain";

    // A port nobody connected from.
    EXPECT_EQ(handlerd.who(1)->status, OwnerStatus::no_connection);

    EXPECT_EQ(read_to_eof(server.get()), "hello");
    ASSERT_TRUE(send_all(server.get(), "world"));
    server.reset();
    EXPECT_TRUE(handlerd.wait_output("done")) << handlerd.output();
    const auto after = handlerd.who(program_port);
    ASSERT_TRUE(after);
    EXPECT_NE(after->status, OwnerStatus::found) << "the program has exited";
    handlerd.send_input("\n");
    EXPECT_EQ(handlerd.wait_exit(), 0);
    EXPECT_EQ(shim.wait(), 0);
}

// Case 5: beyond the cap, connections are reset; the bridged ones all work, and the
// terminal side of the shim stays responsive throughout.
// The shim keeps nothing of a handed-over connection, so it takes as many as come and
// stays responsive; each reaches the proxy as the program's own socket.
TEST(ShimBridge, HandsOverManyConnectionsAndStaysResponsive) {
    Session session;
    ProxyListener proxy(session.proxy, 512);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sh", "-c", "read x; echo got:$x"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());

    constexpr std::size_t kClients = 300;
    std::vector<Fd> clients;
    std::vector<Fd> servers;
    for (std::size_t i = 0; i < kClients; ++i) {
        clients.push_back(tcp_connect(session.port));
        ASSERT_TRUE(clients.back().ok()) << "connection " << i << " was refused";
        servers.push_back(proxy.accept());
        ASSERT_TRUE(servers.back().ok()) << "connection " << i << " was not handed over";
    }
    for (std::size_t i = 0; i < kClients; ++i) {
        char id[8];
        std::snprintf(id, sizeof id, "%03zu", i);
        ASSERT_TRUE(send_all(clients[i].get(), std::string_view(id, 3)));
    }
    for (std::size_t i = 0; i < kClients; ++i) {
        char id[8];
        std::snprintf(id, sizeof id, "%03zu", i);
        EXPECT_EQ(read_exactly(servers[i].get(), 3), std::string(id, 3)) << "each its own connection";
    }
    EXPECT_EQ(count_of(session.shim_log(), "egress proxy"), 0u) << session.shim_log();

    // The terminal side: input reaches the program, its output and exit reach handlerd.
    handlerd.send_input("ping\n");
    EXPECT_TRUE(handlerd.wait_output("got:ping", 5s)) << handlerd.output();
    EXPECT_EQ(handlerd.wait_exit(), 0);
    EXPECT_EQ(shim.wait(), 0);
}

// With a proxy that takes the lease, it accepts the programs' connections itself: the
// shim hands over none, yet each reaches the proxy as the program's own socket.
TEST(ShimBridge, LeasesItsListenersSoTheProxyAcceptsDirectly) {
    Session session;
    ProxyListener proxy(session.proxy, 16, true);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(proxy.await_lease()) << session.shim_log();
    EXPECT_GE(proxy.leased_listeners(), 1u);
    ASSERT_TRUE(handlerd.wait_hello());
    // The shim stops accepting once the answer reached it; give it that moment.
    std::this_thread::sleep_for(200ms);

    constexpr std::size_t kClients = 50;
    for (std::size_t i = 0; i < kClients; ++i) {
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok()) << "connection " << i << " was refused";
        Fd server = proxy.accept();
        ASSERT_TRUE(server.ok()) << "connection " << i << " never reached the proxy";
        ASSERT_TRUE(send_all(client.get(), "ping"));
        EXPECT_EQ(read_exactly(server.get(), 4), "ping");
        ASSERT_TRUE(send_all(server.get(), "pong"));
        EXPECT_EQ(read_exactly(client.get(), 4), "pong");
    }
    EXPECT_EQ(proxy.direct(), kClients);
    EXPECT_EQ(proxy.handed_over(), 0u) << "the shim accepted although the proxy held the lease";
    EXPECT_EQ(proxy.offers(), 1u);
    EXPECT_TRUE(shim.running());
}

// When the lease ends (handlerd restarted), the shim goes back to handing connections
// over at once, and offers the lease again, which the next handlerd takes.
TEST(ShimBridge, HandsOverAgainWhenTheLeaseEndsAndLeasesAnew) {
    Session session;
    ProxyListener proxy(session.proxy, 16, true);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(proxy.await_lease());
    ASSERT_TRUE(handlerd.wait_hello());
    proxy.end_lease();

    Fd client = tcp_connect(session.port);
    ASSERT_TRUE(client.ok());
    // The next offer comes within the shim's retry interval; until the proxy takes it,
    // the connection is handed over.
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok()) << "nobody took the connection after the lease ended; " << session.shim_log();
    ASSERT_TRUE(send_all(client.get(), "after"));
    EXPECT_EQ(read_exactly(server.get(), 5), "after");
    EXPECT_EQ(proxy.direct() + proxy.handed_over(), 1u);

    ASSERT_TRUE(proxy.offers() >= 2 || proxy.await_lease()) << "no new lease was offered";
    EXPECT_GE(proxy.offers(), 2u);
    std::this_thread::sleep_for(200ms);
    const std::size_t direct_before = proxy.direct();
    Fd again = tcp_connect(session.port);
    ASSERT_TRUE(again.ok());
    Fd again_server = proxy.accept();
    ASSERT_TRUE(again_server.ok());
    EXPECT_EQ(proxy.direct(), direct_before + 1) << "the renewed lease was not used";
}

// An older handlerd refuses the lease (it closes the connection): the shim carries on
// handing each connection over, and offers again only now and then.
TEST(ShimBridge, KeepsHandingOverWhenTheLeaseIsRefused) {
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(proxy.await_lease());
    ASSERT_TRUE(handlerd.wait_hello());
    const auto start = Clock::now();
    while (Clock::now() - start < 3s) {
        Fd client = tcp_connect(session.port);
        ASSERT_TRUE(client.ok());
        Fd server = proxy.accept();
        ASSERT_TRUE(server.ok()) << session.shim_log();
        ASSERT_TRUE(send_all(client.get(), "x"));
        EXPECT_EQ(read_exactly(server.get(), 1), "x");
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(proxy.direct(), 0u);
    EXPECT_GE(proxy.handed_over(), 10u);
    // Backing off from 100 ms, doubling: about 5 offers in 3 s, where a fixed 100 ms
    // retry would make 30.
    EXPECT_LE(proxy.offers(), 10u) << "the shim keeps offering a lease that is refused";
    EXPECT_EQ(count_of(session.shim_log(), "egress proxy"), 0u) << session.shim_log();
}

TEST(ShimBridge, AlsoListensOnIpv6LoopbackWhereThereIsOne) {
    {
        Fd probe(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in6 address{};
        address.sin6_family = AF_INET6;
        address.sin6_addr = in6addr_loopback;
        if (!probe.ok() ||
            bind(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
            GTEST_SKIP() << "no IPv6 loopback on this host";
    }
    Session session;
    ProxyListener proxy(session.proxy);
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sleep", "30"}), session.log);
    ASSERT_TRUE(handlerd.wait_hello());
    Fd client = tcp_connect(session.port, AF_INET6);
    ASSERT_TRUE(client.ok()) << "nothing listens on [::1]:" << session.port;
    Fd server = proxy.accept();
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(send_all(client.get(), "six"));
    EXPECT_EQ(read_exactly(server.get(), 3), "six");
}

// A port already taken is fatal, and found out before the program is started.
TEST(ShimBridge, BusyPortExits125NamingThePortBeforeStartingTheProgram) {
    Session session;
    Fd blocker(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    ASSERT_EQ(bind(blocker.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(listen(blocker.get(), 1), 0);
    ASSERT_EQ(getsockname(blocker.get(), reinterpret_cast<sockaddr*>(&address), &size), 0);
    session.port = ntohs(address.sin_port);

    const std::string marker = session.dir / "started";
    FakeHandlerd handlerd(session.control);
    ShimProcess shim(session.args({"sh", "-c", "touch " + marker}), session.log);
    EXPECT_EQ(shim.wait(), 125);
    const auto log = session.shim_log();
    EXPECT_NE(log.find("127.0.0.1:" + std::to_string(session.port)), std::string::npos) << log;
    EXPECT_NE(log.find("Address already in use"), std::string::npos) << log;
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(fs::exists(marker)) << "the program was started although the bridge failed";
}

// The session program of TheProgramCanConnectFromItsFirstInstruction.
int run_client(const char* port_text) {
    const auto port = static_cast<std::uint16_t>(std::atoi(port_text));
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        std::fprintf(stderr, "client: cannot connect to 127.0.0.1:%u: %s\n", port, std::strerror(errno));
        return 3;
    }
    set_timeouts(fd);
    if (!send_all(fd, "hello") || shutdown(fd, SHUT_WR) != 0) {
        std::fprintf(stderr, "client: cannot send: %s\n", std::strerror(errno));
        return 4;
    }
    const auto reply = read_to_eof(fd);
    if (!reply) {
        std::fprintf(stderr, "client: cannot read the reply: %s\n", std::strerror(errno));
        return 5;
    }
    std::printf("reply:%s\n", reply->c_str());
    return 0;
}

} // namespace
} // namespace handler::shim

int main(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[1]) == "--client") return handler::shim::run_client(argv[2]);
    ::testing::InitGoogleTest(&argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s PATH_TO_HANDLER_SHIM [gtest flags]\n", argv[0]);
        return 2;
    }
    handler::shim::g_shim_path = argv[1];
    std::error_code error;
    handler::shim::g_self_path = std::filesystem::read_symlink("/proc/self/exe", error).string();
    if (error) {
        std::fprintf(stderr, "cannot find this test's own binary: %s\n", error.message().c_str());
        return 2;
    }
    return RUN_ALL_TESTS();
}
