#include "sessions/session_manager.hpp"

#include "api/routes_json.hpp"
#include "core/paths.hpp"
#include "network/egress_proxy.hpp"
#include "secrets/secret_store.hpp"
#include "sessions/session_keys.hpp"
#include "store/validation.hpp"
#include "sessions/launch.hpp"
#include "sessions/output_log.hpp"
#include "store/store.hpp"

#include <handler/shim_protocol.hpp>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace handler::sessions {
namespace {

namespace net = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using local = net::local::stream_protocol;
using store::SessionState;

struct Chunk {
    std::uint64_t offset = 0;
    api::OutputStream stream = api::OutputStream::terminal;
    std::shared_ptr<const std::string> bytes;
    std::uint64_t end() const { return offset + bytes->size(); }
};

api::OutputStream to_api(shim::Stream stream) {
    switch (stream) {
    case shim::Stream::terminal: return api::OutputStream::terminal;
    case shim::Stream::stdout_: return api::OutputStream::stdout_;
    case shim::Stream::stderr_: return api::OutputStream::stderr_;
    }
    return api::OutputStream::terminal;
}

bool is_live(SessionState state) {
    return state == SessionState::starting || state == SessionState::running;
}

// The deepest project whose folder holds `directory` (projects may nest).
std::optional<store::Project> project_for(const std::vector<store::Project>& projects,
                                          const fs::path& directory) {
    std::optional<store::Project> best;
    const fs::path where = directory.lexically_normal();
    for (const auto& project : projects) {
        const fs::path root = fs::path(project.path).lexically_normal();
        const auto relative = where.lexically_relative(root);
        if (relative.empty() || *relative.begin() == "..") continue;
        if (!best || project.path.size() > best->path.size()) best = project;
    }
    return best;
}

} // namespace

class Channel;

struct SessionManager::Impl : std::enable_shared_from_this<Impl>, network::AuditSink {
    Impl(net::io_context& io_context, store::Store& session_store,
         runtime::ContainerRuntime& container_runtime, Launcher harness_launcher,
         HarnessCheck harness_check, api::EventHub& hub, const Clock& time,
         SessionManagerOptions manager_options)
        : io(io_context), store(session_store), runtime(container_runtime),
          launcher(std::move(harness_launcher)), harness_exists(std::move(harness_check)),
          events(hub), clock(time),
          options(std::move(manager_options)),
          resolver(network::make_system_resolver(io_context, options.resolve, options.resolve_endpoints)),
          own_addresses(network::own_addresses()) {}

    // ---- AuditSink: the proxy's decisions go to the store ----------------------------
    // Batched: decisions and ends collect in memory and go to SQLite in one transaction
    // at most kAuditFlush later (and at shut-down). A transaction per decision cost more
    // than the proxy's own work (about 100 µs per connection, measured), on the one io
    // thread every session's proxy shares. Ids are handed out here, in order, so the log
    // reads the same as before; it is just up to kAuditFlush behind.
    static constexpr std::chrono::milliseconds kAuditFlush{20};

