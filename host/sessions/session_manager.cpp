#include "sessions/session_manager.hpp"

#include "api/routes_json.hpp"
#include "core/paths.hpp"
#include "network/egress_proxy.hpp"
#include "secrets/secret_store.hpp"
#include "sessions/session_keys.hpp"
#include "sessions/start_plan.hpp"
#include "store/validation.hpp"
#include "sessions/audit_batch.hpp"
#include "sessions/channel.hpp"
#include "sessions/image_builds.hpp"
#include "sessions/launch.hpp"
#include "sessions/network_change.hpp"
#include "sessions/output_log.hpp"
#include "sessions/terminal_filter.hpp"
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
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace handler::sessions {
namespace {

namespace net = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using local = net::local::stream_protocol;
using store::SessionState;

bool is_live(SessionState state) {
    return state == SessionState::starting || state == SessionState::running;
}

} // namespace

struct SessionManager::Impl : std::enable_shared_from_this<Impl>, ChannelOwner {
    Impl(net::io_context& io_context, store::Store& session_store,
         runtime::ContainerRuntime& container_runtime, HarnessCatalog& harness_catalog,
         api::EventHub& hub, const Clock& time, SessionManagerOptions manager_options)
        : io(io_context), store(session_store), runtime(container_runtime), harnesses(harness_catalog),
          events(hub), clock_(time),
          options(std::move(manager_options)),
          resolver(network::make_system_resolver(io_context, options.resolve, options.resolve_endpoints)),
          own_addresses(network::own_addresses()) {}

    // The live policy of a session: read at every connection, so an edit of its agent or
    // project applies to the next one (and reevaluate() cuts what is now refused). Its
    // sources:
    //   - model hosts, kept with the session at start: the harness's own, its keys'
    //     provider hosts and a local server's rule (plan_container, start_plan.cpp);
    //   - the allow-list: the agent's, then the project's (a session without an agent
    //     gets the project's alone; an agent with live sessions cannot be removed);
    //   - addon hosts: what addons asked for at start (merge_addon, launch.cpp) and what
    //     plugins add while it runs (add_plugin_host below);
    //   - the mode: the session's own, else the agent's.
    // What each mode lets through, and which rules may reach special addresses, is
    // network/policy.cpp's decide() and check_address().
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
        events.publish(api::event_json("session.updated", api::to_json(session), clock_.now_ms()));
    }

    // An image.build event ("started", "line" or "ended"; docs/api.md), from any thread: the
    // hub is the io thread's.
    void publish_build(std::string what, std::int64_t build_id, std::string line) {
        net::post(io, [weak = weak_from_this(), what = std::move(what), build_id, line = std::move(line)] {
            auto self = weak.lock();
            if (!self || self->stopped) return;
            json::object data{{"event", what}, {"build", api::to_json(self->image_builds.get(build_id), false)}};
            if (what == "line") data["line"] = line;
            self->events.publish(api::event_json("image.build", std::move(data), self->clock_.now_ms()));
        });
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

    // `running`: its harness already runs (a restarted handlerd adopts it), so its parser
    // is told the harness's own session id.
    Result<std::shared_ptr<Channel>> open_channel(const store::Session& session, bool running = false);
    // The last harnessSessionId the session's parser reported; empty: none.
    std::string harness_session_of(const std::string& id);
    Result<store::Session> carry_out(StartPlan plan, const std::string& id, const std::string& prompt, bool resuming);
    // The channel of a live conversation; conflict otherwise, saying what it is.
    Result<std::shared_ptr<Channel>> live_channel(std::string_view id) {
        auto session = store.get_session(id);
        if (!session) return session.take_error();
        if (session->mode != "conversation")
            return make_error(ErrorCode::conflict, "session " + session->id +
                                                       " is not a conversation (`handler chat` starts one)");
        auto found = channel(session->id);
        if (!found || found->exited())
            return make_error(ErrorCode::conflict, "conversation " + session->id + " is not running (" +
                                                       std::string(to_string(session->state)) +
                                                       "); `handler session resume " + session->id +
                                                       "` continues it");
        return found;
    }
    Result<StartSnapshot> read_snapshot();
    StartSettings start_settings() const;
    Result<store::Session> stop_session(std::string_view id);

    void finish(const std::string& id, std::optional<std::int64_t> exit_code, SessionState state,
                std::optional<std::string> message);
    void remove_container_later(std::string container_id);
    void check_container(const std::string& id);
    // Starts the container, building the harness's image first when `recipe` is set
    // and no image of it exists yet (on the worker thread: it takes a minute or two).
    void launch_container(const std::string& id, runtime::ContainerSpec spec,
                          std::optional<runtime::LayerRecipe> recipe = std::nullopt);
    void name_conversation(const std::string& id, const std::string& payload);
    // Stores events a session's harness produced and returns them numbered.
    std::vector<store::SessionEvent> store_events(const std::string& id,
                                                  const std::vector<plugins::SessionEvent>& produced) override;
    // ---- ChannelOwner ---------------------------------------------------------------
    const Clock& clock() const override { return clock_; }
    void for_each_event(const std::string& id, std::int64_t after,
                        const std::function<void(const store::SessionEvent&)>& each) override {
        for (;;) {
            auto page = store.session_events(id, after, 1000);
            if (!page) {
                spdlog::error("session {}: events not read: {}", id, page.error().message);
                return;
            }
            for (const auto& event : *page) each(event);
            if (page->size() < 1000) return;
            after = page->back().seq;
        }
    }
    std::uint64_t events_bytes(const std::string& id) override {
        auto bytes = store.session_events_bytes(id);
        return bytes ? static_cast<std::uint64_t>(*bytes) : 0;
    }
    void shim_exited(const std::string& id, std::int64_t exit_code) override {
        finish(id, exit_code, SessionState::exited, std::nullopt);
    }
    void shim_lost(const std::string& id) override { check_container(id); }
    Result<void> request_stop(const std::string& id) override {
        auto stopping = stop_session(id);
        if (!stopping) return stopping.take_error();
        return {};
    }
    void client_gone(std::uint64_t attach_id) override { attachments.erase(attach_id); }
    void record_origin(store::NetworkOrigin origin) override { audit.origin(std::move(origin)); }
    // The session's egress proxy on <control dir>/proxy.sock, with its keys.
    SessionProxy make_proxy(const std::string& id, const fs::path& control_dir, network::ConnectionTracer& tracer);

    net::io_context& io;
    store::Store& store;
    runtime::ContainerRuntime& runtime;
    HarnessCatalog& harnesses;
    api::EventHub& events;
    const Clock& clock_;
    const SessionManagerOptions options;
    // One thread: container commands run in the order asked for (a stop never overtakes
    // the start it follows).
    net::thread_pool worker{1};
    // Image builds take minutes; on a thread of their own they do not hold up every other
    // session's start and stop. One at a time: two sessions of a harness build it once.
    net::thread_pool builder{1};
    ImageBuilds image_builds; // what the builder does, for GET /api/v1/images and image.build events
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
    AuditBatch audit{io, store, clock_}; // the proxies' decisions, on their way to the store
};

// ---- Impl -----------------------------------------------------------------------------

SessionProxy SessionManager::Impl::make_proxy(const std::string& id, const fs::path& control_dir,
                                             network::ConnectionTracer& tracer) {
    SessionProxy made;
    if (options.proxy_port == 0) return made;
    network::ProxyOptions proxy_options;
    proxy_options.socket_path = control_dir / kProxySocketName;
    proxy_options.session_id = id;
    proxy_options.listener_port = options.proxy_port;
    network::Resolver* session_resolver = resolver.get();
    if (options.secret_store) {
        made.keys = std::make_unique<SessionKeys>(store, *options.secret_store, id);
        made.resolver = std::make_unique<SessionResolver>(*resolver, *made.keys);
        session_resolver = made.resolver.get();
    }
    made.proxy = std::make_unique<network::EgressProxy>(
        io, proxy_options, [this, id] { return policy_for(id); },
        network::ProxyServices{session_resolver, &audit, made.keys.get(), options.tls, &tracer},
        [this] { return clock_.now_ms(); }, own_addresses);
    return made;
}

std::string SessionManager::Impl::harness_session_of(const std::string& id) {
    std::string harness_session;
    for_each_event(id, 0, [&](const store::SessionEvent& event) {
        if (event.kind != "session_info") return;
        boost::system::error_code error;
        const auto payload = json::parse(event.payload, error);
        const auto* value = error || !payload.is_object() ? nullptr : payload.as_object().if_contains("harnessSessionId");
        if (value != nullptr && value->is_string()) harness_session = std::string(value->get_string());
    });
    return harness_session;
}

Result<std::shared_ptr<Channel>> SessionManager::Impl::open_channel(const store::Session& session, bool running) {
    auto log = OutputLog::open(options.output_root / session.id, options.log_limit_bytes);
    if (!log) return log.take_error();
    const fs::path control_dir = options.control_root / session.id;
    if (auto made = ensure_private_dir(control_dir); !made) return made.take_error();
    auto channel = std::make_shared<Channel>(
        *this, io, session.id, session.tty, std::move(*log),
        ChannelOptions{options.replay_bytes, options.events_limit_bytes, options.lost_link_check});
    if (auto listening = channel->listen(control_dir); !listening) return listening.take_error();
    if (auto proxied = channel->start_proxy(make_proxy(session.id, control_dir, *channel)); !proxied)
        return proxied.take_error();
    if (!session.tty) {
        // A parser re-opened after a restart starts mid-stream: a line the old one had
        // half of is lost (its bytes are still in the output log).
        std::optional<std::string> harness_session;
        if (running) harness_session = harness_session_of(session.id);
        auto opened = harnesses.open_events(session.harness, session.id, harness_session);
        if (opened) channel->parse_events(std::move(*opened), session.mode == "conversation");
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
        // The build is recorded from its first line: an image that exists says none. What
        // its steps print comes from the packages they install: past kMaxLineEvents lines
        // the log still keeps the end, but clients are no longer sent each line.
        constexpr int kMaxLineEvents = 5000;
        auto build_id = std::make_shared<std::int64_t>(0);
        in_background(
            builder,
            [this, id, base, build_id, recipe = std::move(*recipe)] {
                int lines = 0;
                return runtime::ensure_layer_image(
                    runtime, options.image_build_dir, base, recipe, [&](const std::string& line) {
                        if (*build_id == 0) {
                            *build_id = image_builds.started(recipe.name, id, clock_.now_ms());
                            publish_build("started", *build_id, {});
                        }
                        image_builds.line(*build_id, line);
                        if (++lines < kMaxLineEvents) publish_build("line", *build_id, line);
                        else if (lines == kMaxLineEvents)
                            publish_build("line", *build_id, "[handler: more output than this is not sent line by line; "
                                                             "the build's log keeps its end]");
                        spdlog::debug("session {}: {}", id, line); // npm's output: too much for info
                    });
            },
            [this, id, build_id, spec = std::move(spec)](Result<std::string> image) mutable {
                if (*build_id != 0) {
                    image_builds.ended(*build_id, image.ok(), image ? *image : std::string(),
                                       image ? std::string() : image.error().message, clock_.now_ms());
                    publish_build("ended", *build_id, {});
                }
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
    struct Started {
        std::string container_id;
        std::vector<runtime::LimitReport> limits;
    };
    in_background(
        [this, spec = std::move(spec)]() -> Result<Started> {
            auto present = runtime.image_exists(spec.image);
            if (!present) return present.take_error();
            if (!*present)
                return make_error(ErrorCode::not_found,
                                  "image " + spec.image +
                                      " is not built on this machine; run `handler setup`");
            auto container = runtime.create_and_start(spec);
            if (!container) return container.take_error();
            return Started{std::move(*container), runtime.limits()};
        },
        [this, id](Result<Started> launched) {
            if (!launched) {
                spdlog::warn("session {}: {}", id, launched.error().message);
                finish(id, std::nullopt, SessionState::failed, launched.error().message);
                return;
            }
            const std::string started = launched->container_id;
            store::SessionChanges changes;
            changes.container_id = started;
            // What it runs under, and what does not hold on this machine, said once.
            changes.limits = runtime::limits_json(launched->limits);
            for (const runtime::LimitReport& limit : launched->limits)
                if (!limit.holds) spdlog::info("session {}: {} {}: {}", id, limit.name, limit.value, limit.how);
            auto current = store.get_session(id);
            // The shim may already have reported an exit (a program that ends at once).
            if (current && current->state == SessionState::starting)
                changes.state = SessionState::running;
            record(id, changes);
            if (current && !is_live(current->state)) remove_container_later(started);
            if (stop_requested.erase(id) > 0) {
                in_background(
                    [this, container = started] {
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
    auto stored = store.add_session_events(id, clock_.now_ms(), rows);
    if (!stored) {
        spdlog::error("session {}: events not stored: {}", id, stored.error().message);
        return {};
    }
    for (const auto& event : *stored) {
        events.publish(api::event_json("session.event", api::to_json(event), event.at), {id, event.kind});
        if (event.kind == "user_prompt") name_conversation(id, event.payload);
    }
    return std::move(*stored);
}

// A conversation is called by the first line of its first prompt (for lists, and an
// editor's history), at most 80 characters, cut at a character's boundary.
void SessionManager::Impl::name_conversation(const std::string& id, const std::string& payload) {
    auto session = store.get_session(id);
    if (!session || session->mode != "conversation" || session->title) return;
    boost::system::error_code error;
    const auto value = json::parse(payload, error);
    const auto* content = error || !value.is_object() ? nullptr : value.as_object().if_contains("content");
    const auto* text = content && content->is_object() ? content->as_object().if_contains("text") : nullptr;
    if (text == nullptr || !text->is_string()) return;
    std::string_view line(text->get_string());
    line = line.substr(0, line.find('\n'));
    constexpr std::size_t kTitleBytes = 80;
    if (line.size() > kTitleBytes) {
        std::size_t cut = kTitleBytes;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
        line = line.substr(0, cut);
    }
    store::SessionChanges changes;
    changes.title = std::optional<std::string>(line);
    record(id, changes);
}

// ---- SessionManager -------------------------------------------------------------------

SessionManager::SessionManager(net::io_context& io, store::Store& store,
                               runtime::ContainerRuntime& runtime, HarnessCatalog& harnesses,
                               api::EventHub& events, const Clock& clock, SessionManagerOptions options)
    : impl_(std::make_shared<Impl>(io, store, runtime, harnesses, events, clock, std::move(options))) {
    // An agent's mode or hosts, or a project's hosts, changed: every open tunnel is
    // decided again at once.
    impl_->agent_events = events.subscribe([weak = std::weak_ptr<Impl>(impl_)](const api::EventHub::Message& message,
                                                                                const api::Topic& topic) {
        auto impl = weak.lock();
        if (!impl || !topic.session.empty() || (message->find("\"type\":\"agent.") == std::string::npos &&
                      message->find("\"type\":\"project.updated\"") == std::string::npos))
            return;
        impl->policies.clear();
        for (auto& [id, channel] : impl->channels) channel->reevaluate();
    });
}

SessionManager::ProxyConnections SessionManager::take_proxy_connections() {
    ProxyConnections total;
    for (auto& [id, channel] : impl_->channels) {
        const auto [peak, open] = channel->take_proxy_connections();
        total.peak += peak;
        total.open += open;
    }
    return total;
}

SessionManager::~SessionManager() {
    shut_down();
    // A container command already running is waited for: it holds references to the
    // runtime, which the daemon destroys after us.
    impl_->builder.join(); // a build under way finishes (its podman is not ours to kill)
    impl_->worker.join();
    impl_->audit.flush();
}

void SessionManager::shut_down() {
    if (impl_->stopped) return;
    impl_->stopped = true;
    impl_->events.unsubscribe(impl_->agent_events);
    auto channels = std::move(impl_->channels);
    impl_->channels.clear();
    for (auto& [id, channel] : channels) channel->close("handlerd is stopping; the session keeps running");
    impl_->attachments.clear();
    impl_->audit.cancel();
    impl_->audit.flush(); // the proxies' last decisions and ends, written before we go
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
            if (auto channel = impl.open_channel(session, true); !channel)
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
                        auto channel = impl.open_channel(session, true);
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
                // A named copy: clang 14 cannot capture a structured binding.
                const std::string& owner = session_id;
                const bool known = std::any_of(sessions.begin(), sessions.end(),
                                               [&](const auto& s) { return s.id == owner; });
                if (!known)
                    spdlog::warn("container {} belongs to session '{}', which handler does not "
                                 "know; leaving it alone (podman rm -f {} removes it)",
                                 info.name, session_id, info.name);
            }
            spdlog::info("re-adopted {} running session(s)", adopted);
            if (done) done();
        });
}

Result<StartSnapshot> SessionManager::Impl::read_snapshot() {
    StartSnapshot snapshot;
    auto projects = store.list_projects();
    if (!projects) return projects.take_error();
    auto agents = store.list_agents();
    if (!agents) return agents.take_error();
    auto accounts = store.list_accounts();
    if (accounts) snapshot.accounts = std::move(*accounts); // unread: as if the agent had none
    snapshot.projects = std::move(*projects);
    snapshot.agents = std::move(*agents);
    return snapshot;
}

StartSettings SessionManager::Impl::start_settings() const {
    StartSettings settings;
    settings.now_ms = clock_.now_ms();
    settings.default_image = options.default_image;
    settings.learn_window = options.learn_window;
    settings.home_dir = options.home_dir;
    settings.control_root = options.control_root;
    settings.helper_dir = options.helper_dir;
    settings.account_state_root = options.account_state_root;
    settings.session_root = options.output_root;
    settings.proxy_port = options.proxy_port;
    settings.has_key_store = options.secret_store != nullptr;
    settings.trust_ca = !options.ca_certificate_pem.empty();
    return settings;
}

// Carries out the plans of start_plan.hpp: everything decided there, in this order.
Result<store::Session> SessionManager::start(const api::StartRequest& request) {
    Impl& impl = *impl_;
    if (impl.stopped) return make_error(ErrorCode::unavailable, "handlerd is stopping");
    if (!impl.options.refuse_sessions.empty())
        return make_error(ErrorCode::forbidden, impl.options.refuse_sessions);
    auto snapshot = impl.read_snapshot();
    if (!snapshot) return snapshot.take_error();
    auto plan = plan_start(request, *snapshot, impl.harnesses, impl.start_settings());
    if (!plan) return plan.take_error();
    auto session = impl.store.create_session(plan->record);
    if (!session) return session.take_error();
    impl.publish(*session);
    return impl.carry_out(std::move(*plan), session->id, request.prompt, false);
}

// The session `id` is recorded (new, or a conversation going back to `starting`): the
// plugins answer, then stand-ins, hosts, channel, trust files, image recipe, launch.
// `resuming`: the harness continues its own conversation (plan.launch.resume).
Result<store::Session> SessionManager::Impl::carry_out(StartPlan plan, const std::string& id,
                                                       const std::string& prompt, bool resuming) {
    Impl& impl = *this;
    const StartSettings settings = impl.start_settings();
    auto fail = [&](const Error& error) -> Result<store::Session> {
        impl.finish(id, std::nullopt, SessionState::failed, error.message);
        return make_error(error.code, "session " + id + ": " + error.message);
    };
    plan.launch.session_id = id;
    if (plan.local_server && !resuming) // recorded like a key, without a stand-in: the proxy finds the server by it
        if (auto added = impl.store.add_session_secret({id, plan.account->kind, plan.account->id, ""}); !added)
            return fail(added.error());
    auto launch = impl.harnesses.launch(plan.record.harness, plan.launch);
    if (!launch) return fail(launch.error());
    std::vector<std::pair<std::string, plugins::LaunchSpec>> contributions;
    for (const auto& addon : plan.addons) {
        auto contribution = impl.harnesses.contribute(addon, plan.launch);
        if (!contribution) return fail(contribution.error());
        contributions.emplace_back(addon, std::move(*contribution));
    }
    auto container = plan_container(plan, id, std::move(*launch), contributions, settings);
    if (!container) return fail(container.error());

    LaunchContext& context = container->context;
    if (!container->key_kinds.empty()) {
        // A resumed conversation keeps the stand-ins its harness may have written down.
        auto stand_ins = make_stand_ins(impl.store, *impl.options.secret_store, id, container->key_kinds,
                                        plan.agent, plan.project, secrets::system_random());
        if (!stand_ins) return fail(stand_ins.error());
        context.stand_ins = std::move(*stand_ins);
    }
    if (!container->model_hosts.empty() || !container->addon_hosts.empty()) {
        store::SessionChanges hosts;
        hosts.model_hosts = container->model_hosts;
        hosts.addon_hosts = container->addon_hosts;
        impl.record(id, hosts);
    }
    for (const auto* folder : {&context.account_state_dir, &context.session_state_dir})
        if (!folder->empty())
            if (auto made = ensure_private_dir(*folder); !made) return fail(made.error());
    auto spec = container_spec(container->launch, context);
    if (!spec) return fail(spec.error());
    auto session = impl.store.get_session(id);
    if (!session) return fail(session.error());
    auto channel = impl.open_channel(*session);
    if (!channel) return fail(channel.error());
    const bool conversation = plan.launch.conversation;
    // Only a headless program's stdin is a pipe; on a terminal these would be typed.
    if (!plan.record.tty)
        if (auto given = (*channel)->start_input(std::move(container->launch.input),
                                                 conversation ? std::string() : plan.prompt_payload);
            !given)
            return fail(given.error());
    if (context.trust_ca)
        if (auto written = write_trust_files(context.control_dir, impl.options.ca_certificate_pem, impl.options.system_ca_bundle); !written) return fail(written.error());
    std::optional<runtime::LayerRecipe> recipe;
    if (container->build_image) {
        auto found = impl.harnesses.image_recipe(plan.record.harness);
        if (!found) return fail(found.error());
        recipe = std::move(*found);
    }
    if (resuming) (*channel)->new_harness("the conversation was resumed in a new container");
    if (!plan.unhonoured_mcp.empty()) {
        std::string names;
        for (const auto& name : plan.unhonoured_mcp) names += (names.empty() ? "" : ", ") + name;
        const std::string why = "MCP servers not started: " + names + "; harness '" + plan.record.harness +
                                "' does not take servers of that kind";
        impl.store_events(id, {{plugins::EventKind::error, json::serialize(json::object{{"message", why}})}});
    }
    if (conversation && !prompt.empty()) {
        if (auto submitted = (*channel)->submit(api::Prompt{prompt, {}}); !submitted) return fail(submitted.error());
    } else if (!prompt.empty()) {
        // The first event, so a client replaying the events sees the turn whole.
        impl.store_events(id, {plugins::SessionEvent{plugins::EventKind::user_prompt, plan.prompt_payload}});
    }
    impl.launch_container(id, std::move(*spec), std::move(recipe));
    return impl.store.get_session(id);
}

Result<store::Session> SessionManager::resume(std::string_view id) {
    Impl& impl = *impl_;
    if (impl.stopped) return make_error(ErrorCode::unavailable, "handlerd is stopping");
    if (!impl.options.refuse_sessions.empty()) return make_error(ErrorCode::forbidden, impl.options.refuse_sessions);
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    if (session->mode != "conversation")
        return make_error(ErrorCode::conflict, "session " + session->id + " is not a conversation; only "
                                                                          "conversations are resumed");
    if (is_live(session->state))
        return make_error(ErrorCode::conflict, "conversation " + session->id + " is " +
                                                   std::string(to_string(session->state)) + " already");
    auto snapshot = impl.read_snapshot();
    if (!snapshot) return snapshot.take_error();
    // The same agent (or harness) in the same project, as it was started.
    api::StartRequest request;
    for (const auto& project : snapshot->projects)
        if (project.id == session->project_id) request.directory = project.path;
    if (session->agent_id) {
        for (const auto& agent : snapshot->agents)
            if (agent.id == *session->agent_id) request.agent = agent.name;
        if (!request.agent)
            return make_error(ErrorCode::conflict, "conversation " + session->id + "'s agent no longer exists");
    } else {
        request.harness = session->harness;
    }
    request.conversation = true;
    request.model = session->model;
    request.thinking = session->thinking;
    request.mcp_servers = session->mcp_servers;
    if (session->network_mode && *session->network_mode != network::Mode::learn)
        request.network = std::string(network::to_string(*session->network_mode));
    auto plan = plan_start(request, *snapshot, impl.harnesses, impl.start_settings());
    if (!plan) return plan.take_error();
    plan->launch.resume = impl.harness_session_of(session->id);
    store::SessionChanges changes;
    changes.state = SessionState::starting;
    changes.exit_code = std::optional<std::int64_t>();
    changes.container_id = std::optional<std::string>();
    changes.message = std::optional<std::string>();
    if (!impl.record(session->id, changes))
        return make_error(ErrorCode::internal, "cannot record conversation " + session->id + " as starting");
    return impl.carry_out(std::move(*plan), session->id, std::string(), true);
}

Result<api::SubmittedPrompt> SessionManager::prompt(std::string_view id, const api::Prompt& prompt) {
    auto channel = impl_->live_channel(id);
    if (!channel) return channel.take_error();
    if (!prompt.images.empty()) {
        auto session = impl_->store.get_session(id);
        if (!session) return session.take_error();
        auto description = impl_->harnesses.describe(session->harness);
        if (!description) return description.take_error();
        if (!description->takes_images())
            return make_error(ErrorCode::invalid_argument, "harness '" + session->harness +
                                                               "' takes no images in a prompt (its describe() "
                                                               "lists none in \"prompt_content\")");
    }
    auto submitted = (*channel)->submit(prompt);
    if (!submitted) return submitted.take_error();
    return api::SubmittedPrompt{submitted->prompt_id, submitted->queued};
}

Result<void> SessionManager::withdraw(std::string_view id, std::string_view prompt_id) {
    auto channel = impl_->live_channel(id);
    if (!channel) return channel.take_error();
    return (*channel)->withdraw(prompt_id);
}

Result<void> SessionManager::cancel(std::string_view id) {
    auto channel = impl_->live_channel(id);
    if (!channel) return channel.take_error();
    return (*channel)->cancel();
}

std::vector<api::ImageBuild> SessionManager::image_builds() const { return impl_->image_builds.list(); }
// A running session's network mode (sessions/network_change.hpp): recorded with the
// session, whose cached policy record() drops, so the next connection decides with it; the
// open tunnels are decided again at once, so a stricter mode cuts what it now refuses.
Result<store::Session> SessionManager::set_network(std::string_view id, std::string_view mode,
                                                   std::optional<std::int64_t> minutes) {
    Impl& impl = *impl_;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    auto changes = plan_network_change(*session, NetworkChange{mode, minutes}, impl.clock_.now_ms(),
                                       impl.options.learn_window);
    if (!changes) return changes.take_error();
    auto updated = impl.record(session->id, *changes);
    if (!updated) return make_error(ErrorCode::internal, "cannot record the network mode of " + session->id);
    if (auto channel = impl.channel(session->id)) channel->reevaluate();
    spdlog::info("session {}: network mode {}{}", session->id, mode,
                 updated->learn_until ? " until " + std::to_string(*updated->learn_until) : std::string());
    return std::move(*updated);
}

Result<api::Applied> SessionManager::configure(std::string_view id, std::string_view name, std::string_view value) {
    Impl& impl = *impl_;
    auto session = impl.store.get_session(id);
    if (!session) return session.take_error();
    if (session->mode != "conversation")
        return make_error(ErrorCode::conflict, "session " + session->id + " is not a conversation");
    if (name != "model" && name != "mode" && name != "thinking_level")
        return make_error(ErrorCode::invalid_argument,
                          "'" + std::string(name) + "' is not a setting of a conversation (model, mode, thinking_level)");
    if (name == "model")
        if (auto valid = store::check_model_name(value); !valid) return valid.take_error();
    // Kept for its next resume whatever happens now; the live harness too where it can.
    store::SessionChanges changes;
    if (name == "model") changes.model = std::optional<std::string>(value);
    if (name == "thinking_level") changes.thinking = std::optional<std::string>(value);
    if ((changes.model || changes.thinking) && !impl.record(session->id, changes))
        return make_error(ErrorCode::internal, "cannot record the " + std::string(name) + " of " + session->id);
    auto channel = impl.channel(session->id);
    if (!channel || channel->exited()) return name == "mode" ? make_error(ErrorCode::conflict, "conversation " + session->id + " is not running; its permission mode is its network mode's at resume") : Result<api::Applied>(api::Applied::on_resume);
    auto applied = channel->configure(name, value);
    if (applied) return api::Applied::now;
    if (applied.error().code == ErrorCode::unavailable && name != "mode") return api::Applied::on_resume;
    return applied.take_error();
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
    impl.events.publish(api::event_json("session.removed", {{"id", session->id}}, impl.clock_.now_ms()));
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
        // It goes to a terminal (`handler logs`), so it gets what a terminal client gets;
        // the file keeps the output as printed.
        log.text = TerminalFilter().filter(*text);
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
        if (tail && !tail->second.empty() && options.output) {
            const std::uint64_t from = options.from.value_or(0);
            std::string text = std::move(tail->second);
            std::uint64_t offset = tail->first;
            if (from > offset) {
                text.erase(0, static_cast<std::size_t>(std::min<std::uint64_t>(from - offset, text.size())));
                offset = from;
            }
            if (!text.empty())
                alive->output(session->tty ? api::OutputStream::terminal : api::OutputStream::stdout_,
                              offset, attached.produced, std::make_shared<const std::string>(std::move(text)));
        }
        if (options.events)
            impl.for_each_event(session->id, options.events_after,
                                [&alive](const store::SessionEvent& event) { alive->event(event); });
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
