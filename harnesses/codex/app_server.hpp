// Codex headless through `codex app-server`: JSON-RPC (without the "jsonrpc" member) on
// its stdin and stdout, one object per line. The launch opens the conversation
// (initialize, initialized, thread/start with the session's sandbox and approval
// policy); the prompt becomes turn/start once the thread is there; Codex's notifications
// become Handler's session events; its approval requests become permission requests,
// and a client's answer goes back as the request's result. Kept apart from the plugin's
// entry point so the unit tests drive it directly.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::codex {

using plugin_common::Event;

class AppServerParser final : public plugin_common::JsonLinesParser {
public:
    AppServerParser() : JsonLinesParser("Codex") {}
    explicit AppServerParser(std::size_t max_line) : JsonLinesParser("Codex", max_line) {}

    // The lines that open the conversation: initialize, initialized, and thread/start
    // with `thread_params` (approvalPolicy, sandbox, model, cwd).
    static std::string opening(const boost::json::object& thread_params);

    // A prompt (the user_prompt payload): turn/start, as soon as the thread exists.
    std::vector<Event> prompt(std::string_view prompt);
    // A client's answer ({"optionId":...}) to an approval request this parser turned into
    // a permission request (`request`: that payload). Throws std::invalid_argument for a
    // request or an option it did not make.
    std::vector<Event> answer(std::string_view request, std::string_view answer);
    plugin_common::Reply take_reply() { return std::exchange(reply_, {}); }

private:
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_response(const boost::json::object& message, std::vector<Event>& out);
    void on_request(const boost::json::object& message, std::vector<Event>& out);
    void on_notification(std::string_view method, const boost::json::object& params, std::vector<Event>& out);
    void on_item(bool completed, const boost::json::object& item, std::vector<Event>& out);
    void on_turn_completed(const boost::json::object& params, std::vector<Event>& out);
    void start_turns();
    void send(boost::json::object message);

    std::string thread_id_;
    std::vector<std::string> waiting_prompts_; // given before the thread was there
    std::int64_t next_id_ = 2;                 // 0 and 1 are the opening's
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
