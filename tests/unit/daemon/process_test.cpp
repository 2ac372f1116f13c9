// The instance lock against a real flock held by another open file, as a second daemon
// would hold it: a serving holder is refused at once, a stopping one is waited for.
#include "daemon/process.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace handler::daemon {
namespace {

using handler::testing::contains;
using handler::testing::TempDir;

// What another handlerd leaves in its runtime folder: the lock it holds, and, while it
// serves, its pid file and its socket.
class OtherDaemon {
public:
    explicit OtherDaemon(const InstanceFiles& files) : files_(files) {
        lock_fd_ = ::open(files.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        EXPECT_GE(lock_fd_, 0);
        EXPECT_EQ(::flock(lock_fd_, LOCK_EX | LOCK_NB), 0);
    }
    ~OtherDaemon() {
        let_go();
        if (socket_fd_ >= 0) ::close(socket_fd_);
    }
    OtherDaemon(const OtherDaemon&) = delete;
    OtherDaemon& operator=(const OtherDaemon&) = delete;

    void serve(const std::string& pid) {
        socket_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, files_.socket_file.c_str(), sizeof address.sun_path - 1);
        ASSERT_EQ(::bind(socket_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        std::ofstream(files_.pid_file) << pid << "\n";
    }
    // What a stopping daemon does first: its socket goes; the pid file stays a moment.
    void stop_serving() { std::filesystem::remove(files_.socket_file); }
    void let_go() {
        if (lock_fd_ >= 0) ::close(lock_fd_);
        lock_fd_ = -1;
    }

private:
    InstanceFiles files_;
    int lock_fd_ = -1;
    int socket_fd_ = -1;
};

class InstanceLockTest : public ::testing::Test {
protected:
    TempDir dir_; // before files_, which is made from it
    InstanceFiles files_{dir_ / "handlerd.lock", dir_ / "handlerd.pid", dir_ / "handlerd.sock"};
    std::vector<std::string> reports_;

    InstanceWait wait(std::function<void()> on_waiting = {}) {
        InstanceWait wait;
        wait.report = [this, on_waiting = std::move(on_waiting)](const std::string& line) {
            reports_.push_back(line);
            if (reports_.size() == 1 && on_waiting) on_waiting();
        };
        return wait;
    }
};

TEST_F(InstanceLockTest, TakesAFreeLockWithoutWaiting) {
    auto lock = take_instance_lock(files_, wait());
    ASSERT_TRUE(lock) << lock.error().message;
    EXPECT_TRUE(reports_.empty());
}

TEST_F(InstanceLockTest, RefusesAServingDaemonAtOnceNamingItsPid) {
    OtherDaemon other(files_);
    other.serve("4242");
    auto lock = take_instance_lock(files_, wait());
    ASSERT_FALSE(lock);
    EXPECT_EQ(lock.error().code, ErrorCode::conflict);
    EXPECT_TRUE(contains(lock.error().message, "already running (pid 4242")) << lock.error().message;
    EXPECT_TRUE(reports_.empty()) << "a serving daemon is not waited for";
}

// The restart of issue 15: the old daemon has removed its pid file but still holds the
// lock. The start waits, says so, and takes the lock once the old one lets go.
TEST_F(InstanceLockTest, WaitsForADaemonThatIsStoppingThenTakesTheLock) {
    OtherDaemon other(files_);
    auto lock = take_instance_lock(files_, wait([&] { other.let_go(); }));
    ASSERT_TRUE(lock) << lock.error().message;
    ASSERT_EQ(reports_.size(), 2u);
    EXPECT_TRUE(contains(reports_[0], "pid unknown")) << reports_[0];
    EXPECT_TRUE(contains(reports_[0], "stopping")) << reports_[0];
    EXPECT_TRUE(contains(reports_[1], "let go")) << reports_[1];
}

// Its socket is gone but its pid file not yet: stopping too, not serving.
TEST_F(InstanceLockTest, ADaemonWhoseSocketIsGoneIsStoppingEvenWithItsPidFile) {
    OtherDaemon other(files_);
    other.serve("4242");
    other.stop_serving();
    auto lock = take_instance_lock(files_, wait([&] { other.let_go(); }));
    ASSERT_TRUE(lock) << lock.error().message;
    ASSERT_FALSE(reports_.empty());
    EXPECT_TRUE(contains(reports_[0], "pid 4242")) << reports_[0];
}

// One that was starting and begins to serve while waited for is then refused.
TEST_F(InstanceLockTest, ADaemonThatStartsServingMeanwhileIsRefused) {
    OtherDaemon other(files_);
    auto lock = take_instance_lock(files_, wait([&] { other.serve("5151"); }));
    ASSERT_FALSE(lock);
    EXPECT_TRUE(contains(lock.error().message, "already running (pid 5151")) << lock.error().message;
}

TEST_F(InstanceLockTest, GivesUpOnAHolderThatNeverLetsGo) {
    OtherDaemon other(files_);
    InstanceWait short_wait = wait();
    short_wait.limit = std::chrono::milliseconds(50);
    auto lock = take_instance_lock(files_, short_wait);
    ASSERT_FALSE(lock);
    EXPECT_EQ(lock.error().code, ErrorCode::conflict);
    EXPECT_TRUE(contains(lock.error().message, "without serving")) << lock.error().message;
    EXPECT_TRUE(contains(lock.error().message, "ps -C handlerd")) << lock.error().message;
}

TEST_F(InstanceLockTest, TheLockIsHeldUntilItGoes) {
    InstanceWait no_wait = wait();
    no_wait.limit = std::chrono::milliseconds(0);
    {
        auto first = take_instance_lock(files_, no_wait);
        ASSERT_TRUE(first) << first.error().message;
        EXPECT_FALSE(take_instance_lock(files_, no_wait)) << "taken twice";
    }
    auto again = take_instance_lock(files_, no_wait);
    EXPECT_TRUE(again) << again.error().message;
}

} // namespace
} // namespace handler::daemon