    std::int64_t record(const network::AuditEntry& entry) override {
        if (next_network_id == 0) {
            auto last = store.last_network_entry_id();
            if (!last) {
                spdlog::error("session {}: cannot record a network decision: {}", entry.session_id,
                              last.error().message);
                return 0;
            }
            next_network_id = *last + 1;
        }
        store::NetworkEntry row;
        row.id = next_network_id++;
        row.session_id = entry.session_id;
        row.at = entry.at_ms;
        row.host = entry.host;
        row.port = entry.port;
        row.method = entry.method;
        row.path = entry.path;
        row.verdict = entry.verdict == network::Verdict::allow    ? "allow"
                      : entry.verdict == network::Verdict::learned ? "learned"
                                                                   : "deny";
        row.rule = entry.rule;
        row.reason = entry.reason;
        row.secret = entry.secret;
        if (entry.verdict == network::Verdict::deny)
            spdlog::info("session {}: refused {}:{}: {}", entry.session_id, entry.host, entry.port,
                         entry.reason);
        pending_index[row.id] = pending_entries.size();
        pending_entries.push_back(std::move(row));
        schedule_audit_flush();
        return next_network_id - 1;
    }
    void finish(std::int64_t id, std::uint64_t up, std::uint64_t down,
                const std::string& reason) override {
        if (id == 0) return;
        if (auto found = pending_index.find(id); found != pending_index.end()) {
            auto& row = pending_entries[found->second];
            row.bytes_up = static_cast<std::int64_t>(up);
            row.bytes_down = static_cast<std::int64_t>(down);
            if (!reason.empty()) row.reason = reason;
            row.ended_at = clock.now_ms();
        } else {
            pending_finishes.push_back(
                {id, static_cast<std::int64_t>(up), static_cast<std::int64_t>(down), reason, clock.now_ms()});
        }
        schedule_audit_flush();
    }
    void schedule_audit_flush() {
        if (audit_flush_armed) return;
        audit_flush_armed = true;
        audit_timer.expires_after(kAuditFlush);
        audit_timer.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
            auto self = weak.lock();
            if (!self) return;
            self->audit_flush_armed = false;
            if (!error) self->flush_audit();
        });
    }
    void flush_audit() {
        if (pending_entries.empty() && pending_finishes.empty()) return;
        if (auto written = store.write_network_batch(pending_entries, pending_finishes); !written)
            spdlog::error("cannot record {} network decisions: {}", pending_entries.size() + pending_finishes.size(),
                          written.error().message);
        pending_entries.clear();
        pending_finishes.clear();
        pending_index.clear();
    }

    // The live policy of a session: read at every connection, so an edit of its agent or
    // project applies to the next one (and reevaluate() cuts what is now refused). The
    // allow-list is the agent's, then the project's; a session without an agent gets the
    // project's alone.
    network::Policy policy_for(const std::string& id) {
        if (const auto found = policies.find(id); found != policies.end()) return found->second;
        return policies.emplace(id, build_policy(id)).first->second;
    }

    network::Policy build_policy(const std::string& id) {
        network::Policy policy;
        policy.mode = network::Mode::filtered;
        auto session = store.get_session(id);
        if (!session) {
            policy.mode = network::Mode::none; // gone: nothing but what cannot match
            return policy;
        }
        for (const auto& text : session->model_hosts)
            if (auto rule = network::parse_rule(text)) policy.model_hosts.push_back(*rule);
        // Addon hosts are what addons asked for, at the start or while the session runs:
        // they never open the host's loopback or network (a name the user pinned in
        // [network] resolve still reaches its address: that is the user's choice).
        const auto allow = [&policy](const std::vector<std::string>& hosts, bool from_plugin) {
            for (const auto& text : hosts)
                if (auto rule = network::parse_rule(text)) {
                    rule->from_plugin = from_plugin;
                    policy.allow.push_back(*rule);
                }
        };
        std::optional<store::Agent> agent;
        if (session->agent_id)
            if (auto found = store.get_agent(*session->agent_id)) agent = *found;
        if (agent) {
            policy.agent = agent->name;
            policy.mode = agent->network_mode;
            allow(agent->allowed_hosts, false);
        }
        if (auto project = store.get_project(session->project_id)) allow(project->allowed_hosts, false);
        allow(session->addon_hosts, true);
        if (session->network_mode) policy.mode = *session->network_mode;
        policy.learn_until_ms = session->learn_until.value_or(0);
        return policy;
    }

    // Runs `work` on the worker thread (or `pool`), then `then(result)` on the io thread
    // unless the manager has been shut down meanwhile.
    template <class Work, class Then>
    void in_background(Work work, Then then) {
        in_background(worker, std::move(work), std::move(then));
    }
    template <class Work, class Then>
    void in_background(net::thread_pool& pool, Work work, Then then) {
        net::post(pool, [weak = weak_from_this(), work = std::move(work),
                           then = std::move(then)]() mutable {
            auto self = weak.lock();
            if (!self || self->stopped) return;
            auto result = work();
            net::post(self->io, [weak, then = std::move(then),
                                 result = std::move(result)]() mutable {
                auto owner = weak.lock();
                if (owner && !owner->stopped) then(std::move(result));
            });
        });
    }

    void publish(const store::Session& session) {
        events.publish(api::event_json("session.updated", api::to_json(session), clock.now_ms()));
    }

    // Whether `plugin_id` is the session's harness or one of its agent's addons. Any thread
    // (the store is thread-safe).
    bool uses(const store::Session& session, const std::string& plugin_id) {
        if (session.harness == plugin_id) return true;
        if (!session.agent_id) return false;
        const auto agent = store.get_agent(*session.agent_id);
        return agent && std::find(agent->addons.begin(), agent->addons.end(), plugin_id) != agent->addons.end();
    }

    // Session `id` if it is live and uses `plugin_id`; what a plugin's host services may
    // act on (any thread).
    Result<store::Session> plugin_session(const std::string& plugin_id, const std::string& id) {
        auto session = store.get_session(id);
        if (!session || !is_live(session->state) || !uses(*session, plugin_id))
            return make_error(ErrorCode::forbidden,
                              "session " + id + " is not a live session that uses plugin '" + plugin_id + "'");
        return session;
    }

    // A plugin's host rule joins a live session's addon hosts (io thread).
    void add_plugin_host(const std::string& id, const std::string& rule, const std::string& plugin_id,
                         const std::string& reason) {
        auto session = store.get_session(id);
        if (!session || !is_live(session->state)) return;
        auto hosts = session->addon_hosts;
        if (std::find(hosts.begin(), hosts.end(), rule) != hosts.end()) return;
        hosts.push_back(rule);
        store::SessionChanges changes;
        changes.addon_hosts = std::move(hosts);
        if (record(id, changes))
            spdlog::info("session {}: plugin '{}' allowed {}{}{}", id, plugin_id, rule, reason.empty() ? "" : ": ",
                         reason);
    }

    // Records a state change and tells the events stream; logs (never throws) on error.
    std::optional<store::Session> record(std::string_view id, const store::SessionChanges& changes) {
        if (const auto found = policies.find(id); found != policies.end()) policies.erase(found);
        auto updated = store.update_session(id, changes);
        if (!updated) {
            spdlog::error("session {}: cannot record its state: {}", id, updated.error().message);
            return std::nullopt;
        }
        publish(*updated);
        return std::move(*updated);
    }

    std::shared_ptr<Channel> channel(std::string_view id) {
        const auto found = channels.find(id);
        return found == channels.end() ? nullptr : found->second;
    }

    Result<std::shared_ptr<Channel>> open_channel(const store::Session& session);
    Result<store::Session> stop_session(std::string_view id);

    // handler's CA, and the system's CAs plus it, for the container to trust. Read-only
    // inside (the control folder is mounted so), and written before it starts.
    Result<void> write_trust_files(const fs::path& control_dir) {
        std::string bundle;
        if (std::ifstream system(options.system_ca_bundle, std::ios::binary); system) {
            std::ostringstream text;
            text << system.rdbuf();
            bundle = text.str();
            if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
        }
        bundle += options.ca_certificate_pem;
        using File = std::pair<const char*, const std::string*>;
        for (const auto& [name, text] : {File{kCaCertificateName, &options.ca_certificate_pem},
                                         File{kTrustBundleName, &bundle}}) {
            std::ofstream out(control_dir / name, std::ios::binary | std::ios::trunc);
            out << *text;
            if (!out.flush())
                return make_error(ErrorCode::internal,
                                  "cannot write " + (control_dir / name).string() + " for the session");
        }
        return {};
    }
    void finish(const std::string& id, std::optional<std::int64_t> exit_code, SessionState state,
                std::optional<std::string> message);
    void remove_container_later(std::string container_id);
    void check_container(const std::string& id);
    // Starts the container, building the harness's image first when `recipe` is set
    // and no image of it exists yet (on the worker thread: it takes a minute or two).
    void launch_container(const std::string& id, runtime::ContainerSpec spec,
                          std::optional<runtime::LayerRecipe> recipe = std::nullopt);
    // Stores events a session's harness produced and returns them numbered.
    std::vector<store::SessionEvent> store_events(const std::string& id,
                                                  const std::vector<plugins::SessionEvent>& produced);
    // Sends every stored event of session `id` to `client`, oldest first.
    void replay_events(const std::string& id, api::TerminalClient& client) {
        std::int64_t after = 0;
        for (;;) {
            auto page = store.session_events(id, after, 1000);
            if (!page) {
                spdlog::error("session {}: events not read: {}", id, page.error().message);
                return;
            }
            for (const auto& event : *page) client.event(event);
            if (page->size() < 1000) return;
            after = page->back().seq;
        }
    }

    net::io_context& io;
    store::Store& store;
    runtime::ContainerRuntime& runtime;
    Launcher launcher;
    HarnessCheck harness_exists;
    api::EventHub& events;
    const Clock& clock;
    const SessionManagerOptions options;
    // One thread: container commands run in the order asked for (a stop never overtakes
    // the start it follows).
    net::thread_pool worker{1};
    // Image builds take minutes; on a thread of their own they do not hold up every other
    // session's start and stop. One at a time: two sessions of a harness build it once.
    net::thread_pool builder{1};
    std::map<std::string, std::shared_ptr<Channel>, std::less<>> channels;
    // Each session's policy as policy_for() last built it from the store, so a proxy
    // connection costs no query (three, with the rules parsed, when built). Dropped on
    // whatever can change it: an agent or project event, a change to the session's record.
    std::map<std::string, network::Policy, std::less<>> policies;
    std::map<std::uint64_t, std::string> attachments; // attach id → session id
    std::set<std::string> stop_requested;             // asked to stop while starting
    std::uint64_t next_attach_id = 1;
    std::atomic<bool> stopped = false; // read by the worker thread
    std::unique_ptr<network::Resolver> resolver;
    const std::vector<network::Address> own_addresses;
    std::uint64_t agent_events = 0; // the EventHub subscription that re-decides tunnels
    // The audit batch (record/finish above).
    std::int64_t next_network_id = 0; // 0: not read from the store yet
    std::vector<store::NetworkEntry> pending_entries;
    std::map<std::int64_t, std::size_t> pending_index; // id -> position in pending_entries
    std::vector<store::NetworkFinish> pending_finishes;
    net::steady_timer audit_timer{io};
    bool audit_flush_armed = false;
};

// One live session on handlerd's side: the listening control socket, the current
// connection from its shim, the output log and replay buffer, and the attached clients.
class Channel : public std::enable_shared_from_this<Channel> {
public:
    Channel(SessionManager::Impl& owner, std::string id, bool tty, OutputLog log)
        : owner_(owner), id_(std::move(id)), tty_(tty), log_(std::move(log)),
          acceptor_(owner.io), link_timer_(owner.io), deadline_timer_(owner.io) {}

    Result<void> listen(const fs::path& control_dir) {
        socket_path_ = control_dir / kControlSocketName;
        std::error_code ignored;
        fs::remove(socket_path_, ignored); // a previous handlerd's
        boost::system::error_code error;
        acceptor_.open(local(), error);
        if (!error) acceptor_.bind(local::endpoint(socket_path_.string()), error);
        if (!error) acceptor_.listen(4, error);
        if (error)
            return make_error(ErrorCode::internal, "session " + id_ + ": cannot listen on " +
                                                       socket_path_.string() + ": " +
                                                       error.message());
        accept();
        return {};
    }

    // Replay what the log holds, so a client attaching right after a restart sees the
    // screen before the shim has reconnected.
    void preload() {
        auto tail = log_.tail(owner_.options.replay_bytes);
        if (!tail || tail->second.empty()) return;
        remember(Chunk{tail->first, tty_ ? api::OutputStream::terminal : api::OutputStream::stdout_,
                       std::make_shared<const std::string>(std::move(tail->second))});
    }

    // The session's egress proxy on <control dir>/proxy.sock.
    Result<void> start_proxy(const fs::path& control_dir) {
        if (owner_.options.proxy_port == 0) return {};
        network::ProxyOptions options;
        options.socket_path = control_dir / kProxySocketName;
        options.session_id = id_;
        options.listener_port = owner_.options.proxy_port;
        auto& owner = owner_;
        network::Resolver* resolver = owner.resolver.get();
        if (owner.options.secret_store) {
            keys_ = std::make_unique<SessionKeys>(owner.store, *owner.options.secret_store, id_);
            resolver_ = std::make_unique<SessionResolver>(*owner.resolver, *keys_);
            resolver = resolver_.get();
        }
        proxy_ = std::make_unique<network::EgressProxy>(
            owner.io, options, [&owner, id = id_] { return owner.policy_for(id); },
            network::ProxyServices{resolver, &owner, keys_.get(), owner.options.tls},
            [&owner] { return owner.clock.now_ms(); },
            owner.own_addresses);
        return proxy_->start();
    }

