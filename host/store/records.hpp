// The domain records the store keeps (docs/domain-model.md). Plain values: the store
// resolves names and joins, so callers never see foreign keys they would have to look up.
#pragma once

#include "network/network_mode.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::store {

// How far an agent's container may reach: network::Mode, of which an agent holds none,
// filtered or open (learn is a session's).
using NetworkMode = network::Mode;

enum class SessionState {
    starting = 1, // recorded before anything is started, so a crash leaves a trace
    running,
    exited,       // the container ended; exit_code says how
    failed,       // could not be started
    lost,         // its container was gone when handlerd reconciled
};

std::string_view to_string(SessionState state);
std::optional<SessionState> parse_session_state(std::string_view text);

// Milliseconds since the Unix epoch, from the injected Clock.
using TimeMs = std::int64_t;

struct Context {
    std::int64_t id = 0;
    std::string name;
    TimeMs created_at = 0;
};

struct Project {
    std::int64_t id = 0;
    std::string name;
    std::string path;                   // absolute and canonical
    std::optional<std::string> context; // context name
    // Hosts every session in the project may reach, after its agent's own; normalized
    // like Agent::allowed_hosts.
    std::vector<std::string> allowed_hosts;
    TimeMs created_at = 0;
};

struct Account {
    std::int64_t id = 0;
    std::string name;
    std::string kind; // one of secrets::account_kinds()
    std::optional<std::string> context;
    // Local model servers (kinds llama-cpp, ollama): where the server listens, as the
    // host sees it ("http://127.0.0.1:11434"). Unset for every other kind.
    std::optional<std::string> base_url;
    TimeMs created_at = 0;
};

struct Agent {
    std::int64_t id = 0;
    std::int64_t project_id = 0;
    std::string name;
    std::string harness; // the harness plugin's id
    std::string goal;
    std::string instructions;
    std::optional<std::string> account; // account name
    NetworkMode network_mode = NetworkMode::filtered;
    std::vector<std::string> allowed_hosts; // normalized: lower case, in the given order
    std::vector<std::string> addons;        // addon plugin ids, each once, in the given order
    // The default of each new session of the agent; a session's own value wins. Unset:
    // the harness's default. Held to the session fields' rules (check_model_name,
    // check_thinking_level).
    std::optional<std::string> model;
    std::optional<std::string> thinking;
    TimeMs created_at = 0;
    TimeMs updated_at = 0;
};

struct Session {
    std::string id; // "s_" and six hex digits, typeable in `handler attach`
    std::optional<std::int64_t> agent_id; // null once the agent is deleted
    std::int64_t project_id = 0;
    std::string harness;
    SessionState state = SessionState::starting;
    std::optional<std::int64_t> exit_code;
    std::optional<std::string> container_id; // set once podman has started it
    std::string mode = "interactive";        // "headless" (`handler run -p`) or "conversation"
    bool tty = true;                         // a terminal, or separate stdout/stderr
    std::string image;
    std::optional<std::string> message; // why it failed or was lost
    std::optional<NetworkMode> network_mode; // any, learn included; unset: the agent's
    std::optional<TimeMs> learn_until;
    std::vector<std::string> model_hosts; // the harness's, as rules
    std::vector<std::string> addon_hosts; // what its agent's addons asked for, as rules
    // What it was started with, so that a resumed conversation starts the same way.
    std::optional<std::string> model;
    std::optional<std::string> thinking;
    std::string mcp_servers;            // ACP's McpServer[] as JSON; empty: none
    std::optional<std::string> title;   // a conversation's: the first line of its first prompt
    // Its container's limits as JSON (runtime::limits_json); empty until it started.
    std::string limits;
    TimeMs created_at = 0;
    TimeMs updated_at = 0;
};

// Who in the container made connection `connection` (docs/network.md, "Who made a
// connection"), one row per connection, however many requests it carried. The
// container says all of it: for display only.
struct NetworkOrigin {
    std::string session_id;
    std::int64_t connection = 0;
    std::optional<std::int64_t> pid; // in the container's pid namespace; unset: unknown
    std::string command;             // its command line, arguments joined by spaces
    std::string parents;             // JSON [{"pid","command"}], nearest first
    std::string tool_call_id;        // empty: no tool call explains it
    std::string tool_call_title;
    std::string note;                // why the process or the tool call is not known
};

// One decision of a session's egress proxy.
struct NetworkEntry {
    std::int64_t id = 0;
    std::string session_id;
    TimeMs at = 0;
    std::string host;
    std::int64_t port = 0;
    std::string method;
    std::string path;
    std::string verdict; // allow | deny | learned
    std::string rule;
    std::string reason;
    std::string secret; // the kind of key injected into this request, if any
    std::int64_t bytes_up = 0;
    std::int64_t bytes_down = 0;
    std::optional<TimeMs> ended_at; // unset while the connection is open
    std::int64_t connection = 0;    // 0: recorded before connections were traced
    std::optional<NetworkOrigin> origin; // read with the entry; unset: not known yet
};

