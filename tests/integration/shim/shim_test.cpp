// The real, statically linked handler-shim from this build, run on the host (no podman)
// against a unix socket this test listens on, playing handlerd's part of the protocol.
// Usage: shim_integration_test PATH_TO_HANDLER_SHIM [gtest flags]
#include "support.hpp"

#include <handler/shim_protocol.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

namespace handler::shim {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using testing::TempDir;

std::string g_shim_path;
constexpr auto kTimeout = 10s;

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

class Listener {
public:
    explicit Listener(std::string path) : path_(std::move(path)), fd_(testing::listen_unix(path_, 4)) {}
    ~Listener() {
        close(fd_);
        unlink(path_.c_str());
    }
    // Returns the accepted fd, or -1 after the timeout.
    int accept(std::chrono::milliseconds timeout = kTimeout) { return testing::accept_within(fd_, timeout); }

private:
    std::string path_;
    int fd_ = -1;
};

// What handlerd would have recorded: output checked to arrive at consecutive offsets
// (a duplicate or a gap fails the test), per stream, and the exit code.
struct Transcript {
    std::uint64_t next_offset = 0;
    std::string all;
    std::string terminal, out, err;
    std::optional<int> exit_code;
    bool contains(std::string_view text) const { return all.find(text) != std::string::npos; }
};

class Connection {
public:
    explicit Connection(int fd) : fd_(fd) {}
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    // Leaves `other` closed, so the fd still has exactly one owner.
    Connection& operator=(Connection&& other) noexcept {
        if (this != &other) {
            close();
            fd_ = std::exchange(other.fd_, -1);
            decoder_ = std::move(other.decoder_);
            closed_ = other.closed_;
        }
        return *this;
    }
    ~Connection() { close(); }

    bool ok() const { return fd_ >= 0; }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    void send(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t count = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (count <= 0) {
                ADD_FAILURE() << "send failed: " << std::strerror(errno);
                return;
            }
            bytes.remove_prefix(static_cast<std::size_t>(count));
        }
    }

    // The next frame; nullopt on timeout or when the shim closed the connection
    // (closed() then says which).
    std::optional<Frame> next(std::chrono::milliseconds timeout = kTimeout) {
        const auto deadline = Clock::now() + timeout;
        while (true) {
            if (auto frame = decoder_.next()) return frame;
            if (decoder_.failed()) {
                ADD_FAILURE() << "the shim sent a frame the decoder refuses";
                return std::nullopt;
            }
            pollfd polled{fd_, POLLIN, 0};
            if (poll(&polled, 1, remaining_ms(deadline)) != 1) return std::nullopt;
            char buffer[65536];
            const ssize_t count = recv(fd_, buffer, sizeof buffer, 0);
            if (count <= 0) {
                closed_ = true;
                return std::nullopt;
            }
            decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(count)));
        }
    }
    bool closed() const { return closed_; }

    std::optional<Hello> hello() {
        auto frame = next();
        if (!frame || frame->type != FrameType::hello) {
            ADD_FAILURE() << "expected HELLO first";
            return std::nullopt;
        }
        auto hello = decode_hello(frame->payload);
        EXPECT_TRUE(hello) << "malformed HELLO";
        if (hello) {
            EXPECT_EQ(hello->version, kProtocolVersion);
        }
        return hello;
    }

    // Reads OUTPUT and EXIT frames into `transcript` until `done` holds for it.
    ::testing::AssertionResult read_until(Transcript& transcript,
                                          const std::function<bool(const Transcript&)>& done,
                                          std::chrono::milliseconds timeout = kTimeout) {
        const auto deadline = Clock::now() + timeout;
        while (!done(transcript)) {
            auto frame = next(std::chrono::milliseconds(remaining_ms(deadline)));
            if (!frame)
                return ::testing::AssertionFailure()
                       << (closed_ ? "the shim closed the connection" : "timed out")
                       << "; output so far: [" << transcript.all << "]";
            if (frame->type == FrameType::exit) {
                if (transcript.exit_code) return ::testing::AssertionFailure() << "EXIT twice";
                auto code = decode_i32(frame->payload);
                if (!code) return ::testing::AssertionFailure() << "malformed EXIT";
                transcript.exit_code = *code;
                continue;
            }
            if (frame->type != FrameType::output)
                return ::testing::AssertionFailure()
                       << "unexpected frame type " << int(frame->type);
            if (transcript.exit_code)
                return ::testing::AssertionFailure() << "OUTPUT after EXIT";
            auto output = decode_output(frame->payload);
            if (!output) return ::testing::AssertionFailure() << "malformed OUTPUT";
            if (output->offset != transcript.next_offset)
                return ::testing::AssertionFailure()
                       << "OUTPUT at offset " << output->offset << ", expected "
                       << transcript.next_offset << " (a duplicate or a gap)";
            transcript.next_offset += output->data.size();
            transcript.all.append(output->data);
            switch (output->stream) {
            case Stream::terminal: transcript.terminal.append(output->data); break;
            case Stream::stdout_: transcript.out.append(output->data); break;
            case Stream::stderr_: transcript.err.append(output->data); break;
            }
        }
        return ::testing::AssertionSuccess();
    }

    ::testing::AssertionResult read_until_contains(Transcript& transcript, std::string text) {
        return read_until(transcript, [text](const Transcript& t) { return t.contains(text); });
    }
    ::testing::AssertionResult read_until_exit(Transcript& transcript) {
        return read_until(transcript, [](const Transcript& t) { return t.exit_code.has_value(); });
    }

