// The session events a harness plugin emits, built with Boost.JSON in the shapes
// docs/contracts.md ("Event payloads") promises handlerd: ACP's session/update field
// names, so that every harness's events read alike whatever the agent printed.
#pragma once

#include <handler/sdk.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::plugin_common {

// One event: its kind and its payload, serialised.
struct Event {
    hd_event_kind kind = HD_EVENT_ERROR;
    std::string json;
};

Event make_event(hd_event_kind kind, const boost::json::object& payload);

// ACP ContentBlock {"type":"text","text":...}.
boost::json::object text_block(std::string_view text);
// ACP ToolCallContent wrapping a block: {"type":"content","content":block}.
boost::json::object tool_content(boost::json::object block);
// ACP ToolCallContent {"type":"diff","path","oldText","newText"} for an edit the model asked
// for: oldText null when the tool writes the whole file. Empty (no diff) when either text is
// over kDiffTextBytes: a client draws a diff line by line, and the call's rawInput keeps it.
inline constexpr std::size_t kDiffTextBytes = 256 * 1024;
std::optional<boost::json::object> diff_content(std::string_view path, std::optional<std::string_view> old_text,
                                                std::string_view new_text);

// {"content":{"type":"text","text":...}}
Event user_prompt(std::string_view text);
// The text of a prompt handlerd hands a parser (a user_prompt payload); throws
// std::invalid_argument, naming `agent`, for anything but a text prompt.
std::string prompt_text(std::string_view payload, std::string_view agent);

// An image of a prompt: handlerd checked the type (png, jpeg, gif or webp, by its first
// bytes too) and the base64, and sends images only to a harness whose describe() lists
// "image" in "prompt_content".
struct PromptImage {
    std::string mime_type; // "image/png"
    std::string data;      // base64, as the payload has it
};
struct Prompt {
    std::string text;
    std::vector<PromptImage> images;
};
// The whole prompt: its text, and its "images" ([{"mimeType","data"}], docs/contracts.md).
// Throws std::invalid_argument, naming `agent`, as prompt_text does.
Prompt read_prompt(std::string_view payload, std::string_view agent);
Event agent_message_chunk(std::string_view text);
Event agent_thought_chunk(std::string_view text);

struct ToolCall {
    std::string id;
    std::string title;
    std::string kind = "other"; // read|edit|delete|move|search|execute|think|fetch|other
    std::string name;           // the agent's own name for the tool; omitted when empty
    boost::json::value raw_input;
    std::vector<std::string> locations; // files the call touches
    boost::json::array content;         // ACP ToolCallContent (an edit's diff); omitted when empty
};
// {"toolCallId","title","kind","status":"pending","name"?,"rawInput","locations"?:[{"path"}],"content"?}
Event tool_call(const ToolCall& call);

struct ToolCallUpdate {
    std::string id;
    std::string status = "completed"; // in_progress|completed|failed
    boost::json::array content;       // ACP ToolCallContent entries
    // No "content" in the update, so the call's own (an edit's diff) stays: ACP's content
    // in an update replaces the call's.
    bool keep_content = false;
};
Event tool_call_update(const ToolCallUpdate& update);

struct PlanEntry {
    std::string content;
    std::string status = "pending";  // pending|in_progress|completed
    std::string priority = "medium"; // high|medium|low
};
Event plan(const std::vector<PlanEntry>& entries);
// The entries of a to-do list written as {"todos":[{"content","status","priority"?}]}
// (Claude Code's TodoWrite, Vibe's todo): a status other than in_progress or completed
// reads as pending, a priority other than high or low as medium, and items whose status
// is `left_out` (when given) are skipped.
std::vector<PlanEntry> plan_from_todos(const boost::json::object& input, std::string_view left_out = {});

struct PermissionOption {
    std::string id;
    std::string name;
    std::string kind; // allow_once|allow_always|reject_once|reject_always
};
struct PermissionRequest {
    std::string tool_call_id;
    std::string title;
    boost::json::value raw_input;
    std::vector<PermissionOption> options;
    // ACP's "_meta": what the harness's own answer needs (its request id), which
    // handlerd hands back with the client's answer. Left out when empty.
    boost::json::object meta;
};
// The two answers every agent understands.
std::vector<PermissionOption> allow_or_reject_once();
Event permission_request(const PermissionRequest& request);
// A client's answer as handlerd hands it to a parser: the request's payload (as the
// parser emitted it), what the parser put under "_meta" at `meta_key`, and the option
// chosen. Throws std::invalid_argument, naming `agent`, for a request without that.
struct Answer {
    boost::json::object request;
    boost::json::object meta;
    std::string option;
};
Answer read_answer(std::string_view request, std::string_view answer, std::string_view meta_key,
                   std::string_view agent);

// {"modeId":...,"model"?:...,"thinkingLevel"?:...}
Event mode_changed(std::string_view mode_id, std::string_view model = {}, std::string_view thinking_level = {});

struct TurnResult {
    std::string stop_reason = "end_turn"; // end_turn|max_tokens|max_turn_requests|refusal|cancelled
    std::optional<std::string> result;    // the agent's final text
    bool is_error = false;
    std::optional<boost::json::value> usage;
    std::optional<double> cost_usd;
    std::optional<std::int64_t> num_turns;
};
// {"stopReason","isError","result"?,"usage"?,"costUsd"?,"numTurns"?}
Event result(const TurnResult& turn);

// {"message":...}
Event error(std::string_view message);

// Whether `reason` is one of ACP's StopReason values.
bool is_acp_stop_reason(std::string_view reason);

// At most `max_bytes` of `text`, never ending inside a UTF-8 sequence, with "…" appended
// when something was cut (so the result may be up to 3 bytes longer than max_bytes).
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

} // namespace handler::plugin_common
