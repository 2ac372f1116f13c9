// The terminal messages of a page's events socket and of the terminal route (docs/api.md,
// "Terminal" and "Terminal channels"), and the channels they open: parse_channel_command,
// parse_terminal_command and set_attach_option as the sockets call them, then the
// TerminalChannels of one socket between it and a scripted session service, with every
// message a channel sends decoded again.
//
// Input: lines. A line is a text message the page sends, unless it starts with '@':
//   @binary BYTES             a binary message (its first byte is the channel's)
//   @route SESSION            an attach on the terminal route's socket (no channel)
//   @option KEY VALUE         set_attach_option, as a query parameter and as a field
//   @replay SESSION TEXT      attaching SESSION replays TEXT (an unknown one is refused)
//   @output SESSION S TEXT    SESSION prints TEXT on stream S (1 to 3) to its attaches
//   @event SESSION KIND TEXT  SESSION records an event
//   @exit SESSION CODE        its program exits; @ended SESSION REASON: it ends
//
// Properties: a parsed command is on channel 1 to 255 and is the channel the message
// named; an error carries the channel exactly when the message named a valid one, and
// names the field that is wrong; a resize is 1 to 10000 each way, an attach names a
// session of 1 to 128 bytes; a command written back in the documented shape parses the
// same, and the terminal route takes a resize or an eof as the channels do. An option is
// taken by the same rule as a query parameter and as a field, and its error names it in
// that one's words. A channel's first message is its terminal.attached, then what the
// service sent it, each decoded back to what the service gave (the output header: channel,
// stream, end offset big-endian); after its exit or end nothing, and the socket is told
// it is done once; a refused attach sends nothing. Input, resize and eof reach the attach
// of an open channel once, nothing reaches a closed one, a detach comes once, and when the
// socket ends every attach of a session still running is detached.
#include "api/terminal_channel.hpp"
#include "api/terminal_protocol.hpp"
#include "core/utf8.hpp"

#include "fuzz/fuzz_support.hpp"
#include "fuzz/terminal_commands.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace json = boost::json;
namespace store = handler::store;
using handler::Error;
using handler::ErrorCode;
using handler::make_error;
using handler::Result;
using handler::fuzz::check;
using namespace handler::api;
using handler::api::detail::ChannelSink;
using handler::api::detail::TerminalChannel;
using Kind = TerminalCommand::Kind;

// What the session service sent one client, to compare with what its channel put out.
struct Call {
    enum class What { output = 1, event, exit, ended } what = What::output;
    OutputStream stream = OutputStream::terminal;
    std::uint64_t end = 0;
    std::string text; // the output, an event's kind, an end's reason
    std::int64_t number = 0; // an event's seq, an exit's code
};

bool is_last(const Call& call) { return call.what == Call::What::exit || call.what == Call::What::ended; }

// An event's kind or an end's reason: handlerd's own words, valid UTF-8 (text messages
// must be, for a browser to take them).
std::string as_utf8(std::string_view text) { return handler::with_valid_utf8(text); }

// ---- The session service ------------------------------------------------------------

// Attaches to a session replay what @replay gave it; the service says exit and end to the
// attaches it holds, as sessions/channel.cpp does: an exit leaves them held (the session's
// end reaches them too), an end lets them go; an attach to a finished session is told so
// during the attach and held by no one (attach id 0).
class ScriptedSessions final : public SessionControl {
public:
    struct Session {
        std::string replay;
        std::uint64_t produced = 0;
        std::int64_t seq = 0;
        std::optional<std::int64_t> exit_code;
        std::optional<std::string> ended;
    };
    struct Attach {
        std::string session;
        std::weak_ptr<TerminalClient> client;
        bool detached = false;
        bool told_last = false; // its exit or end was sent
        std::string typed;
        std::vector<std::pair<std::uint16_t, std::uint16_t>> sizes;
        int eofs = 0;
    };

    Result<store::Session> start(const StartRequest&) override { return unavailable(); }
    Result<store::Session> stop(std::string_view) override { return unavailable(); }
    Result<void> remove(std::string_view) override { return unavailable(); }
    Result<SessionLog> log(std::string_view) override { return unavailable(); }
    Result<void> answer(std::string_view, std::string_view, std::string_view) override { return unavailable(); }

