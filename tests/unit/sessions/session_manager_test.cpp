// The session service with a fake container runtime and a test double of handler-shim
// that speaks the real protocol over the real control socket: start, output fan-out and
// replay, input, exit codes, stop, remove, and re-adoption by a second manager (a
// restarted handlerd) of what the first one left running.
#include "sessions/session_manager.hpp"
#include "sessions/output_log.hpp"
#include "secrets/secret_store.hpp"

#include "api/routes_json.hpp"

#include "store/store.hpp"
#include "support/fake_container_runtime.hpp"
#include "support/fake_harness_catalog.hpp"
#include "support/fakes.hpp"

#include <handler/handover.hpp>
#include <handler/shim_protocol.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <atomic>
#include <future>
#include <iterator>
#include <thread>

namespace handler::sessions {
namespace {

constexpr const char* kSystemCertificate = "-----BEGIN CERTIFICATE-----\nSYSTEMCA\n-----END CERTIFICATE-----\n";

namespace fs = std::filesystem;
namespace json = boost::json;
using handler::testing::contains;
using handler::testing::FakeClock;
using handler::testing::FakeContainerRuntime;
using handler::testing::FakeHarnessCatalog;
using handler::testing::TempDir;
using store::SessionState;

constexpr const char* kImage = "localhost/handler-base:test";

// handler-shim's side of the control socket, driven by the test.
class ShimDouble {
public:
    ~ShimDouble() { close(); }

    bool connect(const fs::path& socket) {
        close();
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
        return ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        decoder_ = shim::FrameDecoder();
    }
    void send(const std::string& bytes) const {
        ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    }
    void hello(std::uint64_t produced, std::uint64_t oldest = 0,
               std::uint32_t version = shim::kProtocolVersion) const {
        shim::Hello hello;
        hello.version = version;
        hello.produced = produced;
        hello.oldest = oldest;
        hello.tty = true;
        send(shim::encode_hello(hello));
    }
    void output(std::uint64_t offset, std::string_view data,
                shim::Stream stream = shim::Stream::terminal) const {
        std::string frames;
        shim::append_output(frames, offset, stream, data);
        send(frames);
    }
    // Frames the manager has sent so far (does not wait).
    // True once the other end has closed the connection.
    bool closed_by_peer() const {
        pollfd ready{fd_, POLLIN, 0};
        if (::poll(&ready, 1, 0) <= 0) return false;
        char byte = 0;
        return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }
    std::vector<shim::Frame> received() {
        std::vector<shim::Frame> frames;
        char buffer[4096];
        pollfd ready{fd_, POLLIN, 0};
        while (::poll(&ready, 1, 0) > 0 && (ready.revents & POLLIN) != 0) {
            const ssize_t got = ::read(fd_, buffer, sizeof buffer);
            if (got <= 0) break;
            decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(got)));
        }
        while (auto frame = decoder_.next()) frames.push_back(std::move(*frame));
        frames.insert(frames.begin(), put_back_.begin(), put_back_.end());
        put_back_.clear();
        return frames;
    }
    // Raw bytes the other end has sent so far (does not wait), for a proxy connection.
    std::string drain() const {
        std::string bytes;
        char buffer[4096];
        pollfd ready{fd_, POLLIN, 0};
        while (::poll(&ready, 1, 0) > 0 && (ready.revents & POLLIN) != 0) {
            const ssize_t got = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
            if (got <= 0) break;
            bytes.append(buffer, static_cast<std::size_t>(got));
        }
        return bytes;
    }
    // Frames a caller read but did not use: received() returns them first next time.
    void put_back(std::vector<shim::Frame> frames) { put_back_ = std::move(frames); }
    int fd() const { return fd_; }

private:
    int fd_ = -1;
    shim::FrameDecoder decoder_;
    std::vector<shim::Frame> put_back_;
};

class RecordingClient final : public api::TerminalClient {
public:
    void output(api::OutputStream, std::uint64_t offset, std::uint64_t end,
                const std::shared_ptr<const std::string>& bytes) override {
        if (offsets.empty() || offset >= next) text += *bytes;
        offsets.push_back(offset);
        ends.push_back(end);
        next = offset + bytes->size();
    }
    void exited(std::int64_t code) override { exit_code = code; }
    void ended(const std::string& why) override { reason = why; }
    void event(const store::SessionEvent& event) override {
        events.push_back(event.kind + " " + event.payload);
    }

    std::string text;
    std::vector<std::string> events; // "kind payload"
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint64_t> ends;
    std::uint64_t next = 0;
    std::optional<std::int64_t> exit_code;
    std::optional<std::string> reason;
};

// A harness's event parser as a plugin would be: whole lines only, whatever the pieces.
// "ASK <id>" asks permission for tool call <id>; answers go to the harness's stdin, and
// "END" is the turn's result (after which handlerd ends a one-shot run's input itself).
class LineEvents final : public EventParser {
public:
    Result<plugins::ParsedEvents> feed(std::string_view bytes) override {
        pending_.append(bytes);
        plugins::ParsedEvents parsed;
        auto& events = parsed.events;
        for (auto end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n')) {
            const std::string line = pending_.substr(0, end);
            pending_.erase(0, end + 1);
            if (line == "END") {
                events.push_back({plugins::EventKind::result,
                                  std::exchange(cancelling_, false) ? R"({"stopReason":"cancelled"})"
                                                                    : R"({"stopReason":"end_turn","result":"done"})"});
            } else if (line == "SPOOF") {
                // A parser that makes a prompt of the container's output: never shown.
                events.push_back({plugins::EventKind::user_prompt, R"({"content":{"type":"text","text":"rm -rf"}})"});
            } else if (line.starts_with("ASK ")) {
                events.push_back({plugins::EventKind::permission_request,
                                  R"({"toolCallId":")" + line.substr(4) +
                                      R"(","options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},)"
                                      R"({"optionId":"deny","name":"Deny","kind":"reject_once"}]})"});
            } else {
                events.push_back({plugins::EventKind::agent_message_chunk,
                                  R"({"content":{"type":"text","text":")" + line + R"("}})"});
            }
        }
        return parsed;
    }
    Result<plugins::ParsedEvents> prompt(std::string_view prompt) override {
        plugins::ParsedEvents parsed;
        parsed.input = "PROMPT " + std::string(prompt) + "\n";
        return parsed;
    }
    Result<plugins::ParsedEvents> answer(std::string_view request, std::string_view answer) override {
        plugins::ParsedEvents parsed;
        parsed.input = "ANSWER " + std::string(answer) + " TO " + std::string(request) + "\n";
        return parsed;
    }
    Result<plugins::ParsedEvents> cancel() override {
        cancelling_ = true;
        plugins::ParsedEvents parsed;
        parsed.input = "CANCEL\n";
        return parsed;
    }

private:
    std::string pending_;
    bool cancelling_ = false;
};

class SessionManagerTest : public ::testing::Test {
protected:
    SessionManagerTest() {
        fs::create_directories(dir_ / "project/sub");
        auto opened = store::Store::open(dir_ / "data/handler.db", clock_);
        EXPECT_TRUE(opened.ok());
        store_ = std::move(*opened);
        auto project = store_->create_project({"project", (dir_ / "project").string(), {}, {}});
        EXPECT_TRUE(project.ok()) << project.error().message;
        project_id_ = project->id;
        runtime_.images.insert(kImage);
        make_manager();
    }

    void make_manager(std::string refuse = {}, std::uint64_t events_limit = std::uint64_t{64} << 20,
                      std::chrono::milliseconds headless_timeout = {}) {
        SessionManagerOptions options;
        options.headless_timeout = headless_timeout;
        options.events_limit_bytes = events_limit;
        options.refuse_sessions = std::move(refuse);
        options.control_root = dir_ / "run/sessions";
        options.output_root = dir_ / "data/sessions";
        options.helper_dir = dir_ / "libexec";
        options.default_image = kImage;
        options.replay_bytes = 64;
        options.lost_link_check = std::chrono::milliseconds(50);
        options.secret_store = &secrets_;
        options.ca_certificate_pem = kCaPem;
        // A system bundle that also holds a private key (SSL_CERT_FILE may name any file):
        // only its certificate may reach a session.
        options.system_ca_bundle = dir_.write("system/ca-certificates.crt", std::string(kSystemCertificate) +
                                              "-----BEGIN PRIVATE KEY-----\nSECRETKEY\n-----END PRIVATE KEY-----\n");
        // Two addons: one that needs a name the user pinned to the host's loopback and asks
        // for the loopback itself as well (which an addon's rule never opens), and sets a
        // variable; one that tries to pick the image.
        options.resolve = {{"cdn.test", {*network::parse_address("127.0.0.1")}}};
        catalog_.addons["local-cdn"] = [](const plugins::LaunchRequest& request) -> Result<plugins::LaunchSpec> {
            plugins::LaunchSpec spec;
            spec.env = {{"CDN_SESSION", request.session_id}};
            spec.allowed_hosts = {{"cdn.test", 0}, {"127.0.0.1", 0}};
            return spec;
        };
        catalog_.addons["greedy"] = [](const plugins::LaunchRequest&) -> Result<plugins::LaunchSpec> {
            plugins::LaunchSpec spec;
            spec.image = "elsewhere:latest";
            return spec;
        };
        // "keyed" has an image recipe; "shell" output is parsed a line at a time, each line
        // a message chunk, and a line "END" the result; "asking" too, and its stdin is its
        // protocol.
        options.image_build_dir = dir_ / "cache/build";
        options.account_state_root = dir_ / "data/account-state";
        for (const char* harness : {"shell", "keyed", "stateful", "asking", "talking"}) {
            FakeHarnessCatalog::Harness made;
            made.launch = [harness = std::string(harness)](const plugins::LaunchRequest&)
                -> Result<plugins::LaunchSpec> {
                plugins::LaunchSpec spec;
                spec.arguments = {"bash", "-l"};
                if (harness == "asking") spec.input = "HELLO\n"; // its protocol's opening
                if (harness == "stateful") spec.account_state_env = "STATE_HOME"; // keeps a login
                if (harness == "talking") spec.session_state_env = "TALK_HOME";   // keeps its transcript
                if (harness == "keyed") {
                    spec.env = {{"ANTHROPIC_API_KEY", "set by the harness itself"}};
                    spec.secret_env = {{"ANTHROPIC_API_KEY", "anthropic-api-key"}};
                }
                return spec;
            };
            if (std::string_view(harness) == "keyed")
                made.recipe = runtime::LayerRecipe{"keyed", "1.2.0", {{"KEYED_HOME", "/opt/keyed"}},
                                                   {"npm install -g keyed@1.2.0"}};
            const std::string_view name(harness);
            if (name == "shell" || name == "asking" || name == "talking") {
                made.parser = [] { return std::make_unique<LineEvents>(); };
                made.description.events = "structured";
                made.description.stdin_protocol = name != "shell";
            }
            if (name == "talking") {
                made.description.launch_modes = {"headless", "conversation"};
                made.description.mcp_transports = {"stdio"};
            }
            catalog_.harnesses[harness] = std::move(made);
        }
        fs::create_directories(options.helper_dir);
        manager_.reset();
        manager_ = std::make_unique<SessionManager>(io_, *store_, runtime_, catalog_, events_, clock_, options);
    }

