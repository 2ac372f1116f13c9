#include "acp/stdio_server.hpp"

#include "acp/agent.hpp"
#include "acp/handlerd_port.hpp"
#include "acp/rpc.hpp"
#include "api/client.hpp"
#include "core/paths.hpp"
#include "runtime/process.hpp"

// GCC 12 at -O2 reports -Wnull-dereference inside Asio's own headers (see api/client.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#pragma GCC diagnostic pop

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>

namespace handler::acp {
namespace {

namespace net = boost::asio;
namespace fs = std::filesystem;

// One message per line; the SDKs allow 32 MiB, and a prompt's images may take 20 MiB of
// it (api/prompt_images.hpp). A longer line is dropped and answered -32600; a long text
// is refused by the agent's own, smaller limit (with its id).
constexpr std::size_t kLineLimitBytes = std::size_t{32} << 20;
// handlerd takes prompts of up to 256 KiB; the agent says so before it is asked.
constexpr std::size_t kPromptLimitBytes = std::size_t{256} << 10;
// An editor that stops reading its agent's output is not waited for without end.
constexpr std::size_t kOutputBacklogBytes = std::size_t{256} << 20;
// When stdin ends, the requests already read are still answered, for this long at most
// (a prompt's turn may take longer: it goes on in handlerd all the same).
constexpr std::chrono::milliseconds kAnswerGrace{10'000};
constexpr std::chrono::milliseconds kAnswerPoll{50};

// Lines to stdout, in order, one write in flight.
class StdoutWriter {
public:
    explicit StdoutWriter(net::io_context& io) : out_(io, ::dup(STDOUT_FILENO)) {}

    std::function<void()> on_broken; // stdout closed, or the editor stopped reading

    void write(std::string line) {
        if (broken_) return;
        line.push_back('\n');
        queued_bytes_ += line.size();
        if (queued_bytes_ > kOutputBacklogBytes) {
            spdlog::error("handler acp: the editor has not read {} bytes of its output; giving up", queued_bytes_);
            return fail();
        }
        queue_.push_back(std::move(line));
        if (!writing_) next();
    }

    // `done` once everything queued is written (at once when nothing is).
    void when_drained(std::function<void()> done) {
        if (queue_.empty() || broken_) return done();
        drained_ = std::move(done);
    }

private:
    void next() {
        if (queue_.empty()) {
            writing_ = false;
            if (drained_) std::exchange(drained_, nullptr)();
            return;
        }
        writing_ = true;
        net::async_write(out_, net::buffer(queue_.front()), [this](const boost::system::error_code& error, std::size_t) {
            if (error) {
                spdlog::info("handler acp: stdout closed ({})", error.message());
                return fail();
            }
            queued_bytes_ -= queue_.front().size();
            queue_.pop_front();
            next();
        });
    }

    void fail() {
        broken_ = true;
        queue_.clear();
        if (on_broken) on_broken();
        if (drained_) std::exchange(drained_, nullptr)();
    }

    net::posix::stream_descriptor out_;
    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    std::function<void()> drained_;
    bool writing_ = false;
    bool broken_ = false;
};

// stdin, split into lines for the agent.
class StdinReader {
public:
    StdinReader(net::io_context& io, Agent& agent, std::function<void()> on_end)
        : in_(io, ::dup(STDIN_FILENO)), agent_(agent), on_end_(std::move(on_end)) {}

    void start() { read(); }

private:
    void read() {
        in_.async_read_some(net::buffer(buffer_), [this](const boost::system::error_code& error, std::size_t size) {
            for (auto& line : splitter_.feed(std::string_view(buffer_.data(), size))) deliver(line);
            if (error) {
                if (auto last = splitter_.finish()) deliver(*last);
                return on_end_();
            }
            read();
        });
    }

    void deliver(const rpc::LineSplitter::Line& line) {
        if (line.oversized) agent_.receive_oversized(kLineLimitBytes);
        else agent_.receive(line.text);
    }

    net::posix::stream_descriptor in_;
    Agent& agent_;
    std::function<void()> on_end_;
    rpc::LineSplitter splitter_{kLineLimitBytes};
    std::array<char, 64 * 1024> buffer_{};
};

std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    const auto newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

// handlerd answers, or is started as the CLI's other commands tell people to start it
// (`handlerd --detach`, the program beside this one). When it cannot be, one line on
// stderr says why; the editor then gets that reason in the error of every request.
void ensure_daemon(const fs::path& socket) {
    auto status = api::client::request(socket, "GET", "/api/v1/status", "", 5'000);
    if (status) return;
    if (status.error().code != ErrorCode::unavailable || socket.empty()) {
        spdlog::error("handler acp: {}", status.error().message);
        return;
    }
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    fs::path handlerd = "handlerd";
    if (!error && fs::exists(self.parent_path() / "handlerd", error)) handlerd = self.parent_path() / "handlerd";
    runtime::SystemCommandRunner runner;
    runtime::CommandRequest request;
    request.argv = {handlerd.string(), "--detach"};
    request.timeout_ms = 60'000;
    auto ran = runner.run(request);
    if (ran && ran->exit_code == 0 && api::client::request(socket, "GET", "/api/v1/status", "", 5'000)) {
        spdlog::info("handler acp: started handlerd ({} --detach)", handlerd.string());
        return;
    }
    const std::string why = !ran ? ran.error().message
                                 : last_line(ran->stderr_text.empty() ? ran->stdout_text : ran->stderr_text);
    spdlog::error("handler acp: handlerd is not running on {} and `{} --detach` did not start it: {}",
                  socket.string(), handlerd.string(), why.empty() ? std::string("no reason given") : why);
}

} // namespace

int run_stdio_server(const ServerOptions& options) {
    // A write to an editor that went away is an error to handle, not a signal that kills.
    ::signal(SIGPIPE, SIG_IGN);
    auto logger = std::make_shared<spdlog::logger>("handler-acp", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_level(options.verbosity >= 2   ? spdlog::level::trace
                      : options.verbosity == 1 ? spdlog::level::debug
                                               : spdlog::level::info);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);

    fs::path socket;
    if (auto paths = Paths::from_process_environment()) socket = paths->socket_file();
    else spdlog::error("handler acp: {}", paths.error().message);
    ensure_daemon(socket);

    net::io_context io;
    auto handlerd = make_handlerd_port(io, socket);
    StdoutWriter writer(io);
    Agent agent(*handlerd, AgentOptions{options.agent, kPromptLimitBytes, HANDLER_VERSION},
                [&writer](std::string line) { writer.write(std::move(line)); });
    bool stopping = false;
    auto stop = [&] {
        if (std::exchange(stopping, true)) return;
        agent.shut_down();
        writer.when_drained([&io] { io.stop(); });
    };
    // stdin ended: answer what was asked, then stop.
    net::steady_timer grace(io);
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::function<void()> finish = [&] {
        if (!deadline) deadline = std::chrono::steady_clock::now() + kAnswerGrace;
        if (agent.unanswered() == 0 || std::chrono::steady_clock::now() >= *deadline) return stop();
        grace.expires_after(kAnswerPoll);
        grace.async_wait([&](const boost::system::error_code& error) {
            if (!error) finish();
        });
    };
    writer.on_broken = [&] {
        stopping = true;
        agent.shut_down();
        io.stop();
    };
    StdinReader reader(io, agent, [&] { finish(); });
    reader.start();
    net::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
    signals.async_wait([&](const boost::system::error_code& error, int) {
        if (!error) stop();
    });
    io.run();
    return 0;
}

} // namespace handler::acp
