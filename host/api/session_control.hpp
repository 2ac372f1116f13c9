// What the API needs from the session service (host/sessions/), as a transport-free
// interface: the routes start, stop and remove sessions through it, and the terminal
// WebSocket attaches clients to a session's output and input. The daemon passes the real
// SessionManager; route tests pass a fake.
//
// Threading: every call is made on handlerd's io thread, and every TerminalClient call
// comes back on it.
#pragma once

#include "core/result.hpp"
#include "store/records.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::api {

// Which output a chunk is. On the terminal WebSocket each binary message is this byte
// followed by the bytes (docs/api.md).
enum class OutputStream : std::uint8_t { terminal = 1, stdout_ = 2, stderr_ = 3 };

// One attached client, implemented by the transport.
class TerminalClient {
public:
    virtual ~TerminalClient() = default;
    // A chunk of output, in order; `offset` is that of its first byte in the session's
    // output (replayed chunks first, then live ones) and `end` that just past its last.
    // `bytes` is what may reach a terminal of it (sessions/terminal_filter.hpp), so it can
    // be shorter than the output it stands for; offsets count the output as printed, as
    // `from` and `produced` do, so `end` is where a client that has this chunk resumes.
    virtual void output(OutputStream stream, std::uint64_t offset, std::uint64_t end,
                        const std::shared_ptr<const std::string>& bytes) = 0;
    // The program ended with `code` (its status, or 128 + signal number).
    virtual void exited(std::int64_t code) = 0;
    // The session is gone for another reason (it failed to start, was lost or removed):
    // say why and close.
    virtual void ended(const std::string& reason) = 0;
    // One normalised event (only to clients that attached with `events`): the stored
    // ones first, then each as the harness's output produces it, before its exit.
    virtual void event(const store::SessionEvent& event) { (void)event; }
};

struct StartRequest {
    // At most one of: agent (an agent's name), harness (a harness plugin's id, meaning
    // that harness with defaults in the project of `directory`), or name (either: an
    // agent of that name if there is one, else the harness). None: the project's only
    // agent, or the `shell` harness when it has none.
    std::optional<std::string> agent;
    std::optional<std::string> harness;
    std::optional<std::string> name;
    std::string directory; // where the user is: picks the project (absolute)
    std::string prompt;    // non-empty: a headless run
    std::vector<std::string> args; // `handler terminal AGENT -- ARGS`
    // none|filtered|open|learn for this session only; unset: the agent's mode.
    std::optional<std::string> network;
    // The model for this session, as the harness names it ("sonnet", "gpt-5.1-codex");
    // unset: the harness's default.
    std::optional<std::string> model;
    std::optional<std::string> thinking; // the harness's word for it: "high", "xhigh"
    // A conversation (docs/conversations.md): prompt after prompt; `prompt` is then its
    // first one, and may be empty.
    bool conversation = false;
    // The MCP servers a client (an editor) asked for, as ACP's McpServer[] JSON; empty: none.
    std::string mcp_servers;
    std::uint16_t rows = 24;
    std::uint16_t cols = 80;
};

struct AttachOptions {
    // Replay from this output offset (what a client already has); unset: all the
    // retained output, so a late client sees the current screen.
    std::optional<std::uint64_t> from;
    bool read_only = false; // `handler logs --follow`
    bool events = false;    // also send the session's events (`handler run -p`)
    // Of the stored events, only those after this seq (a client that reconnects and has
    // the rest); 0: all.
    std::int64_t events_after = 0;
    bool output = true; // false: events only, no output (an editor, which reads events)
};

struct Attached {
    std::uint64_t attach_id = 0;
    std::uint64_t produced = 0; // the offset of the next byte of output
    bool tty = true;
    store::SessionState state = store::SessionState::starting;
    std::optional<std::int64_t> exit_code;
    // How the harness's output becomes events: "structured" (its own JSON mode is
    // parsed: stdout is for machines), "text", or "none".
    std::string events = "none";
};

// An image of a prompt, base64 as the client sent it (checked by check_prompt_image,
// prompt_images.hpp, before it reaches a session).
struct PromptImage {
    std::string mime_type; // image/png, image/jpeg, image/gif or image/webp
    std::string data;      // base64
};

// What a client typed: text, and images for a harness that takes them.
struct Prompt {
    std::string text;
    std::vector<PromptImage> images;
};

struct SubmittedPrompt {
    std::string prompt_id;
    bool queued = false; // it waits for the running turn
};

// Where a conversation's setting change took effect.
enum class Applied { now, on_resume };