    // Runs the io_context (and so the worker's results) until `done` or 5 s.
    bool pump_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            io_.restart();
            io_.run_for(std::chrono::milliseconds(5));
            if (done()) return true;
        }
        return done();
    }

    SessionState state(const std::string& id) { return store_->get_session(id)->state; }

    // A conversation of the "talking" harness, running; its id, or "" (with the failure
    // recorded) when it did not start.
    std::string start_talking() {
        api::StartRequest request;
        request.harness = "talking";
        request.directory = (dir_ / "project").string();
        request.conversation = true;
        auto started = manager_->start(request);
        EXPECT_TRUE(started.ok()) << started.error().message;
        if (!started.ok()) return "";
        const std::string id = started->id;
        EXPECT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
        return state(id) == SessionState::running ? id : "";
    }

    // An agent of the test project running the shell harness.
    void add_agent(const std::string& name, std::vector<std::string> allowed_hosts,
                   std::vector<std::string> addons = {}) {
        store::NewAgent agent;
        agent.project_id = project_id_;
        agent.name = name;
        agent.harness = "shell";
        agent.allowed_hosts = std::move(allowed_hosts);
        agent.addons = std::move(addons);
        ASSERT_TRUE(store_->create_agent(agent).ok());
    }

    static constexpr const char* kCaPem = "-----BEGIN CERTIFICATE-----\nHANDLER CA\n-----END CERTIFICATE-----\n";

    fs::path socket(const std::string& id) { return dir_ / "run/sessions" / id / "control.sock"; }

    std::string start_shell() {
        api::StartRequest request;
        request.harness = "shell";
        request.directory = (dir_ / "project/sub").string();
        auto started = manager_->start(request);
        EXPECT_TRUE(started.ok()) << started.error().message;
        if (!started) return {};
        EXPECT_EQ(started->state, SessionState::starting);
        const std::string id = started->id;
        EXPECT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
        return id;
    }

    // Connects the shim double and waits for handlerd's RESUME.
    std::uint64_t connect_shim(ShimDouble& shim, const std::string& id, std::uint64_t produced,
                               std::uint64_t oldest = 0, std::uint32_t version = shim::kProtocolVersion) {
        EXPECT_TRUE(shim.connect(socket(id)));
        shim.hello(produced, oldest, version);
        std::optional<std::uint64_t> from;
        EXPECT_TRUE(pump_until([&] {
            auto frames = shim.received();
            for (auto it = frames.begin(); it != frames.end(); ++it)
                if (it->type == shim::FrameType::resume) {
                    from = shim::decode_u64(it->payload);
                    shim.put_back({std::next(it), frames.end()});
                    break;
                }
            return from.has_value();
        }));
        return from.value_or(~0ull);
    }

    TempDir dir_;
    FakeClock clock_;
    std::unique_ptr<store::Store> store_;
    std::int64_t project_id_ = 0;
    secrets::SecretStore secrets_{dir_ / "data/secrets"};
    FakeContainerRuntime runtime_;
    api::EventHub events_;
    boost::asio::io_context io_;
    FakeHarnessCatalog catalog_;
    std::vector<plugins::LaunchRequest>& requests_ = catalog_.launches;
    std::unique_ptr<SessionManager> manager_;
};

TEST_F(SessionManagerTest, StartsOneLabelledContainerRunningTheShim) {
    const std::string id = start_shell();
    ASSERT_EQ(runtime_.containers.size(), 1u);
    const auto& spec = runtime_.containers.begin()->second.spec;
    EXPECT_EQ(spec.session_id, id);
    EXPECT_EQ(spec.image, kImage);
    EXPECT_EQ(spec.project_path, dir_ / "project");
    EXPECT_EQ(spec.control_dir, dir_ / "run/sessions" / id);
    EXPECT_EQ(spec.network, runtime::NetworkMode::none);
    ASSERT_GE(spec.argv.size(), 3u);
    EXPECT_EQ(spec.argv[0], "/opt/handler/handler-shim");
    EXPECT_EQ(spec.argv[spec.argv.size() - 2], "bash");
    ASSERT_EQ(requests_.size(), 1u);
    EXPECT_EQ(requests_[0].session_id, id);
    EXPECT_EQ(requests_[0].mode, plugins::LaunchMode::interactive);
    auto session = store_->get_session(id);
    EXPECT_EQ(session->container_id, runtime_.containers.begin()->first);
    EXPECT_TRUE(session->tty);
    EXPECT_TRUE(fs::exists(socket(id)));
}

// What its container runs under, and what does not hold on this machine, is the
// session's to show (`handler session show`, the API's "limits").
TEST_F(SessionManagerTest, RecordsTheLimitsItsContainerRunsUnder) {
    const std::string id = start_shell();
    auto session = store_->get_session(id);
    ASSERT_TRUE(session);
    EXPECT_EQ(session->limits, runtime::limits_json(runtime_.reported_limits));
    const auto shown = api::to_json(*session);
    ASSERT_TRUE(shown.at("limits").is_array());
    EXPECT_EQ(shown.at("limits").as_array().at(1).at("holds"), false);
}

// The session's way out: its proxy socket next to the control socket, the shim told to
// bridge to it, and every decision in the session's network log.
TEST_F(SessionManagerTest, OnlyOpenModeGetsARealNetwork) {
    api::StartRequest request;
    request.harness = "shell";
    request.directory = (dir_ / "project").string();
    for (const char* mode : {"none", "filtered", "learn", "open"}) {
        request.network = mode;
        auto started = manager_->start(request);
        ASSERT_TRUE(started.ok()) << started.error().message;
        ASSERT_TRUE(pump_until([&] { return runtime_.containers.size() == 1; })) << mode;
        const auto& spec = runtime_.containers.begin()->second.spec;
        EXPECT_EQ(spec.network, std::string(mode) == "open" ? runtime::NetworkMode::slirp4netns
                                                            : runtime::NetworkMode::none)
            << mode;
        runtime_.containers.clear();
    }
}

// The network mode is also what the harness is told to be (docs/harnesses.md, "Start
// modes"): no network is locked down, open network is open, the rest guarded.
TEST_F(SessionManagerTest, TheNetworkModeIsTheHarnessesStartModeAndTheModelIsPassedOn) {
    api::StartRequest request{};
    request.harness = "shell";
    request.directory = (dir_ / "project").string();
    request.model = "opus";
    const std::vector<std::pair<const char*, plugins::StartMode>> cases = {
        {"none", plugins::StartMode::locked_down},
        {"filtered", plugins::StartMode::guarded},
        {"learn", plugins::StartMode::guarded},
        {"open", plugins::StartMode::open},
    };
    for (const auto& [mode, start_mode] : cases) {
        request.network = mode;
        ASSERT_TRUE(manager_->start(request).ok()) << mode;
        ASSERT_FALSE(requests_.empty());
        EXPECT_EQ(requests_.back().start_mode, start_mode) << mode;
        EXPECT_EQ(requests_.back().model, "opus") << mode;
    }
    // Without an override, the agent's own mode decides; without a model, none is named.
    store::NewAgent agent;
    agent.project_id = project_id_;
    agent.name = "wide";
    agent.harness = "shell";
    agent.network_mode = store::NetworkMode::open;
    ASSERT_TRUE(store_->create_agent(agent).ok());
    api::StartRequest by_agent;
    by_agent.agent = "wide";
    by_agent.directory = (dir_ / "project").string();
    ASSERT_TRUE(manager_->start(by_agent).ok());
    EXPECT_EQ(requests_.back().start_mode, plugins::StartMode::open);
    EXPECT_EQ(requests_.back().model, "");
    by_agent.network = "none";
    ASSERT_TRUE(manager_->start(by_agent).ok());
    EXPECT_EQ(requests_.back().start_mode, plugins::StartMode::locked_down);
}

TEST_F(SessionManagerTest, EachSessionGetsItsOwnEgressProxy) {
    const std::string id = start_shell();
    const auto& spec = runtime_.containers.begin()->second.spec;
    EXPECT_NE(std::find(spec.argv.begin(), spec.argv.end(), "--proxy-socket"), spec.argv.end());
    const fs::path proxy = dir_ / "run/sessions" / id / "proxy.sock";
    ASSERT_TRUE(fs::exists(proxy));
    ShimDouble client; // any stream client will do
    ASSERT_TRUE(client.connect(proxy));
    client.send("CONNECT blocked.example:443 HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(pump_until([&] { return store_->network_log(id, 0, 10)->size() == 1; }));
    const auto entry = store_->network_log(id, 0, 10)->front();
    EXPECT_EQ(entry.host, "blocked.example");
    EXPECT_EQ(entry.verdict, "deny");
    EXPECT_TRUE(contains(entry.reason, "not allowed")) << entry.reason;
}

template <std::size_t N> std::string bytes(const char (&text)[N]) { return std::string(text, N - 1); }

// A program's connection to the proxy port as the shim hands it over: a loopback TCP
// connection whose accepted end goes to the proxy socket; `port` is the program's end.
struct ProgramConnection {
    int program = -1;
    std::uint16_t port = 0;
    ~ProgramConnection() {
        if (program >= 0) ::close(program);
    }
};
std::unique_ptr<ProgramConnection> hand_over_connection(const fs::path& proxy_socket, const std::string& request) {
    auto made = std::make_unique<ProgramConnection>();
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(listener, 1), 0);
    EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
    made->program = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(made->program, reinterpret_cast<sockaddr*>(&address), length), 0);
    sockaddr_in local{};
    length = sizeof local;
    EXPECT_EQ(::getsockname(made->program, reinterpret_cast<sockaddr*>(&local), &length), 0);
    made->port = ntohs(local.sin_port);
    const int accepted = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    ShimDouble proxy;
    EXPECT_TRUE(proxy.connect(proxy_socket));
    EXPECT_TRUE(shim::send_handover(proxy.fd(), accepted));
    ::close(accepted);
    EXPECT_EQ(::write(made->program, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    return made;
}

// Who made a connection: handlerd asks the shim (WHO, with the program's port) and
// records its answer with the entry; never before deciding, and the decision is the same
// whatever the answer says.
TEST_F(SessionManagerTest, EachConnectionIsTracedToTheProcessTheShimNames) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    const fs::path proxy = dir_ / "run/sessions" / id / "proxy.sock";
    auto program = hand_over_connection(proxy, "CONNECT blocked.example:443 HTTP/1.1\r\n\r\n");

    std::optional<shim::Who> who;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : shim.received())
            if (frame.type == shim::FrameType::who) who = shim::decode_who(frame.payload);
        return who.has_value();
    }));
    EXPECT_EQ(who->port, program->port);
    // The decision does not wait for the answer.
    ASSERT_TRUE(pump_until([&] { return store_->network_log(id, 0, 10)->size() == 1; }));
    auto entry = store_->network_log(id, 0, 10)->front();
    EXPECT_EQ(entry.verdict, "deny");
    EXPECT_NE(entry.connection, 0);
    EXPECT_FALSE(entry.origin.has_value());

    // A process that claims anything in its command line changes no verdict.
    shim::OwnerAnswer answer;
    answer.query = who->query;
    answer.status = shim::OwnerStatus::found;
    answer.processes = {{42, bytes("curl\0-s\0https://allowed.example\0\x1b[31m"), false},
                        {41, bytes("bash\0-c\0curl -s https://allowed.example"), true}};
    shim.send(shim::encode_owner(answer));
    ASSERT_TRUE(pump_until([&] { return store_->network_log(id, 0, 10)->front().origin.has_value(); }));
    entry = store_->network_log(id, 0, 10)->front();
    EXPECT_EQ(entry.verdict, "deny");
    ASSERT_TRUE(entry.origin->pid);
    EXPECT_EQ(*entry.origin->pid, 42);
    EXPECT_EQ(entry.origin->command, bytes("curl -s https://allowed.example \x1b[31m"));
    EXPECT_TRUE(contains(entry.origin->parents, "\"pid\":41")) << entry.origin->parents;
    EXPECT_TRUE(contains(entry.origin->parents, "bash -c curl -s https://allowed.example…")) << entry.origin->parents;
    EXPECT_EQ(entry.origin->tool_call_id, "");
    EXPECT_TRUE(contains(entry.origin->note, "reports no tool calls")) << entry.origin->note;

    // An answer to a query nobody asked, or a second one, changes nothing.
    answer.processes = {{7, "forged", false}};
    shim.send(shim::encode_owner(answer));
    answer.query += 100;
    shim.send(shim::encode_owner(answer));
    for (int i = 0; i < 20; ++i) { // time for handlerd to act on them, and the batch to flush
        io_.restart();
        io_.run_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(*store_->network_log(id, 0, 10)->front().origin->pid, 42);
    EXPECT_FALSE(shim.closed_by_peer());
}

