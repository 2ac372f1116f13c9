// One live session on handlerd's side: the control socket its shim connects to, the
// current connection, the output log and replay buffer, the attached clients, the event
// parser of a headless run, and the session's egress proxy (docs/architecture.md,
// "Sessions"). The session manager makes one per live session and closes it when the
// session ends; what a channel needs back from the manager is ChannelOwner, below.
//
// Threading: the io thread only.
#pragma once

#include "api/session_control.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "plugins/launch_spec.hpp"
#include "network/egress_proxy.hpp"
#include "sessions/connection_origin.hpp"
#include "sessions/harness_catalog.hpp"
#include "sessions/output_log.hpp"
#include "sessions/session_keys.hpp"
#include "sessions/terminal_filter.hpp"
#include "sessions/turns.hpp"
#include "store/records.hpp"

#include <handler/shim_protocol.hpp>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::sessions {

// What a channel asks of the session manager: the events store, the clock, and what to do
// when the shim reports an exit or goes quiet. Abstract so that a channel is not tied to
// the manager's insides (and a later owner, a conversation, can be one too).
class ChannelOwner {
public:
    virtual ~ChannelOwner() = default;
    virtual const Clock& clock() const = 0;
    // Stores events a session's harness produced; returns them numbered (and published).
    virtual std::vector<store::SessionEvent> store_events(const std::string& id,
                                                          const std::vector<plugins::SessionEvent>& produced) = 0;
    // Calls `each` with every stored event of session `id` after seq `after`, oldest first.
    virtual void for_each_event(const std::string& id, std::int64_t after,
                                const std::function<void(const store::SessionEvent&)>& each) = 0;
    // The payload bytes stored for session `id` so far.
    virtual std::uint64_t events_bytes(const std::string& id) = 0;
    // The shim reported the program's exit: the session is finished.
    virtual void shim_exited(const std::string& id, std::int64_t exit_code) = 0;
    // The shim's connection dropped and it did not come back: is the container still there?
    virtual void shim_lost(const std::string& id) = 0;
    // The session ran past its time: stop its container.
    virtual Result<void> request_stop(const std::string& id) = 0;
    // A client of this channel is gone (its attach id no longer names anything).
    virtual void client_gone(std::uint64_t attach_id) = 0;
    // Who made one of the session's proxy connections (connection_origin.hpp).
    virtual void record_origin(store::NetworkOrigin origin) = 0;
};