private:
    int fd_;
    FrameDecoder decoder_;
    bool closed_ = false;
};

class ShimProcess {
public:
    explicit ShimProcess(const std::vector<std::string>& args, int stderr_fd = -1) {
        std::vector<char*> argv;
        argv.push_back(g_shim_path.data());
        for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        pid_ = fork();
        if (pid_ == 0) {
            if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
            // The shim's TERM default is part of what is tested.
            unsetenv("TERM");
            execv(argv[0], argv.data());
            _exit(99);
        }
    }
    ShimProcess(const ShimProcess&) = delete;
    ShimProcess& operator=(const ShimProcess&) = delete;
    ~ShimProcess() {
        if (!status_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }

    pid_t pid() const { return pid_; }
    bool running() { return !poll_status(); }

    // The shim's exit status as a shell reports it, or nullopt if still running.
    std::optional<int> wait(std::chrono::milliseconds timeout = kTimeout) {
        const auto deadline = Clock::now() + timeout;
        while (!poll_status() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
        return status_;
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

std::vector<std::string> shim_args(const std::string& socket, std::vector<std::string> flags,
                                   std::vector<std::string> command) {
    std::vector<std::string> args{"--connect", socket};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return args;
}

bool wait_for_file(const std::string& path) {
    const auto deadline = Clock::now() + kTimeout;
    while (!fs::exists(path)) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

std::vector<std::string> tty_flags(bool tty) {
    if (tty) return {"--tty"};
    return {};
}

// handlerd's side of one run of the shim. The members are declared in the order they have to
// come up, so they go down in reverse: the connection and the shim before the socket.
struct ShimRun {
    // Whether handlerd listens before the shim starts (as it usually does) or only later.
    enum class Listen { first, later };

    ShimRun(std::vector<std::string> flags, std::vector<std::string> command,
            Listen when = Listen::first)
        : listener(when == Listen::first ? std::optional<Listener>(std::in_place, dir / "s")
                                         : std::optional<Listener>()),
          shim(shim_args(dir / "s", std::move(flags), std::move(command))),
          connection(listener ? listener->accept() : -1) {}

    // For ASSERT_TRUE: without the connection nothing else in a test can work.
    ::testing::AssertionResult connected() const {
        if (connection.ok()) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "no connection from the shim";
    }

    // Checks the connection first, as waiting for a HELLO on none would only time out.
    std::optional<Hello> hello() {
        if (auto result = connected(); !result) {
            ADD_FAILURE() << result.message();
            return std::nullopt;
        }
        return connection.hello();
    }

    // How most tests begin: HELLO taken, then all the output asked for from the start.
    ::testing::AssertionResult handshake() {
        if (auto result = connected(); !result) return result;
        if (!connection.hello()) return ::testing::AssertionFailure() << "no usable HELLO";
        connection.send(encode_resume(0));
        return ::testing::AssertionSuccess();
    }

    // handlerd coming up after the shim started (Listen::later).
    ::testing::AssertionResult listen() {
        listener.emplace(dir / "s");
        connection = Connection(listener->accept());
        return connected();
    }

    // handlerd going away and coming back. The old connection is closed before accepting, as
    // the shim only tries again once it sees it dropped.
    ::testing::AssertionResult reconnect() {
        connection.close();
        connection = Connection(listener->accept());
        return connected();
    }

    // Acknowledges the exit and checks the shim then ends with the program's code.
    void finish(int expected_code) {
        connection.send(encode_empty(FrameType::exit_ack));
        EXPECT_EQ(shim.wait(), expected_code);
    }
    // The same, for tests that also want the code the EXIT frame carried.
    void finish(const Transcript& transcript, int expected_code) {
        EXPECT_EQ(transcript.exit_code, expected_code);
        finish(expected_code);
    }

    TempDir dir;
    std::optional<Listener> listener;
    ShimProcess shim;
    Connection connection;
};

TEST(ShimIntegration, TerminalModeEchoesInputAndReportsTheExitCode) {
    ShimRun run({"--tty"}, {"sh", "-c", "echo hello; read x; echo got:$x; exit 7"});
    auto hello = run.hello();
    ASSERT_TRUE(hello);
    EXPECT_TRUE(hello->tty);
    EXPECT_FALSE(hello->exited);

    run.connection.send(encode_resume(0));
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "hello"));
    std::string input;
    append_frame(input, FrameType::input, "abc\n");
    run.connection.send(input);
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_TRUE(transcript.contains("got:abc")) << transcript.all;
    EXPECT_EQ(transcript.exit_code, 7);
    EXPECT_EQ(transcript.terminal, transcript.all) << "tty output is all Stream::terminal";
    // The shim waits for the acknowledgement before it ends.
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(run.shim.running());
    run.finish(7);
}

TEST(ShimIntegration, StartsBeforeHandlerdListensAndReplaysEverythingLater) {
    TempDir scratch; // the command names the marker before the run's own directory exists
    const std::string marker = scratch / "ran";
    ShimRun run({"--tty"}, {"sh", "-c", "echo early; echo bird; touch " + marker + "; exit 3"},
                ShimRun::Listen::later);
    // The program runs and ends meanwhile; the shim keeps retrying.
    ASSERT_TRUE(wait_for_file(marker));
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(run.shim.running());

    ASSERT_TRUE(run.listen()) << "the shim did not retry the connection";
    auto hello = run.connection.hello();
    ASSERT_TRUE(hello);
    EXPECT_TRUE(hello->exited);
    EXPECT_EQ(hello->exit_code, 3);
    EXPECT_EQ(hello->oldest, 0u);
    EXPECT_EQ(hello->produced, std::string("early\r\nbird\r\n").size());

    run.connection.send(encode_resume(0));
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.all, "early\r\nbird\r\n");
    run.finish(transcript, 3);
}

TEST(ShimIntegration, ReconnectResumesWithoutDuplicatesOrGaps) {
    ShimRun run({},
        {"sh", "-c", "i=0; while [ $i -lt 300 ]; do echo line$i; i=$((i+1)); sleep 0.003; done"});
    std::string expected;
    for (int i = 0; i < 300; ++i) expected += "line" + std::to_string(i) + "\n";

    Transcript transcript;
    ASSERT_TRUE(run.handshake());
    ASSERT_TRUE(run.connection.read_until(transcript,
                                          [](const Transcript& t) { return t.all.size() >= 200; }));
    ASSERT_FALSE(transcript.exit_code) << "the program should still be running";

    // handlerd goes away mid-stream, possibly with output in flight.
    ASSERT_TRUE(run.reconnect()) << "the shim did not reconnect";
    const std::uint64_t had = transcript.next_offset;
    auto hello = run.connection.hello();
    ASSERT_TRUE(hello);
    EXPECT_GE(hello->produced, had);
    EXPECT_LE(hello->produced, expected.size());
    EXPECT_EQ(hello->oldest, 0u);
    run.connection.send(encode_resume(had));
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.all, expected);
    EXPECT_EQ(transcript.exit_code, 0);

    // Gone again before acknowledging the exit.
    ASSERT_TRUE(run.reconnect()) << "the shim did not reconnect after its program exited";
    hello = run.connection.hello();
    ASSERT_TRUE(hello);
    EXPECT_TRUE(hello->exited);
    EXPECT_EQ(hello->produced, expected.size());
    run.connection.send(encode_resume(hello->produced));
    Transcript rest;
    rest.next_offset = hello->produced;
    ASSERT_TRUE(run.connection.read_until_exit(rest));
    EXPECT_TRUE(rest.all.empty()) << "resuming at produced must send no output";
    run.finish(rest, 0);
}

TEST(ShimIntegration, PipeModeKeepsStreamsApartAndInputEofEndsStdin) {
    ShimRun run({}, {"sh", "-c", "echo out; echo err >&2; cat; echo after"});
    auto hello = run.hello();
    ASSERT_TRUE(hello);
    EXPECT_FALSE(hello->tty);
    run.connection.send(encode_resume(0));
    std::string frames;
    append_frame(frames, FrameType::input, "xyz\n");
    append_frame(frames, FrameType::input, "more");
    frames += encode_empty(FrameType::input_eof);
    run.connection.send(frames);
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.out, "out\nxyz\nmoreafter\n");
    EXPECT_EQ(transcript.err, "err\n");
    EXPECT_TRUE(transcript.terminal.empty());
    run.finish(transcript, 0);
}