// The shim's link dropping before it answered, and a shim of protocol 1 (which would
// drop the connection on a WHO), give an unknown origin that says why.
TEST_F(SessionManagerTest, AConnectionNobodyCanExplainSaysWhy) {
    const std::string id = start_shell();
    const fs::path proxy = dir_ / "run/sessions" / id / "proxy.sock";
    {
        ShimDouble shim;
        connect_shim(shim, id, 0);
        auto program = hand_over_connection(proxy, "CONNECT one.example:443 HTTP/1.1\r\n\r\n");
        ASSERT_TRUE(pump_until([&] {
            for (const auto& frame : shim.received())
                if (frame.type == shim::FrameType::who) return true;
            return false;
        }));
    } // the shim goes away without answering
    ASSERT_TRUE(pump_until([&] {
        auto log = *store_->network_log(id, 0, 10);
        return log.size() == 1 && log.front().origin.has_value();
    }));
    auto first = store_->network_log(id, 0, 10)->front();
    EXPECT_FALSE(first.origin->pid);
    EXPECT_TRUE(contains(first.origin->note, "dropped before it answered")) << first.origin->note;

    ShimDouble old;
    connect_shim(old, id, 0, 0, 1);
    auto program = hand_over_connection(proxy, "CONNECT two.example:443 HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(pump_until([&] {
        auto log = *store_->network_log(id, 0, 10);
        return log.size() == 2 && log.back().origin.has_value();
    }));
    EXPECT_TRUE(contains(store_->network_log(id, 0, 10)->back().origin->note, "older")) ;
    for (const auto& frame : old.received()) EXPECT_NE(frame.type, shim::FrameType::who);
    EXPECT_FALSE(old.closed_by_peer());
}

// A loopback TCP port that accepts connections (the kernel completes them without an
// accept()), for tunnels that must really open.
class Listener {
public:
    Listener() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            ::listen(fd_, 8) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
            ADD_FAILURE() << "cannot listen on loopback";
        port_ = ntohs(address.sin_port);
    }
    ~Listener() { ::close(fd_); }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    std::uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// The project's allow-list joins the agent's in every session of the project, a bare
// `handler run` included; an edit applies at the next connection, and a project.updated
// event cuts open tunnels the new list refuses.
// An agent's addons add to its sessions: their variables reach the container, and the
// hosts they need join the allow-list (not the model hosts, so `none` still refuses them).
// An addon's rule never opens the host's loopback by itself, even exact; a name the user
// pinned there does reach it.
TEST_F(SessionManagerTest, AnAgentsAddonsAddTheirHostsToItsAllowList) {
    Listener upstream;
    const std::string port = std::to_string(upstream.port());
    add_agent("builder", {}, {"local-cdn"});
    auto start = [&](std::optional<std::string> network) -> std::string {
        api::StartRequest request;
        request.name = "builder";
        request.directory = (dir_ / "project").string();
        request.network = std::move(network);
        auto started = manager_->start(request);
        EXPECT_TRUE(started.ok()) << started.error().message;
        if (!started) return {};
        EXPECT_TRUE(pump_until([&] { return state(started->id) == SessionState::running; }));
        return started->id;
    };
    auto decide = [&](const std::string& id, const std::string& host) {
        ShimDouble client;
        EXPECT_TRUE(client.connect(dir_ / "run/sessions" / id / "proxy.sock"));
        const std::size_t before = store_->network_log(id, 0, 10)->size();
        client.send("CONNECT " + host + ":" + port + " HTTP/1.1\r\n\r\n");
        EXPECT_TRUE(pump_until([&] { return store_->network_log(id, 0, 10)->size() == before + 1; }));
        return store_->network_log(id, 0, 10)->back();
    };

    const std::string filtered = start(std::nullopt);
    const auto session = store_->get_session(filtered);
    EXPECT_EQ(session->addon_hosts, (std::vector<std::string>{"cdn.test", "127.0.0.1"}));
    EXPECT_TRUE(session->model_hosts.empty());
    const auto& spec = runtime_.containers.begin()->second.spec;
    EXPECT_TRUE(std::any_of(spec.env.begin(), spec.env.end(), [&](const auto& entry) {
        return entry.name == "CDN_SESSION" && entry.value == filtered;
    }));
    const auto allowed = decide(filtered, "cdn.test");
    EXPECT_EQ(allowed.verdict, "allow");
    EXPECT_EQ(allowed.rule, "cdn.test");
    const auto local = decide(filtered, "127.0.0.1");
    EXPECT_EQ(local.verdict, "deny");
    EXPECT_TRUE(contains(local.reason, "resolves to 127.0.0.1")) << local.reason;
    EXPECT_TRUE(contains(local.reason, "not an addon's")) << local.reason;

    const auto refused = decide(start("none"), "cdn.test");
    EXPECT_EQ(refused.verdict, "deny");
}

// A plugin's host services (sdk.h network_allow_host, secret_stand_in) reach only the live
// sessions that use it: an allowed host joins the session's addon hosts and decides its
// next connection; what is on this machine or its network stays the user's to allow.
TEST_F(SessionManagerTest, APluginAllowsAHostOnlyForTheLiveSessionsThatUseIt) {
    add_agent("builder", {}, {"local-cdn"});
    api::StartRequest request;
    request.name = "builder";
    request.directory = (dir_ / "project").string();
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    const std::string other = start_shell(); // no agent, so no addon

    // TEST-NET-1: public as far as the policy goes, and nobody answers there.
    auto decide = [&](std::size_t nth) {
        ShimDouble client;
        EXPECT_TRUE(client.connect(dir_ / "run/sessions" / id / "proxy.sock"));
        client.send("CONNECT 192.0.2.1:443 HTTP/1.1\r\n\r\n");
        EXPECT_TRUE(pump_until([&] { return store_->network_log(id, 0, 10)->size() == nth; }));
        return store_->network_log(id, 0, 10)->back(); // oldest first
    };
    EXPECT_EQ(decide(1).verdict, "deny");

    auto added = manager_->allow_host("local-cdn", id, "192.0.2.1:443", "its CDN");
    ASSERT_TRUE(added.ok()) << added.error().message;
    EXPECT_EQ(*added, 1u);
    ASSERT_TRUE(pump_until([&] { return store_->get_session(id)->addon_hosts.size() == 3; }));
    EXPECT_EQ(store_->get_session(id)->addon_hosts,
              (std::vector<std::string>{"cdn.test", "127.0.0.1", "192.0.2.1:443"}));
    const auto allowed = decide(2);
    EXPECT_EQ(allowed.verdict, "allow");
    EXPECT_EQ(allowed.rule, "192.0.2.1:443");
    // Asked again: kept once.
    ASSERT_TRUE(manager_->allow_host("local-cdn", id, "192.0.2.1:443", "").ok());
    io_.restart();
    io_.run_for(std::chrono::milliseconds(50)); // time to be recorded, were it to be
    EXPECT_EQ(store_->get_session(id)->addon_hosts.size(), 3u);

    // Not a plugin of that session: the addon is not the other session's, "greedy" is nobody's.
    auto foreign = manager_->allow_host("local-cdn", other, "cdn.example.com", "");
    ASSERT_FALSE(foreign.ok());
    EXPECT_EQ(foreign.error().code, ErrorCode::forbidden);
    EXPECT_TRUE(contains(foreign.error().message, "is not a live session that uses plugin 'local-cdn'"))
        << foreign.error().message;
    EXPECT_FALSE(manager_->allow_host("greedy", id, "cdn.example.com", "").ok());
    EXPECT_FALSE(manager_->allow_host("local-cdn", "s_nosuch", "cdn.example.com", "").ok());
    // handlerd's own API and everything else on the host or its network.
    for (const char* local : {"127.0.0.1:8765", "10.1.2.3", "169.254.169.254", "[::1]:443", "[::ffff:127.0.0.1]"}) {
        auto refused = manager_->allow_host("local-cdn", id, local, "");
        ASSERT_FALSE(refused.ok()) << local;
        EXPECT_EQ(refused.error().code, ErrorCode::forbidden) << local;
        EXPECT_TRUE(contains(refused.error().message, "handler network allow")) << refused.error().message;
    }
    auto bad = manager_->allow_host("local-cdn", id, "not a host!", "");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);

    // No session named: every live session of the plugin, here the harness of both.
    auto everywhere = manager_->allow_host("shell", "", "registry.example.org", "");
    ASSERT_TRUE(everywhere.ok()) << everywhere.error().message;
    EXPECT_EQ(*everywhere, 2u);
    ASSERT_TRUE(pump_until([&] { return store_->get_session(other)->addon_hosts.size() == 1; }));
    EXPECT_EQ(store_->get_session(other)->addon_hosts, std::vector<std::string>{"registry.example.org"});
    EXPECT_EQ(store_->get_session(id)->addon_hosts.back(), "registry.example.org");

    // An ended session is nobody's to change.
    ASSERT_TRUE(manager_->stop(other).ok());
    ASSERT_TRUE(pump_until([&] { return state(other) != SessionState::running && state(other) != SessionState::starting; }));
    EXPECT_FALSE(manager_->allow_host("shell", other, "late.example.org", "").ok());
    auto after = manager_->allow_host("shell", "", "late.example.org", "");
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*after, 1u);
}

TEST_F(SessionManagerTest, AnAddonThatIsMissingOrOverreachesFailsTheSessionSayingWhich) {
    for (const auto& [addon, expected] : {std::pair<std::string, std::string>{"ghost", "no addon plugin 'ghost'"},
                                          {"greedy", "addon 'greedy' sets the image"}}) {
        add_agent("uses-" + addon, {}, {addon});
        api::StartRequest request;
        request.name = "uses-" + addon;
        request.directory = (dir_ / "project").string();
        auto started = manager_->start(request);
        ASSERT_FALSE(started.ok()) << addon;
        EXPECT_TRUE(contains(started.error().message, expected)) << started.error().message;
    }
    EXPECT_TRUE(runtime_.containers.empty()) << "no container was started";
}

