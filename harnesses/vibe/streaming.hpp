// Mistral Vibe's headless output (`vibe --prompt … --output streaming`) turned into
// Handler's session events. Kept apart from the plugin's entry point, and free of the
// plugin wrappers, so the unit tests drive it directly.
//
// What Vibe prints (2.18.4, read in its source; it could not be run here): one line per
// message appended to the conversation, `json.dump(message.model_dump(mode="json"))`
// (vibe/core/output_formatters.py, StreamingJsonOutputFormatter), so every line is an
// LLMMessage (vibe/core/types.py) with all its fields, null included:
//
//   {"role": "system"|"user"|"assistant"|"tool", "content": str|null, "images": …,
//    "injected": bool, "reasoning_content": str|null, "reasoning_state": …,
//    "reasoning_signature": …, "reasoning_message_id": …,
//    "tool_calls": [{"id": str, "index": int, "function": {"name": str,
//                    "arguments": "<the arguments as a JSON string>"}, "type": "function"}]|null,
//    "name": str|null, "tool_call_id": str|null, "message_id": str|null,
//    "user_display_content": …}
//
// Assistant messages arrive whole (programmatic mode does not stream tokens). A tool's
// result is a "tool" message naming the call; there is no success flag, only the text
// Vibe gives the model (see tool_failed in streaming.cpp). Nothing marks the end of the
// run, and errors go to stderr only (see on_assistant).
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace handler::vibe {

using plugin_common::Event;

class StreamingParser final : public plugin_common::JsonLinesParser {
public:
    StreamingParser() : JsonLinesParser("Mistral Vibe") {}
    explicit StreamingParser(std::size_t max_line) : JsonLinesParser("Mistral Vibe", max_line) {}

private:
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_system(const boost::json::object& message);
    void on_assistant(const boost::json::object& message, std::vector<Event>& out) const;
    void on_tool(const boost::json::object& message, std::vector<Event>& out) const;

    std::string cwd_; // from the system prompt: tool titles name files relative to it
};

// What the tool call is about, for a person: "Write hello.txt", "bash: ls -la".
// `cwd` (may be empty) shortens paths under it.
std::string tool_title(std::string_view name, const boost::json::object& input, std::string_view cwd);
// ACP's ToolKind for one of Vibe's tools.
std::string_view tool_kind(std::string_view name);
// The folder Vibe runs in, as its system prompt states it ("Absolute path: …", from
// vibe/core/prompts/project_context.md); empty when the prompt does not say.
std::string working_directory_of(std::string_view system_prompt);

} // namespace handler::vibe