    Result<Attached> attach(std::string_view id, std::weak_ptr<TerminalClient> client,
                            const AttachOptions& options) override {
        const auto found = sessions.find(std::string(id));
        if (found == sessions.end()) return make_error(ErrorCode::not_found, "session '" + std::string(id) + "' does not exist");
        Session& session = found->second;
        if (options.output && !session.replay.empty())
            call(client, Call{Call::What::output, OutputStream::terminal, session.produced, session.replay, 0});
        Attached attached;
        attached.produced = session.produced;
        attached.state = session.exit_code ? store::SessionState::exited
                         : session.ended   ? store::SessionState::failed
                                           : store::SessionState::running;
        attached.events = options.events ? "structured" : "none";
        if (session.exit_code) call(client, Call{Call::What::exit, {}, 0, {}, *session.exit_code});
        else if (session.ended) call(client, Call{Call::What::ended, {}, 0, *session.ended, 0});
        else {
            attached.attach_id = next_attach_id++;
            Attach& attach = attaches[attached.attach_id];
            attach.session = std::string(id);
            attach.client = client;
        }
        return attached;
    }
    void detach(std::uint64_t attach_id) override {
        auto& attach = live(attach_id, "a detach");
        attach.detached = true;
    }
    void input(std::uint64_t attach_id, std::string_view bytes) override { live(attach_id, "input").typed += bytes; }
    void input_eof(std::uint64_t attach_id) override { ++live(attach_id, "an eof").eofs; }
    void resize(std::uint64_t attach_id, std::uint16_t rows, std::uint16_t cols) override {
        live(attach_id, "a resize").sizes.emplace_back(rows, cols);
    }

    // To every attach of `id` that is held and not detached.
    void to_attaches(const std::string& id, const Call& what, bool let_go) {
        for (auto it = attaches.begin(); it != attaches.end();) {
            if (it->second.session == id && !it->second.detached) {
                call(it->second.client, what);
                it->second.told_last = it->second.told_last || is_last(what);
            }
            it = let_go && it->second.session == id ? attaches.erase(it) : std::next(it);
        }
    }

    std::map<std::string, Session> sessions;
    std::map<std::uint64_t, Attach> attaches;
    // Every call made to a client, in order, and the client it went to.
    std::vector<std::pair<const TerminalClient*, Call>> calls;
    std::uint64_t next_attach_id = 1;

private:
    void call(const std::weak_ptr<TerminalClient>& weak, const Call& what) {
        const auto client = weak.lock();
        if (!client) return;
        calls.emplace_back(client.get(), what);
        switch (what.what) {
        case Call::What::output:
            client->output(what.stream, what.end - what.text.size(), what.end, std::make_shared<const std::string>(what.text));
            break;
        case Call::What::event:
            client->event(store::SessionEvent{"s", what.number, 1000 + what.number, what.text,
                                              json::serialize(json::object{{"n", what.number}})});
            break;
        case Call::What::exit: client->exited(what.number); break;
        case Call::What::ended: client->ended(what.text); break;
        }
    }
    Attach& live(std::uint64_t attach_id, const char* what) {
        const auto found = attaches.find(attach_id);
        check(found != attaches.end(), "only an attach the service gave, and holds, is called", what);
        check(!found->second.detached, "nothing reaches an attach after its detach", what);
        check(!found->second.told_last, "nothing reaches an attach after its session's exit or end", what);
        return found->second;
    }
    static Error unavailable() { return make_error(ErrorCode::unavailable, "not in this target"); }
};

// ---- What a channel sends, decoded --------------------------------------------------

struct Sent {
    unsigned channel = 0;
    std::string message;
    bool binary = false;
};

class RecordingSink final : public ChannelSink {
public:
    void channel_send(unsigned channel, std::string message, bool binary) override {
        sent.push_back(Sent{channel, std::move(message), binary});
    }
    void channel_finished(unsigned channel) override {
        finished.push_back(channel);
        if (on_finished) on_finished(channel);
    }
    std::vector<Sent> sent;
    std::vector<unsigned> finished;
    std::function<void(unsigned)> on_finished;
};

