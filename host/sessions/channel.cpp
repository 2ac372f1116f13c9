#include "sessions/channel.hpp"

#include "network/egress_proxy.hpp"
#include "sessions/launch.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#pragma GCC diagnostic pop

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace handler::sessions {
namespace {

namespace net = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;

// Only handlerd records what a user typed: a parser's user_prompt (made of the container's
// output) would show every client a prompt nobody sent.
void drop_prompts(const std::string& id, std::vector<plugins::SessionEvent>& events) {
    const auto before = events.size();
    std::erase_if(events, [](const plugins::SessionEvent& event) { return event.kind == plugins::EventKind::user_prompt; });
    if (events.size() != before)
        spdlog::warn("session {}: the harness's parser gave {} user_prompt event(s); dropped (only handlerd records prompts)",
                     id, before - events.size());
}

// A conversation prompt's payload, as its user_prompt (and prompt_queued) event has it.
std::string prompt_json(std::string_view prompt_id, const api::Prompt& prompt) {
    json::object payload{{"promptId", prompt_id}, {"content", json::object{{"type", "text"}, {"text", prompt.text}}}};
    if (!prompt.images.empty()) {
        json::array images;
        for (const auto& image : prompt.images)
            images.push_back(json::object{{"mimeType", image.mime_type}, {"data", image.data}});
        payload["images"] = std::move(images);
    }
    return json::serialize(payload);
}

api::OutputStream to_api(shim::Stream stream) {
    switch (stream) {
    case shim::Stream::terminal: return api::OutputStream::terminal;
    case shim::Stream::stdout_: return api::OutputStream::stdout_;
    case shim::Stream::stderr_: return api::OutputStream::stderr_;
    }
    return api::OutputStream::terminal;
}

} // namespace

Channel::Channel(ChannelOwner& owner, net::io_context& io, std::string id, bool tty, OutputLog log,
                 ChannelOptions options)
    : owner_(owner), io_(io), id_(std::move(id)), tty_(tty), log_(std::move(log)), options_(options),
      acceptor_(io), link_timer_(io), deadline_timer_(io), who_timer_(io) {}

Result<void> Channel::listen(const fs::path& control_dir) {
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
void Channel::preload() {
    auto tail = log_.tail(options_.replay_bytes);
    if (!tail || tail->second.empty()) return;
    remember(Chunk{tail->first, tty_ ? api::OutputStream::terminal : api::OutputStream::stdout_,
                   std::make_shared<const std::string>(std::move(tail->second))});
}

Result<void> Channel::start_proxy(SessionProxy proxy) {
    proxy_ = std::move(proxy);
    return proxy_.proxy ? proxy_.proxy->start() : Result<void>{};
}

void Channel::reevaluate() {
    if (proxy_.proxy) proxy_.proxy->reevaluate();
}

std::pair<std::size_t, std::size_t> Channel::take_proxy_connections() {
    if (!proxy_.proxy) return {0, 0};
    const std::size_t peak = proxy_.proxy->take_peak_connections();
    return {peak, proxy_.proxy->open_connections()};
}

// Stops the session at `deadline` (ms since the epoch; one already past stops it at
// once), first telling its clients why in an error event.
void Channel::stop_at(std::int64_t deadline, std::chrono::milliseconds limit) {
    const std::int64_t left = std::max<std::int64_t>(0, deadline - owner_.clock().now_ms());
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
        if (auto stopped = self->owner_.request_stop(self->id_); !stopped)
            spdlog::warn("session {}: {}", self->id_, stopped.error().message);
    });
}

void Channel::parse_events(OpenedEvents opened, bool conversation) {
    conversation_ = conversation;
    parser_ = std::move(opened.parser);
    events_mode_ = parser_ ? std::move(opened.mode) : "none";
    owns_input_ = parser_ && opened.owns_input;
    if (parser_) load_open_requests();
}

