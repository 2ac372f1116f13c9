// The CLI's side of the API: synchronous calls to handlerd over its unix socket (where
// the file mode is the authentication, so no token is sent), and asynchronous ones for
// `handler acp`, which runs an io_context of its own. Free of Beast and Asio; only
// client.cpp includes them. Each call makes its own connection: a CLI run makes a
// handful of calls, and a fresh connection cannot be left in a bad state by a previous
// one.
#pragma once

#include "api/http_types.hpp"
#include "api/session_control.hpp"
#include "core/result.hpp"

#include <filesystem>
#include <cstdint>
#include <boost/json/object.hpp>
#include <boost/system/error_code.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace handler::api::client {

// Sends one request and waits for its response; the whole exchange (connect, send,
// receive) must finish within timeout_ms. Any HTTP status is a Response, an API error
// included: the caller reads {"error":{...}} from the body. An Error means no HTTP answer:
//   unavailable: no socket file or nobody listening ("handlerd is not running (no answer
//                on <socket>); start it with `handlerd --detach` (or `handler daemon` in the foreground)"),
//                no answer in time, or the connection broke;
//   forbidden:   the socket belongs to someone else (permission denied).
// A non-empty body is sent as application/json.
Result<Response> request(const std::filesystem::path& socket, std::string_view method,
                         std::string_view target, std::string body,
                         unsigned timeout_ms = 10'000);

// The same exchange for a program that runs its own io_context (`handler acp`): `done` is
// called once, on `io`, with what request() would return.
void request_async(boost::asio::io_context& io, const std::filesystem::path& socket, std::string_view method,
                   std::string_view target, std::string body, unsigned timeout_ms,
                   std::function<void(Result<Response>)> done);

// What a failure to reach or talk to handlerd on `socket` means to a person (the
// messages above); `connected`: it broke after the connection was made.
Error connection_error(const std::filesystem::path& socket, boost::system::error_code error, bool connected,
                       unsigned timeout_ms);

// A WebSocket's text messages, read on the caller's io_context (binary messages are
// skipped). `closed` is called once at the end: with the server's close code and reason,
// or an Error (no connection, a refused upgrade with handlerd's message, a dropped
// connection). Destroying the stream closes it; no hook is called after that.
struct CloseReason {
    std::uint16_t code = 0;
    std::string reason;
};
struct MessageHooks {
    std::function<void(std::string_view text)> message;
    std::function<void(Result<CloseReason> how)> closed;
};
class MessageStream {
public:
    virtual ~MessageStream() = default;
};
std::unique_ptr<MessageStream> open_message_stream(boost::asio::io_context& io, const std::filesystem::path& socket,
                                                  std::string_view target, MessageHooks hooks,
                                                  unsigned connect_timeout_ms = 10'000);

enum class Follow { keep_going = 1, stop };

// Called with each message of the events stream, one JSON object as text
// ({"type":"agent.created","data":{...},"at":MS}); return Follow::stop to end.
using EventCallback = std::function<Follow(std::string_view message)>;

// Opens the events WebSocket (GET /api/v1/events) and calls on_event for each message
// until on_event returns Follow::stop (→ success) or the stream ends (→ Error, saying
// why: handlerd stopped, or dropped this client for falling behind). Connecting and the
// handshake must finish within connect_timeout_ms; after that it waits for events as
// long as it takes. An exception from on_event ends the stream as Error{internal}.
Result<void> follow_events(const std::filesystem::path& socket, const EventCallback& on_event,
                           unsigned connect_timeout_ms = 10'000);

// What attach_terminal does with the terminal WebSocket (docs/api.md) on the CLI's side.
struct TerminalHooks {
    // The greeting: whether the session has a terminal, and its output offset so far.
    std::function<void(bool tty, std::uint64_t produced)> attached;
    // Each chunk of output, in order.
    std::function<void(OutputStream stream, std::string_view bytes)> output;
    // With ?events=1: how the session's output becomes events ("structured", "text",
    // "none", from the greeting), then each event message as it comes.
    std::function<void(const std::string& events)> events_mode;
    std::function<void(const boost::json::object& event)> event;
    // Input is read from this descriptor on a thread of its own (-1: no input). Each
    // piece passes through `filter` first (if set), which may change it; returning false
    // detaches once what is left has been sent (the detach key).
    int input_fd = -1;
    std::function<bool(std::string& bytes)> filter;
    // When the input ends: send {"type":"eof"} (a pipe session's stdin closes); otherwise
    // stay attached without input.
    bool eof_on_input_end = false;
    // The window size (rows, cols), sent at the start and on every SIGWINCH; unset or
    // nullopt: none is sent.
    std::function<std::optional<std::pair<std::uint16_t, std::uint16_t>>()> window_size;
};

struct TerminalEnd {
    enum class How { exited = 1, ended, detached };
    How how = How::ended;
    std::int64_t exit_code = 0; // exited
    std::string reason;         // ended: why (failed, lost, removed, handlerd stopping)
};

// Attaches to `target` (/api/v1/sessions/ID/terminal[?...]) and runs until the program
// exits, the session ends, or the filter detaches. An Error: no connection, a refused
// upgrade, a protocol error from handlerd ({"type":"error"} on attach, e.g. no such
// session), or a dropped connection.
Result<TerminalEnd> attach_terminal(const std::filesystem::path& socket, std::string_view target,
                                    TerminalHooks& hooks, unsigned connect_timeout_ms = 10'000);

} // namespace handler::api::client
