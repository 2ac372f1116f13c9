#include "vibe/streaming.hpp"

#include <plugin_common/json_access.hpp>
#include <plugin_common/json_line.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <utility>

namespace handler::vibe {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::display_path;
using common::string_at;

namespace {

// The tags Vibe wraps around a failed tool's text (vibe/core/utils/tags.py): a tool
// that raised, an unknown tool or bad arguments, a hook's denial; a cancelled call.
constexpr std::string_view kFailureTags[] = {"tool_error", "user_cancellation"};

// `text` without the one tag it is wrapped in, if it is.
std::optional<std::string_view> untagged(std::string_view text, std::string_view tag) {
    const std::string open = "<" + std::string(tag) + ">";
    const std::string close = "</" + std::string(tag) + ">";
    if (text.size() < open.size() + close.size() || !text.starts_with(open) || !text.ends_with(close))
        return std::nullopt;
    return text.substr(open.size(), text.size() - open.size() - close.size());
}

// A tool message carries no success flag, only the text the model is given. Besides the
// tagged failures, a call Vibe refused to run is a plain sentence: "Tool execution not
// permitted." when it needed approval and nobody could give it (a headless run has no
// approval callback, vibe/core/agent_loop.py _ask_approval), and the reason of a tool set
// to "never" (vibe/core/agent_loop.py _should_execute_tool, tools/builtins/bash.py).
bool tool_failed(std::string_view text) {
    for (std::string_view tag : kFailureTags)
        if (untagged(text, tag)) return true;
    return text == "Tool execution not permitted." || text.starts_with("Command denied: ") ||
           (text.starts_with("Tool '") && text.ends_with("' is permanently disabled"));
}

std::string_view without_failure_tag(std::string_view text) {
    for (std::string_view tag : kFailureTags)
        if (const auto inner = untagged(text, tag)) return *inner;
    return text;
}

// A tool's file, for both the title and ACP's "locations": read and edit name it
// file_path, write_file path (vibe/core/tools/builtins/*.py).
std::string_view file_of(std::string_view name, const json::object& input) {
    if (name == "read" || name == "edit") return string_at(input, "file_path");
    if (name == "write_file") return string_at(input, "path");
    return {};
}

// ACP locations are absolute; Vibe's tools also take paths relative to its folder.
std::string absolute(std::string_view path, std::string_view cwd) {
    if (path.empty() || path.front() == '/' || cwd.empty()) return std::string(path);
    while (cwd.size() > 1 && cwd.back() == '/') cwd.remove_suffix(1);
    return std::string(cwd) + (cwd == "/" ? "" : "/") + std::string(path);
}

// A call's arguments are the model's JSON as a string; a string that is not JSON stays
// the raw input as it is, and a missing one is an empty object.
json::value arguments_of(const json::object& function) {
    const json::value* arguments = function.if_contains("arguments");
    if (arguments == nullptr || arguments->is_null()) return json::object();
    if (!arguments->is_string()) return *arguments;
    const json::string& text = arguments->get_string();
    if (std::optional<json::value> parsed = common::parse_json_line({text.data(), text.size()})) return *parsed;
    return *arguments;
}

} // namespace

std::string_view tool_kind(std::string_view name) {
    // As Vibe's own ACP adapter classifies them (vibe/acp/tools/session_update.py).
    if (name == "read" || name == "skill") return "read";
    if (name == "edit" || name == "write_file") return "edit";
    if (name == "bash") return "execute";
    if (name == "grep" || name == "web_search") return "search";
    if (name == "web_fetch") return "fetch";
    return "other";
}

std::string tool_title(std::string_view name, const json::object& input, std::string_view cwd) {
    const auto with = [&](std::string_view head, std::string_view detail) {
        if (detail.empty()) return std::string(name);
        return std::string(head) + common::truncate_utf8(detail, common::kTitleDetailBytes);
    };
    if (name == "bash") {
        const std::string line = common::first_line_of(string_at(input, "command"), common::kTitleDetailBytes);
        return line.empty() ? std::string("bash") : "bash: " + line;
    }
    if (name == "read") return with("Read ", display_path(file_of(name, input), cwd));
    if (name == "edit") return with("Edit ", display_path(file_of(name, input), cwd));
    if (name == "write_file") return with("Write ", display_path(file_of(name, input), cwd));
    if (name == "grep") {
        std::string title = with("grep ", string_at(input, "pattern"));
        const std::string_view where = string_at(input, "path");
        if (!where.empty() && where != "." && where != "./") title += " in " + display_path(where, cwd);
        return title;
    }
    if (name == "web_fetch") return with("Fetch ", string_at(input, "url"));
    if (name == "web_search") return with("Search the web: ", string_at(input, "query"));
    if (name == "task") {
        const std::string line = common::first_line_of(string_at(input, "task"), common::kTitleDetailBytes);
        return line.empty() ? std::string("task") : "Task: " + line;
    }
    if (name == "skill") return with("Load skill ", string_at(input, "name"));
    if (name == "todo") {
        const std::string_view action = string_at(input, "action");
        if (action == "write") return "Update the plan";
        if (action == "read") return "Read the plan";
    }
    if (name == "ask_user_question") return "Ask the user";
    if (name == "exit_plan_mode") return "Leave plan mode";
    return std::string(name);
}

std::string working_directory_of(std::string_view system_prompt) {
    // The first such line: the project context comes before the AGENTS.md files Vibe
    // quotes (vibe/core/system_prompt.py), so their text cannot pose as it.
    constexpr std::string_view kLabel = "Absolute path: ";
    std::size_t at = 0;
    while ((at = system_prompt.find(kLabel, at)) != std::string_view::npos) {
        if (at == 0 || system_prompt[at - 1] == '\n') break;
        at += kLabel.size();
    }
    if (at == std::string_view::npos) return {};
    std::string_view path = system_prompt.substr(at + kLabel.size());
    path = path.substr(0, path.find('\n'));
    while (!path.empty() && (path.back() == '\r' || path.back() == ' ')) path.remove_suffix(1);
    return std::string(path);
}

void StreamingParser::on_object(const json::object& message, std::vector<Event>& out) {
    // User messages are left out: handlerd records the prompt itself, and the others are
    // Vibe's own reminders to the model ("injected").
    const std::string_view role = string_at(message, "role");
    if (role == "system") on_system(message);
    else if (role == "assistant") on_assistant(message, out);
    else if (role == "tool") on_tool(message, out);
}

void StreamingParser::on_system(const json::object& message) {
    const std::string cwd = working_directory_of(string_at(message, "content"));
    if (!cwd.empty()) cwd_ = cwd;
}

void StreamingParser::on_assistant(const json::object& message, std::vector<Event>& out) const {
    const std::string_view reasoning = string_at(message, "reasoning_content");
    if (!reasoning.empty()) out.push_back(common::agent_thought_chunk(reasoning));
    const std::string_view text = string_at(message, "content");
    if (!text.empty()) out.push_back(common::agent_message_chunk(text));

    std::size_t calls = 0;
    if (const json::array* tool_calls = array_at(message, "tool_calls")) {
        for (const json::value& entry : *tool_calls) {
            ++calls;
            const json::object* call = entry.if_object();
            if (call == nullptr) continue;
            const json::object& function = common::as_object(call->if_contains("function"));
            const std::string_view name = string_at(function, "name");
            json::value input = arguments_of(function);
            const json::object& input_object = common::as_object(&input);
            common::ToolCall tool;
            tool.id = std::string(string_at(*call, "id"));
            tool.name = std::string(name);
            tool.title = tool_title(name, input_object, cwd_);
            tool.kind = std::string(tool_kind(name));
            const std::string_view path = file_of(name, input_object);
            if (!path.empty()) tool.locations.push_back(absolute(path, cwd_));
            const bool updates_plan = name == "todo" && string_at(input_object, "action") == "write";
            std::vector<common::PlanEntry> entries;
            // Vibe's whole list, as an ACP plan holds it; cancelled items are left out, as
            // Vibe's own ACP adapter does (vibe/acp/tools/builtins/todo.py).
            if (updates_plan) entries = common::plan_from_todos(input_object, "cancelled");
            tool.raw_input = std::move(input);
            out.push_back(common::tool_call(tool));
            if (updates_plan) out.push_back(common::plan(entries));
        }
    }

    // The end of the run. Vibe prints no end marker and exits when its loop ends, which
    // is when the model answers without calling a tool (vibe/core/agent_loop.py
    // _conversation_loop: it goes on only while the last message is a tool result). So
    // that answer is the run's result; only Vibe's experimental post-turn hooks, off
    // unless enable_experimental_hooks is set, could make it go on, and then a second
    // result follows. A run that fails (an API error, --max-turns reached) prints its
    // reason to stderr and exits 1 without such a message: no result, and the exit
    // status tells. FIXME: a refusal is printed as an ordinary answer before Vibe fails
    // (vibe/core/agent_loop.py _chat), and the message says nothing of it, so it gives
    // an end_turn result; only the exit status tells.
    if (calls == 0) {
        common::TurnResult turn;
        if (const json::value* content = message.if_contains("content"); content != nullptr && content->is_string())
            turn.result = std::string(content->get_string().data(), content->get_string().size());
        out.push_back(common::result(turn));
    }
}

void StreamingParser::on_tool(const json::object& message, std::vector<Event>& out) const {
    const std::string_view text = string_at(message, "content");
    common::ToolCallUpdate update;
    update.id = std::string(string_at(message, "tool_call_id"));
    update.status = tool_failed(text) ? "failed" : "completed";
    const std::string_view shown = without_failure_tag(text);
    if (!shown.empty()) update.content.push_back(common::tool_content(common::text_block(shown)));
    out.push_back(common::tool_call_update(update));
}

} // namespace handler::vibe
