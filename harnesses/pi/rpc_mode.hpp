// pi's headless protocol (`pi --mode rpc`): commands as JSON lines on its stdin, and on
// its stdout their responses ({"type":"response","id",...}) among the agent's events
// (agent, turn, message and tool_execution events), which this turns into Handler's
// session events. Every headless run speaks it, a one-shot run as a conversation of one
// prompt. Kept apart from the plugin's entry point, and free of its wrappers, so the unit
// tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::pi {

using plugin_common::Event;

class RpcModeParser final : public plugin_common::JsonLinesParser {
public:
    RpcModeParser() : JsonLinesParser("pi") {}
    explicit RpcModeParser(std::size_t max_line) : JsonLinesParser("pi", max_line) {}

    // What the launch puts on pi's stdin before anything else: it asks for pi's state
    // (its session id, model and thinking level) and its slash commands. `cwd` is the
    // folder pi runs in; the first request's id carries it, since in rpc mode pi prints
    // no header naming it, and tool titles name files relative to it.
    static std::string opening(std::string_view cwd);

    // A prompt (the user_prompt payload, {"content":{"type":"text","text":...}}) as pi's
    // `prompt` command; it starts a turn, which ends in one result. Throws
    // std::invalid_argument for a prompt that is not text, or one given while a turn runs.
    std::vector<Event> prompt(std::string_view prompt);
    // Interrupts the running turn with pi's `abort`; its result then says "cancelled".
    std::vector<Event> cancel();
    // "model" (`provider/id`, or an id of the current provider) → set_model,
    // "thinking_level" → set_thinking_level, "mode" (pi has one, "default"). A
    // mode_changed follows once pi has confirmed. Throws std::invalid_argument otherwise.
    std::vector<Event> set(std::string_view name, std::string_view value);
    // pi asks before nothing, so there is never a question to answer.
    std::vector<Event> answer(std::string_view request, std::string_view answer);

    // What pi is to read on its stdin since the last call.
    plugin_common::Reply take_reply() { return std::exchange(reply_, {}); }

private:
    // What a request this parser sent was, so that its response is understood.
    enum class Request { prompt, prompt_check, turn_end, abort, set_model, set_thinking_level, confirm };

    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_response(const boost::json::object& message, std::vector<Event>& out);
    void on_state(const boost::json::object& state, bool confirm, std::vector<Event>& out);
    void on_turn_stats(const boost::json::object& stats, std::vector<Event>& out);
    void on_extension_ui(const boost::json::object& message, std::vector<Event>& out);
    void on_message_start(const boost::json::object& message, std::vector<Event>& out);
    void on_message_end(const boost::json::object& message, std::vector<Event>& out);
    void announce(std::string_view id, std::string_view name, const boost::json::value* arguments,
                  std::vector<Event>& out);
    bool note_model(std::string_view provider, std::string_view model);
    void send(Request request, boost::json::object command);
    void finish_if_over(std::vector<Event>& out);
    void finish_turn(std::vector<Event>& out);
    void reset_turn();

    plugin_common::Reply reply_;
    std::map<std::string, Request> sent_; // request id -> what it asked, until answered
    std::uint64_t next_id_ = 1;

    std::string cwd_;        // from the opening's id: titles name files relative to it
    std::string session_id_; // pi's session id last reported (what --session takes)
    std::string provider_; // pi's provider and model last reported
    std::string model_;
    std::string thinking_level_;
    std::set<std::string> announced_; // tool calls already shown

    // The turn. It opens with a prompt (or a run pi starts itself: after a handlerd restart,
    // an automatic retry), and ends in one result once pi's run is over: after its
    // agent_end, pi may still retry a failed model call or compact the context and go on,
    // which it says right after, before it answers the request sent on agent_end.
    bool turn_open_ = false;
    bool prompt_unanswered_ = false; // the prompt command has no response yet
    bool run_started_ = false;       // agent_start since the prompt
    bool run_ended_ = false;         // agent_end, and no new run since
    int end_checks_ = 0;             // requests sent on agent_end, not yet answered
    bool held_ = false;              // a retry or a compaction announced: wait for it
    bool cancelled_ = false;         // a client cancelled this turn
    bool abort_deferred_ = false;    // cancelled before pi had taken the prompt
    // The last assistant message: its text is the answer, its stop reason the outcome.
    std::string answer_;
    std::string stop_reason_;
    std::string error_message_;
    bool answered_ = false;
    // Over the turn: what the model calls cost (pi prices them) and how many there were.
    double cost_usd_ = 0;
    bool priced_ = false;
    std::int64_t model_calls_ = 0;
};

// What one of pi's tool calls is about, for a person ("write hello.txt", "bash: ls").
std::string tool_title(std::string_view name, const boost::json::object& arguments, std::string_view cwd);
// `level` if it is one of pi's thinking levels (--thinking and set_thinking_level take the
// same words); otherwise throws std::invalid_argument naming them.
std::string_view thinking_level(std::string_view level);
// ACP's ToolKind for one of pi's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::pi