TEST_F(SessionManagerTest, TheProjectsAllowListAppliesToItsSessionsLive) {
    Listener upstream;
    const std::string target = "127.0.0.1:" + std::to_string(upstream.port());
    const std::string id = start_shell(); // no agent
    const fs::path proxy = dir_ / "run/sessions" / id / "proxy.sock";
    auto entries = [&](const std::string& session) { return *store_->network_log(session, 0, 100); };

    ShimDouble before;
    ASSERT_TRUE(before.connect(proxy));
    before.send("CONNECT " + target + " HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(pump_until([&] { return entries(id).size() == 1; }));
    EXPECT_EQ(entries(id)[0].verdict, "deny");

    // As the API does it: the change, then its event (the manager keeps each session's
    // policy until an event says it changed).
    store::ProjectChanges changes;
    changes.allowed_hosts = std::vector<std::string>{"127.0.0.1"};
    ASSERT_TRUE(store_->update_project(project_id_, changes).ok());
    events_.publish(api::event_json("project.updated", {{"id", project_id_}}, clock_.now_ms()));
    ShimDouble after;
    ASSERT_TRUE(after.connect(proxy));
    after.send("CONNECT " + target + " HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(pump_until([&] { return entries(id).size() == 2; }));
    EXPECT_EQ(entries(id)[1].host, "127.0.0.1");
    EXPECT_EQ(entries(id)[1].verdict, "allow");
    EXPECT_EQ(entries(id)[1].rule, "127.0.0.1");
    std::string answer;
    ASSERT_TRUE(pump_until([&] { return contains(answer += after.drain(), "\r\n\r\n"); }));
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;

    // A session of an agent gets the project's list after the agent's own.
    add_agent("helper", {"agent.example"});
    api::StartRequest request;
    request.name = "helper";
    request.directory = (dir_ / "project").string();
    auto agents_session = manager_->start(request);
    ASSERT_TRUE(agents_session.ok()) << agents_session.error().message;
    ASSERT_TRUE(pump_until([&] { return state(agents_session->id) == SessionState::running; }));
    ShimDouble of_agent;
    ASSERT_TRUE(of_agent.connect(dir_ / "run/sessions" / agents_session->id / "proxy.sock"));
    of_agent.send("CONNECT " + target + " HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(pump_until([&] { return entries(agents_session->id).size() == 1; }));
    EXPECT_EQ(entries(agents_session->id)[0].verdict, "allow");

    // The host leaves the project's list: the open tunnels to it are cut at the event.
    changes.allowed_hosts = std::vector<std::string>{};
    ASSERT_TRUE(store_->update_project(project_id_, changes).ok());
    events_.publish(api::event_json("project.updated", {{"id", project_id_}}, clock_.now_ms()));
    ASSERT_TRUE(pump_until([&] {
        return after.closed_by_peer() && entries(id)[1].ended_at.has_value();
    })) << after.drain();
    EXPECT_TRUE(entries(id)[1].reason.starts_with("cut: ")) << entries(id)[1].reason;
}

// A running session learns at its user's word (POST /sessions/{id}/network): the next
// connection is decided in learn mode without a restart, the record and its event say so,
// and going back to filtered refuses again. open and a session that has ended are refused.
TEST_F(SessionManagerTest, ARunningSessionLearnsAtOnceAndIsFilteredAgainAfter) {
    std::vector<std::string> updates;
    events_.subscribe([&updates](const api::EventHub::Message& message, const api::Topic&) {
        if (message->find("\"type\":\"session.updated\"") != std::string::npos) updates.push_back(*message);
    });
    Listener upstream; // cdn.test is pinned to 127.0.0.1 in the settings
    const std::string target = "cdn.test:" + std::to_string(upstream.port());
    const std::string id = start_shell();
    const fs::path proxy = dir_ / "run/sessions" / id / "proxy.sock";
    auto entries = [&] { return *store_->network_log(id, 0, 100); };
    auto connect = [&](std::size_t count) {
        ShimDouble program;
        EXPECT_TRUE(program.connect(proxy));
        program.send("CONNECT " + target + " HTTP/1.1\r\n\r\n");
        EXPECT_TRUE(pump_until([&] { return entries().size() == count; }));
        return entries().back();
    };
    EXPECT_EQ(connect(1).verdict, "deny");

    updates.clear();
    auto learning = manager_->set_network(id, "learn", std::nullopt);
    ASSERT_TRUE(learning.ok()) << learning.error().message;
    EXPECT_EQ(learning->network_mode, network::Mode::learn);
    EXPECT_EQ(learning->learn_until, clock_.now_ms() + 15 * 60 * 1000);
    EXPECT_EQ(store_->get_session(id)->learn_until, learning->learn_until);
    ASSERT_EQ(updates.size(), 1u);
    EXPECT_TRUE(contains(updates[0], "\"network_mode\":\"learn\"")) << updates[0];
    const auto learned = connect(2);
    EXPECT_EQ(learned.verdict, "learned");
    EXPECT_EQ(learned.rule, "learn mode");
    EXPECT_EQ(store_->learned_hosts(id)->size(), 1u);

    auto five = manager_->set_network(id, "learn", 5);
    ASSERT_TRUE(five.ok()) << five.error().message;
    EXPECT_EQ(five->learn_until, clock_.now_ms() + 5 * 60 * 1000);

    auto filtered = manager_->set_network(id, "filtered", std::nullopt);
    ASSERT_TRUE(filtered.ok()) << filtered.error().message;
    EXPECT_EQ(filtered->network_mode, network::Mode::filtered);
    EXPECT_FALSE(filtered->learn_until.has_value());
    EXPECT_EQ(connect(3).verdict, "deny");

    auto open = manager_->set_network(id, "open", std::nullopt);
    ASSERT_FALSE(open.ok());
    EXPECT_EQ(open.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(store_->get_session(id)->network_mode, network::Mode::filtered) << "a refused change changes nothing";
    EXPECT_EQ(manager_->set_network("s_nobody", "none", std::nullopt).error().code, ErrorCode::not_found);
}

// The harness asked for an Anthropic key: the container gets a same-shaped stand-in (over
// whatever the harness put in that variable), the real key appears nowhere in what
// podman is given, the stand-in is recorded for the proxy, and the container trusts
// handler's CA through its system store and the usual variables.
TEST_F(SessionManagerTest, AHarnessThatNeedsAKeyGetsAStandInAndTrustsHandlersCa) {
    const std::string real = "sk-ant-api03-" + std::string(40, 'R');
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    auto no_account = manager_->start(request);
    ASSERT_FALSE(no_account.ok());
    EXPECT_TRUE(contains(no_account.error().message, "handler account add NAME --kind anthropic-api-key"))
        << no_account.error().message;

    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    auto no_key = manager_->start(request);
    ASSERT_FALSE(no_key.ok());
    EXPECT_TRUE(contains(no_key.error().message, "handler account set-key work")) << no_key.error().message;

    ASSERT_TRUE(secrets_.put(account->id, real).ok());
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    // The container is started on the worker thread.
    ASSERT_TRUE(pump_until([&] { return runtime_.containers.size() == 1; }));
    const auto& spec = runtime_.containers.begin()->second.spec;
    std::string stand_in;
    for (const auto& entry : spec.env) {
        EXPECT_FALSE(contains(entry.value, real)) << entry.name;
        if (entry.name == "ANTHROPIC_API_KEY") stand_in = entry.value; // the last one wins
    }
    for (const auto& argument : spec.argv) EXPECT_FALSE(contains(argument, real));
    EXPECT_TRUE(stand_in.starts_with("sk-ant-api03-")) << stand_in;
    EXPECT_EQ(stand_in.size(), real.size());
    EXPECT_NE(stand_in, real);
    auto recorded = store_->session_secrets(started->id);
    ASSERT_TRUE(recorded.ok());
    ASSERT_EQ(recorded->size(), 1u);
    EXPECT_EQ(recorded->front().stand_in, stand_in);
    EXPECT_EQ(recorded->front().account_id, account->id);

    const fs::path control = dir_ / "run/sessions" / started->id;
    EXPECT_EQ(spec.trust_bundle, control / "ca-bundle.crt");
    std::ifstream bundle(control / "ca-bundle.crt");
    std::string text((std::istreambuf_iterator<char>(bundle)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, std::string(kSystemCertificate) + kCaPem);
    EXPECT_EQ(text.find("SECRETKEY"), std::string::npos) << "a private key of the system bundle reached the session";
    auto env_of = [&](const std::string& name) {
        for (const auto& entry : spec.env)
            if (entry.name == name) return entry.value;
        return std::string();
    };
    EXPECT_EQ(env_of("NODE_EXTRA_CA_CERTS"), "/run/handler/ca.crt");
    EXPECT_EQ(env_of("SSL_CERT_FILE"), "/run/handler/ca-bundle.crt");

    // A second session gets a stand-in of its own.
    auto second = manager_->start(request);
    ASSERT_TRUE(second.ok());
    EXPECT_NE(store_->session_secrets(second->id)->front().stand_in, stand_in);

    // The harness's plugin may ask for it (sdk.h secret_stand_in); no other plugin may,
    // and there is no stand-in for a kind the session has no key of.
    auto asked = manager_->stand_in("keyed", started->id, "anthropic-api-key");
    ASSERT_TRUE(asked.ok()) << asked.error().message;
    EXPECT_EQ(*asked, stand_in);
    auto stranger = manager_->stand_in("shell", started->id, "anthropic-api-key");
    ASSERT_FALSE(stranger.ok());
    EXPECT_EQ(stranger.error().code, ErrorCode::forbidden);
    auto other_kind = manager_->stand_in("keyed", started->id, "openai-api-key");
    ASSERT_FALSE(other_kind.ok());
    EXPECT_EQ(other_kind.error().code, ErrorCode::not_found);

    // Two accounts of the kind and no agent to choose: refused with the fix.
    ASSERT_TRUE(store_->create_account({"home", "anthropic-api-key", {}, {}}).ok());
    auto ambiguous = manager_->start(request);
    ASSERT_FALSE(ambiguous.ok());
    EXPECT_TRUE(contains(ambiguous.error().message, "several accounts")) << ambiguous.error().message;
}

TEST_F(SessionManagerTest, OutputReachesEveryClientAndInputReachesTheShim) {
    const std::string id = start_shell();
    ShimDouble shim;
    EXPECT_EQ(connect_shim(shim, id, 0), 0u);

    auto first = std::make_shared<RecordingClient>();
    auto second = std::make_shared<RecordingClient>();
    auto a = manager_->attach(id, first, {});
    auto b = manager_->attach(id, second, {});
    ASSERT_TRUE(a.ok() && b.ok());
    shim.output(0, "$ echo hi\r\nhi\r\n");
    ASSERT_TRUE(pump_until([&] { return second->text.size() == 15; }));
    EXPECT_EQ(first->text, "$ echo hi\r\nhi\r\n");
    EXPECT_EQ(second->text, first->text);

    manager_->input(a->attach_id, "typed by a\r");
    manager_->input(b->attach_id, "typed by b\r");
    manager_->resize(b->attach_id, 50, 120);
    std::string input;
    std::optional<shim::Size> size;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : shim.received()) {
            if (frame.type == shim::FrameType::input) input += frame.payload;
            if (frame.type == shim::FrameType::resize) size = shim::decode_resize(frame.payload);
        }
        return size.has_value() && input.size() == 22;
    }));
    EXPECT_EQ(input, "typed by a\rtyped by b\r");
    EXPECT_EQ(size->rows, 50);
    EXPECT_EQ(size->cols, 120);
}

// Right after a handlerd restart a client may type before the shim has reconnected.
TEST_F(SessionManagerTest, InputTypedBeforeTheShimConnectsIsDeliveredWhenItDoes) {
    const std::string id = start_shell();
    auto client = std::make_shared<RecordingClient>();
    auto attached = manager_->attach(id, client, {});
    ASSERT_TRUE(attached.ok());
    manager_->input(attached->attach_id, "early\r");
    ShimDouble shim;
    connect_shim(shim, id, 0);
    std::string input;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : shim.received())
            if (frame.type == shim::FrameType::input) input += frame.payload;
        return input == "early\r";
    })) << input;
}