TEST(ShimIntegration, ExecFailureIsShownToTheUserAndExits127) {
    for (bool tty : {true, false}) {
        SCOPED_TRACE(tty ? "tty" : "pipes");
        ShimRun run(tty_flags(tty), {"/nonexistent/handler-no-such-program", "arg"});
        ASSERT_TRUE(run.handshake());
        Transcript transcript;
        ASSERT_TRUE(run.connection.read_until_exit(transcript));
        const auto& shown = tty ? transcript.terminal : transcript.err;
        EXPECT_NE(shown.find("handler-shim: cannot run '/nonexistent/handler-no-such-program': "
                             "No such file or directory"),
                  std::string::npos)
            << transcript.all;
        if (!tty) {
            EXPECT_TRUE(transcript.out.empty());
        }
        run.finish(transcript, 127);
    }
}

TEST(ShimIntegration, ResizeChangesTheTerminalSize) {
    ShimRun run({"--tty", "--rows", "30", "--cols", "100"},
                {"sh", "-c", "stty size; read x; stty size"});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "30 100"));
    std::string frames = encode_resize(40, 120);
    append_frame(frames, FrameType::input, "\n");
    run.connection.send(frames);
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_TRUE(transcript.contains("40 120")) << transcript.all;
    run.finish(transcript, 0);
}