// A text message of `channel`: {"type":"terminal.NAME","channel":N,...}, or on the
// terminal route {"type":"NAME",...} with no channel.
json::object text_of(const Sent& sent, unsigned channel, std::string_view name) {
    check(!sent.binary, "a text message is sent as text", sent.message);
    check(sent.channel == channel, "a channel sends on its own number", sent.message);
    boost::system::error_code error;
    auto value = json::parse(sent.message, error);
    check(!error && value.is_object(), "a text message is a JSON object", sent.message);
    auto& object = value.as_object();
    const std::string type = channel == kNoChannel ? std::string(name) : "terminal." + std::string(name);
    const auto* got = object.if_contains("type");
    check(got != nullptr && got->is_string() && got->as_string() == type, "a message is of the type sent", sent.message);
    if (channel == kNoChannel) {
        check(!object.contains("channel"), "the terminal route's messages name no channel", sent.message);
    } else {
        const auto* number = object.if_contains("channel");
        check(number != nullptr && number->is_int64() && number->as_int64() == channel,
              "a channel's message carries its channel", sent.message);
    }
    return std::move(object);
}

void check_sent(const Sent& sent, unsigned channel, const Call& call) {
    switch (call.what) {
    case Call::What::output: {
        check(sent.binary, "output is sent binary");
        check(sent.channel == channel, "a channel sends on its own number");
        const std::string_view message = sent.message;
        const std::size_t head = channel == kNoChannel ? 1 : 10;
        check(message.size() == head + call.text.size(), "the header is 10 bytes (1 on the terminal route)");
        std::size_t at = 0;
        if (channel != kNoChannel)
            check(static_cast<unsigned char>(message[at++]) == channel, "the first byte is the channel");
        check(static_cast<unsigned char>(message[at++]) == static_cast<unsigned>(call.stream), "then the stream");
        if (channel != kNoChannel) {
            std::uint64_t end = 0;
            for (int i = 0; i < 8; ++i) end = (end << 8) | static_cast<unsigned char>(message[at++]);
            check(end == call.end, "then the end offset, most significant byte first");
        }
        check(message.substr(at) == call.text, "then the bytes as given");
        return;
    }
    case Call::What::event: {
        const auto object = text_of(sent, channel, "event");
        check(object.at("seq").as_int64() == call.number && object.at("kind").as_string() == call.text &&
                  object.at("payload").is_object(),
              "an event is sent as the service gave it", sent.message);
        return;
    }
    case Call::What::exit:
        check(text_of(sent, channel, "exit").at("code").as_int64() == call.number, "an exit says its code", sent.message);
        return;
    case Call::What::ended:
        check(text_of(sent, channel, "ended").at("reason").as_string() == call.text, "an end says its reason",
              sent.message);
        return;
    }
}

// ---- The socket ---------------------------------------------------------------------

// The page's socket as WebSocketSession keeps its channels (which needs Beast, so it is
// retold here): one TerminalChannel per open number, at most 16, that leaves when its
// session is done, on a detach, or when its attach was refused.
class Socket {
public:
    explicit Socket(ScriptedSessions& sessions) : sessions_(sessions) {
        sink_.on_finished = [this](unsigned channel) { open_.erase(channel); };
    }

    void text(std::string_view message);
    void binary(std::string_view message);
    void route(const std::string& session) { attach(kNoChannel, session, AttachOptions{}); }
    // Something the service does: what it sends must come out of the channels it reached.
    template <class Act> void service(Act act) {
        const auto start = begin();
        act();
        compare(start, std::nullopt);
    }
    // The socket ends: every channel detaches.
    void end();

private:
    struct Mark {
        std::size_t calls, sent, finished;
    };
    Mark begin() const { return {sessions_.calls.size(), sink_.sent.size(), sink_.finished.size()}; }
    void attach(unsigned number, const std::string& session, const AttachOptions& options);
    void compare(const Mark& start, std::optional<std::pair<unsigned, std::string>> greeted);
    void to_routes(const TerminalCommand* command, std::string_view input);