TEST_F(SessionManagerTest, ALateClientGetsTheRecentOutputReplayed) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    shim.output(0, std::string(100, 'a'));
    shim.output(100, "current screen");
    auto log_end = [&] { return manager_->log(id)->end; };
    ASSERT_TRUE(pump_until([&] { return log_end() == 114; }));

    auto late = std::make_shared<RecordingClient>();
    auto attached = manager_->attach(id, late, {});
    ASSERT_TRUE(attached.ok());
    EXPECT_EQ(attached->produced, 114u);
    // The replay buffer holds 64 bytes here; the newest output is always in it.
    EXPECT_TRUE(late->text.ends_with("current screen")) << late->text;
    // ...and a client that already has everything up to 110 gets only the rest.
    auto resumed = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, resumed, {std::uint64_t{110}, true}).ok());
    EXPECT_EQ(resumed->text, "reen");
    // The whole output is in the log.
    EXPECT_EQ(manager_->log(id)->text, std::string(100, 'a') + "current screen");
}

// What a session prints reaches the user's own terminal: a sequence that acts on the
// user's machine (here OSC 52, cut across two writes of the shim, and DECRQSS) reaches no
// client, live or replayed, nor the log as a client reads it, while colours do; the file
// keeps the output as printed.
TEST_F(SessionManagerTest, SequencesThatActOnTheUsersMachineReachNoClient) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    auto live = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, live, {}).ok());
    const std::string first = "\x1b[31mred\x1b[0m \x1b]52;c;cm0gLXJm";
    const std::string second = "IH4K\x07\x1bP$qm\x1b\\done";
    shim.output(0, first);
    ASSERT_TRUE(pump_until([&] { return manager_->log(id)->end == first.size(); }));
    shim.output(first.size(), second);
    const std::string expected = "\x1b[31mred\x1b[0m done";
    ASSERT_TRUE(pump_until([&] { return live->text.ends_with("done"); })) << live->text;
    EXPECT_EQ(live->text, expected);

    auto late = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, late, {}).ok());
    EXPECT_EQ(late->text, expected);
    // One that has the output up to the middle of the OSC gets its end as text, never its start.
    auto resumed = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, resumed, {std::uint64_t{first.size() - 4}, true}).ok());
    EXPECT_EQ(resumed->text, "LXJmIH4K\x07" "done");

    auto log = manager_->log(id);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(log->text, expected);
    EXPECT_EQ(log->end, first.size() + second.size());
    auto file = OutputLog::open(dir_ / "data/sessions" / id, std::uint64_t{1} << 20);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(*file->read_all(), first + second);
}

TEST_F(SessionManagerTest, TheExitCodeIsRecordedAndTheContainerRemoved) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    auto client = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, client, {}).ok());
    shim.output(0, "bye\r\n");
    shim.send(shim::encode_i32(shim::FrameType::exit, 7));
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_EQ(store_->get_session(id)->exit_code, 7);
    ASSERT_TRUE(pump_until([&] { return client->exit_code.has_value(); }));
    EXPECT_EQ(*client->exit_code, 7);
    bool acked = false;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : shim.received())
            acked = acked || frame.type == shim::FrameType::exit_ack;
        return acked && runtime_.containers.empty();
    }));
    // Attaching now replays the end and says how it ended.
    auto late = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, late, {}).ok());
    EXPECT_EQ(late->text, "bye\r\n");
    EXPECT_EQ(late->exit_code, 7);
}

TEST_F(SessionManagerTest, AMissingImageFailsTheSessionWithTheFix) {
    runtime_.images.clear();
    api::StartRequest request;
    request.name = "shell"; // not an agent, so the harness
    request.directory = (dir_ / "project").string();
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::failed; }));
    EXPECT_TRUE(contains(*store_->get_session(id)->message, "handler setup"));
    EXPECT_TRUE(runtime_.containers.empty());
    EXPECT_FALSE(fs::exists(socket(id)));
}

TEST_F(SessionManagerTest, RefusesWhatItCannotResolve) {
    api::StartRequest request;
    request.directory = "/somewhere/else";
    auto outside = manager_->start(request);
    ASSERT_FALSE(outside.ok());
    EXPECT_TRUE(contains(outside.error().message, "handler project add")) << outside.error().message;

    request.directory = (dir_ / "project").string();
    request.name = "nobody";
    auto unknown = manager_->start(request);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
    EXPECT_TRUE(store_->list_sessions()->empty()) << "nothing is recorded for a refused request";
}

// The harness's own description is checked before anything is recorded or launched.
TEST_F(SessionManagerTest, AThinkingLevelTheHarnessDoesNotListIsRefusedBeforeAnythingIsRecorded) {
    catalog_.harnesses["shell"].description.thinking_levels = {"low", "high"};
    api::StartRequest request;
    request.harness = "shell";
    request.thinking = "max";
    request.directory = (dir_ / "project").string();
    auto refused = manager_->start(request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(refused.error().message, "harness 'shell' has no thinking level 'max'; its levels are low, high");
    EXPECT_TRUE(requests_.empty()) << "the plugin was not asked";
    EXPECT_TRUE(store_->list_sessions()->empty());
}

TEST_F(SessionManagerTest, AManagerToldToRefuseStartsNothing) {
    make_manager("handlerd runs as root");
    api::StartRequest request;
    request.directory = (dir_ / "project").string();
    auto refused = manager_->start(request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::forbidden);
    EXPECT_EQ(refused.error().message, "handlerd runs as root");
    EXPECT_TRUE(runtime_.calls.empty());
    EXPECT_TRUE(store_->list_sessions()->empty());
}

TEST_F(SessionManagerTest, WithoutANameTheProjectsOnlyAgentOrTheShellRuns) {
    api::StartRequest request;
    request.directory = (dir_ / "project").string();
    auto shell = manager_->start(request);
    ASSERT_TRUE(shell.ok()) << shell.error().message;
    EXPECT_EQ(shell->harness, "shell");
    EXPECT_FALSE(shell->agent_id.has_value());

    store::NewAgent agent;
    agent.project_id = project_id_;
    agent.name = "helper";
    agent.harness = "shell";
    auto made = store_->create_agent(agent);
    ASSERT_TRUE(made.ok()) << made.error().message;
    auto by_agent = manager_->start(request);
    ASSERT_TRUE(by_agent.ok()) << by_agent.error().message;
    EXPECT_EQ(by_agent->agent_id, made->id);
}

TEST_F(SessionManagerTest, StopStopsTheContainerAndRecordsItsStatus) {
    const std::string id = start_shell();
    auto stopping = manager_->stop(id);
    ASSERT_TRUE(stopping.ok()) << stopping.error().message;
    // No shim reports an exit here, so podman's status is what is recorded.
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_EQ(store_->get_session(id)->exit_code, 143);
    EXPECT_FALSE(manager_->stop(id).ok());
}

TEST_F(SessionManagerTest, RemoveRefusesARunningSessionAndDeletesAnEndedOne) {
    const std::string id = start_shell();
    auto refused = manager_->remove(id);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "handler session stop")) << refused.error().message;
    ASSERT_TRUE(manager_->stop(id).ok());
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    ASSERT_TRUE(manager_->remove(id).ok());
    EXPECT_FALSE(store_->get_session(id).ok());
    EXPECT_FALSE(fs::exists(dir_ / "data/sessions" / id));
}

TEST_F(SessionManagerTest, ARestartedManagerReadoptsAndResumesWithoutGapsOrRepeats) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    shim.output(0, "before restart\r\n");
    ASSERT_TRUE(pump_until([&] { return manager_->log(id)->end == 16; }));

    // handlerd goes away (as after kill -9, nothing is recorded as ended)...
    manager_.reset();
    shim.close();
    EXPECT_EQ(state(id), SessionState::running);
    // ...and the next one finds the container still running.
    make_manager();
    bool reconciled = false;
    manager_->reconcile([&] { reconciled = true; });
    // A client attaching before podman has even answered, and before the shim is back,
    // sees the screen from the log and stays attached.
    auto early = std::make_shared<RecordingClient>();
    auto attached = manager_->attach(id, early, {});
    ASSERT_TRUE(attached.ok());
    EXPECT_NE(attached->attach_id, 0u);
    EXPECT_EQ(early->text, "before restart\r\n");
    EXPECT_FALSE(early->reason.has_value());
    ASSERT_TRUE(pump_until([&] { return reconciled; }));
    EXPECT_EQ(state(id), SessionState::running);

    // The shim produced more meanwhile; it is asked for exactly what the log lacks.
    EXPECT_EQ(connect_shim(shim, id, 35), 16u);
    shim.output(7, "restart\r\nduring gap\r\n"); // overlaps what handlerd has
    shim.output(28, "after\r\n");
    ASSERT_TRUE(pump_until([&] { return manager_->log(id)->end == 35; }));
    EXPECT_EQ(manager_->log(id)->text, "before restart\r\nduring gap\r\nafter\r\n");
    EXPECT_EQ(early->text, "before restart\r\nduring gap\r\nafter\r\n");
}

TEST_F(SessionManagerTest, ReconcileRecordsWhatHappenedWhileNoHandlerdWatched) {
    const std::string ended = start_shell();
    const std::string vanished = start_shell();
    manager_.reset();
    for (auto& [container_id, container] : runtime_.containers)
        if (container.spec.session_id == ended) runtime_.exit_container(container_id, 42);
    for (auto it = runtime_.containers.begin(); it != runtime_.containers.end();)
        it = it->second.spec.session_id == vanished ? runtime_.containers.erase(it) : std::next(it);

    make_manager();
    bool reconciled = false;
    manager_->reconcile([&] { reconciled = true; });
    ASSERT_TRUE(pump_until([&] { return reconciled; }));
    EXPECT_EQ(state(ended), SessionState::exited);
    EXPECT_EQ(store_->get_session(ended)->exit_code, 42);
    EXPECT_EQ(state(vanished), SessionState::lost);
    EXPECT_TRUE(contains(*store_->get_session(vanished)->message, "gone"));
    ASSERT_TRUE(pump_until([&] { return runtime_.containers.empty(); }));
}

// After a restart the shim may reconnect and report its program's exit before podman has
// answered the re-adoption query; the answer (still "running") must not undo the exit.
TEST_F(SessionManagerTest, AnExitReportedWhilePodmanIsAskedStands) {
    const std::string id = start_shell();
    manager_.reset();
    make_manager();
    std::promise<void> answer;
    auto gate = answer.get_future().share();
    runtime_.before_list = [gate] { gate.wait(); };
    bool reconciled = false;
    manager_->reconcile([&] { reconciled = true; });
    ShimDouble shim;
    connect_shim(shim, id, 0);
    shim.send(shim::encode_i32(shim::FrameType::exit, 9));
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    answer.set_value();
    ASSERT_TRUE(pump_until([&] { return reconciled; }));
    runtime_.before_list = nullptr;
    EXPECT_EQ(state(id), SessionState::exited);
    EXPECT_EQ(store_->get_session(id)->exit_code, 9);
    ASSERT_TRUE(pump_until([&] { return runtime_.containers.empty(); })) << "its container is removed";
}

