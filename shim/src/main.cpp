// handler-shim: the first process in a session container. It runs the program on a
// terminal (or pipes), keeps its recent output in a ring, and connects out to handlerd's
// per-session socket, reconnecting whenever handlerd goes away. The protocol is in
// shim/include/handler/shim_protocol.hpp; README.md says why the shim dials out.
//
// One poll() loop, one thread; signals arrive through a signalfd so they are ordinary
// events in that loop. With --proxy-port the same loop also runs the egress bridge
// (bridge.hpp), the session's only way out of the container.
#include "bridge.hpp"
#include "owner.hpp"
#include "options.hpp"
#include "program.hpp"
#include "ring.hpp"

#include <handler/shim_protocol.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace handler::shim {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kReconnectInterval{100};
// After the program exits, output may still be on its way: a pty pushes the last bytes
// to the master asynchronously, and background processes may hold the terminal or
// pipes. Wait this long for it, then read only what is already there...
constexpr milliseconds kDrainWindow{100};
// ...and give up on a writer that never stops after this long.
constexpr milliseconds kDrainLimit{2000};
// Above this much unsent output the shim stops reading the program, which then blocks
// the way it would on a slow terminal; without it a stalled handlerd grows our memory.
constexpr std::size_t kOutgoingHighBytes = 256 * 1024;
// Above this much input the program has not read yet, the shim stops reading handlerd.
constexpr std::size_t kPendingInputCapBytes = 1024 * 1024;
constexpr std::size_t kReadBytes = 64 * 1024;
// Reads per source per loop pass while draining after exit, so a writer that never
// pauses cannot keep one pass going forever.
constexpr int kDrainReadsPerPass = 16;

void say(std::string_view message) {
    std::string line = "handler-shim: ";
    line.append(message);
    line.push_back('\n');
    [[maybe_unused]] auto written = write(STDERR_FILENO, line.data(), line.size());
}

std::string errno_text() { return std::strerror(errno); }

int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 255;
}

// Bytes queued for a non-blocking fd, consumed from the front without moving the rest on
// every partial write.
class SendBuffer {
public:
    void append(std::string_view bytes) { data_.append(bytes); }
    std::size_t size() const { return data_.size() - sent_; }
    bool empty() const { return size() == 0; }
    std::string& raw() { return data_; } // for append_output, which appends in place
    const char* data() const { return data_.data() + sent_; }
    void consume(std::size_t bytes) {
        sent_ += bytes;
        if (sent_ == data_.size()) {
            clear();
        } else if (sent_ >= 64 * 1024 && sent_ * 2 >= data_.size()) {
            data_.erase(0, sent_);
            sent_ = 0;
        }
    }
    void clear() {
        data_.clear();
        sent_ = 0;
    }

private:
    std::string data_;
    std::size_t sent_ = 0;
};

class Shim {
public:
    Shim(Options options, const Program& program, int signal_fd, Bridge& bridge)
        : options_(std::move(options)), ring_(options_.ring_bytes), pid_(program.pid),
          terminal_fd_(program.terminal_fd), signal_fd_(signal_fd), bridge_(bridge),
          buffer_(kReadBytes) {
        if (options_.tty) {
            sources_.push_back({terminal_fd_, Stream::terminal, false});
            input_fd_ = terminal_fd_;
        } else {
            sources_.push_back({program.stdout_fd, Stream::stdout_, true});
            sources_.push_back({program.stderr_fd, Stream::stderr_, true});
            input_fd_ = program.stdin_fd;
        }
    }

    Shim(const Shim&) = delete;
    Shim& operator=(const Shim&) = delete;

    ~Shim() {
        for (auto& source : sources_) close_source(source);
        close_input();
        if (sock_ >= 0) close(sock_);
        // Closing the master hangs up whatever still holds the terminal.
        if (terminal_fd_ >= 0) close(terminal_fd_);
    }

    int run();

private:
    struct Source {
        int fd = -1;
        Stream stream = Stream::terminal;
        bool owns_fd = true; // the pty master is shared with input and closed last
    };
    enum class ReadResult { data, would_block, closed };

    // The program's side.
    ReadResult read_output(Source& source);
    void close_source(Source& source);
    bool outputs_open() const;
    bool reading_paused() const { return resumed_ && outgoing_.size() > kOutgoingHighBytes; }
    void drain_after_exit(Clock::time_point now);
    void write_input();
    void close_input();
    void on_signals();
    void reap();
    void signal_program(int signal_number);

