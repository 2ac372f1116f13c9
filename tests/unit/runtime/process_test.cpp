// The real runner on small programs from coreutils: no shell in between, exit codes,
// stdin, timeouts, output limits, and that handlerd's descriptors do not leak.
#include "runtime/process.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace handler::runtime {
namespace {

using handler::testing::contains;
using handler::testing::TempDir;

CommandRequest command(std::vector<std::string> argv) {
    CommandRequest request;
    request.argv = std::move(argv);
    return request;
}

TEST(SystemCommandRunner, CapturesStdoutStderrAndExitCode) {
    SystemCommandRunner runner;
    auto result = runner.run(command({"sh", "-c", "echo out; echo err >&2; exit 3"}));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->stdout_text, "out\n");
    EXPECT_EQ(result->stderr_text, "err\n");
    EXPECT_EQ(result->exit_code, 3);
}

TEST(SystemCommandRunner, PassesEachArgumentAsIsWithoutAShell) {
    SystemCommandRunner runner;
    auto result = runner.run(command({"printf", "%s|", "a b", "$HOME", "; rm -rf /", "'q'"}));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->stdout_text, "a b|$HOME|; rm -rf /|'q'|");
}

TEST(SystemCommandRunner, FeedsStdinAndClosesIt) {
    SystemCommandRunner runner;
    CommandRequest request = command({"cat"});
    request.stdin_data = std::string(200'000, 'x'); // more than a pipe buffer
    auto result = runner.run(request);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->stdout_text.size(), 200'000u);
}

TEST(SystemCommandRunner, StdinIsDevNullWithoutData) {
    SystemCommandRunner runner;
    auto result = runner.run(command({"cat"}));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->stdout_text, "");
}

TEST(SystemCommandRunner, SurvivesAProgramThatIgnoresItsStdin) {
    SystemCommandRunner runner;
    CommandRequest request = command({"true"});
    request.stdin_data = std::string(1'000'000, 'x'); // EPIPE, not a SIGPIPE death
    auto result = runner.run(request);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->exit_code, 0);
}

TEST(SystemCommandRunner, ReportsASignalAs128PlusItsNumber) {
    SystemCommandRunner runner;
    auto result = runner.run(command({"sh", "-c", "kill -TERM $$"}));
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->exit_code, 128 + 15);
}

TEST(SystemCommandRunner, KillsAProgramPastItsTimeout) {
    SystemCommandRunner runner;
    CommandRequest request = command({"sleep", "30"});
    request.timeout_ms = 200;
    auto started = std::chrono::steady_clock::now();
    auto result = runner.run(request);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::unavailable);
    EXPECT_TRUE(contains(result.error().message, "sleep 30")) << result.error().message;
    EXPECT_TRUE(contains(result.error().message, "200 ms")) << result.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(SystemCommandRunner, KillsAProgramThatPrintsTooMuch) {
    SystemCommandRunner runner;
    CommandRequest request = command({"yes"});
    request.output_limit_bytes = 100'000;
    auto result = runner.run(request);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::too_large);
}

TEST(SystemCommandRunner, NamesAMissingProgram) {
    SystemCommandRunner runner;
    auto result = runner.run(command({"handler-no-such-program"}));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::unavailable);
    EXPECT_TRUE(contains(result.error().message, "handler-no-such-program"));
    EXPECT_TRUE(contains(result.error().message, "installed"));
}

TEST(SystemCommandRunner, DoesNotLeakDescriptorsWithoutCloexec) {
    // Opened deliberately without O_CLOEXEC, as a careless library would.
    // Moved high so it cannot be confused with the descriptor ls opens itself.
    int base = ::open("/dev/null", O_RDONLY);
    int leaky = ::fcntl(base, F_DUPFD, 200);
    ::close(base);
    ASSERT_GE(leaky, 200);
    SystemCommandRunner runner;
    auto result = runner.run(command({"ls", "/proc/self/fd"}));
    ::close(leaky);
    ASSERT_TRUE(result) << result.error().message;
    // 0, 1, 2 and the descriptor ls opened to read the folder; never `leaky`.
    EXPECT_FALSE(contains("\n" + result->stdout_text, "\n" + std::to_string(leaky) + "\n"))
        << result->stdout_text;
}

// A question under way when handlerd stops returns at once instead of holding up the
// stop; it would otherwise run for 5 s and succeed.
TEST(SystemCommandRunner, AbandonsAQuestionUnderWayWhenStopping) {
    TempDir dir;
    const auto started = dir / "started";
    SystemCommandRunner runner;
    CommandRequest request = command({"sh", "-c", "echo > '" + started.string() + "'; exec sleep 5"});
    request.abandon_when_stopping = true;
    request.timeout_ms = 20'000;
    std::optional<Result<CommandResult>> result;
    std::thread worker([&] { result.emplace(runner.run(request)); });
    while (!std::filesystem::exists(started)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    runner.abandon_reads();
    worker.join();
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(*result) << "the question ran to its end: " << (*result)->stdout_text;
    EXPECT_EQ(result->error().code, ErrorCode::unavailable);
    EXPECT_TRUE(contains(result->error().message, "abandoned: handlerd is stopping"))
        << result->error().message;
}

// After the stop began, a question is not started at all; a command that changes
// something still runs to its end.
TEST(SystemCommandRunner, AfterStoppingQuestionsDoNotStartAndChangesStillRun) {
    TempDir dir;
    SystemCommandRunner runner;
    runner.abandon_reads();

    CommandRequest question = command({"touch", (dir / "asked").string()});
    question.abandon_when_stopping = true;
    auto asked = runner.run(question);
    ASSERT_FALSE(asked);
    EXPECT_TRUE(contains(asked.error().message, "abandoned")) << asked.error().message;
    EXPECT_FALSE(std::filesystem::exists(dir / "asked"));

    auto change = runner.run(command({"sh", "-c", "sleep 0.2; touch '" + (dir / "changed").string() + "'; echo done"}));
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_EQ(change->stdout_text, "done\n");
    EXPECT_TRUE(std::filesystem::exists(dir / "changed"));
}

TEST(DescribeCommand, QuotesOnlyWhatNeedsIt) {
    EXPECT_EQ(describe_command({"podman", "run", "a b", "it's", "--x=y"}),
              "podman run 'a b' 'it'\\''s' --x=y");
}

} // namespace
} // namespace handler::runtime