    void reevaluate() {
        if (proxy_) proxy_->reevaluate();
    }

    // Stops the session at `deadline` (ms since the epoch; one already past stops it at
    // once), first telling its clients why in an error event.
    void stop_at(std::int64_t deadline, std::chrono::milliseconds limit) {
        const std::int64_t left = std::max<std::int64_t>(0, deadline - owner_.clock.now_ms());
        deadline_timer_.expires_after(std::chrono::milliseconds(left));
        deadline_timer_.async_wait([weak = weak_from_this(), limit](const boost::system::error_code& error) {
            auto self = weak.lock();
            if (error || !self) return;
            const std::string why = "handlerd stopped this headless run after " +
                                    std::to_string(limit.count() / 60000) +
                                    " minutes ([sessions] headless_timeout_minutes in config.toml)";
            spdlog::warn("session {}: {}", self->id_, why);
            self->send_events(self->owner_.store_events(
                self->id_, {{plugins::EventKind::error, json::serialize(json::object{{"message", why}})}}));
            if (auto stopped = self->owner_.stop_session(self->id_); !stopped)
                spdlog::warn("session {}: {}", self->id_, stopped.error().message);
        });
    }

    void parse_events(OpenedEvents opened) {
        parser_ = std::move(opened.parser);
        events_mode_ = parser_ ? std::move(opened.mode) : "none";
        owns_input_ = parser_ && opened.owns_input;
        if (parser_) load_open_requests();
    }

    // What the harness finds on its stdin at start, kept until the shim connects whatever
    // its size (the plugin wrote it, not a client): what its launch gives, then the
    // prompt in its protocol, for a harness whose stdin is one.
    Result<void> start_input(std::string launch_input, const std::string& prompt) {
        pending_input_ = std::move(launch_input);
        if (!owns_input_) return {};
        auto parsed = parser_->prompt(prompt);
        if (!parsed) return parsed.take_error();
        pending_input_ += parsed->input;
        return {};
    }

    // A client's typing. A harness whose stdin is its protocol gets none: a stray line
    // would break it, and the session's answers reach it through answer().
    void client_input(std::string_view bytes) {
        if (owns_input_) return note_dropped_input();
        input(bytes);
    }
    void client_input_eof() {
        if (owns_input_) return note_dropped_input();
        input_eof();
    }

    // A client's answer to the open permission request of tool call `tool_call_id`.
    Result<void> answer(std::string_view tool_call_id, std::string_view option_id) {
        const auto found = open_requests_.find(std::string(tool_call_id));
        if (!parser_ || found == open_requests_.end())
            return make_error(ErrorCode::not_found,
                              "session " + id_ + " has no open permission request for tool call '" +
                                  std::string(tool_call_id) + "' (answered already, or never asked); `handler "
                                  "session events " + id_ + "` shows its requests and answers");
        const std::string request = found->second;
        std::string kind, offered;
        for (const auto& [id, option_kind] : options_of(request)) {
            if (id == option_id) kind = option_kind;
            offered += (offered.empty() ? "" : ", ") + id;
        }
        if (kind.empty())
            return make_error(ErrorCode::invalid_argument, "'" + std::string(option_id) +
                                                               "' is not an option of this request; it offers " +
                                                               (offered.empty() ? std::string("none") : offered));
        auto parsed = parser_->answer(request, json::serialize(json::object{{"optionId", option_id}}));
        if (!parsed) return parsed.take_error();
        std::vector<plugins::SessionEvent> events{
            {plugins::EventKind::permission_answer,
             json::serialize(json::object{{"toolCallId", tool_call_id}, {"optionId", option_id}, {"kind", kind}})}};
        events.insert(events.end(), parsed->events.begin(), parsed->events.end());
        send_events(owner_.store_events(id_, events));
        reply(*parsed);
        return {};
    }

    void close(const std::string& reason) {
        if (proxy_) proxy_->stop();
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        link_timer_.cancel();
        deadline_timer_.cancel();
        // What is queued for the shim (the EXIT_ACK that lets it end at once) still goes
        // out; the connection closes after it.
        if (link_) {
            link_->close_when_flushed = true;
            if (!link_->writing) link_->socket.close(ignored);
        }
        link_.reset();
        std::error_code ignored_fs;
        if (!socket_path_.empty()) fs::remove(socket_path_, ignored_fs);
        auto clients = std::move(clients_);
        clients_.clear();
        for (auto& [attach_id, client] : clients) {
            owner_.attachments.erase(attach_id);
            if (reason.empty()) continue;
            if (auto alive = client.client.lock()) alive->ended(reason);
        }
    }

    // ---- clients --------------------------------------------------------------------

    api::Attached attach(std::uint64_t attach_id, std::weak_ptr<api::TerminalClient> client,
                         const api::AttachOptions& options) {
        auto alive = client.lock();
        const std::uint64_t from = options.from.value_or(0);
        if (alive)
            for (const Chunk& chunk : ring_) {
                if (chunk.end() <= from) continue;
                if (chunk.offset >= from) {
                    alive->output(chunk.stream, chunk.offset, chunk.bytes);
                } else {
                    const auto skip = static_cast<std::size_t>(from - chunk.offset);
                    alive->output(chunk.stream, from,
                                  std::make_shared<const std::string>(chunk.bytes->substr(skip)));
                }
            }
        if (alive && options.events) replay_events(*alive);
        api::Attached attached;
        attached.attach_id = attach_id;
        attached.produced = log_.end();
        attached.tty = tty_;
        attached.events = events_mode_;
        if (exit_code_) {
            if (alive) alive->exited(*exit_code_);
            attached.attach_id = 0;
            return attached;
        }
        clients_.emplace(attach_id, Client{std::move(client), options.read_only, options.events});
        // A terminal program repaints on SIGWINCH, so the newcomer (and everyone else)
        // gets a whole current screen rather than only the tail of the replay.
        if (tty_ && !options.read_only && resumed()) send(shim::encode_empty(shim::FrameType::redraw));
        return attached;
    }

    void detach(std::uint64_t attach_id) { clients_.erase(attach_id); }

    void replay_events(api::TerminalClient& client) { owner_.replay_events(id_, client); }

    bool writable(std::uint64_t attach_id) const {
        const auto found = clients_.find(attach_id);
        return found != clients_.end() && !found->second.read_only;
    }

    void input(std::string_view bytes) {
        if (!resumed()) {
            // The shim is (re)connecting, e.g. right after a handlerd restart: keep what
            // is typed meanwhile, up to a bound, rather than lose it.
            if (pending_input_.size() + bytes.size() <= kPendingInputBytes) pending_input_.append(bytes);
            else spdlog::warn("session {}: input while its shim is away is over {} bytes; dropped", id_, kPendingInputBytes);
            return;
        }
        std::string frames;
        while (!bytes.empty()) {
            const auto piece = bytes.substr(0, shim::kMaxPayload);
            shim::append_frame(frames, shim::FrameType::input, piece);
            bytes.remove_prefix(piece.size());
        }
        send(std::move(frames));
    }

    void input_eof() {
        if (resumed()) send(shim::encode_empty(shim::FrameType::input_eof));
        else pending_eof_ = true;
    }

    void resize(std::uint16_t rows, std::uint16_t cols) {
        // The latest client to resize decides the size, as in tmux's "latest" mode.
        size_ = {rows, cols};
        if (resumed()) send(shim::encode_resize(rows, cols));
    }

    const OutputLog& log() const { return log_; }
    bool exited() const { return exit_code_.has_value(); }

private:
    struct Client {
        std::weak_ptr<api::TerminalClient> client;
        bool read_only = false;
        bool events = false;
    };
    struct Link {
        explicit Link(net::io_context& io) : socket(io) {}
        local::socket socket;
        shim::FrameDecoder decoder;
        std::deque<std::string> outgoing;
        std::array<char, 16 * 1024> buffer{};
        bool writing = false;
        bool resumed = false;
        bool close_when_flushed = false;
        std::uint64_t next = 0; // the shim offset expected next
    };

    bool resumed() const { return link_ && link_->resumed; }