    // The handlerd side.
    void try_connect(Clock::time_point now);
    void disconnect(std::string_view why);
    void on_socket_readable();
    void on_socket_writable();
    std::string handle_frame(const Frame& frame); // returns a protocol error, or ""
    void pump();
    void queue_exit_if_done();
    // Only EXIT_ACK proves handlerd recorded the exit; EXIT in a socket buffer does not.
    // So after a disconnect the shim retries for the whole grace period again.
    Clock::time_point grace_deadline() const {
        return std::max(drained_at_, disconnected_at_) + milliseconds(options_.exit_grace_ms);
    }

    Options options_;
    OutputRing ring_;
    pid_t pid_;
    int terminal_fd_;
    int signal_fd_;
    Bridge& bridge_; // idle unless --proxy-port
    std::vector<Source> sources_;
    int input_fd_ = -1;
    SendBuffer pending_input_;
    bool input_eof_requested_ = false;
    std::vector<char> buffer_;

    bool exited_ = false;  // the program has been reaped
    bool drained_ = false; // ...and its output is complete: HELLO may say exited
    int exit_code_ = 0;
    Clock::time_point exited_at_{};
    Clock::time_point drained_at_{};
    Clock::time_point disconnected_at_{};

    int sock_ = -1;
    Clock::time_point next_connect_{};
    bool connect_failing_ = false; // log the first failure of a streak only
    FrameDecoder decoder_;
    SendBuffer outgoing_;
    bool resumed_ = false;
    std::uint64_t next_offset_ = 0; // next output offset to queue once resumed
    bool exit_queued_ = false;
    bool should_exit_ = false;
    std::vector<std::uint32_t> recent_holders_; // newest first: WHO looks there first
};