// What the harness finds on its stdin at start, kept until the shim connects whatever
// its size (the plugin wrote it, not a client): what its launch gives, then the
// prompt in its protocol, for a harness whose stdin is one.
Result<void> Channel::start_input(std::string launch_input, const std::string& prompt) {
    pending_input_ = std::move(launch_input);
    // A conversation's prompts come through submit(), each when its turn starts.
    if (!owns_input_ || prompt.empty()) return {};
    auto parsed = parser_->prompt(prompt);
    if (!parsed) return parsed.take_error();
    pending_input_ += parsed->input;
    return {};
}

// A client's typing. A harness whose stdin is its protocol gets none: a stray line
// would break it, and the session's answers reach it through answer().
void Channel::client_input(std::string_view bytes) {
    if (owns_input_) return note_dropped_input();
    input(bytes);
}

void Channel::client_input_eof() {
    if (owns_input_) return note_dropped_input();
    input_eof();
}

// A client's answer to the open permission request of tool call `tool_call_id`.
Result<void> Channel::answer(std::string_view tool_call_id, std::string_view option_id) {
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
    drop_prompts(id_, parsed->events);
    std::vector<plugins::SessionEvent> events{
        {plugins::EventKind::permission_answer,
         json::serialize(json::object{{"toolCallId", tool_call_id}, {"optionId", option_id}, {"kind", kind}})}};
    events.insert(events.end(), parsed->events.begin(), parsed->events.end());
    send_events(owner_.store_events(id_, events));
    reply(*parsed);
    return {};
}

void Channel::close(const std::string& reason) {
    if (proxy_.proxy) proxy_.proxy->stop();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    link_timer_.cancel();
    deadline_timer_.cancel();
    expire_who(true, "unknown: the session ended before the shim answered");
    who_timer_.cancel();
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
        owner_.client_gone(attach_id);
        if (reason.empty()) continue;
        if (auto alive = client.client.lock()) alive->ended(reason);
    }
}

api::Attached Channel::attach(std::uint64_t attach_id, std::weak_ptr<api::TerminalClient> client,
                              const api::AttachOptions& options) {
    auto alive = client.lock();
    const std::uint64_t from = options.from.value_or(0);
    TerminalFilter filter;
    if (alive && options.output)
        for (const Chunk& chunk : ring_) {
            if (chunk.end() <= from) continue;
            const bool whole = chunk.offset >= from;
            const auto skip = whole ? std::size_t{0} : static_cast<std::size_t>(from - chunk.offset);
            auto bytes = for_terminal(filter, whole ? chunk.bytes : std::make_shared<const std::string>(chunk.bytes->substr(skip)));
            if (!bytes->empty()) alive->output(chunk.stream, whole ? chunk.offset : from, chunk.end(), bytes);
        }
    if (alive && options.events)
        owner_.for_each_event(id_, options.events_after,
                              [&alive](const store::SessionEvent& event) { alive->event(event); });
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
    clients_.emplace(attach_id, Client{std::move(client), options.read_only, options.events, options.output, std::move(filter)});
    // A terminal program repaints on SIGWINCH, so the newcomer (and everyone else)
    // gets a whole current screen rather than only the tail of the replay.
    if (tty_ && !options.read_only && resumed()) send(shim::encode_empty(shim::FrameType::redraw));
    return attached;
}

bool Channel::writable(std::uint64_t attach_id) const {
    const auto found = clients_.find(attach_id);
    return found != clients_.end() && !found->second.read_only;
}

