// What a terminal client says and is told (docs/api.md, "Terminal" and "Terminal channels"),
// in one place for the two sockets that speak it: the terminal route
// (/api/v1/sessions/{id}/terminal, one session per socket: `handler attach`) and the
// channels of the events socket (/api/v1/events, many sessions on the one socket a page
// opens). Transport-free: the sockets hand it text and send what it returns, and the unit
// tests call it directly.
//
// A channel number of 0 (kNoChannel) means the terminal route's socket: its messages carry
// no channel and keep their short types ("attached", "exit"); on a channel they are
// "terminal.attached", "terminal.exit", ... with a "channel" field, so they never collide
// with the events socket's own types ("session.updated", ...).
#pragma once

#include "api/session_control.hpp"
#include "core/result.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace handler::api {

inline constexpr unsigned kNoChannel = 0;
// A channel is one byte on binary messages; 0 is never a channel.
inline constexpr unsigned kMaxChannel = 255;
// The terminal route's limit on a client's message (input is sent in such pieces).
inline constexpr std::size_t kTerminalIncomingLimitBytes = std::size_t{64} << 10;
// Output waiting for a slow client, beyond which it is closed (1008): attaching again
// replays, while queueing without end would hold the daemon's memory.
inline constexpr std::size_t kTerminalQueueLimitBytes = std::size_t{16} << 20;

// Where an attach option was written, for the error that names it: the terminal route's
// query ("query parameter 'from' ...") or an attach message's field ("field 'from' ...").
enum class OptionSource { query = 1, message };

// One attach option (from, read_only, events, after, output) given as text: the query
// parameter as written, or a message field's JSON value as it serializes. The one rule for
// both ways in; an Error names the option and what it must be.
Result<void> set_attach_option(AttachOptions& options, std::string_view key, std::string_view value,
                               OptionSource source);

// What a client sends as a text message.
struct TerminalCommand {
    enum class Kind { resize = 1, eof, attach, detach };
    Kind kind = Kind::resize;
    unsigned channel = kNoChannel;
    std::uint16_t rows = 0; // resize
    std::uint16_t cols = 0;
    std::string session;    // attach
    AttachOptions options;  // attach
};

struct ParsedCommand {
    // The channel the message named, when it named a valid one: an error then concerns
    // that channel (kNoChannel otherwise).
    unsigned channel = kNoChannel;
    Result<TerminalCommand> command = make_error(ErrorCode::invalid_argument, "empty message");
};

// The terminal route: {"type":"resize","rows":R,"cols":C} or {"type":"eof"}.
ParsedCommand parse_terminal_command(std::string_view text);
// The events socket: attach, detach, resize and eof, each with its "channel".
ParsedCommand parse_channel_command(std::string_view text);

// Server-to-client text messages, for `channel` (kNoChannel: the terminal route's).
std::string attached_message(unsigned channel, std::string_view session, const Attached& attached);
std::string event_message(unsigned channel, const store::SessionEvent& event);
std::string exit_message(unsigned channel, std::int64_t code);
std::string ended_message(unsigned channel, std::string_view reason);
std::string detached_message(unsigned channel);
std::string error_message(unsigned channel, ErrorCode code, std::string_view message);

// A binary message of output. On the terminal route: the stream byte, then the bytes. On a
// channel: its byte, the stream byte, the output offset just past the chunk (8 bytes, most
// significant first: where a client that reconnects attaches `from`), then the bytes.
std::string output_message(unsigned channel, OutputStream stream, std::uint64_t end, std::string_view bytes);

} // namespace handler::api