    void accept() {
        auto link = std::make_shared<Link>(owner_.io);
        acceptor_.async_accept(link->socket, [weak = weak_from_this(), link](
                                                 const boost::system::error_code& error) {
            auto self = weak.lock();
            if (!self || error) return;
            // A reconnecting shim replaces its old connection (which may not have noticed
            // yet that it is dead).
            if (self->link_) {
                boost::system::error_code ignored;
                self->link_->socket.close(ignored);
            }
            self->link_ = link;
            self->link_timer_.cancel();
            self->read(link);
            self->accept();
        });
    }

    void read(const std::shared_ptr<Link>& link) {
        link->socket.async_read_some(
            net::buffer(link->buffer),
            [weak = weak_from_this(), link](const boost::system::error_code& error, std::size_t n) {
                auto self = weak.lock();
                if (!self || self->link_ != link) return;
                if (error) return self->drop_link("the shim disconnected");
                link->decoder.feed(std::string_view(link->buffer.data(), n));
                while (auto frame = link->decoder.next())
                    if (!self->handle(*frame)) return self->drop_link("protocol error");
                if (link->decoder.failed())
                    return self->drop_link("oversized or unknown frame");
                self->read(link);
            });
    }

    void drop_link(const char* why) {
        if (!link_) return;
        spdlog::debug("session {}: {}", id_, why);
        boost::system::error_code ignored;
        link_->socket.close(ignored);
        link_.reset();
        if (exit_code_) return;
        // A shim that is only reconnecting comes back within a few hundred ms; one that
        // died with its container never does, and sends no exit.
        link_timer_.expires_after(owner_.options.lost_link_check);
        link_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
            auto self = weak.lock();
            if (error || !self || self->link_ || self->exit_code_) return;
            self->owner_.check_container(self->id_);
        });
    }

    // False: a malformed frame; the connection is dropped.
    bool handle(const shim::Frame& frame) {
        switch (frame.type) {
        case shim::FrameType::hello: {
            const auto hello = shim::decode_hello(frame.payload);
            if (!hello || hello->version != shim::kProtocolVersion) return false;
            std::uint64_t from = log_.end();
            if (hello->produced < from) {
                // Not the shim this log came from; take what it has rather than nothing.
                spdlog::warn("session {}: the shim reports {} bytes of output, the log has {}",
                             id_, hello->produced, from);
                from = hello->oldest;
            }
            link_->next = from;
            link_->resumed = true;
            send(shim::encode_resume(from));
            if (size_) send(shim::encode_resize(size_->rows, size_->cols));
            if (!pending_input_.empty()) input(std::exchange(pending_input_, std::string()));
            if (std::exchange(pending_eof_, false)) input_eof();
            return true;
        }
        case shim::FrameType::output: {
            const auto output = shim::decode_output(frame.payload);
            if (!output) return false;
            receive(*output);
            return true;
        }
        case shim::FrameType::exit: {
            const auto code = shim::decode_i32(frame.payload);
            if (!code) return false;
            send(shim::encode_empty(shim::FrameType::exit_ack));
            if (!exit_code_) {
                exit_code_ = *code;
                for (auto& [attach_id, client] : clients_)
                    if (auto alive = client.client.lock()) alive->exited(*code);
                owner_.finish(id_, *code, SessionState::exited, std::nullopt);
            }
            return true;
        }
        default:
            return false; // a host → shim type coming back
        }
    }

    void receive(const shim::Output& output) {
        std::string_view data = output.data;
        std::uint64_t offset = output.offset;
        if (offset + data.size() <= link_->next) return; // already have it
        if (offset < link_->next) {
            data.remove_prefix(static_cast<std::size_t>(link_->next - offset));
            offset = link_->next;
        } else if (offset > link_->next) {
            const auto lost = offset - link_->next;
            spdlog::warn("session {}: {} bytes of output were lost while handlerd was away", id_,
                         lost);
            if (auto skipped = log_.skip(lost); !skipped)
                spdlog::error("session {}: {}", id_, skipped.error().message);
        }
        link_->next = offset + data.size();
        if (data.empty()) return;
        if (auto written = log_.append(data); !written)
            spdlog::error("session {}: {}", id_, written.error().message);
        Chunk chunk{offset, to_api(output.stream), std::make_shared<const std::string>(data)};
        remember(chunk);
        for (auto it = clients_.begin(); it != clients_.end();) {
            auto alive = it->second.client.lock();
            if (!alive) {
                owner_.attachments.erase(it->first);
                it = clients_.erase(it);
                continue;
            }
            alive->output(chunk.stream, chunk.offset, chunk.bytes);
            ++it;
        }
        if (parser_ && chunk.stream == api::OutputStream::stdout_) parse(data);
    }

    // The harness's stdout to events, stored, then sent to the clients that want them.
    // A parser that fails is dropped (the raw output is still logged): one bad piece of
    // output must not cost the session.
    void parse(std::string_view data) {
        auto parsed = parser_->feed(data);
        if (!parsed) {
            spdlog::warn("session {}: events stop here: {}", id_, parsed.error().message);
            parser_.reset();
            return;
        }
        reply(*parsed);
        auto* events = &parsed->events;
        if (events->empty()) return;
        if (!events_bytes_) {
            // Read once, at the first events: what is stored already (the prompt, what a
            // previous handlerd kept) counts.
            auto bytes = owner_.store.session_events_bytes(id_);
            events_bytes_ = bytes ? static_cast<std::uint64_t>(*bytes) : 0;
        }
        for (auto it = events->begin(); it != events->end(); ++it) {
            if (*events_bytes_ + it->json.size() <= owner_.options.events_limit_bytes) {
                *events_bytes_ += it->json.size();
                continue;
            }
            // The program inside writes these: it must not fill the user's disk.
            const std::string why = "this session's events reached the limit of " +
                                    std::to_string(owner_.options.events_limit_bytes) +
                                    " bytes; no more are kept (its output log goes on)";
            spdlog::warn("session {}: {}", id_, why);
            parser_.reset();
            events->erase(it, events->end());
            events->push_back({plugins::EventKind::error, json::serialize(json::object{{"message", why}})});
            break;
        }
        send_events(owner_.store_events(id_, *events));
    }

    // What the parser wrote for the harness's stdin.
    void reply(const plugins::ParsedEvents& parsed) {
        if (!parsed.input.empty()) input(parsed.input);
        if (parsed.close_input) input_eof();
    }

    void note_dropped_input() {
        if (std::exchange(warned_input_, true)) return;
        spdlog::warn("session {}: a client's input was not passed on: the harness's stdin is its protocol", id_);
    }

    // Keeps the open permission requests (by tool call) that stored events ask and answer.
    void track_requests(const store::SessionEvent& event) {
        if (event.kind != "permission_request" && event.kind != "permission_answer") return;
        boost::system::error_code error;
        const auto payload = json::parse(event.payload, error);
        const auto* call = error || !payload.is_object() ? nullptr : payload.as_object().if_contains("toolCallId");
        if (call == nullptr || !call->is_string()) return;
        if (event.kind == "permission_request") open_requests_[std::string(call->as_string())] = event.payload;
        else open_requests_.erase(std::string(call->as_string()));
    }

    // A parser re-opened after a restart: the requests still waiting are in the store.
    void load_open_requests() {
        std::int64_t after = 0;
        for (;;) {
            auto page = owner_.store.session_events(id_, after, 1000);
            if (!page || page->empty()) return;
            for (const auto& event : *page) track_requests(event);
            after = page->back().seq;
        }
    }

    // A request payload's options, (optionId, kind), leaving out any without both.
    static std::vector<std::pair<std::string, std::string>> options_of(const std::string& request) {
        std::vector<std::pair<std::string, std::string>> out;
        boost::system::error_code error;
        const auto payload = json::parse(request, error);
        const auto* options = error || !payload.is_object() ? nullptr : payload.as_object().if_contains("options");
        if (options == nullptr || !options->is_array()) return out;
        for (const auto& option : options->as_array()) {
            const auto* fields = option.if_object();
            const auto* id = fields ? fields->if_contains("optionId") : nullptr;
            const auto* kind = fields ? fields->if_contains("kind") : nullptr;
            if (id && id->is_string() && kind && kind->is_string())
                out.emplace_back(std::string(id->as_string()), std::string(kind->as_string()));
        }
        return out;
    }

    void send_events(const std::vector<store::SessionEvent>& stored) {
        for (const auto& event : stored) track_requests(event);
        for (const auto& event : stored)
            for (auto& [attach_id, client] : clients_)
                if (client.events)
                    if (auto alive = client.client.lock()) alive->event(event);
    }

    void remember(Chunk chunk) {
        ring_size_ += chunk.bytes->size();
        ring_.push_back(std::move(chunk));
        while (ring_size_ > owner_.options.replay_bytes && ring_.size() > 1) {
            ring_size_ -= ring_.front().bytes->size();
            ring_.pop_front();
        }
    }

    void send(std::string frames) {
        if (!link_ || frames.empty()) return;
        link_->outgoing.push_back(std::move(frames));
        if (!link_->writing) write(link_, weak_from_this());
    }

    // Static, so a closing link can finish its writes after its channel is gone.
    static void write(const std::shared_ptr<Link>& link, std::weak_ptr<Channel> channel) {
        link->writing = true;
        net::async_write(link->socket, net::buffer(link->outgoing.front()),
                         [weak = std::move(channel), link](const boost::system::error_code& error,
                                                           std::size_t) {
                             link->writing = false;
                             link->outgoing.pop_front();
                             if (link->close_when_flushed) {
                                 boost::system::error_code ignored;
                                 if (error || link->outgoing.empty()) return link->socket.close(ignored);
                                 return write(link, weak);
                             }
                             auto self = weak.lock();
                             if (!self || self->link_ != link) return;
                             if (error) return self->drop_link("write to the shim failed");
                             if (!link->outgoing.empty()) write(link, weak);
                         });
    }

    SessionManager::Impl& owner_;
    const std::string id_;
    const bool tty_;
    OutputLog log_;
    local::acceptor acceptor_;
    net::steady_timer link_timer_;
    net::steady_timer deadline_timer_;
    fs::path socket_path_;
    std::shared_ptr<Link> link_;
    std::deque<Chunk> ring_;
    std::size_t ring_size_ = 0;
    std::map<std::uint64_t, Client> clients_;
    std::optional<shim::Size> size_;
    std::optional<std::int64_t> exit_code_;
    std::unique_ptr<SessionKeys> keys_; // before proxy_, which uses them
    std::unique_ptr<SessionResolver> resolver_;
    std::unique_ptr<network::EgressProxy> proxy_;
    std::unique_ptr<EventParser> parser_; // headless sessions whose harness has one
    std::string events_mode_ = "none";
    std::optional<std::uint64_t> events_bytes_; // payload bytes stored, against events_limit_bytes
    std::string pending_input_;
    bool pending_eof_ = false;
    bool owns_input_ = false;
    bool warned_input_ = false;
    std::map<std::string, std::string> open_requests_; // tool call id -> its request's payload
    static constexpr std::size_t kPendingInputBytes = 64 * 1024;
};