int Shim::run() {
    std::vector<pollfd> fds;
    while (true) {
        auto now = Clock::now();
        if (sock_ < 0 && now >= next_connect_) try_connect(now);
        bridge_.tick(now);
        if (exited_ && !drained_) drain_after_exit(now);
        // With nobody to deliver the exit to, wait out the grace period, then end anyway:
        // podman still records the exit status, which is the program's.
        if (drained_ && sock_ < 0 && now >= grace_deadline()) should_exit_ = true;
        if (should_exit_) break;

        // poll() skips entries with a negative fd. Entries we have no interest in are
        // left out that way rather than with zero events: POLLHUP and POLLERR are
        // reported regardless of events and would make the loop spin.
        fds.clear();
        fds.push_back({signal_fd_, POLLIN, 0});
        const std::size_t first_source = fds.size();
        for (const auto& source : sources_)
            fds.push_back({reading_paused() ? -1 : source.fd, POLLIN, 0});
        const std::size_t input_index = fds.size();
        fds.push_back({pending_input_.empty() ? -1 : input_fd_, POLLOUT, 0});
        const std::size_t socket_index = fds.size();
        short socket_events = 0;
        if (pending_input_.size() < kPendingInputCapBytes) socket_events |= POLLIN;
        if (!outgoing_.empty()) socket_events |= POLLOUT;
        fds.push_back({socket_events == 0 ? -1 : sock_, socket_events, 0});
        const std::size_t bridge_index = fds.size();
        bridge_.add_pollfds(fds);

        // Sleep until the next deadline at the latest: a reconnect attempt, the end of the
        // drain window, or the end of the exit grace period.
        Clock::time_point wake = Clock::time_point::max();
        if (sock_ < 0) wake = std::min(wake, next_connect_);
        if (exited_ && !drained_) {
            if (now < exited_at_ + kDrainWindow) wake = std::min(wake, exited_at_ + kDrainWindow);
            else if (!reading_paused()) wake = now;
            else wake = std::min(wake, exited_at_ + kDrainLimit);
        }
        if (drained_ && sock_ < 0) wake = std::min(wake, grace_deadline());
        wake = std::min(wake, bridge_.next_wake());
        int timeout_ms = -1;
        if (wake != Clock::time_point::max()) {
            const auto wait = std::chrono::ceil<milliseconds>(wake - now).count();
            timeout_ms = static_cast<int>(std::clamp<decltype(wait)>(wait, 0, 60'000));
        }

        if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
            if (errno == EINTR) continue;
            say("poll failed: " + errno_text());
            return kShimErrorExitCode;
        }

        if (fds[0].revents != 0) on_signals();
        for (std::size_t i = 0; i < sources_.size(); ++i) {
            const auto& polled = fds[first_source + i];
            if (polled.fd >= 0 && polled.fd == sources_[i].fd && polled.revents != 0)
                read_output(sources_[i]);
        }
        if (fds[input_index].fd >= 0 && fds[input_index].fd == input_fd_ &&
            fds[input_index].revents != 0)
            write_input();
        const auto& socket_polled = fds[socket_index];
        if (socket_polled.fd >= 0 && socket_polled.fd == sock_ &&
            (socket_polled.revents & (POLLOUT | POLLERR | POLLHUP)) != 0 && !outgoing_.empty())
            on_socket_writable();
        if (socket_polled.fd >= 0 && socket_polled.fd == sock_ &&
            (socket_polled.revents & (POLLIN | POLLERR | POLLHUP)) != 0)
            on_socket_readable();
        bridge_.handle(std::span<const pollfd>(fds).subspan(bridge_index), Clock::now());
    }
    return exit_code_;
}

Shim::ReadResult Shim::read_output(Source& source) {
    const ssize_t count = read(source.fd, buffer_.data(), buffer_.size());
    if (count > 0) {
        ring_.append(source.stream, std::string_view(buffer_.data(), static_cast<std::size_t>(count)));
        pump();
        return ReadResult::data;
    }
    if (count < 0 && (errno == EAGAIN || errno == EINTR)) return ReadResult::would_block;
    // End of file on a pipe, or EIO on the pty master once nothing holds the terminal
    // any more. Either way this source has nothing more to say.
    close_source(source);
    return ReadResult::closed;
}

void Shim::close_source(Source& source) {
    if (source.fd >= 0 && source.owns_fd) close(source.fd);
    source.fd = -1;
}

bool Shim::outputs_open() const {
    return std::any_of(sources_.begin(), sources_.end(),
                       [](const Source& source) { return source.fd >= 0; });
}

void Shim::drain_after_exit(Clock::time_point now) {
    if (now >= exited_at_ + kDrainLimit) {
        for (auto& source : sources_) close_source(source);
    } else if (now >= exited_at_ + kDrainWindow && !reading_paused()) {
        // Past the window, a source that has nothing ready right now is done.
        for (auto& source : sources_) {
            for (int reads = 0; source.fd >= 0 && reads < kDrainReadsPerPass; ++reads) {
                const auto result = read_output(source);
                if (result == ReadResult::would_block) close_source(source);
                if (result != ReadResult::data || reading_paused()) break;
            }
        }
    }
    if (outputs_open()) return;
    drained_ = true;
    drained_at_ = now;
    pending_input_.clear();
    close_input();
    queue_exit_if_done();
}

void Shim::write_input() {
    const ssize_t count = write(input_fd_, pending_input_.data(), pending_input_.size());
    if (count >= 0) {
        pending_input_.consume(static_cast<std::size_t>(count));
    } else if (errno != EAGAIN && errno != EINTR) {
        // The program closed its stdin (EPIPE) or the terminal is gone: nobody will
        // read this input.
        pending_input_.clear();
        if (!options_.tty) close_input();
    }
    if (pending_input_.empty() && input_eof_requested_) close_input();
}

void Shim::close_input() {
    pending_input_.clear();
    if (input_fd_ >= 0 && input_fd_ != terminal_fd_) close(input_fd_);
    if (!options_.tty) input_fd_ = -1;
}

void Shim::on_signals() {
    signalfd_siginfo info;
    bool child = false;
    while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const int signal_number = static_cast<int>(info.ssi_signo);
        if (signal_number == SIGCHLD) {
            child = true;
        } else if (exited_) {
            // Asked to stop while waiting to deliver the exit: stop. The exit status
            // still tells podman how the program ended.
            should_exit_ = true;
        } else if (options_.tty) {
            // What a terminal closing does: hang up the session (a shell ignores SIGTERM
            // but not SIGHUP), then the signal itself, then SIGCONT so a stopped job
            // sees them.
            signal_program(SIGHUP);
            if (signal_number != SIGHUP) signal_program(signal_number);
            signal_program(SIGCONT);
        } else {
            signal_program(signal_number);
        }
    }
    if (child) reap();
}

void Shim::reap() {
    int status = 0;
    pid_t pid;
    // Also reaps anything else that ends up our child, so nothing stays a zombie.
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid != pid_ || exited_) continue;
        exited_ = true;
        exit_code_ = exit_code_of(status);
        exited_at_ = Clock::now();
    }
}

void Shim::signal_program(int signal_number) {
    if (exited_) return; // its pid, and so its group id, may belong to someone else now
    // Just after fork the child may not have called setsid() yet; then only it exists.
    if (kill(-pid_, signal_number) != 0 && errno == ESRCH) kill(pid_, signal_number);
}