struct ChannelOptions {
    std::size_t replay_bytes = std::size_t{1} << 20;
    std::uint64_t events_limit_bytes = std::uint64_t{64} << 20;
    std::chrono::milliseconds lost_link_check{1'500};
    // How long the shim has to say who opened a proxy connection. It answers at once from
    // /proc; a shim that does not by then is stuck or not the real one.
    std::chrono::milliseconds who_timeout{2'000};
};

// The session's egress proxy and what it uses (the session's keys, its resolver), made
// by the manager and owned by the channel so that they close together.
struct SessionProxy {
    std::unique_ptr<SessionKeys> keys; // before proxy, which uses them
    std::unique_ptr<SessionResolver> resolver;
    std::unique_ptr<network::EgressProxy> proxy;
};

// The channel is its proxy's ConnectionTracer: it asks the shim (WHO) who holds each
// program connection and records the answer with the tool call that explains it.
class Channel : public std::enable_shared_from_this<Channel>, public network::ConnectionTracer {
public:
    Channel(ChannelOwner& owner, boost::asio::io_context& io, std::string id, bool tty, OutputLog log,
            ChannelOptions options);

    // Listens on <control_dir>/control.sock for the shim.
    Result<void> listen(const std::filesystem::path& control_dir);
    // Replays what the log holds, so a client attaching right after a restart sees the
    // screen before the shim has reconnected.
    void preload();
    // The session's egress proxy; started here, stopped when the channel closes.
    Result<void> start_proxy(SessionProxy proxy);
    // The policy changed: the proxy decides its open tunnels again.
    void reevaluate();
    // The proxy's connections: the most open at once since the last call, and now
    // (EgressProxy::take_peak_connections). Both 0 without a proxy.
    std::pair<std::size_t, std::size_t> take_proxy_connections();
    // Stops the session at `deadline` (ms since the epoch; one already past stops it at
    // once), first telling its clients why in an error event.
    void stop_at(std::int64_t deadline, std::chrono::milliseconds limit);
    // A headless run's events, parsed by the harness's parser. A one-shot run's input
    // ends after its result; a conversation's stays open for the next prompt.
    void parse_events(OpenedEvents opened, bool conversation);
    // What the harness finds on its stdin at start, kept until the shim connects whatever
    // its size (the plugin wrote it, not a client): what its launch gives, then the
    // prompt in its protocol, for a harness whose stdin is one.
    Result<void> start_input(std::string launch_input, const std::string& prompt);
    // A client's typing. A harness whose stdin is its protocol gets none: a stray line
    // would break it, and the session's answers reach it through answer().
    void client_input(std::string_view bytes);
    void client_input_eof();
    // A client's answer to the open permission request of tool call `tool_call_id`.
    Result<void> answer(std::string_view tool_call_id, std::string_view option_id);

    // A conversation's prompt (docs/conversations.md): it starts a turn at once when none
    // runs, else it waits (a prompt_queued event). Either way its user_prompt event comes
    // when its turn starts.
    struct Submitted {
        std::string prompt_id;
        bool queued = false;
    };
    Result<Submitted> submit(const api::Prompt& prompt);
    // Withdraws a waiting prompt. conflict: its turn has started; not_found: no such prompt.
    Result<void> withdraw(std::string_view prompt_id);
    // Interrupts the running turn through the harness. conflict: none runs; unavailable:
    // the harness cannot be interrupted.
    Result<void> cancel();
    // Changes a setting of the live conversation through the harness; unavailable when
    // the harness cannot while it runs.
    Result<void> configure(std::string_view name, std::string_view value);
    // A turn that can no longer end by itself (its harness is gone): its result is
    // recorded as cancelled, saying why, so every client stops waiting for it.
    void end_open_turn(const std::string& why);
    // A resumed conversation's harness is a new process: the old one's questions are
    // closed (nobody can answer them now) and its unfinished turn ends, saying `why`.
    void new_harness(const std::string& why);
    const Turns& turns() const { return turns_; }
    bool conversation() const { return conversation_; }
    // Closes the socket, the proxy and the link; tells every client `reason` (nothing when
    // empty: they were told of the exit).
    void close(const std::string& reason);

    api::Attached attach(std::uint64_t attach_id, std::weak_ptr<api::TerminalClient> client,
                         const api::AttachOptions& options);
    void detach(std::uint64_t attach_id) { clients_.erase(attach_id); }
    bool writable(std::uint64_t attach_id) const;
    void resize(std::uint16_t rows, std::uint16_t cols);

    const OutputLog& log() const { return log_; }
    bool exited() const { return exit_code_.has_value(); }

    // ConnectionTracer: never waits; the origin is recorded when the shim answers, or as
    // unknown (saying why) when it cannot.
    void trace(std::int64_t connection, std::uint16_t peer_port) override;
    // ConnectionTracer: `done` runs when the WHO for `connection` is answered or expires.
    void when_traced(std::int64_t connection, std::function<void()> done) override;
    // At most this many WHOs wait for an answer; a connection past it is recorded as unknown.
    static constexpr std::size_t kMaxPendingWho = 256;

private:
    using local = boost::asio::local::stream_protocol;
    struct Chunk {
        std::uint64_t offset = 0;
        api::OutputStream stream = api::OutputStream::terminal;
        std::shared_ptr<const std::string> bytes;
        std::uint64_t end() const { return offset + bytes->size(); }
    };
    struct Client {
        std::weak_ptr<api::TerminalClient> client;
        bool read_only = false;
        bool events = false;
        bool output = true;
        // Each client's own: its terminal started reading where its output began (a
        // replay may start in the middle of a sequence).
        TerminalFilter filter;
    };
    struct Link {
        explicit Link(boost::asio::io_context& io) : socket(io) {}
        local::socket socket;
        shim::FrameDecoder decoder;
        std::deque<std::string> outgoing;
        std::array<char, 16 * 1024> buffer{};
        bool writing = false;
        bool resumed = false;
        bool close_when_flushed = false;
        std::uint64_t next = 0;     // the shim offset expected next
        std::uint32_t version = 0;  // the shim's protocol version (its HELLO)
    };
    struct PendingWho {
        std::int64_t connection = 0;
        std::chrono::steady_clock::time_point deadline;
        std::vector<std::function<void()>> waiting; // when_traced(): run once it is settled
    };

    bool resumed() const { return link_ && link_->resumed; }
    void input(std::string_view bytes);
    void protocol_input(std::string_view bytes);
    void input_eof();
    void start_turn(const Turns::Prompt& prompt);
    void start_next_turn();
    Result<void> through_parser(Result<plugins::ParsedEvents> parsed);
    void accept();
    void read(const std::shared_ptr<Link>& link);
    void drop_link(const char* why);
    bool handle(const shim::Frame& frame);
    void receive(const shim::Output& output);
    void parse(std::string_view data);
    void reply(const plugins::ParsedEvents& parsed);
    void note_dropped_input();
    void track_requests(const store::SessionEvent& event);
    void load_open_requests();
    static std::vector<std::pair<std::string, std::string>> options_of(const std::string& request);
    void send_events(const std::vector<store::SessionEvent>& stored);
    void answered(const shim::OwnerAnswer& answer);
    void expire_who(bool all, const std::string& why);
    void arm_who_timer();
    void remember(Chunk chunk);
    std::shared_ptr<const std::string> for_terminal(TerminalFilter& filter, const std::shared_ptr<const std::string>& bytes);
    void send(std::string frames);
    static void write(const std::shared_ptr<Link>& link, std::weak_ptr<Channel> channel);

    ChannelOwner& owner_;
    boost::asio::io_context& io_;
    const std::string id_;
    const bool tty_;
    OutputLog log_;
    const ChannelOptions options_;
    local::acceptor acceptor_;
    boost::asio::steady_timer link_timer_;
    boost::asio::steady_timer deadline_timer_;
    std::filesystem::path socket_path_;
    std::shared_ptr<Link> link_;
    std::deque<Chunk> ring_;
    std::size_t ring_size_ = 0;
    std::map<std::uint64_t, Client> clients_;
    std::optional<shim::Size> size_;
    std::optional<std::int64_t> exit_code_;
    SessionProxy proxy_;
    std::unique_ptr<EventParser> parser_; // headless sessions whose harness has one
    std::string events_mode_ = "none";
    std::optional<std::uint64_t> events_bytes_; // payload bytes stored, against events_limit_bytes
    std::string pending_input_;
    bool pending_eof_ = false;
    bool owns_input_ = false;
    bool conversation_ = false;
    bool warned_input_ = false;
    bool warned_terminal_ = false;
    std::map<std::string, std::string> open_requests_; // tool call id -> its request's payload
    OpenToolCalls tool_calls_;
    std::map<std::uint32_t, PendingWho> pending_who_; // query -> the connection asked about
    std::uint32_t next_query_ = 0;
    boost::asio::steady_timer who_timer_;
    bool who_timer_armed_ = false;
    Turns turns_;
    bool starting_turn_ = false;
    std::mt19937_64 prompt_ids_{std::random_device{}()};
    static constexpr std::size_t kPendingInputBytes = 64 * 1024;
};

} // namespace handler::sessions