void Channel::input(std::string_view bytes) {
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

void Channel::input_eof() {
    if (resumed()) send(shim::encode_empty(shim::FrameType::input_eof));
    else pending_eof_ = true;
}

void Channel::resize(std::uint16_t rows, std::uint16_t cols) {
    // The latest client to resize decides the size, as in tmux's "latest" mode.
    size_ = {rows, cols};
    if (resumed()) send(shim::encode_resize(rows, cols));
}

void Channel::accept() {
    auto link = std::make_shared<Link>(io_);
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

void Channel::read(const std::shared_ptr<Link>& link) {
    link->socket.async_read_some(
        net::buffer(link->buffer),
        [weak = weak_from_this(), link](const boost::system::error_code& error, std::size_t n) {
            auto self = weak.lock();
            if (!self || self->link_ != link) return;
            if (error) return self->drop_link("the shim disconnected");
            link->decoder.feed(std::string_view(link->buffer.data(), n));
            while (auto frame = link->decoder.next()) {
                if (!self->handle(*frame)) return self->drop_link("protocol error");
                // An exit may have closed the channel (or a new shim replaced this one):
                // what follows in the same read has no connection to act on.
                if (self->link_ != link) return;
            }
            if (link->decoder.failed())
                return self->drop_link("oversized or unknown frame");
            self->read(link);
        });
}

void Channel::drop_link(const char* why) {
    if (!link_) return;
    spdlog::debug("session {}: {}", id_, why);
    boost::system::error_code ignored;
    link_->socket.close(ignored);
    link_.reset();
    expire_who(true, "unknown: the shim's link to handlerd dropped before it answered");
    if (exit_code_) return;
    // A shim that is only reconnecting comes back within a few hundred ms; one that
    // died with its container never does, and sends no exit.
    link_timer_.expires_after(options_.lost_link_check);
    link_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
        auto self = weak.lock();
        if (error || !self || self->link_ || self->exit_code_) return;
        self->owner_.shim_lost(self->id_);
    });
}

// False: a malformed frame; the connection is dropped.
bool Channel::handle(const shim::Frame& frame) {
    switch (frame.type) {
    case shim::FrameType::hello: {
        const auto hello = shim::decode_hello(frame.payload);
        if (!hello || hello->version < shim::kOldestProtocolVersion || hello->version > shim::kProtocolVersion)
            return false;
        link_->version = hello->version;
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
        if (!exit_code_ && conversation_)
            end_open_turn("the harness ended (status " + std::to_string(*code) + ") before its turn did");
        if (!exit_code_) {
            exit_code_ = *code;
            for (auto& [attach_id, client] : clients_)
                if (auto alive = client.client.lock()) alive->exited(*code);
            owner_.shim_exited(id_, *code);
        }
        return true;
    }
    case shim::FrameType::owner: {
        const auto answer = shim::decode_owner(frame.payload);
        if (!answer || link_->version < 2) return false;
        answered(*answer);
        return true;
    }
    default:
        return false; // a host → shim type coming back
    }
}

void Channel::trace(std::int64_t connection, std::uint16_t peer_port) {
    const auto unknown = [&](std::string why) {
        owner_.record_origin(unknown_origin(id_, connection, std::move(why)));
    };
    if (peer_port == 0)
        return unknown("unknown: the connection came as a byte stream from an older shim, with no socket to look up");
    if (!resumed()) return unknown("unknown: the shim was not connected to handlerd when the connection came");
    if (link_->version < 2)
        return unknown("unknown: this session's shim is older than handlerd and cannot say (a new session can)");
    if (pending_who_.size() >= kMaxPendingWho)
        return unknown("unknown: " + std::to_string(kMaxPendingWho) + " lookups were already waiting for the shim");
    const std::uint32_t query = ++next_query_;
    pending_who_[query] = {connection, std::chrono::steady_clock::now() + options_.who_timeout, {}};
    send(shim::encode_who({query, peer_port}));
    arm_who_timer();
}

// The shim's answer. One for a query nobody asked (or one that timed out) is ignored:
// a shim answers each WHO once, and whoever else speaks on the control socket can only
// lie about its own session's display, never about a decision.
void Channel::answered(const shim::OwnerAnswer& answer) {
    const auto found = pending_who_.find(answer.query);
    if (found == pending_who_.end()) return;
    const std::int64_t connection = found->second.connection;
    auto waiting = std::move(found->second.waiting);
    pending_who_.erase(found);
    owner_.record_origin(origin_of(id_, connection, answer, tool_calls_, parser_ != nullptr));
    for (auto& done : waiting) done();
}