void Shim::try_connect(Clock::time_point now) {
    next_connect_ = now + kReconnectInterval;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        say("cannot create a socket: " + errno_text());
        return;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, options_.socket_path.data(), options_.socket_path.size());
    // A unix stream connect completes at once or fails (EAGAIN when the listener's
    // backlog is full); there is no connect in progress to wait for.
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        if (!connect_failing_)
            say("cannot connect to '" + options_.socket_path + "': " + errno_text() +
                "; retrying every 100 ms");
        connect_failing_ = true;
        close(fd);
        return;
    }
    connect_failing_ = false;
    sock_ = fd;
    decoder_ = FrameDecoder();
    outgoing_.clear();
    resumed_ = false;
    exit_queued_ = false;
    Hello hello;
    hello.produced = ring_.produced();
    hello.oldest = ring_.oldest();
    hello.exited = drained_;
    hello.exit_code = drained_ ? exit_code_ : 0;
    hello.tty = options_.tty;
    outgoing_.append(encode_hello(hello));
}

void Shim::disconnect(std::string_view why) {
    if (!why.empty()) say(std::string(why) + "; reconnecting");
    close(sock_);
    sock_ = -1;
    resumed_ = false;
    exit_queued_ = false;
    outgoing_.clear();
    decoder_ = FrameDecoder();
    disconnected_at_ = Clock::now();
    next_connect_ = disconnected_at_ + kReconnectInterval;
}

void Shim::on_socket_writable() {
    const ssize_t count = send(sock_, outgoing_.data(), outgoing_.size(), MSG_NOSIGNAL);
    if (count >= 0) {
        outgoing_.consume(static_cast<std::size_t>(count));
    } else if (errno != EAGAIN && errno != EINTR) {
        disconnect("lost the connection to handlerd: " + errno_text());
    }
}

void Shim::on_socket_readable() {
    const ssize_t count = recv(sock_, buffer_.data(), buffer_.size(), 0);
    if (count == 0) {
        disconnect("handlerd closed the connection");
        return;
    }
    if (count < 0) {
        if (errno != EAGAIN && errno != EINTR)
            disconnect("lost the connection to handlerd: " + errno_text());
        return;
    }
    decoder_.feed(std::string_view(buffer_.data(), static_cast<std::size_t>(count)));
    while (auto frame = decoder_.next()) {
        if (auto error = handle_frame(*frame); !error.empty()) {
            disconnect("protocol error from handlerd: " + error);
            return;
        }
        if (should_exit_) return;
    }
    if (decoder_.failed())
        disconnect("protocol error from handlerd: a frame of unknown type or over " +
                   std::to_string(kMaxPayload) + " bytes");
}

std::string Shim::handle_frame(const Frame& frame) {
    const auto expect_empty = [&](const char* name) {
        return frame.payload.empty() ? std::string()
                                     : std::string(name) + " with a non-empty payload";
    };
    switch (frame.type) {
    case FrameType::resume: {
        const auto from = decode_u64(frame.payload);
        if (!from) return "malformed RESUME payload";
        if (resumed_) return "a second RESUME on one connection";
        resumed_ = true;
        next_offset_ = std::max(*from, ring_.oldest());
        pump();
        queue_exit_if_done();
        return {};
    }
    case FrameType::input:
        if (input_fd_ >= 0 && !exited_ && !input_eof_requested_) pending_input_.append(frame.payload);
        return {};
    case FrameType::input_eof:
        if (!frame.payload.empty()) return expect_empty("INPUT_EOF");
        if (!options_.tty) {
            input_eof_requested_ = true;
            if (pending_input_.empty()) close_input();
        }
        return {};
    case FrameType::resize: {
        const auto size = decode_resize(frame.payload);
        if (!size) return "malformed RESIZE payload";
        if (options_.tty && terminal_fd_ >= 0) {
            winsize window{};
            window.ws_row = size->rows;
            window.ws_col = size->cols;
            // The kernel sends SIGWINCH to the terminal's foreground group itself.
            ioctl(terminal_fd_, TIOCSWINSZ, &window);
        }
        return {};
    }
    case FrameType::signal: {
        const auto signal_number = decode_i32(frame.payload);
        if (!signal_number) return "malformed SIGNAL payload";
        if (*signal_number >= 1 && *signal_number <= 64) signal_program(*signal_number);
        else say("ignoring SIGNAL " + std::to_string(*signal_number) + ": not a signal number");
        return {};
    }
    case FrameType::redraw:
        if (!frame.payload.empty()) return expect_empty("REDRAW");
        if (options_.tty && !exited_) {
            // A full-screen program repaints on SIGWINCH; send it to whichever group is
            // in the foreground, which may not be the program's own.
            const pid_t group = tcgetpgrp(terminal_fd_);
            if (group > 0) kill(-group, SIGWINCH);
        }
        return {};
    case FrameType::who: {
        // Read from /proc at once, in this loop: a connection to the proxy is open while
        // its program waits for the answer, and the lookup is bounded (owner.hpp).
        const auto who = decode_who(frame.payload);
        if (!who) return "malformed WHO payload";
        auto answer = options_.proxy_port == 0
                          ? OwnerAnswer{who->query, OwnerStatus::no_connection, {}}
                          : find_owner("/proc", who->port, options_.proxy_port, getpid(), {}, recent_holders_);
        answer.query = who->query;
        if (answer.status == OwnerStatus::found) {
            const std::uint32_t holder = answer.processes.front().pid;
            std::erase(recent_holders_, holder);
            recent_holders_.insert(recent_holders_.begin(), holder);
            if (recent_holders_.size() > 8) recent_holders_.pop_back();
        }
        outgoing_.append(encode_owner(answer));
        return {};
    }
    case FrameType::exit_ack:
        if (!frame.payload.empty()) return expect_empty("EXIT_ACK");
        if (exited_) should_exit_ = true;
        return {};
    case FrameType::hello:
    case FrameType::output:
    case FrameType::exit:
    case FrameType::owner:
        return "frame type " + std::to_string(static_cast<int>(frame.type)) +
               " is sent by the shim, not to it";
    }
    return "frame type " + std::to_string(static_cast<int>(frame.type)) + " is unknown";
}