    ScriptedSessions& sessions_;
    RecordingSink sink_;
    std::map<unsigned, std::shared_ptr<TerminalChannel>> open_;
    // Every channel made, kept alive as a socket's pending work may keep one: the service
    // may still reach a channel whose session is done, and it must stay quiet.
    std::vector<std::shared_ptr<TerminalChannel>> made_;
    std::vector<std::shared_ptr<TerminalChannel>> routes_;
    std::map<const TerminalClient*, unsigned> numbers_;
    std::set<const TerminalClient*> done_;
};

void Socket::attach(unsigned number, const std::string& session, const AttachOptions& options) {
    if (number != kNoChannel && (open_.contains(number) || open_.size() >= 16)) return;
    auto channel = std::make_shared<TerminalChannel>(sink_, number, session);
    made_.push_back(channel);
    numbers_[channel.get()] = number;
    if (number != kNoChannel) open_[number] = channel;
    const auto start = begin();
    const auto attached = channel->attach(sessions_, options);
    if (number == kNoChannel && attached) routes_.push_back(channel);
    if (!attached) {
        open_.erase(number);
        check(sink_.sent.size() == start.sent && sink_.finished.size() == start.finished,
              "a refused attach sends nothing", attached.error().message);
        check(attached.error().code == ErrorCode::not_found, "a refused attach is the service's refusal");
        done_.insert(channel.get());
        return;
    }
    compare(start, std::pair{number, session});
}

// What the channels sent since `start` is what the service sent them since then, each as
// its message, nothing after a channel's last, and one "finished" right after that last.
// An attach's channel greets first, whatever the service sent it during the attach.
void Socket::compare(const Mark& start, std::optional<std::pair<unsigned, std::string>> greeted) {
    std::size_t sent = start.sent;
    std::size_t finished = start.finished;
    const auto next = [&]() -> const Sent& {
        check(sent < sink_.sent.size(), "every call the service made is sent on");
        return sink_.sent[sent++];
    };
    if (greeted) {
        const auto object = text_of(next(), greeted->first, "attached");
        check(object.at("session").as_string() == greeted->second, "the greeting names the session attached");
        const auto& session = sessions_.sessions.at(greeted->second);
        check(object.at("produced").to_number<std::uint64_t>() == session.produced, "the greeting says what was produced");
        check(object.at("tty").is_bool() && object.at("state").is_string() && object.at("events").is_string(),
              "the greeting has the fields of attached");
    }
    for (std::size_t i = start.calls; i < sessions_.calls.size(); ++i) {
        const auto& [client, call] = sessions_.calls[i];
        if (done_.contains(client)) continue;
        const unsigned number = numbers_.at(client);
        check_sent(next(), number, call);
        if (!is_last(call)) continue;
        done_.insert(client);
        check(finished < sink_.finished.size() && sink_.finished[finished] == number,
              "a channel whose session is done tells the socket so, once");
        ++finished;
        if (number != kNoChannel) check(!open_.contains(number), "a channel whose session is done is closed");
    }
    check(sent == sink_.sent.size(), "a channel sends only the greeting and what the service sent it");
    check(finished == sink_.finished.size(), "a channel is finished only by its session's end");
}

const ScriptedSessions::Attach* attach_of(const ScriptedSessions& sessions, const TerminalChannel* channel) {
    for (const auto& [id, attach] : sessions.attaches)
        if (attach.client.lock().get() == channel && !attach.detached) return &attach;
    return nullptr;
}

// The terminal route's socket keeps its channel after the session is done (it closes once
// the last message is out), so what its client sends meanwhile still reaches the channel.
void Socket::to_routes(const TerminalCommand* command, std::string_view input) {
    for (const auto& channel : routes_) {
        const auto* attach = attach_of(sessions_, channel.get());
        const bool live = attach != nullptr && !attach->told_last;
        const auto before = attach ? *attach : ScriptedSessions::Attach{};
        if (command == nullptr) channel->input(input);
        else if (command->kind == Kind::resize) channel->resize(command->rows, command->cols);
        else channel->input_eof();
        if (!live) continue;
        const bool reached = command == nullptr                ? attach->typed == before.typed + std::string(input)
                             : command->kind == Kind::resize ? attach->sizes.size() == before.sizes.size() + 1
                                                             : attach->eofs == before.eofs + 1;
        check(reached, "what the terminal route's client sends reaches its attach");
    }
}