void Channel::when_traced(std::int64_t connection, std::function<void()> done) {
    for (auto& entry : pending_who_)
        if (entry.second.connection == connection) {
            entry.second.waiting.push_back(std::move(done));
            return;
        }
    done(); // answered already, or never asked (recorded as unknown)
}

// Records the lookups past their deadline (all of them with `all`) as unknown.
void Channel::expire_who(bool all, const std::string& why) {
    const auto now = std::chrono::steady_clock::now();
    for (auto it = pending_who_.begin(); it != pending_who_.end();) {
        if (!all && it->second.deadline > now) {
            ++it;
            continue;
        }
        owner_.record_origin(unknown_origin(id_, it->second.connection, why));
        auto waiting = std::move(it->second.waiting);
        it = pending_who_.erase(it);
        for (auto& done : waiting) done();
    }
}

void Channel::arm_who_timer() {
    if (who_timer_armed_ || pending_who_.empty()) return;
    who_timer_armed_ = true;
    const auto first = std::min_element(pending_who_.begin(), pending_who_.end(), [](const auto& a, const auto& b) {
        return a.second.deadline < b.second.deadline;
    });
    who_timer_.expires_at(first->second.deadline);
    who_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
        auto self = weak.lock();
        if (!self || error) return;
        self->who_timer_armed_ = false;
        self->expire_who(false, "unknown: the shim did not answer within " +
                                    std::to_string(self->options_.who_timeout.count()) + " ms");
        self->arm_who_timer();
    });
}

void Channel::receive(const shim::Output& output) {
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
            owner_.client_gone(it->first);
            it = clients_.erase(it);
            continue;
        }
        if (it->second.output)
            if (auto bytes = for_terminal(it->second.filter, chunk.bytes); !bytes->empty())
                alive->output(chunk.stream, chunk.offset, chunk.end(), bytes);
        ++it;
    }
    if (parser_ && chunk.stream == api::OutputStream::stdout_) parse(data);
}