// ---- Impl -----------------------------------------------------------------------------

Result<std::shared_ptr<Channel>> SessionManager::Impl::open_channel(const store::Session& session) {
    auto log = OutputLog::open(options.output_root / session.id, options.log_limit_bytes);
    if (!log) return log.take_error();
    const fs::path control_dir = options.control_root / session.id;
    if (auto made = ensure_private_dir(control_dir); !made) return made.take_error();
    auto channel = std::make_shared<Channel>(*this, session.id, session.tty, std::move(*log));
    if (auto listening = channel->listen(control_dir); !listening) return listening.take_error();
    if (auto proxied = channel->start_proxy(control_dir); !proxied) return proxied.take_error();
    if (!session.tty && options.open_events) {
        // A parser re-opened after a restart starts mid-stream: a line the old one had
        // half of is lost (its bytes are still in the output log).
        auto opened = options.open_events(session.harness, session.id);
        if (opened) channel->parse_events(std::move(*opened));
        else if (opened.error().code != ErrorCode::unavailable)
            spdlog::warn("session {}: no events: {}", session.id, opened.error().message);
    }
    channel->preload();
    if (!session.tty && options.headless_timeout.count() > 0)
        channel->stop_at(session.created_at + options.headless_timeout.count(), options.headless_timeout);
    channels[session.id] = channel;
    return channel;
}

// The session ended (exited, failed or lost): record it, close its channel once its
// clients have been told, and remove its container.
void SessionManager::Impl::finish(const std::string& id, std::optional<std::int64_t> exit_code,
                                  SessionState state, std::optional<std::string> message) {
    stop_requested.erase(id);
    auto current = store.get_session(id);
    if (!current) return;
    if (is_live(current->state)) {
        store::SessionChanges changes;
        changes.state = state;
        if (exit_code) changes.exit_code = exit_code;
        if (message) changes.message = message;
        record(id, changes);
    }
    if (auto found = channel(id)) {
        found->close(state == SessionState::exited ? std::string() : message.value_or("session ended"));
        channels.erase(id);
    }
    std::error_code ignored;
    fs::remove_all(options.control_root / id, ignored);
    if (current->container_id) remove_container_later(*current->container_id);
}

void SessionManager::Impl::remove_container_later(std::string container_id) {
    in_background(
        [this, container_id] { return runtime.remove(container_id); },
        [container_id](Result<void> removed) {
            if (!removed && removed.error().code != ErrorCode::not_found)
                spdlog::warn("cannot remove container {}: {}", container_id,
                             removed.error().message);
        });
}

// The shim went quiet without an exit: ask podman whether the container still runs.
void SessionManager::Impl::check_container(const std::string& id) {
    auto session = store.get_session(id);
    if (!session || !session->container_id || !is_live(session->state)) return;
    in_background([this, container = *session->container_id] { return runtime.inspect(container); },
                  [this, id](Result<runtime::ContainerInfo> info) {
                      auto found = channel(id);
                      if (!found || found->exited()) return;
                      if (info && info->state == runtime::ContainerState::running) return;
                      if (info)
                          finish(id, info->exit_code, SessionState::exited, std::nullopt);
                      else
                          finish(id, std::nullopt, SessionState::lost,
                                 "its container disappeared: " + info.error().message);
                  });
}

void SessionManager::Impl::launch_container(const std::string& id, runtime::ContainerSpec spec,
                                            std::optional<runtime::LayerRecipe> recipe) {
    if (recipe) {
        const std::string base = spec.image;
        in_background(
            builder,
            [this, id, base, recipe = std::move(*recipe)] {
                return runtime::ensure_layer_image(runtime, options.image_build_dir, base, recipe,
                                                   [&id](const std::string& line) {
                                                       spdlog::info("session {}: {}", id, line);
                                                   });
            },
            [this, id, spec = std::move(spec)](Result<std::string> image) mutable {
                if (!image) {
                    spdlog::warn("session {}: {}", id, image.error().message);
                    finish(id, std::nullopt, SessionState::failed, image.error().message);
                    return;
                }
                spec.image = std::move(*image);
                launch_container(id, std::move(spec));
            });
        return;
    }
    in_background(
        [this, spec = std::move(spec)]() -> Result<std::string> {
            auto present = runtime.image_exists(spec.image);
            if (!present) return present.take_error();
            if (!*present)
                return make_error(ErrorCode::not_found,
                                  "image " + spec.image +
                                      " is not built on this machine; run `handler setup`");
            return runtime.create_and_start(spec);
        },
        [this, id](Result<std::string> started) {
            if (!started) {
                spdlog::warn("session {}: {}", id, started.error().message);
                finish(id, std::nullopt, SessionState::failed, started.error().message);
                return;
            }
            store::SessionChanges changes;
            changes.container_id = *started;
            auto current = store.get_session(id);
            // The shim may already have reported an exit (a program that ends at once).
            if (current && current->state == SessionState::starting)
                changes.state = SessionState::running;
            record(id, changes);
            if (current && !is_live(current->state)) remove_container_later(*started);
            if (stop_requested.erase(id) > 0) {
                in_background(
                    [this, container = *started] {
                        return runtime.stop(container, options.stop_grace);
                    },
                    [](Result<void>) {});
            }
        });
}

