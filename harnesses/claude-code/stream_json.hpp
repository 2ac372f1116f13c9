// Claude Code's headless output (`claude -p --output-format stream-json --verbose`, one
// JSON object per line) turned into Handler's session events, and its control channel
// (`--input-format stream-json --permission-prompt-tool stdio`): Claude Code asks on
// stdout before it uses a tool, and a client's answer goes back on its stdin. In a
// conversation the same stdin takes prompt after prompt, and control requests of ours:
// interrupt (a cancel), set_model, set_permission_mode and apply_flag_settings (the effort),
// each confirmed by a control_response. Kept apart from the plugin's entry point so the
// unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::claude_code {

using plugin_common::Event;

// Claude Code's permission modes that describe() offers, and its effort levels (--effort,
// apply_flag_settings' effortLevel), which are Handler's thinking levels.
inline const std::initializer_list<std::string_view> kPermissionModes = {"default", "acceptEdits",
                                                                         "bypassPermissions", "plan"};
inline const std::initializer_list<std::string_view> kEffortLevels = {"low", "medium", "high", "xhigh", "max"};

class StreamJsonParser final : public plugin_common::JsonLinesParser {
public:
    StreamJsonParser() : JsonLinesParser("Claude Code") {}
    explicit StreamJsonParser(std::size_t max_line) : JsonLinesParser("Claude Code", max_line) {}

    // The user message Claude Code reads first on a stream-json stdin.
    static std::string user_message(std::string_view text, const std::vector<plugin_common::PromptImage>& images = {});
    // The control request a conversation's launch puts first on Claude Code's stdin: its
    // answer lists the slash commands with their descriptions (system/init has only their
    // names) and the permission mode, before the first prompt.
    static std::string initialize_request();
    // A prompt (the user_prompt payload, {"content":{"type":"text","text":...}}) as that
    // message on its stdin; it starts a turn.
    std::vector<Event> prompt(std::string_view prompt);

    // Meets a Claude Code that already runs (handlerd restarted) whose session is
    // `session_id`, as the last parser reported it: that id is not reported again, and
    // since a turn may be running that no prompt of this parser's started, a cancel
    // before the next result counts for it.
    void adopt(std::string_view session_id) {
        session_id_ = std::string(session_id);
        turn_may_run_ = true;
    }

    // Interrupts the running turn (Claude Code's interrupt control request). That turn's
    // result, whatever Claude Code's subtype, is then "cancelled", not a failure.
    std::vector<Event> cancel();
    // Changes "model", "mode" (one of kPermissionModes) or "thinking_level" (one of
    // kEffortLevels) of the live conversation; MODE_CHANGED follows when Claude Code
    // confirms, an ERROR when it refuses. Throws std::invalid_argument for a mode or level
    // it does not have, PluginError (UNSUPPORTED) for another setting.
    std::vector<Event> set(std::string_view name, std::string_view value);

    // What Claude Code is to read on its stdin since the last call: replies to its control
    // requests, and the end of its input once the turn is over (a headless run is one turn).
    plugin_common::Reply take_reply() { return std::exchange(reply_, {}); }

    // A client's answer (`answer`: {"optionId":...}) to a permission request this parser
    // emitted (`request`: that event's payload) becomes Claude Code's control_response.
    // Throws std::invalid_argument for a request or an option it did not make.
    std::vector<Event> answer(std::string_view request, std::string_view answer);

private:
    // What a control request of ours asked for, until Claude Code answers it.
    enum class Control { interrupt, model, mode, thinking_level };
    struct Asked {
        Control control;
        std::string value;
    };
    struct Command {
        std::string name;
        std::string description;
        friend bool operator==(const Command&, const Command&) = default;
    };

    // Claude Code prints about forty message types and adds more; the ones not handled
    // here yield no events.
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_system(const boost::json::object& message, std::vector<Event>& out);
    void on_assistant(const boost::json::object& message, std::vector<Event>& out);
    void on_user(const boost::json::object& message, std::vector<Event>& out);
    void on_control_request(const boost::json::object& message, std::vector<Event>& out);
    void on_control_cancel(const boost::json::object& message, std::vector<Event>& out);
    void on_control_response(const boost::json::object& message, std::vector<Event>& out);
    void on_result(const boost::json::object& message, std::vector<Event>& out);

    // Writes a control request of ours and remembers it until its answer.
    void send_control(Control control, std::string_view value, boost::json::object request);
    // Takes what Claude Code says the mode, model or effort now is (empty: unchanged) and
    // emits MODE_CHANGED when that differs from what was last reported.
    void note_settings(std::string_view mode, std::string_view model, std::string_view thinking_level,
                       std::vector<Event>& out);
    // Emits AVAILABLE_COMMANDS when the list differs from the last one reported.
    void note_commands(std::vector<Command> commands, std::vector<Event>& out);

    std::string cwd_; // from system/init: tool titles name files relative to it
    plugin_common::Reply reply_;
    std::map<std::string, std::string> asked_; // control request id -> its tool call, while open
    std::map<std::string, Asked> controls_;    // our control requests' ids -> what they asked
    static constexpr std::size_t kMaxDiffCalls = 256;
    std::set<std::string> diff_calls_; // tool calls shown with a diff, until their result
    std::uint64_t next_control_ = 1;
    std::size_t open_turns_ = 0; // prompts written whose result has not come yet
    bool turn_may_run_ = false;  // adopted mid-conversation, no result read since
    bool cancelling_ = false;    // an interrupt was sent for the running turn
    std::string session_id_;     // the last harnessSessionId reported
    std::string mode_, model_, thinking_level_;
    std::string reported_settings_; // the last MODE_CHANGED payload
    std::vector<Command> commands_;
    bool commands_reported_ = false;
    // The context of the turn's last model request (input and cache tokens) and its model.
    std::optional<std::int64_t> context_tokens_;
    std::string context_model_;
};

// What the tool call is about, for a person: "Write hello.txt", "Bash: ls -la".
// `cwd` (may be empty) shortens paths under it.
std::string tool_title(std::string_view name, const boost::json::object& input, std::string_view cwd);
// ACP's ToolKind for one of Claude Code's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::claude_code