void Socket::text(std::string_view message) {
    if (const ParsedCommand route = parse_terminal_command(message); route.command) to_routes(&*route.command, {});
    const ParsedCommand parsed = parse_channel_command(message);
    if (!parsed.command) return;
    const TerminalCommand& command = *parsed.command;
    const auto open = open_.find(command.channel);
    if (command.kind == Kind::attach) return attach(command.channel, command.session, command.options);
    // A closed number reaches no channel here, as in WebSocketSession.
    if (open == open_.end()) return;
    const auto channel = open->second;
    const auto* attach = attach_of(sessions_, channel.get());
    check(attach != nullptr, "an open channel holds a live attach");
    const auto typed = *attach;
    switch (command.kind) {
    case Kind::resize:
        channel->resize(command.rows, command.cols);
        check(attach->sizes.size() == typed.sizes.size() + 1 &&
                  attach->sizes.back() == std::pair{command.rows, command.cols},
              "a resize reaches its channel's attach once, as sent");
        break;
    case Kind::eof:
        channel->input_eof();
        check(attach->eofs == typed.eofs + 1, "an eof reaches its channel's attach once");
        break;
    case Kind::detach:
        channel->detach();
        check(attach->detached, "a detach reaches its channel's attach");
        channel->detach();
        open_.erase(open);
        break;
    case Kind::attach: break;
    }
}

void Socket::binary(std::string_view message) {
    to_routes(nullptr, message);
    if (message.empty()) return;
    const auto open = open_.find(static_cast<unsigned char>(message.front()));
    if (open == open_.end()) return;
    const auto* attach = attach_of(sessions_, open->second.get());
    check(attach != nullptr, "an open channel holds a live attach");
    const std::string before = attach->typed;
    open->second->input(message.substr(1));
    check(attach->typed == before + std::string(message.substr(1)), "input reaches its channel's attach, as sent");
}

void Socket::end() {
    auto channels = std::move(open_);
    open_.clear();
    for (auto& [number, channel] : channels) channel->detach();
    // The terminal route's socket detaches its one channel as it ends, too.
    for (auto& channel : routes_) channel->detach();
    for (const auto& [id, attach] : sessions_.attaches) {
        const auto& session = sessions_.sessions.at(attach.session);
        if (!session.exit_code && !session.ended)
            check(attach.detached || attach.client.expired(),
                  "when the socket ends, every attach of a running session is detached", attach.session);
    }
}

// ---- The parsers --------------------------------------------------------------------

// What the channel parser must say of `text`, judged without it: the channel it must
// carry, and a word its error must hold (empty: it parses).
struct Expected {
    unsigned channel = kNoChannel;
    std::string names;
};

bool whole_in(const json::value* value, std::int64_t low, std::int64_t high) {
    return value != nullptr && value->is_int64() && value->as_int64() >= low && value->as_int64() <= high;
}

std::optional<Expected> judged(const json::value& value) {
    const auto* object = value.if_object();
    const auto* type = object ? object->if_contains("type") : nullptr;
    if (type == nullptr || !type->is_string()) return Expected{kNoChannel, "\"type\""};
    const std::string_view name = type->as_string();
    if (name != "attach" && name != "detach" && name != "resize" && name != "eof")
        return Expected{kNoChannel, "unknown message type"};
    const auto* channel = object->if_contains("channel");
    if (!whole_in(channel, 1, kMaxChannel)) return Expected{kNoChannel, "\"channel\""};
    const auto number = static_cast<unsigned>(channel->as_int64());
    if (name == "resize" && (!whole_in(object->if_contains("rows"), 1, 10000) || !whole_in(object->if_contains("cols"), 1, 10000)))
        return Expected{number, "\"rows\" and \"cols\""};
    if (name == "attach") {
        const auto* session = object->if_contains("session");
        if (session == nullptr || !session->is_string() || session->as_string().empty() || session->as_string().size() > 128)
            return Expected{number, "\"session\""};
        // Which option is wrong is the attach's to say: it names one of the fields.
        return std::nullopt;
    }
    return Expected{number, ""};
}

