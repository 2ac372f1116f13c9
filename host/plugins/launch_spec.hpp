// Plain C++ values for what crosses the plugin waist in launch, image_recipe and the
// event calls, so the rest of handlerd never sees sdk.h. The registry's LoadedHarness
// and LoadedAddon translate between these and the C structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace handler::plugins {

// Same numbers as hd_launch_mode / hd_start_mode / hd_event_kind (zero is never valid).
enum class LaunchMode { interactive = 1, headless = 2 };
enum class StartMode { locked_down = 1, guarded = 2, open = 3 };

struct LaunchRequest {
    LaunchMode mode = LaunchMode::interactive;
    StartMode start_mode = StartMode::guarded;
    std::string session_id;
    std::string project_path; // mounted at the same path inside the container
    std::string prompt;       // may be empty
    std::string model;        // empty: the harness's default
    std::string account_kind; // e.g. "anthropic-api-key"; empty: no account
    // A local model server (llama-cpp, ollama accounts) as the container reaches it.
    std::string account_base_url;
    std::string thinking_level; // empty: the harness's default
    bool conversation = false;  // prompt after prompt (sdk.h, conversation)
    std::string resume;         // the harness's own session id to continue; empty: new
    std::string mcp_servers;    // ACP McpServer[] JSON from the client; empty: none
    std::vector<std::string> extra_args; // `handler terminal AGENT -- ARGS`
};

struct EnvVar {
    std::string name;
    std::string value;
    friend bool operator==(const EnvVar&, const EnvVar&) = default;
};

struct AllowedHost {
    std::string pattern; // exact name or "*.example.com"
    std::uint16_t port = 0; // 0: any
    friend bool operator==(const AllowedHost&, const AllowedHost&) = default;
};

// Env `name` must get the session's stand-in for secret `secret_name`; the session
// service asks the secret service when it starts the container.
struct SecretEnv {
    std::string name;
    std::string secret_name;
    friend bool operator==(const SecretEnv&, const SecretEnv&) = default;
};

struct ContainerFile {
    std::string path; // inside the container
    std::string contents;
    std::uint32_t mode = 0644;
    friend bool operator==(const ContainerFile&, const ContainerFile&) = default;
};

// The container a harness (plus its addons) asked for. Env entries are in call order;
// a later entry with the same name wins.
struct LaunchSpec {
    std::string image;   // empty: the image handlerd built for this harness
    std::vector<std::string> arguments; // arguments[0] is the program
    std::vector<EnvVar> env;
    std::string workdir; // empty: the project folder
    std::vector<AllowedHost> allowed_hosts;
    std::vector<SecretEnv> secret_env;
    std::vector<ContainerFile> files;
    // Non-empty: mount the account's state folder read-write and set this env to where
    // it is inside (keep_account_state).
    std::string account_state_env;
    // Non-empty: mount the session's own state folder read-write and set this env to
    // where it is inside (keep_session_state).
    std::string session_state_env;
    // Headless: what the program finds on its stdin at start, which then stays open for
    // the event parser's replies (add_input). Empty: the program's stdin is the clients'.
    std::string input;
    friend bool operator==(const LaunchSpec&, const LaunchSpec&) = default;
};

// What a plugin adds to its image.
struct ImageRecipe {
    std::vector<std::string> run_steps; // shell commands, in order
    std::vector<EnvVar> env;
};

enum class EventKind {
    user_prompt = 1,
    agent_message_chunk,
    agent_thought_chunk,
    tool_call,
    tool_call_update,
    plan,
    permission_request,
    mode_changed,
    result,
    error,
    permission_answer,
    session_info,
    available_commands,
    usage,
    // Recorded by handlerd only (a plugin's emit stops at `usage`): a conversation's prompt
    // waiting for the running turn, and one withdrawn before it ran.
    prompt_queued,
    prompt_withdrawn,
};

// ACP's snake_case name for the kind (session/update's "sessionUpdate" values where ACP
// has one), as stored and sent to clients.
inline const char* to_string(EventKind kind) {
    switch (kind) {
    case EventKind::user_prompt: return "user_prompt";
    case EventKind::agent_message_chunk: return "agent_message_chunk";
    case EventKind::agent_thought_chunk: return "agent_thought_chunk";
    case EventKind::tool_call: return "tool_call";
    case EventKind::tool_call_update: return "tool_call_update";
    case EventKind::plan: return "plan";
    case EventKind::permission_request: return "permission_request";
    case EventKind::mode_changed: return "mode_changed";
    case EventKind::result: return "result";
    case EventKind::error: return "error";
    case EventKind::permission_answer: return "permission_answer";
    case EventKind::session_info: return "session_info";
    case EventKind::available_commands: return "available_commands";
    case EventKind::usage: return "usage";
    case EventKind::prompt_queued: return "prompt_queued";
    case EventKind::prompt_withdrawn: return "prompt_withdrawn";
    }
    return "error";
}

struct SessionEvent {
    EventKind kind = EventKind::error;
    std::string json; // the payload; docs/contracts.md gives each kind's shape
};

// What a parser made of a piece of output or of a client's answer: events, and for a
// harness whose stdin is a protocol, what goes to its stdin and whether it ends there.
struct ParsedEvents {
    std::vector<SessionEvent> events;
    std::string input;
    bool close_input = false;
};

} // namespace handler::plugins