TEST_F(SessionManagerTest, AContainerThatDiesWithItsShimIsNoticed) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    runtime_.exit_container(runtime_.containers.begin()->first, 137);
    shim.close(); // no exit frame: the shim was killed along with everything else
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_EQ(store_->get_session(id)->exit_code, 137);
}

// Anything in the container may connect to the control socket and write frames. An exit
// closes the session's channel while the frames after it in the same read are still to
// be decoded: they must find no connection, not a dangling one (this crashed handlerd).
TEST_F(SessionManagerTest, FramesAfterAnExitInTheSameWriteAreIgnored) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    std::string frames = shim::encode_i32(shim::FrameType::exit, 3);
    shim::append_output(frames, 0, shim::Stream::terminal, "after the exit");
    shim::Hello hello;
    hello.tty = true;
    frames += shim::encode_hello(hello);
    shim.send(frames);
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_EQ(store_->get_session(id)->exit_code, 3);
    // Still serving: another session starts and its shim is resumed.
    const std::string next = start_shell();
    ShimDouble other;
    EXPECT_EQ(connect_shim(other, next, 0), 0u);
    auto log = manager_->log(id);
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(log->text.find("after the exit"), std::string::npos);
}

TEST_F(SessionManagerTest, AMisbehavingShimIsDisconnectedNotBelieved) {
    const std::string id = start_shell();
    ShimDouble shim;
    connect_shim(shim, id, 0);
    // A frame longer than the protocol allows.
    shim.send(std::string("\x02\x7f\xff\xff\xff", 5));
    ASSERT_TRUE(pump_until([&] { return shim.closed_by_peer(); }));
    // The connection was dropped; the session still runs and a reconnect works.
    EXPECT_EQ(state(id), SessionState::running);
    EXPECT_EQ(connect_shim(shim, id, 0), 0u);
}

} // namespace
} // namespace handler::sessions

namespace handler::sessions {
namespace {

// A headless run's stdout becomes events through the harness's parser: stored in order
// after the prompt, sent to a client that asked for them (and not to one that did not),
// replayed whole to one that attaches later, and published on the events stream.
TEST_F(SessionManagerTest, AHeadlessRunsOutputBecomesStoredAndStreamedEvents) {
    std::vector<std::string> published;
    std::vector<std::string> topics; // "session kind", as a follower's filter reads them
    events_.subscribe([&](const api::EventHub::Message& message, const api::Topic& topic) {
        if (message->find("session.event") != std::string::npos) published.push_back(*message);
        if (!topic.session.empty()) topics.push_back(topic.session + " " + topic.kind);
    });
    api::StartRequest request;
    request.harness = "shell";
    request.directory = (dir_ / "project").string();
    request.prompt = "say hi";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    auto watcher = std::make_shared<RecordingClient>();
    auto plain = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    auto attached = manager_->attach(id, watcher, with_events);
    ASSERT_TRUE(attached.ok());
    EXPECT_EQ(attached->events, "structured");
    ASSERT_TRUE(manager_->attach(id, plain, {}).ok());
    ASSERT_EQ(watcher->events.size(), 1u); // the prompt, replayed
    EXPECT_EQ(watcher->events[0], R"(user_prompt {"content":{"type":"text","text":"say hi"}})");

    ShimDouble shim;
    connect_shim(shim, id, 0);
    // A line split across two pieces, and stderr, which is not the harness's JSON.
    shim.output(0, "hel", shim::Stream::stdout_);
    shim.output(3, "lo\nEN", shim::Stream::stdout_);
    shim.output(8, "warning: slow\n", shim::Stream::stderr_); // offsets count every stream
    shim.output(22, "D\n", shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] { return watcher->events.size() == 3; }));
    EXPECT_EQ(watcher->events[1], R"(agent_message_chunk {"content":{"type":"text","text":"hello"}})");
    EXPECT_EQ(watcher->events[2], R"(result {"stopReason":"end_turn","result":"done"})");
    EXPECT_TRUE(plain->events.empty());
    EXPECT_EQ(plain->text, "hello\nENwarning: slow\nD\n");
    // Each chunk says where it ends: where a client that has it attaches `from` again.
    EXPECT_EQ(plain->ends, (std::vector<std::uint64_t>{3, 8, 22, 24}));

    auto stored = store_->session_events(id, 0, 100);
    ASSERT_TRUE(stored.ok());
    ASSERT_EQ(stored->size(), 3u);
    EXPECT_EQ((*stored)[0].seq, 1);
    EXPECT_EQ((*stored)[2].seq, 3);
    EXPECT_EQ((*stored)[2].kind, "result");
    EXPECT_EQ(published.size(), 3u);
    ASSERT_EQ(topics.size(), published.size()) << "every session.event, and nothing else, names its session";
    EXPECT_EQ(topics[0], id + " user_prompt");
    EXPECT_EQ(topics[2], id + " result");

    auto late = std::make_shared<RecordingClient>();
    ASSERT_TRUE(manager_->attach(id, late, with_events).ok());
    EXPECT_EQ(late->events, watcher->events);
    EXPECT_EQ(late->ends, plain->ends); // the replay, chunk by chunk
}

// A harness whose stdin is its protocol (Claude Code's stream-json) gets its first message
// from the launch, asks permission in events, and hears a client's answer on its stdin,
// through the plugin's parser; nobody else writes there. An answer is checked, recorded
// once, and still possible after a handlerd restart.
TEST_F(SessionManagerTest, AHarnessAsksAndAClientsAnswerReachesItsStdin) {
    api::StartRequest request;
    request.harness = "asking";
    request.directory = (dir_ / "project").string();
    request.prompt = "write it";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    auto watcher = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    auto attached = manager_->attach(id, watcher, with_events);
    ASSERT_TRUE(attached.ok());
    manager_->input(attached->attach_id, "typed into the protocol\n");
    manager_->input_eof(attached->attach_id);

    ShimDouble shim;
    connect_shim(shim, id, 0);
    std::string input;
    int eofs = 0;
    const auto read_input = [&] {
        for (const auto& frame : shim.received()) {
            if (frame.type == shim::FrameType::input) input += frame.payload;
            if (frame.type == shim::FrameType::input_eof) ++eofs;
        }
    };
    ASSERT_TRUE(pump_until([&] {
        read_input();
        return input.find("PROMPT") != std::string::npos;
    }));
    // What the launch gave, then the prompt in the harness's protocol; not what the client typed.
    EXPECT_EQ(input, "HELLO\n" R"(PROMPT {"content":{"type":"text","text":"write it"}})" "\n");
    EXPECT_EQ(eofs, 0);

    shim.output(0, "ASK call_1\nASK call_2\n", shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] { return watcher->events.size() == 3; }));
    EXPECT_TRUE(watcher->events[1].starts_with(R"(permission_request {"toolCallId":"call_1")")) << watcher->events[1];

    auto unknown = manager_->answer(id, "call_9", "allow");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().code, ErrorCode::not_found);
    auto odd = manager_->answer(id, "call_1", "maybe");
    ASSERT_FALSE(odd.ok());
    EXPECT_EQ(odd.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(odd.error().message.find("it offers allow, deny"), std::string::npos) << odd.error().message;

    input.clear();
    ASSERT_TRUE(manager_->answer(id, "call_1", "deny").ok());
    ASSERT_TRUE(pump_until([&] {
        read_input();
        return !input.empty();
    }));
    EXPECT_TRUE(input.starts_with(R"(ANSWER {"optionId":"deny"} TO {"toolCallId":"call_1")")) << input;
    ASSERT_EQ(watcher->events.size(), 4u);
    EXPECT_EQ(watcher->events[3], R"(permission_answer {"toolCallId":"call_1","optionId":"deny","kind":"reject_once"})");
    auto again = manager_->answer(id, "call_1", "allow");
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code, ErrorCode::not_found);

    // A restarted handlerd finds the request still waiting in the store.
    manager_.reset();
    shim.close();
    make_manager();
    bool reconciled = false;
    manager_->reconcile([&] { reconciled = true; });
    ASSERT_TRUE(pump_until([&] { return reconciled; }));
    ShimDouble back;
    connect_shim(back, id, 22);
    ASSERT_TRUE(manager_->answer(id, "call_2", "allow").ok());
    back.output(22, "END\n", shim::Stream::stdout_);
    std::string later;
    bool ended = false;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : back.received()) {
            if (frame.type == shim::FrameType::input) later += frame.payload;
            if (frame.type == shim::FrameType::input_eof) ended = true;
        }
        return ended;
    }));
    EXPECT_TRUE(later.starts_with(R"(ANSWER {"optionId":"allow"} TO {"toolCallId":"call_2")")) << later;
}