std::vector<store::SessionEvent> SessionManager::Impl::store_events(
    const std::string& id, const std::vector<plugins::SessionEvent>& produced) {
    std::vector<std::pair<std::string, std::string>> rows;
    rows.reserve(produced.size());
    for (const auto& event : produced) {
        // Checked once here, so that every reader (the terminal, the API) can pass the
        // stored text on as it is.
        boost::system::error_code error;
        const auto payload = json::parse(event.json, error);
        if (error || !payload.is_object()) {
            spdlog::warn("session {}: the harness gave a {} event whose payload is not a JSON object; dropped",
                         id, plugins::to_string(event.kind));
            continue;
        }
        rows.emplace_back(plugins::to_string(event.kind), event.json);
    }
    if (rows.empty()) return {};
    auto stored = store.add_session_events(id, clock.now_ms(), rows);
    if (!stored) {
        spdlog::error("session {}: events not stored: {}", id, stored.error().message);
        return {};
    }
    for (const auto& event : *stored)
        events.publish(api::event_json("session.event", api::to_json(event), event.at));
    return std::move(*stored);
}

// ---- SessionManager -------------------------------------------------------------------

SessionManager::SessionManager(net::io_context& io, store::Store& store,
                               runtime::ContainerRuntime& runtime, Launcher launcher,
                               HarnessCheck harness_exists, api::EventHub& events,
                               const Clock& clock, SessionManagerOptions options)
    : impl_(std::make_shared<Impl>(io, store, runtime, std::move(launcher),
                                   std::move(harness_exists), events, clock, std::move(options))) {
    // An agent's mode or hosts, or a project's hosts, changed: every open tunnel is
    // decided again at once.
    impl_->agent_events = events.subscribe([weak = std::weak_ptr<Impl>(impl_)](const api::EventHub::Message& message) {
        auto impl = weak.lock();
        if (!impl || (message->find("\"type\":\"agent.") == std::string::npos &&
                      message->find("\"type\":\"project.updated\"") == std::string::npos))
            return;
        impl->policies.clear();
        for (auto& [id, channel] : impl->channels) channel->reevaluate();
    });
}

SessionManager::~SessionManager() {
    shut_down();
    // A container command already running is waited for: it holds references to the
    // runtime, which the daemon destroys after us.
    impl_->builder.join(); // a build under way finishes (its podman is not ours to kill)
    impl_->worker.join();
    impl_->flush_audit();
}

void SessionManager::shut_down() {
    if (impl_->stopped) return;
    impl_->stopped = true;
    impl_->events.unsubscribe(impl_->agent_events);
    auto channels = std::move(impl_->channels);
    impl_->channels.clear();
    for (auto& [id, channel] : channels) channel->close("handlerd is stopping; the session keeps running");
    impl_->attachments.clear();
    impl_->audit_timer.cancel();
    impl_->flush_audit(); // the proxies' last decisions and ends, written before we go
}

void SessionManager::reconcile(std::function<void()> done) {
    Impl& impl = *impl_;
    auto sessions = impl.store.list_sessions();
    if (!sessions) {
        spdlog::error("cannot read the sessions to re-adopt: {}", sessions.error().message);
        if (done) done();
        return;
    }
    // Channels first, before podman answers: a client attaching right after the restart
    // gets the screen from the log (not "no such terminal"), and the shims can reconnect
    // at once. Sessions whose containers turn out to be gone are finished below.
    for (const auto& session : *sessions)
        if (is_live(session.state) && !impl.channel(session.id))
            if (auto channel = impl.open_channel(session); !channel)
                spdlog::error("session {}: {}", session.id, channel.error().message);
    impl.in_background(
        [&impl] { return impl.runtime.list(runtime::kManagedSelector); },
        [&impl, sessions = std::move(*sessions),
         done = std::move(done)](Result<std::vector<runtime::ContainerInfo>> containers) {
            if (!containers) {
                // Without the list nothing can be decided; leave the records as they are.
                spdlog::error("cannot list session containers: {}", containers.error().message);
                if (done) done();
                return;
            }
            std::map<std::string, runtime::ContainerInfo> by_session;
            for (auto& info : *containers) by_session[info.session_id()] = info;
            std::size_t adopted = 0;
            for (const auto& listed : sessions) {
                const auto found = by_session.find(listed.id);
                // As it is now, not as it was listed: its shim may have reconnected and
                // reported the exit while podman was answering, and that must stand.
                auto current = impl.store.get_session(listed.id);
                if (!current) continue;
                const auto& session = *current;
                if (!is_live(session.state)) {
                    // Ended (earlier, or just now), but its container was not removed.
                    if (found != by_session.end()) impl.remove_container_later(found->second.id);
                    continue;
                }
                if (found == by_session.end()) {
                    impl.finish(session.id, std::nullopt, SessionState::lost,
                                "its container was gone when handlerd started");
                    continue;
                }
                const auto& info = found->second;
                store::SessionChanges changes;
                changes.container_id = info.id;
                if (info.state == runtime::ContainerState::running) {
                    if (!impl.channel(session.id)) {
                        auto channel = impl.open_channel(session);
                        if (!channel) {
                            spdlog::error("session {}: {}", session.id, channel.error().message);
                            continue;
                        }
                    }
                    changes.state = SessionState::running;
                    impl.record(session.id, changes);
                    ++adopted;
                } else {
                    impl.record(session.id, changes);
                    if (info.state == runtime::ContainerState::exited)
                        impl.finish(session.id, info.exit_code, SessionState::exited, std::nullopt);
                    else
                        impl.finish(session.id, std::nullopt, SessionState::lost,
                                    "its container was " + std::string(to_string(info.state)) +
                                        " when handlerd started");
                }
            }
            for (const auto& [session_id, info] : by_session) {
                const bool known = std::any_of(sessions.begin(), sessions.end(),
                                               [&](const auto& s) { return s.id == session_id; });
                if (!known)
                    spdlog::warn("container {} belongs to session '{}', which handler does not "
                                 "know; leaving it alone (podman rm -f {} removes it)",
                                 info.name, session_id, info.name);
            }
            spdlog::info("re-adopted {} running session(s)", adopted);
            if (done) done();
        });
}

