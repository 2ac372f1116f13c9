#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <csignal>
#include <cstdlib>

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Test peers write to sockets the code under test closes (as handlerd does, which
    // ignores SIGPIPE too): the write fails and the test sees it, instead of dying.
    std::signal(SIGPIPE, SIG_IGN);
    // HANDLER_TEST_LOG=debug shows handlerd's own log lines while debugging a test.
    if (const char* level = std::getenv("HANDLER_TEST_LOG")) spdlog::set_level(spdlog::level::from_str(level));
    else spdlog::set_level(spdlog::level::off);
    return RUN_ALL_TESTS();
}