// A login the harness keeps (Codex's ChatGPT login) lives in the account's own folder,
// the same for every session of that account and private to the user; another account's
// sessions get another folder, and a session without an account none.
TEST_F(SessionManagerTest, AnAccountsStateFolderIsKeptPerAccountAcrossSessions) {
    auto first = store_->create_account({"chatgpt", "chatgpt-login", {}, {}});
    auto second = store_->create_account({"chatgpt2", "chatgpt-login", {}, {}});
    ASSERT_TRUE(first.ok() && second.ok());
    for (const auto& [name, account] : {std::pair{"gpt", "chatgpt"}, std::pair{"gpt2", "chatgpt2"}}) {
        store::NewAgent agent;
        agent.project_id = project_id_;
        agent.name = name;
        agent.harness = "stateful";
        agent.account = account;
        ASSERT_TRUE(store_->create_agent(agent).ok());
    }
    const auto folder_of = [&](const std::string& agent) -> fs::path {
        runtime_.containers.clear();
        api::StartRequest request;
        request.agent = agent;
        request.directory = (dir_ / "project").string();
        auto started = manager_->start(request);
        EXPECT_TRUE(started.ok()) << started.error().message;
        if (!started || !pump_until([&] { return runtime_.containers.size() == 1; })) return {};
        const auto& spec = runtime_.containers.begin()->second.spec;
        EXPECT_TRUE(std::find(spec.env.begin(), spec.env.end(),
                              runtime::EnvEntry{"STATE_HOME", runtime::kAccountStateMountPoint}) != spec.env.end());
        return spec.account_state_dir;
    };
    const fs::path folder = folder_of("gpt");
    EXPECT_EQ(folder, dir_ / "data/account-state" / std::to_string(first->id));
    ASSERT_TRUE(fs::is_directory(folder));
    EXPECT_EQ(fs::status(folder).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_EQ(folder_of("gpt"), folder);
    EXPECT_EQ(folder_of("gpt2"), dir_ / "data/account-state" / std::to_string(second->id));

    api::StartRequest bare;
    bare.harness = "stateful";
    bare.directory = (dir_ / "project").string();
    auto refused = manager_->start(bare);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(contains(refused.error().message, "no account")) << refused.error().message;
}

// Nobody watches a headless run, and a harness may retry an unreachable model without end.
TEST_F(SessionManagerTest, AHeadlessRunStillGoingAtItsTimeoutIsStoppedSayingWhy) {
    make_manager({}, std::uint64_t{64} << 20, std::chrono::milliseconds(300));
    api::StartRequest request;
    request.harness = "shell";
    request.directory = (dir_ / "project").string();
    request.prompt = "loop forever";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    // An interactive session started alongside is not bound by it.
    const std::string interactive = start_shell();
    auto watcher = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    ASSERT_TRUE(manager_->attach(id, watcher, with_events).ok());
    EXPECT_EQ(state(id), SessionState::running); // not at once

    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_EQ(store_->get_session(id)->exit_code, 143); // stopped as `handler session stop` does
    ASSERT_EQ(watcher->events.size(), 2u);
    EXPECT_TRUE(handler::testing::contains(watcher->events[1], "error {\"message\":\"handlerd stopped this headless run"))
        << watcher->events[1];
    EXPECT_TRUE(handler::testing::contains(watcher->events[1], "headless_timeout_minutes")) << watcher->events[1];
    auto stored = store_->session_events(id, 0, 10);
    ASSERT_TRUE(stored.ok());
    ASSERT_EQ(stored->size(), 2u);
    EXPECT_EQ((*stored)[1].kind, "error");
    EXPECT_EQ(state(interactive), SessionState::running);
}

// An interactive session's output is a screen, not events.
TEST_F(SessionManagerTest, AnInteractiveSessionHasNoEvents) {
    const std::string id = start_shell();
    auto client = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    auto attached = manager_->attach(id, client, with_events);
    ASSERT_TRUE(attached.ok());
    EXPECT_EQ(attached->events, "none");
    ShimDouble shim;
    connect_shim(shim, id, 0);
    shim.output(0, "hello\nEND\n");
    ASSERT_TRUE(pump_until([&] { return client->text == "hello\nEND\n"; }));
    EXPECT_TRUE(client->events.empty());
    EXPECT_TRUE(store_->session_events(id, 0, 10)->empty());
}

// A harness with an image recipe runs in its own image, built once on the base image
// and then reused; the build is the one podman gets (FROM the base, ENV, RUN).
TEST_F(SessionManagerTest, AHarnessWithARecipeRunsInItsImageBuiltOnceOnTheBase) {
    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    ASSERT_TRUE(secrets_.put(account->id, "sk-ant-api03-" + std::string(40, 'R')).ok());
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    for (int round = 0; round < 2; ++round) {
        auto started = manager_->start(request);
        ASSERT_TRUE(started.ok()) << started.error().message;
        ASSERT_TRUE(pump_until([&] { return state(started->id) == SessionState::running; }))
            << store_->get_session(started->id)->message.value_or("");
    }
    ASSERT_EQ(runtime_.builds.size(), 1u);
    const auto& build = runtime_.builds.front();
    EXPECT_TRUE(build.reference.starts_with("localhost/handler-keyed:")) << build.reference;
    EXPECT_TRUE(build.containerfile.starts_with(std::string("FROM ") + kImage + "\n")) << build.containerfile;
    EXPECT_TRUE(contains(build.containerfile, "ENV KEYED_HOME=\"/opt/keyed\"\n")) << build.containerfile;
    EXPECT_TRUE(contains(build.containerfile, R"(RUN ["/bin/sh","-c","npm install -g keyed@1.2.0"])"))
        << build.containerfile;
    ASSERT_EQ(runtime_.containers.size(), 2u);
    for (const auto& [container, entry] : runtime_.containers) EXPECT_EQ(entry.spec.image, build.reference);
    EXPECT_FALSE(fs::exists(dir_ / "cache/build" / ("handler-keyed-" + build.reference.substr(build.reference.rfind(':') + 1))))
        << "the build folder is removed after the build";
}

// A client sees a build under way (GET /api/v1/images) and its lines as events, then how
// it ended; a second session, whose image exists, has no build.
TEST_F(SessionManagerTest, AnImageBuildIsRecordedWithItsLinesAndPublished) {
    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    ASSERT_TRUE(secrets_.put(account->id, "sk-ant-api03-" + std::string(40, 'R')).ok());
    std::vector<json::object> published;
    events_.subscribe([&published](const api::EventHub::Message& message, const api::Topic&) {
        auto parsed = json::parse(*message).as_object();
        if (parsed.at("type") == "image.build") published.push_back(parsed);
    });
    runtime_.build_output = "STEP 1/2: FROM base\nadded 3 packages\n";
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    auto first = manager_->start(request);
    ASSERT_TRUE(first.ok()) << first.error().message;
    ASSERT_TRUE(pump_until([&] { return state(first->id) == SessionState::running; }));
    ASSERT_TRUE(pump_until([&] { return !published.empty() && published.back().at("data").at("event") == "ended"; }));
    const auto builds = manager_->image_builds();
    ASSERT_EQ(builds.size(), 1u);
    EXPECT_EQ(builds[0].harness, "keyed");
    EXPECT_EQ(builds[0].session, first->id);
    EXPECT_EQ(builds[0].state, "ready");
    EXPECT_TRUE(builds[0].image.starts_with("localhost/handler-keyed:")) << builds[0].image;
    EXPECT_TRUE(contains(builds[0].log, "STEP 1/2: FROM base\nadded 3 packages\n")) << builds[0].log;
    std::vector<std::string> kinds, lines;
    for (const auto& event : published) {
        kinds.emplace_back(event.at("data").at("event").as_string());
        if (kinds.back() == "line") lines.emplace_back(event.at("data").at("line").as_string());
        EXPECT_EQ(std::string(event.at("data").at("build").at("session").as_string()), first->id);
    }
    EXPECT_EQ(kinds.front(), "started");
    EXPECT_EQ(kinds.back(), "ended");
    EXPECT_EQ(published.back().at("data").at("build").at("state"), "ready");
    ASSERT_GE(lines.size(), 3u);
    EXPECT_EQ(lines[1], "STEP 1/2: FROM base");
    EXPECT_EQ(lines[2], "added 3 packages");

    auto second = manager_->start(request);
    ASSERT_TRUE(second.ok()) << second.error().message;
    ASSERT_TRUE(pump_until([&] { return state(second->id) == SessionState::running; }));
    EXPECT_EQ(manager_->image_builds().size(), 1u) << "an image that exists is not built";
}

// A failed build says why, in the build and in the session, and keeps its log.
TEST_F(SessionManagerTest, AFailedImageBuildFailsTheSessionWithTheSameMessage) {
    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    ASSERT_TRUE(secrets_.put(account->id, "sk-ant-api03-" + std::string(40, 'R')).ok());
    runtime_.build_output = "npm ERR! 404 keyed@1.2.0 is not in this registry\n";
    runtime_.fail_next("build_image", make_error(ErrorCode::internal, "podman build exited with 1"));
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    ASSERT_TRUE(pump_until([&] { return state(started->id) == SessionState::failed; }));
    ASSERT_TRUE(pump_until([&] { return !manager_->image_builds().empty() && manager_->image_builds()[0].state == "failed"; }));
    const auto build = manager_->image_builds()[0];
    EXPECT_TRUE(contains(build.message, "podman build exited with 1")) << build.message;
    EXPECT_EQ(store_->get_session(started->id)->message, build.message);
    EXPECT_TRUE(contains(build.log, "npm ERR! 404")) << build.log;
    EXPECT_TRUE(build.ended_at.has_value());
}

// A build takes minutes: meanwhile other sessions start (and stop) as usual.
TEST_F(SessionManagerTest, AnImageBuildHoldsUpNoOtherSession) {
    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    ASSERT_TRUE(secrets_.put(account->id, "sk-ant-api03-" + std::string(40, 'R')).ok());
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<bool> building = false;
    runtime_.on_build = [&] {
        building = true;
        released.wait();
    };
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    auto keyed = manager_->start(request);
    ASSERT_TRUE(keyed.ok()) << keyed.error().message;
    ASSERT_TRUE(pump_until([&] { return building.load(); }));
    api::StartRequest shell_request;
    shell_request.harness = "shell";
    shell_request.directory = (dir_ / "project").string();
    auto shell = manager_->start(shell_request);
    ASSERT_TRUE(shell.ok()) << shell.error().message;
    const bool ran = pump_until([&] { return state(shell->id) == SessionState::running; });
    EXPECT_EQ(state(keyed->id), SessionState::starting);
    release.set_value();
    EXPECT_TRUE(ran) << "the shell session waited for the other session's image build";
    ASSERT_TRUE(pump_until([&] { return state(keyed->id) == SessionState::running; }));
}

// The program inside writes the events, so they are bounded: the events that fit are
// kept, then one error event says so and nothing more is kept, while the output still
// reaches clients.
TEST_F(SessionManagerTest, EventsStopAtTheLimitWithAnErrorSayingSo) {
    make_manager({}, 1024);
    api::StartRequest request;
    request.harness = "shell";
    request.directory = (dir_ / "project").string();
    request.prompt = "flood";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    auto client = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    ASSERT_TRUE(manager_->attach(id, client, with_events).ok());
    ShimDouble shim;
    connect_shim(shim, id, 0);
    // Each line's event is about 50 bytes, so about 20 of the 40 fit in 1 KiB.
    std::string lines;
    for (int i = 0; i < 40; ++i) lines += "line " + std::to_string(i) + "\n";
    shim.output(0, lines, shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] { return client->text == lines; }));
    ASSERT_TRUE(pump_until([&] { return !client->events.empty() && client->events.back().starts_with("error "); }));
    const auto stored = store_->session_events(id, 0, 1000);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->back().kind, "error");
    EXPECT_TRUE(contains(stored->back().payload, "reached the limit")) << stored->back().payload;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i + 1 < stored->size(); ++i) bytes += (*stored)[i].payload.size();
    EXPECT_LE(bytes, 1024u) << "the prompt counts too";
    EXPECT_GT(stored->size(), 10u) << "the events that fit are kept";
    EXPECT_LT(stored->size(), 40u);
    shim.output(lines.size(), "more\n", shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] { return client->text == lines + "more\n"; }));
    EXPECT_EQ(store_->session_events(id, 0, 1000)->size(), stored->size()) << "nothing kept after the limit";
}

// A build that fails fails the session with podman's reason, and nothing runs.
TEST_F(SessionManagerTest, AFailedImageBuildFailsTheSessionSayingWhy) {
    auto account = store_->create_account({"work", "anthropic-api-key", {}, {}});
    ASSERT_TRUE(account.ok());
    ASSERT_TRUE(secrets_.put(account->id, "sk-ant-api03-" + std::string(40, 'R')).ok());
    runtime_.fail_next("build_image", make_error(ErrorCode::unavailable, "npm ERR! network unreachable"));
    api::StartRequest request;
    request.harness = "keyed";
    request.directory = (dir_ / "project").string();
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    ASSERT_TRUE(pump_until([&] { return state(started->id) == SessionState::failed; }));
    const auto message = store_->get_session(started->id)->message.value_or("");
    EXPECT_TRUE(contains(message, "building the keyed image failed")) << message;
    EXPECT_TRUE(contains(message, "npm ERR! network unreachable")) << message;
    EXPECT_TRUE(runtime_.containers.empty());

}