// Queues every retained byte from next_offset_ on. Called after each read, so live
// output goes out as it arrives.
void Shim::pump() {
    if (!resumed_) return;
    ring_.for_each_from(next_offset_, [&](std::uint64_t offset, Stream stream, std::string_view bytes) {
        append_output(outgoing_.raw(), offset, stream, bytes);
    });
    next_offset_ = std::max(next_offset_, ring_.produced());
}

void Shim::queue_exit_if_done() {
    if (!drained_ || !resumed_ || exit_queued_ || sock_ < 0) return;
    pump();
    outgoing_.append(encode_i32(FrameType::exit, exit_code_));
    exit_queued_ = true;
}

// Opens /dev/null on any of 0, 1, 2 that is closed, so the fds the shim creates later
// never land there and get confused with stdio.
void ensure_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (fcntl(fd, F_GETFD) >= 0) continue;
        const int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0 && null_fd != fd) {
            dup2(null_fd, fd);
            close(null_fd);
        }
    }
}

} // namespace
} // namespace handler::shim

int main(int argc, char** argv) {
    using namespace handler::shim;
    const std::vector<std::string_view> args(argv + std::min(argc, 1), argv + argc);
    auto parsed = parse_options(args);
    if (parsed.help) {
        const auto text = usage_text();
        [[maybe_unused]] auto written = write(STDOUT_FILENO, text.data(), text.size());
        return 0;
    }
    if (!parsed.ok()) {
        say(parsed.error);
        const auto text = usage_text();
        [[maybe_unused]] auto written = write(STDERR_FILENO, text.data(), text.size());
        return kShimErrorExitCode;
    }
    ensure_standard_fds();

    // Blocked before the fork so no SIGCHLD can be lost; the child unblocks them.
    // SIGPIPE is blocked rather than handled: writes to a closed pipe then just fail
    // with EPIPE.
    sigset_t handled;
    sigemptyset(&handled);
    for (int signal_number : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, signal_number);
    sigset_t blocked = handled;
    sigaddset(&blocked, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &blocked, nullptr) != 0) {
        say("cannot block signals: " + errno_text());
        return kShimErrorExitCode;
    }
    const int signal_fd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd < 0) {
        say("cannot create a signalfd: " + errno_text());
        return kShimErrorExitCode;
    }

    // Listening before the program starts, so it can use the proxy from its first
    // instruction. The program does not inherit these fds (close-on-exec).
    Bridge bridge(parsed.options.proxy_socket, say);
    if (parsed.options.proxy_port != 0) {
        if (auto error = bridge.listen(parsed.options.proxy_port); !error.empty()) {
            say(error);
            return kShimErrorExitCode;
        }
    }

    auto started = start_program(parsed.options);
    if (!started.error.empty()) {
        say("cannot start '" + parsed.options.command[0] + "': " + started.error);
        return kShimErrorExitCode;
    }
    Shim shim(std::move(parsed.options), started.program, signal_fd, bridge);
    return shim.run();
}
