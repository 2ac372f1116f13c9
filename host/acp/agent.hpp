// `handler acp`'s side of ACP v1 (docs/acp.md): the editor's requests and notifications
// in, handlerd's conversations behind the Conversations port, the editor's answers and
// the conversations' events out as JSON-RPC lines. One Agent per editor connection; it
// runs on one thread (the io_context's), and the port answers on it.
//
// A conversation is shared: other clients (a second editor, `handler chat`, the web UI)
// prompt, answer and cancel it too. So this editor's prompt resolves with the stop reason
// of the result that ends ITS turn (the result after the user_prompt event carrying its
// prompt id); other clients' prompts are shown as user_message_chunk with their output;
// a permission question answered elsewhere is withdrawn from the editor.
#pragma once

#include "acp/conversations.hpp"
#include "acp/rpc.hpp"
#include "acp/session_config.hpp"
#include "acp/updates.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace handler::acp {

struct AgentOptions {
    // `handler acp --agent NAME`; empty: the project's only agent.
    std::string agent_name;
    // The largest prompt (its text, after resources are inlined) sent on to handlerd.
    std::size_t prompt_limit_bytes = 256 * 1024;
    std::string version = "0";
};

class Agent {
public:
    // Writes one message (a line without its newline) to the editor.
    using Write = std::function<void(std::string line)>;

    Agent(Conversations& handlerd, AgentOptions options, Write write);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // One line from the editor.
    void receive(std::string_view line);
    // A line longer than the reader's limit, dropped unread: answered with -32600.
    void receive_oversized(std::size_t limit_bytes);
    // The editor went away: every conversation is detached (none is stopped).
    void shut_down();

    std::size_t open_sessions() const { return views_.size(); }
    // The editor's requests not answered yet.
    std::size_t unanswered() const { return in_flight_.size(); }

private:
    struct View;
    struct PendingPrompt;
    friend struct View;
    using Handler = void (Agent::*)(const rpc::Id& id, const rpc::ParamReader& params);

    void on_request(rpc::Request request);
    void on_notification(const rpc::Notification& notification);
    void on_response(const rpc::Response& response);

    void initialize(const rpc::Id& id, const rpc::ParamReader& params);
    void authenticate(const rpc::Id& id, const rpc::ParamReader& params);
    void new_session(const rpc::Id& id, const rpc::ParamReader& params);
    void load_session(const rpc::Id& id, const rpc::ParamReader& params);
    void resume_session(const rpc::Id& id, const rpc::ParamReader& params);
    void close_session(const rpc::Id& id, const rpc::ParamReader& params);
    void list_sessions(const rpc::Id& id, const rpc::ParamReader& params);
    void prompt(const rpc::Id& id, const rpc::ParamReader& params);
    void set_config_option(const rpc::Id& id, const rpc::ParamReader& params);
    void set_mode(const rpc::Id& id, const rpc::ParamReader& params);
    // session/set_config_option and session/set_mode: through handlerd, then `done`.
    void change_setting(const rpc::Id& id, View& view, const std::string& config_id, const std::string& value,
                        bool answer_options);
    void cancel(const rpc::ParamReader& params);
    void cancel_request(const rpc::ParamReader& params);

    // session/new, step by step.
    struct NewSession;
    void choose_agent(std::shared_ptr<NewSession> request);
    void check_account(std::shared_ptr<NewSession> request);
    void start_conversation(std::shared_ptr<NewSession> request, bool with_mcp);
    // session/load and session/resume.
    void open_existing(const rpc::Id& id, const rpc::ParamReader& params, bool replay);
    // Builds the view's settings and choices from handlerd's records, then `done`.
    void describe(std::shared_ptr<View> view, std::int64_t agent_id, std::function<void()> done,
                  std::function<void(Error)> failed);
    // Replays (or silently reads) the stored events, then `ready` (which answers the
    // editor), then goes live: remembered updates, open questions, the subscription.
    void attach(std::shared_ptr<View> view, bool replay, std::function<void()> ready);
    void go_live(View& view);

    void send_prompt(View& view, std::uint64_t key, api::Prompt text, bool retried);
    void resume_then(View& view, std::function<void()> next, std::function<void(Error)> failed);
    void cancel_prompt(View& view, PendingPrompt& pending);
    void finish_prompt(View& view, std::uint64_t key, std::string stop_reason);
    void fail_prompt(View& view, std::uint64_t key, rpc::Failure failure);
    enum class Detach { close = 1, reopen, shutdown };
    void detach(View& view, Detach how);

    void on_event(View& view, ConversationEvent event);
    void on_ended(View& view, const std::string& reason);
    void process(View& view, const ConversationEvent& event);
    void mode_changed(View& view, const boost::json::object& payload);
    void ask_permission(View& view, const std::string& tool_call_id);
    void withdraw_permission(View& view, const std::string& tool_call_id);
    void record_outcome(View& view, const std::string& prompt_id, const std::string& stop_reason);

    View* find_view(const std::string& id, std::uint64_t serial);
    View* find_view(const std::string& id);
    boost::json::object session_result(const View& view) const;
    void update(const View& view, boost::json::object update);
    void notice(const View& view, std::string text);

    void respond(const rpc::Id& id, boost::json::value result);
    void fail(const rpc::Id& id, rpc::Failure failure);
    void send(std::string line);

    Conversations& handlerd_;
    AgentOptions options_;
    Write write_;
    bool initialized_ = false;
    // The editor shows a tool call's terminal from _meta (Zed's terminal_output).
    bool terminal_output_ = false;
    bool closing_ = false;
    std::uint64_t next_serial_ = 1;
    std::uint64_t next_prompt_key_ = 1;
    std::map<std::string, std::shared_ptr<View>> views_;
    rpc::OutgoingRequests outgoing_;
    // The editor's requests not answered yet (serialized ids): each is answered once, and
    // one withdrawn with $/cancel_request is answered -32800 at once.
    std::set<std::string> in_flight_;
    const std::map<std::string, Handler, std::less<>> handlers_;
};

} // namespace handler::acp