TEST(ShimIntegration, TermDefaultsAndWorkdirApplies) {
    ShimRun run({"--tty", "--workdir", "/"}, {"sh", "-c", "echo \"[$TERM][$(pwd)]\""});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_TRUE(transcript.contains("[xterm-256color][/]")) << transcript.all;
    run.finish(0);
}

TEST(ShimIntegration, SignalFramesReachTheProgramAndBadNumbersAreIgnored) {
    ShimRun run({}, {"sh", "-c", "echo ready; exec sleep 30"});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "ready"));
    run.connection.send(encode_i32(FrameType::signal, 0) + encode_i32(FrameType::signal, 65) +
                        encode_i32(FrameType::signal, -9));
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(transcript.exit_code);
    run.connection.send(encode_i32(FrameType::signal, SIGTERM));
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    run.finish(transcript, 128 + SIGTERM);
}

TEST(ShimIntegration, SigtermToTheShimIsForwardedToTheProgram) {
    ShimRun run({}, {"sh", "-c", "echo ready; exec sleep 30"});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "ready"));
    kill(run.shim.pid(), SIGTERM);
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    run.finish(transcript, 128 + SIGTERM);
}

TEST(ShimIntegration, RedrawSendsSigwinchToTheForegroundGroup) {
    ShimRun run({"--tty"},
        {"sh", "-c", "trap 'echo winched' WINCH; echo ready; while :; do sleep 0.05; done"});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "ready"));
    EXPECT_FALSE(transcript.contains("winched"));
    run.connection.send(encode_empty(FrameType::redraw));
    ASSERT_TRUE(run.connection.read_until_contains(transcript, "winched"));
    run.connection.send(encode_i32(FrameType::signal, SIGKILL));
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    run.finish(transcript, 128 + SIGKILL);
}