Result<store::Session> SessionManager::start(const api::StartRequest& request) {
    Impl& impl = *impl_;
    if (impl.stopped) return make_error(ErrorCode::unavailable, "handlerd is stopping");
    if (!impl.options.refuse_sessions.empty())
        return make_error(ErrorCode::forbidden, impl.options.refuse_sessions);
    if (int{request.agent.has_value()} + int{request.harness.has_value()} +
            int{request.name.has_value()} > 1)
        return make_error(ErrorCode::invalid_argument,
                          "name at most one of an agent, a harness, or a name for either");
    if (!fs::path(request.directory).is_absolute())
        return make_error(ErrorCode::invalid_argument,
                          "directory must be an absolute path, got '" + request.directory + "'");

    auto projects = impl.store.list_projects();
    if (!projects) return projects.take_error();
    std::optional<store::Project> project = project_for(*projects, request.directory);

    auto agents_named = [&](std::optional<std::string> name) -> Result<std::vector<store::Agent>> {
        store::AgentFilter filter;
        filter.name = std::move(name);
        if (project) filter.project_id = project->id;
        return impl.store.list_agents(filter);
    };
    std::optional<store::Agent> agent;
    std::string harness;
    if (request.agent || request.name) {
        const std::string& name = request.agent ? *request.agent : *request.name;
        auto agents = agents_named(name);
        if (!agents) return agents.take_error();
        if (agents->size() > 1)
            return make_error(ErrorCode::conflict,
                              "agent '" + name +
                                  "' exists in several projects; run this inside the project's "
                                  "folder");
        if (agents->size() == 1) {
            agent = agents->front();
        } else if (request.name && impl.harness_exists && impl.harness_exists(name)) {
            harness = name;
        } else {
            return make_error(ErrorCode::not_found,
                              "no agent named '" + name + "'" +
                                  (project ? " in project '" + project->name + "'" : std::string()) +
                                  (request.name ? " and no harness with that id" : std::string()) +
                                  "; `handler agent list` and `handler plugins list` show them");
        }
    } else if (request.harness) {
        harness = *request.harness;
    } else if (project) {
        auto agents = agents_named(std::nullopt);
        if (!agents) return agents.take_error();
        if (agents->size() == 1) {
            agent = agents->front();
        } else if (agents->empty()) {
            harness = kDefaultHarness;
        } else {
            std::string names;
            for (const auto& each : *agents) names += (names.empty() ? "" : ", ") + each.name;
            return make_error(ErrorCode::invalid_argument,
                              "project '" + project->name + "' has several agents (" + names +
                                  "); name one");
        }
    }
    if (agent && !project) {
        auto owner = impl.store.get_project(agent->project_id);
        if (!owner) return owner.take_error();
        project = *owner;
    }
    if (!project)
        return make_error(ErrorCode::not_found,
                          "no project holds " + request.directory +
                              "; add one with `handler project add " + request.directory +
                              "`, or run this inside a project's folder");

    store::NewSession record;
    std::string account_kind;
    std::optional<store::Account> local_account; // a local model server the agent uses
    std::optional<store::Account> agent_account; // the agent's, whatever its kind
    if (agent) {
        record.agent_id = agent->id;
        record.harness = agent->harness;
        if (agent->account) {
            auto accounts = impl.store.list_accounts();
            if (accounts)
                for (const auto& account : *accounts)
                    if (account.name == *agent->account) {
                        account_kind = account.kind;
                        if (secrets::is_local_server(account.kind)) local_account = account;
                        agent_account = account;
                    }
        }
    } else {
        record.harness = harness;
    }
    record.project_id = project->id;
    record.mode = request.prompt.empty() ? "interactive" : "headless";
    // A headless run's output is the program's stdout and stderr, kept apart (harnesses
    // print structured events on stdout); everything else gets a terminal.
    record.tty = request.prompt.empty();
    record.image = impl.options.default_image;
    if (request.network) {
        const auto mode = network::parse_mode(*request.network, network::ModeHolder::session);
        if (!mode)
            return make_error(ErrorCode::invalid_argument,
                              "network mode '" + *request.network + "' is not one of " +
                                  network::mode_list(network::ModeHolder::session));
        record.network_mode = *mode;
        if (*mode == network::Mode::learn)
            record.learn_until = impl.clock.now_ms() + impl.options.learn_window.count();
    }

    auto session = impl.store.create_session(record);
    if (!session) return session.take_error();
    const std::string id = session->id;
    impl.publish(*session);

    plugins::LaunchRequest launch_request;
    launch_request.mode =
        record.tty ? plugins::LaunchMode::interactive : plugins::LaunchMode::headless;
    // The start modes are the network modes seen from the harness's side (docs/harnesses.md,
    // "Start modes"): no network means locked down (asks before acting), open network means
    // open (asks nothing, the container being the sandbox), anything between is guarded.
    // Taken at launch: a harness's permission mode cannot change under it, so a later
    // change of the agent's network mode applies to its network at once and to its
    // permissions from its next session.
    const network::Mode effective_network =
        record.network_mode.value_or(agent ? agent->network_mode : network::Mode::filtered);
    launch_request.start_mode = effective_network == network::Mode::none   ? plugins::StartMode::locked_down
                                : effective_network == network::Mode::open ? plugins::StartMode::open
                                                                           : plugins::StartMode::guarded;
    launch_request.session_id = id;
    launch_request.project_path = project->path;
    launch_request.prompt = request.prompt;
    launch_request.model = request.model.value_or("");
    launch_request.thinking_level = request.thinking.value_or("");
    launch_request.account_kind = account_kind;
    launch_request.extra_args = request.args;
    std::optional<LocalServer> server;

    auto fail = [&](const Error& error) -> Result<store::Session> {
        impl.finish(id, std::nullopt, SessionState::failed, error.message);
        return make_error(error.code, "session " + id + ": " + error.message);
    };
    if (local_account) {
        auto found = local_server(*local_account);
        if (!found) return fail(found.error());
        server = std::move(*found);
        launch_request.account_base_url = server->container_url;
        // Recorded like a key, without a stand-in: the proxy finds the server by it.
        if (auto added = impl.store.add_session_secret({id, local_account->kind, local_account->id, ""}); !added)
            return fail(added.error());
    }
    auto launch = impl.launcher(record.harness, launch_request);
    if (!launch) return fail(launch.error());
    std::vector<std::string> addon_hosts;
    for (const auto& addon : agent ? agent->addons : std::vector<std::string>{}) {
        if (!impl.options.contribute_addon)
            return fail(make_error(ErrorCode::unavailable, "this handlerd cannot load addons (agent '" +
                                                               agent->name + "' uses '" + addon + "')"));
        auto contribution = impl.options.contribute_addon(addon, launch_request);
        if (!contribution) return fail(contribution.error());
        if (auto merged = merge_addon(addon, *contribution, *launch, addon_hosts); !merged)
            return fail(merged.error());
    }
    LaunchContext context;
    context.session_id = id;
    context.project_path = project->path;
    context.default_image = impl.options.default_image;
    context.control_dir = impl.options.control_root / id;
    context.helper_dir = impl.options.helper_dir;
    context.tty = record.tty;
    context.rows = request.rows;
    context.cols = request.cols;
    context.proxy_port = impl.options.proxy_port;
    if (!launch->secret_env.empty()) {
        if (!impl.options.secret_store)
            return fail(make_error(ErrorCode::unavailable, "the harness needs a key and this handlerd has no key store"));
        std::vector<std::string> kinds;
        for (const auto& secret : launch->secret_env) kinds.push_back(secret.secret_name);
        auto stand_ins = make_stand_ins(impl.store, *impl.options.secret_store, id, kinds, agent, *project,
                                        secrets::system_random());
        if (!stand_ins) return fail(stand_ins.error());
        context.stand_ins = std::move(*stand_ins);
    }
    // The harness's model hosts, and the hosts of the keys it uses (where it is meant to
    // go), kept with the session for every later decision.
    std::vector<std::string> model_hosts;
    for (const auto& host : launch->allowed_hosts)
        model_hosts.push_back(host.port == 0 ? host.pattern : host.pattern + ":" + std::to_string(host.port));
    for (const auto& [kind, stand_in] : context.stand_ins)
        for (const auto& host : secrets::provider_for(kind)->hosts)
            if (std::find(model_hosts.begin(), model_hosts.end(), host) == model_hosts.end())
                model_hosts.emplace_back(host);
    if (server) model_hosts.push_back(server->rule);
    for (const auto& text : model_hosts)
        if (auto rule = network::parse_rule(text); !rule) return fail(rule.error());
    for (const auto& text : addon_hosts)
        if (auto rule = network::parse_rule(text); !rule) return fail(rule.error());
    if (!model_hosts.empty() || !addon_hosts.empty()) {
        store::SessionChanges hosts;
        hosts.model_hosts = std::move(model_hosts);
        hosts.addon_hosts = std::move(addon_hosts);
        impl.record(id, hosts);
    }
    if (!launch->account_state_env.empty() && agent_account) {
        // One folder per account, kept for the next session (a login the harness
        // refreshes); private to the user, and never shared across contexts.
        if (agent_account->context && project->context && agent_account->context != project->context)
            return fail(make_error(ErrorCode::invalid_argument,
                                   "account '" + agent_account->name + "' belongs to context '" +
                                       *agent_account->context + "' and project '" + project->name +
                                       "' to '" + *project->context + "'"));
        if (impl.options.account_state_root.empty())
            return fail(make_error(ErrorCode::unavailable, "this handlerd keeps no account state"));
        const fs::path folder = impl.options.account_state_root / std::to_string(agent_account->id);
        if (auto made = ensure_private_dir(folder); !made) return fail(made.error());
        context.account_state_dir = folder;
    }
    context.trust_ca = !impl.options.ca_certificate_pem.empty();
    // The mode it starts in decides the container's network; a later change of mode
    // applies to the proxy at once, and to the network at the next session (docs/network.md).
    context.open_network = impl.policy_for(id).mode == network::Mode::open;
    auto spec = container_spec(*launch, context);
    if (!spec) return fail(spec.error());
    auto channel = impl.open_channel(*session);
    if (!channel) return fail(channel.error());
    // Only a headless program's stdin is a pipe; on a terminal these would be typed.
    json::object prompt_payload{{"content", json::object{{"type", "text"}, {"text", request.prompt}}}};
    if (!record.tty)
        if (auto given = (*channel)->start_input(std::move(launch->input), json::serialize(prompt_payload)); !given)
            return fail(given.error());
    if (context.trust_ca)
        if (auto written = impl.write_trust_files(context.control_dir); !written) return fail(written.error());
    std::optional<runtime::LayerRecipe> recipe;
    if (launch->image.empty() && impl.options.harness_recipe) {
        auto found = impl.options.harness_recipe(record.harness);
        if (!found) return fail(found.error());
        recipe = std::move(*found);
    }
    if (!request.prompt.empty()) // the first event, so a client replaying the events sees the turn whole
        impl.store_events(id, {plugins::SessionEvent{plugins::EventKind::user_prompt, json::serialize(prompt_payload)}});
    impl.launch_container(id, std::move(*spec), std::move(recipe));
    return impl.store.get_session(id);
}

