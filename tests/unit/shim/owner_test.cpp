// The shim's answer to WHO from a fake /proc tree (a temporary folder laid out like the
// kernel's: net/tcp, PID/fd/N -> socket:[inode], PID/cmdline, PID/stat), and the real
// /proc for a socket this test opens itself.
#include "owner.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace handler::shim {
namespace {

namespace fs = std::filesystem;

constexpr std::uint16_t kProxyPort = 3128; // 0C38

class FakeProc {
public:
    FakeProc() {
        root_ = fs::temp_directory_path() / ("handler-owner-test-" + std::to_string(getpid()) + "-" +
                                             std::to_string(counter_++));
        fs::remove_all(root_);
        fs::create_directories(root_ / "net");
        tcp_ = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        write("net/tcp6", tcp_);
    }
    ~FakeProc() { fs::remove_all(root_); }

    // A connection from 127.0.0.1:port to the proxy port, with its socket inode.
    void connection(std::uint16_t port, std::uint64_t inode, std::uint16_t remote = kProxyPort) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "   0: 0100007F:%04X 0100007F:%04X 01 00000000:00000000 00:00000000 00000000  1000        0 %llu 1 "
                      "0000000000000000 20 4 30 10 -1\n",
                      port, remote, static_cast<unsigned long long>(inode));
        tcp_ += line;
        write("net/tcp", tcp_);
    }
    void process(std::uint32_t pid, std::uint32_t parent, const std::string& cmdline,
                 const std::string& comm = "prog") {
        const auto dir = fs::path(std::to_string(pid));
        fs::create_directories(root_ / dir / "fd");
        write(dir / "cmdline", cmdline);
        write(dir / "stat", std::to_string(pid) + " (" + comm + ") S " + std::to_string(parent) + " 1 1 0 -1\n");
    }
    void fd(std::uint32_t pid, int fd, const std::string& target) {
        fs::create_symlink(target, root_ / std::to_string(pid) / "fd" / std::to_string(fd));
    }
    std::string root() const { return root_.string(); }

private:
    void write(const fs::path& relative, const std::string& text) {
        std::ofstream(root_ / relative, std::ios::binary) << text;
    }
    static inline int counter_ = 0;
    fs::path root_;
    std::string tcp_;
};

TEST(ShimOwner, FindsTheHolderAndItsParentsUpToTheShim) {
    FakeProc proc;
    proc.connection(40000, 777);
    proc.connection(40001, 778);
    proc.process(1, 0, std::string("catatonit\0--\0handler-shim", 25));
    proc.process(2, 1, std::string("/opt/handler/handler-shim\0--\0claude", 36));
    proc.process(10, 2, std::string("claude\0-p\0hi\0", 13));
    proc.process(20, 10, std::string("/bin/bash\0-c\0curl -s http://x\0", 30));
    proc.process(21, 20, std::string("curl\0-s\0http://x\0", 17));
    proc.fd(10, 3, "socket:[778]");
    proc.fd(21, 0, "/dev/null");
    proc.fd(21, 5, "socket:[777]");

    const auto answer = find_owner(proc.root(), 40000, kProxyPort, 2);
    ASSERT_EQ(answer.status, OwnerStatus::found);
    ASSERT_EQ(answer.processes.size(), 3u); // curl, bash, claude; not the shim or catatonit
    EXPECT_EQ(answer.processes[0].pid, 21u);
    EXPECT_EQ(answer.processes[0].command, std::string("curl\0-s\0http://x", 16));
    EXPECT_EQ(answer.processes[1].pid, 20u);
    EXPECT_EQ(answer.processes[2].pid, 10u);
    EXPECT_FALSE(answer.processes[0].truncated);

    const auto other = find_owner(proc.root(), 40001, kProxyPort, 2);
    ASSERT_EQ(other.status, OwnerStatus::found);
    EXPECT_EQ(other.processes.front().pid, 10u);
}

TEST(ShimOwner, OnlyAConnectionToTheProxyPortCounts) {
    FakeProc proc;
    proc.connection(40000, 777, 8080); // same local port, another server
    proc.process(5, 1, "x");
    proc.fd(5, 3, "socket:[777]");
    EXPECT_EQ(find_owner(proc.root(), 40000, kProxyPort, 1).status, OwnerStatus::no_connection);
    EXPECT_EQ(find_owner(proc.root(), 40000, 8080, 1).status, OwnerStatus::found);
}

TEST(ShimOwner, SaysWhyWhenNobodyHoldsIt) {
    FakeProc proc;
    proc.connection(40000, 777);
    proc.process(5, 1, "x");
    proc.fd(5, 3, "socket:[7770]"); // a prefix of the inode is another socket
    EXPECT_EQ(find_owner(proc.root(), 40000, kProxyPort, 1).status, OwnerStatus::no_process);
    EXPECT_EQ(find_owner(proc.root(), 40002, kProxyPort, 1).status, OwnerStatus::no_connection);
    EXPECT_EQ(find_owner(proc.root() + "/absent", 40000, kProxyPort, 1).status, OwnerStatus::unreadable);
}

