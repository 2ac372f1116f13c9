// Codex headless through `codex app-server`: JSON-RPC (without the "jsonrpc" member) on
// its stdin and stdout, one object per line. The launch opens the conversation
// (initialize, initialized, then thread/start with the session's sandbox and approval
// policy, or thread/resume of the thread a conversation had); each prompt becomes a
// turn/start on that thread, one turn at a time; Codex's notifications become Handler's
// session events; its approval requests become permission requests, and a client's
// answer goes back as the request's result. Every turn ends in exactly one result. Kept
// apart from the plugin's entry point so the unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::codex {

using plugin_common::Event;

// Codex's reasoning efforts: the thinking levels of describe().
inline const std::initializer_list<std::string_view> kThinkingLevels = {"none", "minimal", "low",
                                                                        "medium", "high", "xhigh"};

// Whether `text` has the shape of a Codex thread id (a UUID, 8-4-4-4-12 hex digits): the
// only thing a resume may pass on, since the id comes back from the container's output.
bool is_thread_id(std::string_view text);

// Codex's own sandbox on Linux is bubblewrap, which needs a new user namespace, and
// sessions may create none (docs/security.md, "Confinement"): in every mode Codex runs
// commands without a sandbox of its own, the session's container being the sandbox. Its
// approval policy (the modes of describe()) still decides what it asks before running.
// As thread/start's "sandbox" and as turn/start's "sandboxPolicy" type.
inline constexpr std::string_view kSandboxMode = "danger-full-access";
inline constexpr std::string_view kSandboxPolicyType = "dangerFullAccess";

class AppServerParser final : public plugin_common::JsonLinesParser {
public:
    AppServerParser() : JsonLinesParser("Codex") {}
    explicit AppServerParser(std::size_t max_line) : JsonLinesParser("Codex", max_line) {}

    // The lines that open the conversation: initialize, initialized, and thread/start
    // with `thread_params` (approvalPolicy, sandbox, model, cwd), or with `resume` (a
    // thread id, checked by the caller) thread/resume of that thread with the same params.
    static std::string opening(const boost::json::object& thread_params, std::string_view resume = {});

    // A prompt (the user_prompt payload): turn/start, as soon as the thread exists and
    // the turn before it has ended.
    std::vector<Event> prompt(std::string_view prompt);
    // A client's answer ({"optionId":...}) to an approval request this parser turned into
    // a permission request (`request`: that payload). Throws std::invalid_argument for a
    // request or an option it did not make.
    std::vector<Event> answer(std::string_view request, std::string_view answer);
    // Interrupts the running turn: turn/interrupt once Codex has started it (it refuses
    // one before), and its turn/completed says "interrupted". A prompt still waiting for
    // the thread never starts: its turn ends here, cancelled.
    std::vector<Event> cancel();
    // "model", "thinking_level" (its reasoning effort) or "mode" (its approval policy)
    // for the next turn and those after it, which
    // turn/start takes; the mode_changed event says what is in effect from then on.
    // Throws std::invalid_argument for another name or a value Codex does not take.
    std::vector<Event> set(std::string_view name, std::string_view value);
    plugin_common::Reply take_reply() { return std::exchange(reply_, {}); }
    // Meets a running app server (handlerd restarted) whose thread is `thread_id`, as the
    // last parser reported it; a thread id of another shape is ignored, and prompts then
    // wait for a thread as before.
    void adopt(std::string_view thread_id) {
        if (is_thread_id(thread_id)) thread_id_ = std::string(thread_id);
    }

private:
    // The thread's settings in Codex's words; empty: not known, or (in a change) unchanged.
    struct Settings {
        std::string approval_policy;
        std::string model;
        std::string effort;
        bool empty() const { return approval_policy.empty() && model.empty() && effort.empty(); }
    };
    // The turn sent to Codex and not yet ended.
    struct Turn {
        std::int64_t request_id = 0;
        std::string id;          // Codex's, from turn/start's answer or turn/started
        bool started = false;    // turn/started came: Codex takes turn/interrupt now
        bool cancelled = false;  // a client cancelled it
        bool interrupt_sent = false;
        Settings changes;        // what this turn/start changed
    };

    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_response(const boost::json::object& message, std::vector<Event>& out);
    void on_failure(std::int64_t id, std::string_view text, std::vector<Event>& out);
    void on_thread(const boost::json::object& result, std::vector<Event>& out);
    void on_request(const boost::json::object& message, std::vector<Event>& out);
    void on_notification(std::string_view method, const boost::json::object& params, std::vector<Event>& out);
    void on_item(bool completed, const boost::json::object& item, std::vector<Event>& out);
    void on_turn_started(const boost::json::object& params);
    void on_turn_completed(const boost::json::object& params, std::vector<Event>& out);
    void on_usage(const boost::json::object& params, std::vector<Event>& out);
    Event settings_event() const;
    void start_turns();
    void interrupt();
    void send(boost::json::object message);

    std::string thread_id_;
    bool ended_ = false;                      // the thread could not be opened
    std::deque<plugin_common::Prompt> waiting_prompts_; // given before their turn could start
    std::optional<Turn> turn_;
    Settings current_; // as Codex reported or accepted them
    Settings next_;    // set() since the last turn/start
    std::int64_t next_id_ = 2;           // 0 and 1 are the opening's
    std::set<std::int64_t> interrupts_;  // turn/interrupt requests not yet answered
    plugin_common::Reply reply_;
    std::map<std::string, boost::json::object> items_; // tool items by id, for titles
    std::set<std::string> announced_;                   // items already shown as tool calls
    std::set<std::string> streamed_;                    // text items that came as deltas
    std::map<std::string, std::string> asked_;          // approval request id -> its item, while open
    std::string last_message_;                          // the agent's last message: the answer
    std::string last_error_;
    boost::json::value usage_;
};

// What a Codex tool item is about, for a person ("Run: ls -la", "Edit hello.txt").
std::string item_title(const boost::json::object& item);
// ACP's ToolKind for a Codex item ("commandExecution" -> "execute").
std::string_view item_kind(const boost::json::object& item);

} // namespace handler::codex