// The end of a connection: its byte counts and, when it was cut, why.
struct NetworkFinish {
    std::int64_t id = 0;
    std::int64_t bytes_up = 0;
    std::int64_t bytes_down = 0;
    std::string reason;
    TimeMs ended_at = 0;
};

// One normalised event of a session (docs/contracts.md, "Event payloads"): `kind` is the
// snake_case name (agent_message_chunk, tool_call, ...), `payload` a JSON object's text.
struct SessionEvent {
    std::string session_id;
    std::int64_t seq = 0; // from 1, per session
    TimeMs at = 0;
    std::string kind;
    std::string payload;
};

// The stand-in a session holds for one kind of key, and whose key it stands for.
struct SessionSecret {
    std::string session_id;
    std::string kind;
    std::int64_t account_id = 0;
    std::string stand_in;
};

// A host a learning session reached that filtered mode would have refused.
struct LearnedHost {
    std::string host;
    std::int64_t port = 0;
    std::int64_t count = 0;
    TimeMs first_seen = 0;
    TimeMs last_seen = 0;
};

// Inputs. Names of contexts and accounts, as the API takes them.
struct NewProject {
    std::string name;
    std::string path;
    std::optional<std::string> context;
    std::vector<std::string> allowed_hosts;
};

// For a nullable field, the outer optional says "change it", the inner one the value
// (std::nullopt clears it).
struct ProjectChanges {
    std::optional<std::string> name;
    std::optional<std::optional<std::string>> context;
    std::optional<std::vector<std::string>> allowed_hosts; // replaces the whole list

    bool empty() const { return !name && !context && !allowed_hosts; }
};

struct NewAccount {
    std::string name;
    std::string kind;
    std::optional<std::string> context;
    std::optional<std::string> base_url; // local kinds only; unset: the kind's default
};

struct AccountChanges {
    std::optional<std::string> name;
    std::optional<std::string> kind;
    std::optional<std::optional<std::string>> context;
    std::optional<std::string> base_url; // not clearable: local kinds need one

    bool empty() const { return !name && !kind && !context && !base_url; }
};

struct NewAgent {
    std::int64_t project_id = 0;
    std::string name;
    std::string harness;
    std::string goal;
    std::string instructions;
    std::optional<std::string> account;
    NetworkMode network_mode = NetworkMode::filtered;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> addons;
    std::optional<std::string> model;
    std::optional<std::string> thinking;
};

struct AgentChanges {
    std::optional<std::string> name;
    std::optional<std::string> harness;
    std::optional<std::string> goal;
    std::optional<std::string> instructions;
    std::optional<std::optional<std::string>> account;
    std::optional<NetworkMode> network_mode;
    std::optional<std::vector<std::string>> allowed_hosts;
    std::optional<std::vector<std::string>> addons; // replaces the whole list
    std::optional<std::optional<std::string>> model;    // std::nullopt inside: the harness's default
    std::optional<std::optional<std::string>> thinking;

    bool empty() const {
        return !name && !harness && !goal && !instructions && !account && !network_mode &&
               !allowed_hosts && !addons && !model && !thinking;
    }
};

struct AgentFilter {
    std::optional<std::int64_t> project_id;
    std::optional<std::string> name;
};

struct NewSession {
    std::optional<std::int64_t> agent_id;
    std::int64_t project_id = 0;
    std::string harness;
    std::string mode = "interactive";
    bool tty = true;
    std::string image;
    std::optional<NetworkMode> network_mode;
    std::optional<TimeMs> learn_until;
    std::optional<std::string> model;
    std::optional<std::string> thinking;
    std::string mcp_servers;
};

struct SessionChanges {
    std::optional<SessionState> state;
    std::optional<std::optional<std::int64_t>> exit_code;
    std::optional<std::optional<std::string>> container_id;
    std::optional<std::optional<std::string>> message;
    std::optional<std::vector<std::string>> model_hosts;
    std::optional<std::vector<std::string>> addon_hosts;
    std::optional<std::optional<std::string>> title;
    std::optional<std::optional<std::string>> model;    // a conversation's, for its next resume
    std::optional<std::optional<std::string>> thinking;
    std::optional<std::string> limits;
    // The session's own network mode while it runs (POST /sessions/{id}/network), and
    // the end of its learning window (null when it is not learning).
    std::optional<std::optional<NetworkMode>> network_mode;
    std::optional<std::optional<TimeMs>> learn_until;
};

} // namespace handler::store