TEST(ShimIntegration, StopsReadingTheProgramWhileHandlerdDoesNotRead) {
    TempDir scratch; // the command names the marker before the run's own directory exists
    const std::string marker = scratch / "finished";
    const std::string go = scratch / "go";
    constexpr std::size_t kBytes = 4'000'000; // far beyond every buffer on the way
    // The program starts writing only once handlerd's RESUME is on its way: before it, the
    // shim keeps the newest output in its ring as while disconnected (another test), and a
    // slow machine could let it overrun the ring before the RESUME is read.
    ShimRun run({}, {"sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.01; done; head -c " +
                                     std::to_string(kBytes) + " /dev/zero; touch " + marker});
    ASSERT_TRUE(run.handshake());
    std::ofstream(go).put('\n');
    std::this_thread::sleep_for(1s);
    EXPECT_FALSE(fs::exists(marker)) << "the program was not held back";
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.out.size(), kBytes);
    EXPECT_EQ(transcript.out.find_first_not_of('\0'), std::string::npos);
    EXPECT_TRUE(fs::exists(marker));
    run.finish(0);
}

TEST(ShimIntegration, WhileDisconnectedTheRingKeepsOnlyTheNewestBytes) {
    TempDir scratch; // the command names the marker before the run's own directory exists
    const std::string marker = scratch / "ran";
    ShimRun run({"--ring-bytes", "1000"},
                {"sh", "-c", "yes abcd | head -c 5000; touch " + marker}, ShimRun::Listen::later);
    ASSERT_TRUE(wait_for_file(marker));
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(run.listen());
    auto hello = run.connection.hello();
    ASSERT_TRUE(hello);
    EXPECT_TRUE(hello->exited);
    EXPECT_EQ(hello->produced, 5000u);
    EXPECT_EQ(hello->oldest, 4000u);
    run.connection.send(encode_resume(0));
    Transcript transcript;
    transcript.next_offset = 4000; // replay starts at oldest, not at the 0 asked for
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    std::string expected;
    while (expected.size() < 5000) expected += "abcd\n";
    EXPECT_EQ(transcript.out, expected.substr(4000, 1000));
    run.finish(0);
}

TEST(ShimIntegration, OutputWrittenJustBeforeExitIsComplete) {
    constexpr std::size_t kBytes = 300'000;
    ShimRun run({"--tty"},
        {"sh", "-c", "head -c " + std::to_string(kBytes) + " /dev/zero | tr '\\0' x; exit 5"});
    ASSERT_TRUE(run.handshake());
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.terminal.size(), kBytes);
    EXPECT_EQ(transcript.terminal.find_first_not_of('x'), std::string::npos);
    run.finish(transcript, 5);
}