void check_option_error(const ParsedCommand& parsed, const json::object& object) {
    const std::string& message = parsed.command.error().message;
    bool named = false;
    for (const auto& [key, value] : object)
        if (key != "type" && key != "channel" && key != "session")
            named = named || message.find("field '" + std::string(key) + "'") != std::string::npos;
    check(named, "a refused attach option is named as the field it was", message);
}

void check_parsers(std::string_view text) {
    const ParsedCommand parsed = parse_channel_command(text);
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    if (error) {
        check(!parsed.command && parsed.channel == kNoChannel, "what is not JSON is refused, on no channel");
        check(parsed.command.error().message.starts_with("a text message must be JSON"), "the error says it is not JSON",
              parsed.command.error().message);
    } else if (const auto expected = judged(value)) {
        check(parsed.channel == expected->channel, "an error carries the channel exactly when the message named a valid one",
              text);
        if (expected->names.empty()) {
            check(parsed.command.ok(), "a message of the documented shape parses", text);
        } else {
            check(!parsed.command, "a message that is not of the documented shape is refused", text);
            check(parsed.command.error().message.find(expected->names) != std::string::npos,
                  "the error names what is wrong", parsed.command.error().message + " (expected " + expected->names + ")");
        }
    } else if (!parsed.command) {
        check(parsed.channel == static_cast<unsigned>(value.as_object().at("channel").as_int64()),
              "an attach's error carries its channel");
        check_option_error(parsed, value.as_object());
    }
    if (!parsed.command) {
        check(parsed.command.error().code == ErrorCode::invalid_argument, "a malformed message is invalid_argument");
    } else {
        const TerminalCommand& command = *parsed.command;
        check(command.channel >= 1 && command.channel <= kMaxChannel && command.channel == parsed.channel,
              "a command is on the channel 1 to 255 it named");
        if (command.kind == Kind::attach)
            check(!command.session.empty() && command.session.size() <= 128, "an attach names a session of 1 to 128 bytes");
        if (command.kind == Kind::resize)
            check(command.rows >= 1 && command.rows <= 10000 && command.cols >= 1 && command.cols <= 10000,
                  "a resize is 1 to 10000 each way");
        const std::string back = handler::fuzz::written_back(command);
        const ParsedCommand again = parse_channel_command(back);
        check(again.command.ok() && handler::fuzz::same(*again.command, command), "the command written back parses the same",
              back);
    }

    // The terminal route takes the same resize and eof, without a channel.
    const ParsedCommand route = parse_terminal_command(text);
    check(route.channel == kNoChannel, "the terminal route's messages are on no channel");
    if (!route.command) {
        check(route.command.error().code == ErrorCode::invalid_argument && !route.command.error().message.empty(),
              "the terminal route's error says what is wrong");
        if (parsed.command && (parsed.command->kind == Kind::resize || parsed.command->kind == Kind::eof))
            check(false, "the terminal route takes a resize or eof the channels take", text);
        return;
    }
    const TerminalCommand& command = *route.command;
    check(command.kind == Kind::resize || command.kind == Kind::eof, "the terminal route takes resize and eof only");
    check(command.channel == kNoChannel, "the terminal route's command is on no channel");
    const std::string back = handler::fuzz::written_back(command);
    const ParsedCommand again = parse_terminal_command(back);
    check(again.command.ok() && handler::fuzz::same(*again.command, command),
          "the terminal route's command written back parses the same", back);
    // On a channel, the same message is the same command.
    auto object = value.as_object();
    object["channel"] = 7;
    const ParsedCommand on_channel = parse_channel_command(json::serialize(object));
    check(on_channel.command.ok() && on_channel.command->kind == command.kind && on_channel.command->rows == command.rows &&
              on_channel.command->cols == command.cols,
          "a channel takes what the terminal route takes", json::serialize(object));
}

