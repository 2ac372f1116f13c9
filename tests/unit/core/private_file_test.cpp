// The one "this is mine alone" check: type, owner and mode, each refusal naming the file,
// what is wrong and the caller's fix.
#include "core/private_file.hpp"

#include "core/file_descriptor.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler {
namespace {

using handler::testing::contains;

const PrivateAdvice kAdvice{"the test key", "remove it and start again"};

TEST(PrivateFile, APrivateFileAndFolderPass) {
    handler::testing::TempDir dir;
    const auto file = dir.write("key", "secret");
    ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
    ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
    EXPECT_TRUE(check_private(file, PrivateKind::file, kAdvice).ok());
    EXPECT_TRUE(check_private(dir.path(), PrivateKind::folder, kAdvice).ok());
    const FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(check_private(fd.get(), file, PrivateKind::file, kAdvice).ok());
}

TEST(PrivateFile, GroupOrOtherBitsAreRefusedWithTheChmodAndTheFix) {
    handler::testing::TempDir dir;
    const auto file = dir.write("key", "secret");
    for (const mode_t mode : {0644, 0620, 0601}) {
        ASSERT_EQ(::chmod(file.c_str(), mode), 0);
        auto refused = check_private(file, PrivateKind::file, kAdvice);
        ASSERT_FALSE(refused.ok()) << mode;
        EXPECT_EQ(refused.error().code, ErrorCode::forbidden);
        EXPECT_TRUE(contains(refused.error().message, "the test key " + file.string())) << refused.error().message;
        EXPECT_TRUE(contains(refused.error().message, "chmod 600 " + file.string())) << refused.error().message;
        EXPECT_TRUE(contains(refused.error().message, "remove it and start again")) << refused.error().message;
    }
    ASSERT_EQ(::chmod(dir.path().c_str(), 0750), 0);
    auto folder = check_private(dir.path(), PrivateKind::folder, kAdvice);
    ASSERT_FALSE(folder.ok());
    EXPECT_TRUE(contains(folder.error().message, "chmod 700 " + dir.path().string())) << folder.error().message;
    EXPECT_TRUE(check_owned(dir.path(), PrivateKind::folder, kAdvice).ok()) << "the owner check leaves the mode";
}

TEST(PrivateFile, TheWrongTypeAndSymbolicLinksAreRefused) {
    handler::testing::TempDir dir;
    const auto file = dir.write("key", "secret");
    ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
    std::filesystem::create_symlink(file, dir / "link");
    auto link = check_private(dir / "link", PrivateKind::file, kAdvice);
    ASSERT_FALSE(link.ok());
    EXPECT_TRUE(contains(link.error().message, "symbolic link")) << link.error().message;
    EXPECT_FALSE(check_private(file, PrivateKind::folder, kAdvice).ok());
    EXPECT_FALSE(check_owned(file, PrivateKind::folder, kAdvice).ok());
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    auto fifo = check_private(dir / "fifo", PrivateKind::file, kAdvice);
    ASSERT_FALSE(fifo.ok());
    EXPECT_TRUE(contains(fifo.error().message, "is not a regular file; remove it and start again"))
        << fifo.error().message;
    EXPECT_FALSE(check_private(dir / "missing", PrivateKind::file, kAdvice).ok());
}

TEST(PrivateFile, SomeoneElsesFileIsRefusedNamingBothUids) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
    handler::testing::TempDir dir;
    const auto file = dir.write("key", "secret");
    ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
    ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    auto refused = check_private(file, PrivateKind::file, kAdvice);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "is owned by uid 65534, not by you (uid 0); remove it and start again"))
        << refused.error().message;
    EXPECT_FALSE(check_owned(file, PrivateKind::file, kAdvice).ok());
}

TEST(FileDescriptor, ClosesOnceAndHandsOver) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    FileDescriptor read_end(fds[0]);
    FileDescriptor moved(std::move(read_end));
    EXPECT_FALSE(read_end.valid());
    EXPECT_EQ(moved.get(), fds[0]);
    {
        const FileDescriptor write_end(fds[1]);
    }
    EXPECT_EQ(::fcntl(fds[1], F_GETFD), -1) << "closed when it went out of scope";
    EXPECT_EQ(moved.close(), 0);
    EXPECT_FALSE(moved.valid());
    EXPECT_EQ(moved.close(), 0) << "closing twice is a no-op";
}

} // namespace
} // namespace handler