TEST(ShimIntegration, BackgroundProcessesHoldingTheOutputDoNotDelayTheExit) {
    for (bool tty : {true, false}) {
        SCOPED_TRACE(tty ? "tty" : "pipes");
        ShimRun run(tty_flags(tty), {"sh", "-c", "sleep 5 & echo bye"});
        ASSERT_TRUE(run.hello());
        const auto start = Clock::now();
        run.connection.send(encode_resume(0));
        Transcript transcript;
        ASSERT_TRUE(run.connection.read_until_exit(transcript));
        // ~100 ms (the drain window); the hard limit would be 2 s, the sleep 5 s.
        EXPECT_LT(Clock::now() - start, 1500ms) << "the shim waited for the background sleep";
        EXPECT_TRUE(transcript.contains("bye")) << transcript.all;
        run.finish(transcript, 0);
    }
}

TEST(ShimIntegration, ResumePastProducedSendsOnlyWhatComesAfterIt) {
    ShimRun run({}, {"sh", "-c", "read x; echo 0123456789; echo abc"});
    auto hello = run.hello();
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->produced, 0u);
    run.connection.send(encode_resume(13)); // handlerd claims more than was ever produced
    std::string input;
    append_frame(input, FrameType::input, "go\n");
    run.connection.send(input);
    Transcript transcript;
    transcript.next_offset = 13;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.out, "c\n");
    run.finish(0);
}

TEST(ShimIntegration, ProtocolErrorsDropTheConnectionAndTheShimComesBack) {
    ShimRun run({}, {"sh", "-c", "read x; echo got:$x"});
    std::string unknown_type;
    unknown_type.push_back('\x63');
    unknown_type.append(std::string(4, '\0'));
    std::string short_resize;
    append_frame(short_resize, FrameType::resize, "abc");
    std::string oversize;
    oversize.push_back(static_cast<char>(FrameType::input));
    oversize.append("\x7f\xff\xff\xff");
    for (const auto& bad : {unknown_type, short_resize, oversize, encode_resume(0) + encode_resume(0),
                            encode_empty(FrameType::hello)}) {
        ASSERT_TRUE(run.hello());
        run.connection.send(bad);
        while (run.connection.next()) {} // anything until the shim hangs up
        EXPECT_TRUE(run.connection.closed())
            << "the shim kept a connection after a protocol error";
        ASSERT_TRUE(run.reconnect());
    }
    ASSERT_TRUE(run.handshake());
    std::string input;
    append_frame(input, FrameType::input, "still here\n");
    run.connection.send(input);
    Transcript transcript;
    ASSERT_TRUE(run.connection.read_until_exit(transcript));
    EXPECT_EQ(transcript.out, "got:still here\n");
    run.finish(0);
}

TEST(ShimIntegration, EndsAfterTheGracePeriodWhenNobodyListens) {
    TempDir dir;
    ShimProcess shim(shim_args(dir / "s", {"--exit-grace-ms", "300"}, {"sh", "-c", "exit 4"}));
    EXPECT_EQ(shim.wait(5s), 4);
}

TEST(ShimIntegration, BadUsageExits125NamingTheProblem) {
    TempDir dir;
    const std::string log = dir / "stderr";
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ShimProcess shim({"--connect", dir / "s", "--rows", "lots", "--", "true"}, fd);
    close(fd);
    EXPECT_EQ(shim.wait(), 125);
    std::string text;
    std::FILE* file = std::fopen(log.c_str(), "r");
    ASSERT_TRUE(file);
    char buffer[1024];
    while (std::size_t count = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, count);
    std::fclose(file);
    EXPECT_NE(text.find("option '--rows' wants a whole number"), std::string::npos) << text;
}

} // namespace
} // namespace handler::shim

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s PATH_TO_HANDLER_SHIM [gtest flags]\n", argv[0]);
        return 2;
    }
    handler::shim::g_shim_path = argv[1];
    return RUN_ALL_TESTS();
}