// One option by both ways in: the same rule, and an error in each one's words.
void check_option(std::string_view key, std::string_view value) {
    AttachOptions query;
    AttachOptions field;
    const auto by_query = set_attach_option(query, key, value, OptionSource::query);
    const auto by_field = set_attach_option(field, key, value, OptionSource::message);
    check(by_query.ok() == by_field.ok() && handler::fuzz::same(query, field), "a query parameter and a field are one rule");
    const bool known = key == "from" || key == "after" || key == "read_only" || key == "events" || key == "output";
    if (!by_query) {
        const auto& query_error = by_query.error().message;
        const auto& field_error = by_field.error().message;
        check(query_error.find("query parameter '" + std::string(key) + "'") != std::string::npos,
              "a query parameter's error names it as one", query_error);
        check(field_error.find("field '" + std::string(key) + "'") != std::string::npos,
              "a field's error names it as one", field_error);
        if (known)
            check(query_error.find("got '" + std::string(value) + "'") != std::string::npos,
                  "an option's error quotes the value", query_error);
        check(handler::fuzz::same(query, AttachOptions{}), "a refused option changes nothing");
        return;
    }
    check(known, "only the five options are taken", std::string(key));
    const AttachOptions none;
    if (key != "from") check(!query.from, "only the option named changes");
    if (key != "after") check(query.events_after == none.events_after, "only the option named changes");
    if (key != "read_only") check(query.read_only == none.read_only, "only the option named changes");
    if (key != "events") check(query.events == none.events, "only the option named changes");
    if (key != "output") check(query.output == none.output, "only the option named changes");
    if (key == "after") check(query.events_after >= 0, "after is an event's seq, never negative");
    // An attach message with the value as a JSON string takes it by the same rule.
    if (!handler::is_valid_utf8(value)) return;
    const json::object message{{"type", "attach"}, {"channel", 1}, {"session", "s"}, {key, value}};
    const ParsedCommand attach = parse_channel_command(json::serialize(message));
    check(attach.command.ok() && handler::fuzz::same(attach.command->options, query),
          "an attach's field is taken as the option is", json::serialize(message));
}

// ---- The script ---------------------------------------------------------------------

// The next word of `line` (up to a space), and the line after it.
std::string_view word(std::string_view& line) {
    const auto space = line.find(' ');
    const auto taken = line.substr(0, space);
    line.remove_prefix(space == std::string_view::npos ? line.size() : space + 1);
    return taken;
}

std::int64_t number(std::string_view text) {
    std::int64_t value = 0;
    for (const char c : text.substr(0, 12))
        if (c >= '0' && c <= '9') value = value * 10 + (c - '0');
    return value;
}

void run(std::string_view line, ScriptedSessions& sessions, Socket& socket) {
    if (!line.starts_with('@')) {
        check_parsers(line);
        return socket.text(line);
    }
    const std::string verb(word(line));
    if (verb == "@binary") return socket.binary(line);
    if (verb == "@option") {
        const auto key = word(line);
        return check_option(key, line);
    }
    const std::string session(word(line));
    if (verb == "@route") return socket.route(session);
    if (verb == "@replay") {
        auto& replayed = sessions.sessions[session];
        replayed.replay = std::string(line);
        replayed.produced = std::max<std::uint64_t>(replayed.produced, line.size());
        return;
    }
    const auto found = sessions.sessions.find(session);
    if (found == sessions.sessions.end() || found->second.ended) return;
    auto& state = found->second;
    // Output and events after the exit too: a channel must stay quiet whatever comes late.
    if (verb == "@output") {
        const auto stream = static_cast<OutputStream>(1 + number(word(line)) % 3);
        state.produced += line.size();
        socket.service([&] { sessions.to_attaches(session, Call{Call::What::output, stream, state.produced, std::string(line), 0}, false); });
    } else if (verb == "@event") {
        const std::string kind(word(line));
        socket.service([&] { sessions.to_attaches(session, Call{Call::What::event, {}, 0, as_utf8(kind), ++state.seq}, false); });
    } else if (verb == "@exit" && !state.exit_code) {
        state.exit_code = number(line);
        socket.service([&] { sessions.to_attaches(session, Call{Call::What::exit, {}, 0, {}, *state.exit_code}, false); });
    } else if (verb == "@ended") {
        state.ended = as_utf8(line);
        socket.service([&] { sessions.to_attaches(session, Call{Call::What::ended, {}, 0, *state.ended, 0}, true); });
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text = handler::fuzz::as_text(data, size);
    ScriptedSessions sessions;
    Socket socket(sessions);
    while (!text.empty()) {
        const auto newline = text.find('\n');
        run(text.substr(0, newline), sessions, socket);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    }
    socket.end();
    return 0;
}