Result<store::Session> SessionManager::stop(std::string_view id) { return impl_->stop_session(id); }

Result<store::Session> SessionManager::Impl::stop_session(std::string_view id) {
    Impl& impl = *this;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    if (!is_live(session->state))
        return make_error(ErrorCode::conflict, "session " + session->id + " is not running (" +
                                                   std::string(to_string(session->state)) + ")");
    if (!session->container_id) {
        impl.stop_requested.insert(session->id);
        return session;
    }
    impl.in_background(
        [&impl, container = *session->container_id] {
            return impl.runtime.stop(container, impl.options.stop_grace);
        },
        [&impl, id = session->id](Result<void> done) {
            if (!done) spdlog::warn("session {}: stop: {}", id, done.error().message);
            // Normally the shim has reported the exit by now; if it could not, podman knows.
            impl.check_container(id);
        });
    return session;
}

Result<void> SessionManager::remove(std::string_view id) {
    Impl& impl = *impl_;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    if (is_live(session->state))
        return make_error(ErrorCode::conflict,
                          "session " + session->id + " is still " +
                              std::string(to_string(session->state)) +
                              "; stop it first (`handler session stop " + session->id + "`)");
    if (auto found = impl.channel(session->id)) {
        found->close("the session was removed");
        impl.channels.erase(session->id);
    }
    if (session->container_id) impl.remove_container_later(*session->container_id);
    impl.policies.erase(session->id);
    if (auto deleted = impl.store.delete_session(session->id); !deleted) return deleted;
    std::error_code ignored;
    fs::remove_all(impl.options.output_root / session->id, ignored);
    fs::remove_all(impl.options.control_root / session->id, ignored);
    impl.events.publish(api::event_json("session.removed", {{"id", session->id}}, impl.clock.now_ms()));
    return {};
}

Result<api::SessionLog> SessionManager::log(std::string_view id) {
    Impl& impl = *impl_;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    auto read = [](const OutputLog& output) -> Result<api::SessionLog> {
        auto text = output.read_all();
        if (!text) return text.take_error();
        api::SessionLog log;
        log.text = std::move(*text);
        log.end = output.end();
        log.truncated = output.oldest() > 0;
        return log;
    };
    if (auto found = impl.channel(session->id)) return read(found->log());
    auto output = OutputLog::open(impl.options.output_root / session->id, impl.options.log_limit_bytes);
    if (!output) return output.take_error();
    return read(*output);
}

Result<api::Attached> SessionManager::attach(std::string_view id,
                                             std::weak_ptr<api::TerminalClient> client,
                                             const api::AttachOptions& options) {
    Impl& impl = *impl_;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    if (auto found = impl.channel(session->id)) {
        const auto attach_id = impl.next_attach_id++;
        auto attached = found->attach(attach_id, std::move(client), options);
        if (attached.attach_id != 0) impl.attachments[attach_id] = session->id;
        attached.state = session->state;
        attached.exit_code = session->exit_code;
        return attached;
    }
    // No channel: the session has ended. Replay the end of its output and say how.
    auto output = OutputLog::open(impl.options.output_root / session->id, impl.options.log_limit_bytes);
    if (!output) return output.take_error();
    api::Attached attached;
    attached.produced = output->end();
    attached.tty = session->tty;
    attached.state = session->state;
    attached.exit_code = session->exit_code;
    if (auto alive = client.lock()) {
        auto tail = output->tail(impl.options.replay_bytes);
        if (tail && !tail->second.empty()) {
            const std::uint64_t from = options.from.value_or(0);
            std::string text = std::move(tail->second);
            std::uint64_t offset = tail->first;
            if (from > offset) {
                text.erase(0, static_cast<std::size_t>(std::min<std::uint64_t>(from - offset, text.size())));
                offset = from;
            }
            if (!text.empty())
                alive->output(session->tty ? api::OutputStream::terminal : api::OutputStream::stdout_,
                              offset, std::make_shared<const std::string>(std::move(text)));
        }
        if (options.events) impl.replay_events(session->id, *alive);
        if (session->state == SessionState::exited && session->exit_code)
            alive->exited(*session->exit_code);
        else
            alive->ended("session " + session->id + " is " + std::string(to_string(session->state)) +
                         (session->message ? ": " + *session->message : std::string()));
    }
    return attached;
}

void SessionManager::detach(std::uint64_t attach_id) {
    const auto found = impl_->attachments.find(attach_id);
    if (found == impl_->attachments.end()) return;
    if (auto channel = impl_->channel(found->second)) channel->detach(attach_id);
    impl_->attachments.erase(found);
}

namespace {
std::shared_ptr<Channel> writable_channel(SessionManager::Impl& impl, std::uint64_t attach_id) {
    const auto found = impl.attachments.find(attach_id);
    if (found == impl.attachments.end()) return nullptr;
    auto channel = impl.channel(found->second);
    return channel && channel->writable(attach_id) ? channel : nullptr;
}
} // namespace

void SessionManager::input(std::uint64_t attach_id, std::string_view bytes) {
    if (auto channel = writable_channel(*impl_, attach_id)) channel->client_input(bytes);
}

void SessionManager::input_eof(std::uint64_t attach_id) {
    if (auto channel = writable_channel(*impl_, attach_id)) channel->client_input_eof();
}

Result<void> SessionManager::answer(std::string_view id, std::string_view tool_call_id,
                                    std::string_view option_id) {
    auto session = impl_->store.get_session(id);
    if (!session) return session.take_error();
    auto channel = impl_->channel(session->id);
    if (!channel || channel->exited())
        return make_error(ErrorCode::conflict, "session " + session->id + " is not running (" +
                                                   std::string(to_string(session->state)) + ")");
    return channel->answer(tool_call_id, option_id);
}

void SessionManager::resize(std::uint64_t attach_id, std::uint16_t rows, std::uint16_t cols) {
    if (rows == 0 || cols == 0) return;
    if (auto channel = writable_channel(*impl_, attach_id)) channel->resize(rows, cols);
}

Result<std::size_t> SessionManager::allow_host(const std::string& plugin_id, const std::string& session_id,
                                               const std::string& rule, const std::string& reason) {
    Impl& impl = *impl_;
    auto parsed = network::parse_rule(rule);
    if (!parsed) return parsed.take_error();
    // What is on this machine or its network (handlerd's own API among it) a plugin cannot
    // open to a session: only the user can, with a rule of their own.
    if (parsed->ip)
        if (const auto address = network::parse_address(parsed->host))
            if (network::is_special(*address) || network::is_own(*address, impl.own_addresses))
                return make_error(ErrorCode::forbidden,
                                  "'" + rule + "' is a loopback, private, link-local or this machine's own address; "
                                  "a plugin may not allow it (the user can: handler network allow AGENT HOST)");
    std::vector<std::string> targets;
    if (session_id.empty()) {
        auto sessions = impl.store.list_sessions();
        if (!sessions) return sessions.take_error();
        for (const auto& session : *sessions)
            if (is_live(session.state) && impl.uses(session, plugin_id)) targets.push_back(session.id);
    } else {
        auto session = impl.plugin_session(plugin_id, session_id);
        if (!session) return session.take_error();
        targets.push_back(session->id);
    }
    for (auto& id : targets)
        net::post(impl.io, [weak = std::weak_ptr<Impl>(impl_), id, rule = parsed->text, plugin_id, reason] {
            if (auto self = weak.lock(); self && !self->stopped) self->add_plugin_host(id, rule, plugin_id, reason);
        });
    return targets.size();
}

Result<std::string> SessionManager::stand_in(const std::string& plugin_id, const std::string& session_id,
                                             const std::string& kind) {
    Impl& impl = *impl_;
    auto session = impl.plugin_session(plugin_id, session_id);
    if (!session) return session.take_error();
    auto secrets = impl.store.session_secrets(session->id);
    if (!secrets) return secrets.take_error();
    for (const auto& secret : *secrets)
        if (secret.kind == kind && !secret.stand_in.empty()) return secret.stand_in;
    return make_error(ErrorCode::not_found, "session " + session->id + " holds no key of kind '" + kind + "'");
}

} // namespace handler::sessions