// The harness's stdout to events, stored, then sent to the clients that want them.
// A parser that fails is dropped (the raw output is still logged): one bad piece of
// output must not cost the session.
void Channel::parse(std::string_view data) {
    auto parsed = parser_->feed(data);
    if (!parsed) {
        spdlog::warn("session {}: events stop here: {}", id_, parsed.error().message);
        parser_.reset();
        return;
    }
    reply(*parsed);
    drop_prompts(id_, parsed->events);
    auto* events = &parsed->events;
    if (events->empty()) return;
    if (!events_bytes_) {
        // Read once, at the first events: what is stored already (the prompt, what a
        // previous handlerd kept) counts.
        events_bytes_ = owner_.events_bytes(id_);
    }
    for (auto it = events->begin(); it != events->end(); ++it) {
        if (*events_bytes_ + it->json.size() <= options_.events_limit_bytes) {
            *events_bytes_ += it->json.size();
            continue;
        }
        // The program inside writes these: it must not fill the user's disk.
        const std::string why = "this session's events reached the limit of " +
                                std::to_string(options_.events_limit_bytes) +
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
void Channel::reply(const plugins::ParsedEvents& parsed) {
    if (!parsed.input.empty()) protocol_input(parsed.input);
    if (parsed.close_input) input_eof();
}

// What the parser wrote for the harness: kept whole while the shim is away (unlike a
// client's typing, which is bounded), since a lost byte of it would break the protocol.
// The parser's own calls are bounded (16 MiB each), and only one turn runs at a time.
void Channel::protocol_input(std::string_view bytes) {
    if (!resumed()) {
        pending_input_.append(bytes);
        return;
    }
    input(bytes);
}

void Channel::note_dropped_input() {
    if (std::exchange(warned_input_, true)) return;
    spdlog::warn("session {}: a client's input was not passed on: the harness's stdin is its protocol", id_);
}

// Keeps the open permission requests (by tool call) that stored events ask and answer.
void Channel::track_requests(const store::SessionEvent& event) {
    if (event.kind != "permission_request" && event.kind != "permission_answer") return;
    boost::system::error_code error;
    const auto payload = json::parse(event.payload, error);
    const auto* call = error || !payload.is_object() ? nullptr : payload.as_object().if_contains("toolCallId");
    if (call == nullptr || !call->is_string()) return;
    if (event.kind == "permission_request") open_requests_[std::string(call->as_string())] = event.payload;
    else open_requests_.erase(std::string(call->as_string()));
}

// A parser re-opened after a restart: the requests still waiting are in the store.
void Channel::load_open_requests() {
    owner_.for_each_event(id_, 0, [this](const store::SessionEvent& event) {
        track_requests(event);
        turns_.observe(event.kind, event.payload);
        tool_calls_.observe(event.kind, event.payload);
    });
}

// A request payload's options, (optionId, kind), leaving out any without both.
std::vector<std::pair<std::string, std::string>> Channel::options_of(const std::string& request) {
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

void Channel::send_events(const std::vector<store::SessionEvent>& stored) {
    for (const auto& event : stored) {
        track_requests(event);
        turns_.observe(event.kind, event.payload);
        tool_calls_.observe(event.kind, event.payload);
        // A one-shot run is one turn: with its input ended, the harness exits.
        if (owns_input_ && !conversation_ && event.kind == "result") input_eof();
    }
    for (const auto& event : stored)
        for (auto& [attach_id, client] : clients_)
            if (client.events)
                if (auto alive = client.client.lock()) alive->event(event);
    if (conversation_) start_next_turn();
}

Result<Channel::Submitted> Channel::submit(const api::Prompt& typed) {
    if (!conversation_)
        return make_error(ErrorCode::conflict, "session " + id_ + " is not a conversation; it took its one prompt at "
                                                                  "start (`handler chat` starts one)");
    if (exit_code_)
        return make_error(ErrorCode::conflict, "conversation " + id_ + " has ended; `handler session resume " + id_ +
                                                   "` continues it");
    if (!parser_)
        return make_error(ErrorCode::unavailable, "conversation " + id_ + " lost its event parser (handlerd's log "
                                                                          "says why); stop and resume it");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string prompt_id = "p_";
    for (std::uint64_t bits = prompt_ids_(), i = 0; i < 12; ++i, bits >>= 4) prompt_id += kHex[bits & 0xF];
    Turns::Prompt prompt{prompt_id, prompt_json(prompt_id, typed)};
    const bool waits = turns_.running() || !turns_.queued().empty() || starting_turn_;
    if (waits) {
        send_events(owner_.store_events(id_, {{plugins::EventKind::prompt_queued, prompt.payload}}));
    } else {
        start_turn(prompt);
    }
    return Submitted{std::move(prompt_id), waits};
}

Result<void> Channel::withdraw(std::string_view prompt_id) {
    if (turns_.is_queued(prompt_id)) {
        send_events(owner_.store_events(
            id_, {{plugins::EventKind::prompt_withdrawn, json::serialize(json::object{{"promptId", prompt_id}})}}));
        return {};
    }
    if (turns_.running_id() && *turns_.running_id() == prompt_id)
        return make_error(ErrorCode::conflict, "prompt " + std::string(prompt_id) +
                                                   " has started; cancel its turn instead (`handler session cancel " +
                                                   id_ + "`)");
    return make_error(ErrorCode::not_found, "conversation " + id_ + " has no waiting prompt '" +
                                                std::string(prompt_id) + "' (it ran, was withdrawn, or never was)");
}

Result<void> Channel::cancel() {
    if (!turns_.running())
        return make_error(ErrorCode::conflict, "no turn of " + id_ + " is running");
    if (!parser_) {
        end_open_turn("the harness's event parser is gone, so its turn cannot end by itself");
        return {};
    }
    return through_parser(parser_->cancel());
}

Result<void> Channel::configure(std::string_view name, std::string_view value) {
    if (!parser_ || exit_code_)
        return make_error(ErrorCode::unavailable, "conversation " + id_ + " is not running");
    return through_parser(parser_->set(name, value));
}

// What the harness's parser made of a cancel or a setting: events to store, input for it.
Result<void> Channel::through_parser(Result<plugins::ParsedEvents> parsed) {
    if (!parsed) return parsed.take_error();
    drop_prompts(id_, parsed->events);
    reply(*parsed);
    if (!parsed->events.empty()) send_events(owner_.store_events(id_, parsed->events));
    return {};
}

void Channel::new_harness(const std::string& why) {
    std::vector<plugins::SessionEvent> closed;
    for (const auto& [tool_call, request] : open_requests_)
        closed.push_back({plugins::EventKind::permission_answer,
                          json::serialize(json::object{{"toolCallId", tool_call}, {"kind", "cancelled"}})});
    if (!closed.empty()) send_events(owner_.store_events(id_, closed));
    end_open_turn(why);
}

void Channel::end_open_turn(const std::string& why) {
    if (!turns_.running()) return;
    spdlog::info("session {}: {}", id_, why);
    send_events(owner_.store_events(
        id_, {{plugins::EventKind::error, json::serialize(json::object{{"message", why}})},
              {plugins::EventKind::result,
               json::serialize(json::object{{"stopReason", "cancelled"}, {"isError", true}, {"result", why}})}}));
}

// A turn starts: its prompt is recorded (every client sees what was typed, wherever),
// then goes to the harness in its protocol. A prompt the parser refuses is that turn's
// failed result, and the conversation goes on.
void Channel::start_turn(const Turns::Prompt& prompt) {
    starting_turn_ = true;
    send_events(owner_.store_events(id_, {{plugins::EventKind::user_prompt, prompt.payload}}));
    auto parsed = parser_->prompt(prompt.payload);
    starting_turn_ = false;
    if (!parsed) {
        const std::string why = "the harness did not take the prompt: " + parsed.error().message;
        send_events(owner_.store_events(
            id_, {{plugins::EventKind::error, json::serialize(json::object{{"message", why}})},
                  {plugins::EventKind::result,
                   json::serialize(json::object{{"stopReason", "end_turn"}, {"isError", true}, {"result", why}})}}));
        return;
    }
    drop_prompts(id_, parsed->events);
    reply(*parsed);
    if (!parsed->events.empty()) send_events(owner_.store_events(id_, parsed->events));
}

void Channel::start_next_turn() {
    if (starting_turn_ || !parser_ || exit_code_) return;
    if (auto next = turns_.next()) start_turn(*next);
}

void Channel::remember(Chunk chunk) {
    ring_size_ += chunk.bytes->size();
    ring_.push_back(std::move(chunk));
    while (ring_size_ > options_.replay_bytes && ring_.size() > 1) {
        ring_size_ -= ring_.front().bytes->size();
        ring_.pop_front();
    }
}

// What of `bytes` may reach a client's terminal (terminal_filter.hpp). The log keeps the
// output as it was printed: it is read as a file, not by a terminal, and a later reader
// (or a better filter) can still see what a session tried.
std::shared_ptr<const std::string> Channel::for_terminal(TerminalFilter& filter,
                                                         const std::shared_ptr<const std::string>& bytes) {
    const auto dropped_before = filter.dropped();
    std::string out;
    filter.feed(*bytes, out);
    if (filter.dropped() != dropped_before && !std::exchange(warned_terminal_, true))
        spdlog::warn("session {}: its output held a sequence that acts on the user's terminal, {}; its clients do "
                     "not get such sequences (docs/security.md, \"The terminal\"), its output log keeps them",
                     id_, filter.last_dropped());
    if (out == *bytes) return bytes;
    return std::make_shared<const std::string>(std::move(out));
}

void Channel::send(std::string frames) {
    if (!link_ || frames.empty()) return;
    link_->outgoing.push_back(std::move(frames));
    if (!link_->writing) write(link_, weak_from_this());
}

// Static, so a closing link can finish its writes after its channel is gone.
void Channel::write(const std::shared_ptr<Link>& link, std::weak_ptr<Channel> channel) {
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

} // namespace handler::sessions