// A harness image handlerd builds (a harness's first session takes minutes), so that a
// client shows its progress instead of a frozen `starting` (docs/api.md, "Images").
struct ImageBuild {
    std::int64_t id = 0;   // from 1, per handlerd run
    std::string harness;   // the plugin the image is for
    std::string session;   // the session that waits for it
    std::string image;     // localhost/handler-NAME:TAG, once known
    std::string state;     // building | ready | failed
    std::string message;   // failed: why, in words
    std::string log;       // podman's output and handlerd's lines, the last kImageBuildLogBytes
    bool log_truncated = false; // older output was dropped
    std::int64_t started_at = 0;
    std::optional<std::int64_t> ended_at;
};
// What an image build's log keeps: its end, where an error is.
inline constexpr std::size_t kImageBuildLogBytes = 64 * 1024;

struct SessionLog {
    // Everything kept (the older part may have been rotated away), as a terminal may get
    // it (sessions/terminal_filter.hpp); the file on disk has it as printed.
    std::string text;
    std::uint64_t end = 0;  // the output offset just past what `text` holds
    bool truncated = false; // older output was dropped by the size limit
};

class SessionControl {
public:
    virtual ~SessionControl() = default;

    // Records the session, then starts its container in the background: the answer is
    // the session in state `starting`; `session.state` events tell the rest.
    virtual Result<store::Session> start(const StartRequest& request) = 0;
    // Stops the container (the program gets SIGTERM, then SIGKILL after a grace time).
    virtual Result<store::Session> stop(std::string_view id) = 0;
    // Deletes a session that is not running: its record, its output and its container.
    virtual Result<void> remove(std::string_view id) = 0;
    virtual Result<SessionLog> log(std::string_view id) = 0;

    virtual Result<Attached> attach(std::string_view id, std::weak_ptr<TerminalClient> client,
                                    const AttachOptions& options) = 0;
    virtual void detach(std::uint64_t attach_id) = 0;
    virtual void input(std::uint64_t attach_id, std::string_view bytes) = 0;
    virtual void input_eof(std::uint64_t attach_id) = 0;
    virtual void resize(std::uint64_t attach_id, std::uint16_t rows, std::uint16_t cols) = 0;
    // A client's answer to the open permission request for tool call `tool_call_id`:
    // `option_id` is one of the request's options. Recorded as a permission_answer event
    // and passed to the harness. not_found: no such open request (already answered, or
    // the session never asked); invalid_argument: an option it did not offer.
    virtual Result<void> answer(std::string_view id, std::string_view tool_call_id,
                                std::string_view option_id) = 0;

    // Conversations (docs/conversations.md). The defaults refuse: a session service
    // without conversations (the route tests' fakes) has none to act on.
    // A prompt from any client; conflict: not a live conversation.
    // invalid_argument: images to a harness whose describe() does not take them.
    virtual Result<SubmittedPrompt> prompt(std::string_view id, const Prompt& prompt) {
        (void)id;
        (void)prompt;
        return make_error(ErrorCode::unavailable, "this handlerd holds no conversations");
    }
    // Withdraws a waiting prompt; conflict once its turn started.
    virtual Result<void> withdraw(std::string_view id, std::string_view prompt_id) {
        (void)id;
        (void)prompt_id;
        return make_error(ErrorCode::unavailable, "this handlerd holds no conversations");
    }
    // Interrupts the running turn; conflict when none runs.
    virtual Result<void> cancel(std::string_view id) {
        (void)id;
        return make_error(ErrorCode::unavailable, "this handlerd holds no conversations");
    }
    // Starts a stopped or ended conversation again in a new container, continuing the
    // harness's own conversation; conflict while it runs.
    virtual Result<store::Session> resume(std::string_view id) {
        (void)id;
        return make_error(ErrorCode::unavailable, "this handlerd holds no conversations");
    }
    // The session's network mode while it runs: "none" or "filtered" (stricter, at any
    // time) or "learn" for `minutes` (default 15), applied to its proxy at once
    // (sessions/network_change.hpp says which changes are allowed). The defaults refuse.
    virtual Result<store::Session> set_network(std::string_view id, std::string_view mode,
                                               std::optional<std::int64_t> minutes) {
        (void)id;
        (void)mode;
        (void)minutes;
        return make_error(ErrorCode::unavailable, "this handlerd cannot change a session's network");
    }
    // Changes "model", "mode" or "thinking_level": at once where the harness can, else
    // from the next resume.
    virtual Result<Applied> configure(std::string_view id, std::string_view name, std::string_view value) {
        (void)id;
        (void)name;
        (void)value;
        return make_error(ErrorCode::unavailable, "this handlerd holds no conversations");
    }
    // The image builds of this handlerd run, oldest first (the last few finished ones
    // and every one under way). The default: none (a service that builds no images).
    virtual std::vector<ImageBuild> image_builds() const { return {}; }
};

} // namespace handler::api