// A conversation (docs/conversations.md): prompt after prompt to one harness, one turn at
// a time; a prompt sent during a turn waits and can be withdrawn; cancel goes through the
// harness; its input stays open between turns; a harness that ends mid-turn closes it.
TEST_F(SessionManagerTest, AConversationTakesPromptAfterPromptOneTurnAtATime) {
    api::StartRequest request;
    request.harness = "talking";
    request.directory = (dir_ / "project").string();
    request.conversation = true;
    request.mcp_servers = R"([{"name":"files","command":"mcp-files","args":[],"env":[]},)"
                          R"({"type":"http","name":"docs","url":"https://docs.example/mcp","headers":[]}])";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    EXPECT_EQ(started->mode, "conversation");
    EXPECT_FALSE(started->tty);
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    ASSERT_FALSE(requests_.empty());
    EXPECT_TRUE(requests_.back().conversation);
    EXPECT_EQ(requests_.back().mode, plugins::LaunchMode::headless);
    EXPECT_EQ(requests_.back().mcp_servers, request.mcp_servers);
    // Its own state folder, this session's, mounted for the harness.
    const auto& spec = runtime_.containers.begin()->second.spec;
    EXPECT_EQ(spec.session_state_dir, dir_ / "data/sessions" / id / "state");
    EXPECT_TRUE(fs::is_directory(spec.session_state_dir));
    EXPECT_NE(std::find(spec.env.begin(), spec.env.end(),
                        runtime::EnvEntry{"TALK_HOME", runtime::kSessionStateMountPoint}),
              spec.env.end());

    auto watcher = std::make_shared<RecordingClient>();
    api::AttachOptions with_events;
    with_events.events = true;
    ASSERT_TRUE(manager_->attach(id, watcher, with_events).ok());
    // The HTTP server it asked for is one this harness does not take: said, not dropped.
    ASSERT_EQ(watcher->events.size(), 1u);
    EXPECT_TRUE(watcher->events[0].starts_with("error ")) << watcher->events[0];
    EXPECT_NE(watcher->events[0].find("'docs' (http)"), std::string::npos) << watcher->events[0];
    EXPECT_EQ(watcher->events[0].find("'files'"), std::string::npos) << watcher->events[0];

    ShimDouble shim;
    connect_shim(shim, id, 0);
    std::string input;
    int eofs = 0;
    const auto read_input = [&] {
        for (const auto& frame : shim.received()) {
            if (frame.type == shim::FrameType::input) input += frame.payload;
            if (frame.type == shim::FrameType::input_eof) ++eofs;
        }
    };
    auto first = manager_->prompt(id, {"first question\nwith a second line", {}});
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_FALSE(first->queued);
    EXPECT_TRUE(first->prompt_id.starts_with("p_"));
    ASSERT_TRUE(pump_until([&] {
        read_input();
        return input.find("PROMPT") != std::string::npos;
    }));
    EXPECT_EQ(input, "PROMPT {\"promptId\":\"" + first->prompt_id +
                         R"(","content":{"type":"text","text":"first question\nwith a second line"}})" "\n");
    EXPECT_EQ(store_->get_session(id)->title, "first question");

    auto second = manager_->prompt(id, {"second", {}});
    auto third = manager_->prompt(id, {"third", {}});
    ASSERT_TRUE(second.ok() && third.ok());
    EXPECT_TRUE(second->queued);
    EXPECT_TRUE(third->queued);
    EXPECT_EQ(manager_->withdraw(id, first->prompt_id).error().code, ErrorCode::conflict);
    EXPECT_EQ(manager_->withdraw(id, "p_nothing").error().code, ErrorCode::not_found);
    ASSERT_TRUE(manager_->withdraw(id, third->prompt_id).ok());
    EXPECT_EQ(manager_->withdraw(id, third->prompt_id).error().code, ErrorCode::not_found);

    // The turn ends; the input stays open and the waiting prompt starts.
    input.clear();
    shim.output(0, "SPOOF\nhello\nEND\n", shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] {
        read_input();
        return input.find("second") != std::string::npos;
    }));
    EXPECT_EQ(eofs, 0);
    EXPECT_EQ(input.find("third"), std::string::npos);
    std::vector<std::string> kinds;
    for (const auto& event : watcher->events) kinds.push_back(event.substr(0, event.find(' ')));
    EXPECT_EQ(kinds, (std::vector<std::string>{"error", "user_prompt", "prompt_queued", "prompt_queued",
                                               "prompt_withdrawn", "agent_message_chunk", "result", "user_prompt"}));
    EXPECT_NE(watcher->events.back().find(second->prompt_id), std::string::npos);

    // Cancel interrupts the running turn through the harness; its result says so.
    input.clear();
    ASSERT_TRUE(manager_->cancel(id).ok());
    ASSERT_TRUE(pump_until([&] {
        read_input();
        return input == "CANCEL\n";
    }));
    shim.output(16, "END\n", shim::Stream::stdout_);
    ASSERT_TRUE(pump_until([&] { return watcher->events.back() == R"(result {"stopReason":"cancelled"})"; }));
    EXPECT_EQ(manager_->cancel(id).error().code, ErrorCode::conflict) << "no turn runs";

    // A turn that is running when the harness ends is closed for every client.
    ASSERT_TRUE(manager_->prompt(id, {"fourth", {}}).ok());
    shim.send(shim::encode_i32(shim::FrameType::exit, 0));
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::exited; }));
    EXPECT_TRUE(watcher->events.back().starts_with(R"(result {"stopReason":"cancelled","isError":true)"))
        << watcher->events.back();
    EXPECT_EQ(manager_->prompt(id, {"fifth", {}}).error().code, ErrorCode::conflict);
    EXPECT_EQ(eofs, 0);
}

TEST_F(SessionManagerTest, OnlyAHarnessThatSaysSoHoldsConversations) {
    api::StartRequest request;
    request.harness = "asking";
    request.directory = (dir_ / "project").string();
    request.conversation = true;
    auto refused = manager_->start(request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(refused.error().message.find("does not hold conversations"), std::string::npos)
        << refused.error().message;
    // A session that is not a conversation takes no prompts.
    const std::string shell = start_shell();
    EXPECT_EQ(manager_->prompt(shell, {"hello", {}}).error().code, ErrorCode::conflict);
    EXPECT_EQ(manager_->resume(shell).error().code, ErrorCode::conflict);
    // Malformed MCP servers are refused, naming the entry.
    request.harness = "talking";
    request.mcp_servers = R"([{"name":"files"}])";
    auto bad = manager_->start(request);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("mcp_servers[0] (stdio) has no \"command\""), std::string::npos)
        << bad.error().message;
}

// Resume: the same session in a new container, continuing the harness's own conversation
// (the id its parser reported), its events going on; the old harness's open question and
// unfinished turn are closed, since nobody can answer them now.
TEST_F(SessionManagerTest, AnEndedConversationIsResumedWhereTheHarnessLeftIt) {
    api::StartRequest request;
    request.harness = "talking";
    request.directory = (dir_ / "project").string();
    request.conversation = true;
    request.prompt = "start";
    request.model = "opus";
    auto started = manager_->start(request);
    ASSERT_TRUE(started.ok()) << started.error().message;
    const std::string id = started->id;
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    ASSERT_TRUE(store_->add_session_events(id, clock_.now_ms(),
                                           {{"session_info", R"({"harnessSessionId":"abc-123"})"},
                                            {"permission_request", R"({"toolCallId":"t1","options":[]})"}})
                    .ok());
    EXPECT_EQ(manager_->resume(id).error().code, ErrorCode::conflict) << "it runs";
    ASSERT_TRUE(manager_->stop(id).ok());
    ASSERT_TRUE(pump_until([&] { return state(id) != SessionState::running; }));

    auto resumed = manager_->resume(id);
    ASSERT_TRUE(resumed.ok()) << resumed.error().message;
    EXPECT_EQ(resumed->id, id);
    EXPECT_EQ(resumed->state, SessionState::starting);
    ASSERT_TRUE(pump_until([&] { return state(id) == SessionState::running; }));
    EXPECT_EQ(requests_.back().resume, "abc-123");
    EXPECT_EQ(requests_.back().model, "opus");
    EXPECT_TRUE(requests_.back().conversation);
    auto events = store_->session_events(id, 0, 100);
    ASSERT_TRUE(events.ok());
    std::vector<std::string> kinds;
    for (const auto& event : *events) kinds.push_back(event.kind);
    EXPECT_EQ(kinds, (std::vector<std::string>{"user_prompt", "session_info", "permission_request",
                                               "permission_answer", "error", "result"}));
    EXPECT_EQ(events->back().payload.find(R"("stopReason":"cancelled")"), 1u) << events->back().payload;
    // The next prompt starts a turn at once: nothing is left running.
    auto next = manager_->prompt(id, {"go on", {}});
    ASSERT_TRUE(next.ok()) << next.error().message;
    EXPECT_FALSE(next->queued);
}


// A restarted handlerd adopts a running conversation: its parser is told the harness's
// own session id (a new parser has not seen the harness say it), and the turns go on
// from the stored events. A conversation just started or resumed gets a fresh parser.
TEST_F(SessionManagerTest, ARestartedHandlerdToldTheParserWhichConversationRuns) {
    const std::string id = start_talking();
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(catalog_.reopened.size(), 1u);
    EXPECT_FALSE(catalog_.reopened[0]) << "a new harness: a new parser";
    ASSERT_TRUE(store_->add_session_events(id, clock_.now_ms(),
                                           {{"session_info", R"({"harnessSessionId":"thread-1"})"},
                                            {"session_info", R"({"title":"named"})"}})
                    .ok());
    ASSERT_TRUE(manager_->prompt(id, {"one", {}}).ok());

    manager_.reset();
    make_manager();
    bool reconciled = false;
    manager_->reconcile([&] { reconciled = true; });
    ASSERT_TRUE(pump_until([&] { return reconciled; }));
    ASSERT_GE(catalog_.reopened.size(), 2u);
    EXPECT_EQ(catalog_.reopened.back(), std::optional<std::string>("thread-1"));
    // The turn of "one" still runs, as the events say: the next prompt waits for it.
    auto next = manager_->prompt(id, {"two", {}});
    ASSERT_TRUE(next.ok()) << next.error().message;
    EXPECT_TRUE(next->queued);
}

// Images go only to a harness that says it takes them, and then in the prompt's payload,
// the one its user_prompt event keeps for every client.
TEST_F(SessionManagerTest, AnImageGoesOnlyToAHarnessThatTakesImages) {
    const std::string id = start_talking();
    ASSERT_FALSE(id.empty());
    ShimDouble shim;
    connect_shim(shim, id, 0);
    const api::Prompt with_image{"what is it?", {{"image/png", "iVBORw0KGgo="}}};
    auto refused = manager_->prompt(id, with_image);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(refused.error().message.find("harness 'talking' takes no images"), std::string::npos)
        << refused.error().message;

    catalog_.harnesses.at("talking").description.prompt_content = {"image"};
    auto sent = manager_->prompt(id, with_image);
    ASSERT_TRUE(sent.ok()) << sent.error().message;
    std::string input;
    ASSERT_TRUE(pump_until([&] {
        for (const auto& frame : shim.received())
            if (frame.type == shim::FrameType::input) input += frame.payload;
        return input.find("PROMPT") != std::string::npos;
    }));
    const std::string payload = R"({"promptId":")" + sent->prompt_id +
                                R"(","content":{"type":"text","text":"what is it?"},)"
                                R"("images":[{"mimeType":"image/png","data":"iVBORw0KGgo="}]})";
    EXPECT_EQ(input, "PROMPT " + payload + "\n");
    auto events = store_->session_events(id, 0, 100);
    ASSERT_TRUE(events.ok());
    const auto recorded = std::find_if(events->begin(), events->end(),
                                       [](const store::SessionEvent& event) { return event.kind == "user_prompt"; });
    ASSERT_NE(recorded, events->end());
    EXPECT_EQ(recorded->payload, payload);
}

} // namespace
} // namespace handler::sessions
