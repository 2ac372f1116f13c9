// What a conversation's events become for an editor, and what an editor's prompt becomes
// for handlerd: pure functions, no state but what the caller passes in.
//
// The events' payloads come from a harness's output, that is from inside a container.
// So nothing of a payload is passed on as it is: every field of an ACP update is built
// here from a field of the payload that is on a list and has the right type (an unknown
// enum value becomes the default, an unusable event becomes nothing). The result is only
// ever the `update` of a session/update notification, or the params of a permission
// request we make; whatever a payload holds (a string shaped like a JSON-RPC request
// included) stays a string inside it.
#pragma once

#include "api/session_control.hpp"
#include "core/result.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace handler::acp {

// One event of a conversation, as handlerd stores and streams it (docs/conversations.md).
struct ConversationEvent {
    std::int64_t seq = 0;
    std::int64_t at_ms = 0;
    std::string kind;
    boost::json::object payload;
};

// Reads {"seq","at","kind","payload"} (an element of GET .../events, or a WebSocket
// "event" message); nullopt when a field is missing or of another type.
std::optional<ConversationEvent> read_event(const boost::json::object& message);

// Consecutive chunks of one kind are one message; its id is made from the seq of its
// first chunk, so replaying the same events gives the same ids.
struct MessageRun {
    std::string kind;
    std::string id;
};

// The ACP SessionUpdate for one event, or nullopt: for the events that are turn
// bookkeeping or settings (result, prompt_queued, prompt_withdrawn, permission_request,
// permission_answer, mode_changed: agent.* handles those) and for unusable ones.
// user_prompt becomes a user_message_chunk whose messageId is the prompt's id.
std::optional<boost::json::object> to_update(const ConversationEvent& event, MessageRun& run);
// Zed's terminal extension (ACP.md, "Tool calls"), for an editor that advertised
// `clientCapabilities._meta.terminal_output`: an execute tool call names a terminal of its
// own (`_meta.terminal_info`, a "terminal" content entry keyed by the tool call's id, never
// one of the editor's), and its update carries the command's output as
// `_meta.terminal_output` and its end as `_meta.terminal_exit`. The output already
// happened in the container; the editor only shows it. `terminals` holds the ids of the
// execute tool calls seen and not yet ended.
void show_as_terminal(boost::json::object& update, std::set<std::string>& terminals);

// A user_prompt's images (its "images", each checked by handlerd when it was sent), as one
// user_message_chunk each with the prompt's messageId; the text's chunk is to_update's.
std::vector<boost::json::object> prompt_image_updates(const boost::json::object& payload);

// {"sessionId":..., "update":...}: the params of session/update.
boost::json::object session_notification(std::string_view session_id, boost::json::object update);

// The params of session/request_permission for a permission_request payload, or nullopt
// when it has no tool call id or no usable option.
std::optional<boost::json::object> permission_params(std::string_view session_id,
                                                     const boost::json::object& payload);

// The stop reason of a result payload: one of ACP's StopReason values, else end_turn.
std::string stop_reason(const boost::json::object& payload);

// A time in milliseconds since the epoch as ISO 8601 in UTC ("2026-08-22T10:00:00.000Z").
std::string iso8601(std::int64_t ms);

// Whether `path` lies inside `folder` (whole path components; both absolute).
bool path_within(std::string_view path, std::string_view folder);

// An editor's prompt (ACP ContentBlock[]) as the prompt handlerd takes: text blocks as
// they are, a resource_link as a line naming it (the project is mounted at its own path,
// so a file:// link names the same file in the container), an embedded text resource as
// its text under its uri, an image with its data as one of the prompt's images (handlerd
// checks it, and refuses it for a harness that takes none). An image given only by uri,
// audio or a binary resource is refused naming the block; so is text longer than
// limit_bytes.
Result<api::Prompt> prompt_content(const boost::json::array& blocks, std::size_t limit_bytes);

} // namespace handler::acp