TEST(ShimOwner, HostileProcessesAreBounded) {
    FakeProc proc;
    proc.connection(40000, 777);
    // A command line far over the bound, a comm with ") S 1 " in it, and a parent loop.
    proc.process(30, 31, std::string(100'000, 'a'), "evil) S 1 (x");
    proc.process(31, 30, "loop");
    proc.fd(30, 3, "socket:[777]");
    const auto answer = find_owner(proc.root(), 40000, kProxyPort, 1);
    ASSERT_EQ(answer.status, OwnerStatus::found);
    EXPECT_EQ(answer.processes.size(), kMaxChain);
    EXPECT_EQ(answer.processes[0].command.size(), kMaxCommandBytes);
    EXPECT_TRUE(answer.processes[0].truncated);
    EXPECT_EQ(answer.processes[1].pid, 31u); // the ppid after the last ')'
    // The whole answer fits in one frame.
    EXPECT_LE(encode_owner(answer).size(), kHeaderSize + kMaxPayload);
    auto decoded = decode_owner(encode_owner(answer).substr(kHeaderSize));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->processes.size(), kMaxChain);
}

TEST(ShimOwner, TheScanStopsAtItsLimits) {
    FakeProc proc;
    proc.connection(40000, 777);
    for (std::uint32_t pid = 100; pid < 110; ++pid) proc.process(pid, 1, "p");
    proc.fd(109, 3, "socket:[777]");
    OwnerLimits limits;
    limits.processes = 0;
    EXPECT_EQ(find_owner(proc.root(), 40000, kProxyPort, 1, limits).status, OwnerStatus::no_process);
    limits.processes = 4096;
    limits.fds = 0;
    EXPECT_EQ(find_owner(proc.root(), 40000, kProxyPort, 1, limits).status, OwnerStatus::no_process);
    limits.fds = 1024;
    limits.processes = 4096;
    EXPECT_EQ(find_owner(proc.root(), 40000, kProxyPort, 1, limits).status, OwnerStatus::found);
}

// A socket two processes hold (a fork kept it): the scan names the first in /proc, the
// recent holders are looked at before it.
TEST(ShimOwner, RecentHoldersAreLookedAtFirst) {
    FakeProc proc;
    proc.connection(40000, 777);
    proc.process(10, 1, "parent");
    proc.process(11, 10, "child");
    proc.fd(10, 3, "socket:[777]");
    proc.fd(11, 3, "socket:[777]");
    OwnerLimits limits;
    const auto by_hint = find_owner(proc.root(), 40000, kProxyPort, 1, limits, {11});
    ASSERT_EQ(by_hint.status, OwnerStatus::found);
    EXPECT_EQ(by_hint.processes.front().pid, 11u);
    EXPECT_EQ(by_hint.processes.size(), 2u); // child, then parent
    // A hint that holds nothing (gone, or another process) costs only its own fds.
    const auto stale = find_owner(proc.root(), 40000, kProxyPort, 1, limits, {99, 0});
    ASSERT_EQ(stale.status, OwnerStatus::found);
}

TEST(ShimOwner, ReadsTheRealProc) {
    // This process opens a TCP connection on loopback and asks who holds it: itself.
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(listen(listener, 1), 0);
    socklen_t size = sizeof address;
    ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
    const std::uint16_t server_port = ntohs(address.sin_port);
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    sockaddr_in local{};
    size = sizeof local;
    ASSERT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&local), &size), 0);

    const auto answer = find_owner("/proc", ntohs(local.sin_port), server_port, 0);
    close(client);
    close(listener);
    ASSERT_EQ(answer.status, OwnerStatus::found);
    EXPECT_EQ(answer.processes.front().pid, static_cast<std::uint32_t>(getpid()));
    std::ifstream self("/proc/self/cmdline", std::ios::binary);
    std::string own((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
    if (!own.empty() && own.back() == '\0') own.pop_back();
    EXPECT_EQ(answer.processes.front().command, own.substr(0, kMaxCommandBytes));
}

TEST(ShimOwner, SocketInodeReadsTheTable) {
    const std::string table =
        "  sl  local_address rem_address   st ...\n"
        "   0: 0100007F:9C40 0100007F:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1\n"
        "garbage line\n";
    EXPECT_EQ(socket_inode(table, 0x9C40, 3128), 12345u);
    EXPECT_EQ(socket_inode(table, 0x9C41, 3128), 0u);
    EXPECT_EQ(socket_inode("", 1, 2), 0u);
}

} // namespace
} // namespace handler::shim
