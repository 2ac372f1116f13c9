#include "codex/app_server.hpp"

#include <plugin_common/json_access.hpp>
#include <plugin_common/launch.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <stdexcept>

namespace handler::codex {

namespace json = boost::json;
namespace common = handler::plugin_common;
using common::array_at;
using common::object_at;
using common::string_at;

namespace {

constexpr std::int64_t kInitializeId = 0;
constexpr std::int64_t kThreadId = 1; // thread/start or thread/resume

bool is_tool_item(std::string_view type) {
    return type == "commandExecution" || type == "fileChange" || type == "mcpToolCall" ||
           type == "dynamicToolCall" || type == "webSearch" || type == "collabAgentToolCall";
}

// The shell Codex runs a command in wraps it: `/bin/bash -lc "printf hi > a"` (the
// user's shell: /bin/sh in a session's container). A title shows what was asked for, not
// the wrapper.
std::string_view unwrap_shell(std::string_view command) {
    const auto program_end = command.find(' ');
    if (program_end == std::string_view::npos) return command;
    const std::string_view program = command.substr(0, program_end);
    const std::string_view name = program.substr(program.rfind('/') == std::string_view::npos ? 0 : program.rfind('/') + 1);
    if (name != "sh" && name != "bash" && name != "zsh" && name != "dash") return command;
    std::string_view rest = command.substr(program_end + 1);
    for (std::string_view flag : {"-lc ", "-c "}) {
        if (rest.substr(0, flag.size()) != flag) continue;
        rest = rest.substr(flag.size());
        if (rest.size() >= 2 && (rest.front() == '"' || rest.front() == '\'') && rest.back() == rest.front())
            rest = rest.substr(1, rest.size() - 2);
        return rest;
    }
    return command;
}

// A file change's kind: {"type":"add"|"delete"|"update"}.
std::string_view change_kind(const json::object& change) {
    const json::object* kind = object_at(change, "kind");
    return kind == nullptr ? std::string_view() : string_at(*kind, "type");
}

std::vector<std::string> changed_paths(const json::object& item) {
    std::vector<std::string> paths;
    if (const json::array* changes = array_at(item, "changes"))
        for (const json::value& entry : *changes)
            if (const json::object* change = entry.if_object()) {
                const std::string_view path = string_at(*change, "path");
                if (!path.empty()) paths.emplace_back(path);
            }
    return paths;
}

common::ToolCall make_call(const json::object& item) {
    common::ToolCall call;
    call.id = std::string(string_at(item, "id"));
    call.name = std::string(string_at(item, "type"));
    call.title = item_title(item);
    call.kind = std::string(item_kind(item));
    // The item as Codex gave it, less what only the result has.
    json::object input = item;
    for (std::string_view key : {"id", "type", "status", "aggregatedOutput", "exitCode", "result", "error",
                                 "durationMs", "processId", "startedAtMs", "completedAtMs", "contentItems", "success"})
        input.erase(key);
    call.raw_input = std::move(input);
    call.locations = changed_paths(item);
    return call;
}

std::string item_status(const json::object& item) {
    const std::string_view status = string_at(item, "status");
    if (status == "failed" || status == "declined") return "failed";
    if (status == "inProgress") return "in_progress";
    if (const auto code = common::int_at(item, "exitCode"); code && *code != 0) return "failed";
    if (const json::value* error = item.if_contains("error"); error != nullptr && !error->is_null()) return "failed";
    return "completed";
}

// What a finished tool item produced, as ACP tool call content.
json::array item_output(const json::object& item) {
    json::array content;
    auto add = [&](std::string_view text) {
        if (!text.empty()) content.push_back(common::tool_content(common::text_block(text)));
    };
    const std::string_view type = string_at(item, "type");
    if (type == "commandExecution") {
        add(string_at(item, "aggregatedOutput"));
        if (string_at(item, "status") == "declined") add("The command was not allowed to run");
    } else if (type == "fileChange") {
        std::string summary;
        if (const json::array* changes = array_at(item, "changes"))
            for (const json::value& entry : *changes)
                if (const json::object* change = entry.if_object()) {
                    if (!summary.empty()) summary += '\n';
                    summary += std::string(change_kind(*change)) + " " + std::string(string_at(*change, "path"));
                }
        add(summary);
        if (string_at(item, "status") == "declined") add("The change was not allowed");
    } else if (type == "mcpToolCall") {
        if (const json::object* error = object_at(item, "error")) add(string_at(*error, "message"));
        if (const json::object* result = object_at(item, "result"))
            if (const json::array* blocks = array_at(*result, "content"))
                for (const json::value& entry : *blocks)
                    if (const json::object* block = entry.if_object(); block != nullptr && string_at(*block, "type") == "text")
                        add(string_at(*block, "text"));
    } else if (type == "dynamicToolCall") {
        if (const json::array* blocks = array_at(item, "contentItems"))
            for (const json::value& entry : *blocks)
                if (const json::object* block = entry.if_object()) add(string_at(*block, "text"));
    }
    return content;
}

// A reasoning item's text when it came whole: its summary, else its content.
std::string reasoning_text(const json::object& item) {
    std::string text;
    for (std::string_view field : {"summary", "content"}) {
        if (const json::array* parts = array_at(item, field))
            for (const json::value& part : *parts)
                if (part.is_string()) text += std::string(part.get_string()) + (text.empty() ? "" : "\n");
        if (!text.empty()) break;
    }
    return text;
}

// A JSON-RPC id, as a key: Codex numbers its requests, but an id may be a string.
std::string id_key(const json::value& id) { return json::serialize(id); }

// The decision that lets this and later such actions run without asking, among those
// Codex offers: for the session, or with the rule it proposes for commands like this one.
json::value always_decision(const json::object& params, bool file_change) {
    const json::array* decisions = array_at(params, "availableDecisions");
    if (decisions == nullptr) return file_change ? json::value("acceptForSession") : json::value();
    for (const json::value& decision : *decisions)
        if (decision.is_string() && decision.get_string() == "acceptForSession") return decision;
    for (const json::value& decision : *decisions)
        if (decision.is_object() && decision.get_object().contains("acceptWithExecpolicyAmendment")) return decision;
    return {};
}

} // namespace

std::string_view item_kind(const json::object& item) {
    const std::string_view type = string_at(item, "type");
    if (type == "commandExecution") return "execute";
    if (type == "fileChange") {
        bool all_deleted = false;
        if (const json::array* changes = array_at(item, "changes")) {
            all_deleted = !changes->empty();
            for (const json::value& entry : *changes)
                if (const json::object* change = entry.if_object(); change != nullptr && change_kind(*change) != "delete")
                    all_deleted = false;
        }
        return all_deleted ? "delete" : "edit";
    }
    if (type == "webSearch") return "fetch";
    return "other";
}

std::string item_title(const json::object& item) {
    const std::string_view type = string_at(item, "type");
    if (type == "commandExecution") {
        const std::string line = common::first_line_of(unwrap_shell(string_at(item, "command")), common::kTitleDetailBytes);
        return line.empty() ? std::string("Run a command") : "Run: " + line;
    }
    if (type == "fileChange") {
        const std::vector<std::string> paths = changed_paths(item);
        if (paths.empty()) return "Edit files";
        std::string title = "Edit " + paths.front();
        if (paths.size() > 1) title += " and " + std::to_string(paths.size() - 1) + " more";
        return title;
    }
    if (type == "mcpToolCall" || type == "dynamicToolCall") {
        const std::string_view server = string_at(item, type == "mcpToolCall" ? "server" : "namespace");
        const std::string_view tool = string_at(item, "tool");
        return server.empty() ? std::string(tool) : std::string(server) + ": " + std::string(tool);
    }
    if (type == "webSearch") {
        const std::string_view query = string_at(item, "query");
        return query.empty() ? std::string("Search the web")
                             : "Search the web: " + common::truncate_utf8(query, common::kTitleDetailBytes);
    }
    if (type == "collabAgentToolCall") return "Delegate to another agent";
    return std::string(type);
}

bool is_thread_id(std::string_view text) { return common::is_uuid(text); }

std::string AppServerParser::opening(const json::object& thread_params, std::string_view resume) {
    std::string lines;
    const auto line = [&](const json::object& message) { lines += json::serialize(message) + "\n"; };
    line({{"id", kInitializeId},
          {"method", "initialize"},
          {"params", {{"clientInfo", {{"name", "handler"}, {"title", "Handler"}, {"version", "0.1.0"}}}}}});
    line({{"method", "initialized"}});
    if (resume.empty()) {
        line({{"id", kThreadId}, {"method", "thread/start"}, {"params", thread_params}});
    } else {
        json::object params = thread_params;
        params["threadId"] = resume;
        // Its history stays in Codex (and in handlerd's events): the answer need not carry
        // every turn of a long conversation.
        params["excludeTurns"] = true;
        line({{"id", kThreadId}, {"method", "thread/resume"}, {"params", std::move(params)}});
    }
    return lines;
}

void AppServerParser::send(json::object message) { reply_.input += json::serialize(message) + "\n"; }

std::vector<Event> AppServerParser::prompt(std::string_view prompt) {
    auto read = common::read_prompt(prompt, "Codex");
    if (ended_) {
        common::TurnResult failed;
        failed.is_error = true;
        failed.result = "Codex's thread could not be opened";
        return {common::result(failed)};
    }
    waiting_prompts_.push_back(std::move(read));
    start_turns();
    return {};
}

// One turn at a time (handlerd queues prompts too): a turn/start while a turn runs would
// join that turn (Codex steers it), which would leave this prompt without a result.
void AppServerParser::start_turns() {
    if (thread_id_.empty() || turn_ || waiting_prompts_.empty()) return;
    const auto& prompt = waiting_prompts_.front();
    // Images as data URLs: Codex's UserInput takes an image by URL, and a path would have to
    // be a file in the container that nothing else needs.
    json::array input;
    for (const auto& image : prompt.images)
        input.push_back(json::object{{"type", "image"}, {"url", "data:" + image.mime_type + ";base64," + image.data}});
    if (!prompt.text.empty() || prompt.images.empty()) input.push_back(json::object{{"type", "text"}, {"text", prompt.text}});
    json::object params{{"threadId", thread_id_}, {"input", std::move(input)}};
    waiting_prompts_.pop_front();
    // Codex keeps what a turn/start changes for the turns after it.
    if (!next_.model.empty()) params["model"] = next_.model;
    if (!next_.effort.empty()) params["effort"] = next_.effort;
    if (!next_.approval_policy.empty()) {
        params["approvalPolicy"] = next_.approval_policy;
        params["sandboxPolicy"] = {{"type", kSandboxPolicyType}};
    }
    turn_ = Turn{};
    turn_->request_id = next_id_++;
    turn_->changes = std::exchange(next_, {});
    send({{"id", turn_->request_id}, {"method", "turn/start"}, {"params", std::move(params)}});
}

std::vector<Event> AppServerParser::cancel() {
    if (turn_) {
        turn_->cancelled = true;
        interrupt();
        return {};
    }
    if (waiting_prompts_.empty()) return {};
    // Not sent to Codex yet (its thread is not there): it never runs.
    waiting_prompts_.pop_front();
    common::TurnResult turn;
    turn.stop_reason = "cancelled";
    return {common::result(turn)};
}

// Codex refuses turn/interrupt until the turn has started ("no active turn to
// interrupt"), even after turn/start's answer gave its id: a cancel before then is sent
// when turn/started comes.
void AppServerParser::interrupt() {
    if (!turn_ || !turn_->cancelled || !turn_->started || turn_->id.empty() || turn_->interrupt_sent) return;
    turn_->interrupt_sent = true;
    interrupts_.insert(next_id_);
    send({{"id", next_id_++},
          {"method", "turn/interrupt"},
          {"params", {{"threadId", thread_id_}, {"turnId", turn_->id}}}});
}

std::vector<Event> AppServerParser::set(std::string_view name, std::string_view value) {
    if (name == "model") {
        if (value.empty()) throw std::invalid_argument("Codex needs a model name");
        next_.model = value;
    } else if (name == "thinking_level") {
        // Codex passes any word on to the model (which may then fail the turn): only its own.
        next_.effort = common::thinking_level("Codex", value, kThinkingLevels);
    } else if (name == "mode") {
        if (value != "untrusted" && value != "on-request" && value != "never")
            throw std::invalid_argument("Codex has no mode '" + std::string(value) +
                                        "'; its modes are untrusted, on-request and never");
        next_.approval_policy = value;
    } else {
        throw std::invalid_argument("Codex cannot change its '" + std::string(name) +
                                    "'; it changes model, thinking_level and mode");
    }
    return {settings_event()};
}

// What is in effect from the next turn on: what set() changed, else what Codex said.
Event AppServerParser::settings_event() const {
    const auto pick = [](const std::string& changed, const std::string& known) -> std::string_view {
        return changed.empty() ? known : changed;
    };
    return common::mode_changed(pick(next_.approval_policy, current_.approval_policy),
                                pick(next_.model, current_.model), pick(next_.effort, current_.effort));
}

std::vector<Event> AppServerParser::answer(std::string_view request_text, std::string_view answer_text) {
    const common::Answer answer = common::read_answer(request_text, answer_text, "codex", "Codex's app server");
    const json::value* request_id = answer.meta.if_contains("requestId");
    if (request_id == nullptr || !(request_id->is_number() || request_id->is_string()))
        throw std::invalid_argument("this permission request has no Codex request id");
    const std::string_view option = answer.option;
    json::value decision;
    if (option == "allow_once") decision = "accept";
    else if (option == "reject_once") decision = "decline";
    else if (const json::value* always = answer.meta.if_contains("always"); option == "allow_always" && always != nullptr)
        decision = *always;
    if (decision.is_null())
        throw std::invalid_argument("Codex takes allow_once, reject_once or (where it offered one) allow_always, not '" +
                                    std::string(option) + "'");
    asked_.erase(id_key(*request_id));
    send({{"id", *request_id}, {"result", {{"decision", decision}}}});
    return {};
}

void AppServerParser::on_object(const json::object& message, std::vector<Event>& out) {
    const json::value* id = message.if_contains("id");
    const std::string_view method = string_at(message, "method");
    if (id != nullptr && method.empty()) return on_response(message, out);
    if (id != nullptr) return on_request(message, out);
    const json::object* params = object_at(message, "params");
    on_notification(method, params != nullptr ? *params : common::empty_object(), out);
}

void AppServerParser::on_response(const json::object& message, std::vector<Event>& out) {
    const auto id = common::int_at(message, "id");
    if (!id) return;
    if (const json::object* failure = object_at(message, "error")) {
        on_failure(*id, string_at(*failure, "message"), out);
        return;
    }
    const json::object* result = object_at(message, "result");
    if (result == nullptr) return;
    if (*id == kThreadId) return on_thread(*result, out);
    interrupts_.erase(*id);
    if (turn_ && *id == turn_->request_id) {
        // Accepted: what it changed holds from this turn on.
        const Settings& changes = turn_->changes;
        if (!changes.model.empty()) current_.model = changes.model;
        if (!changes.effort.empty()) current_.effort = changes.effort;
        if (!changes.approval_policy.empty()) current_.approval_policy = changes.approval_policy;
        if (const json::object* started = object_at(*result, "turn"); started != nullptr && turn_->id.empty())
            turn_->id = std::string(string_at(*started, "id"));
    }
}

void AppServerParser::on_failure(std::int64_t id, std::string_view text, std::vector<Event>& out) {
    if (interrupts_.erase(id) > 0) {
        // Too late (the turn ended meanwhile, and its result is out): nothing to say. Else
        // the person who cancelled should know the turn goes on.
        if (turn_ && turn_->interrupt_sent)
            out.push_back(common::error("Codex did not interrupt the turn: " + std::string(text)));
        return;
    }
    const std::string why = text.empty() ? std::string("Codex refused a request") : std::string(text);
    common::TurnResult failed;
    failed.is_error = true;
    failed.result = why;
    if (turn_ && id == turn_->request_id) {
        // That turn never ran, and ends here; the conversation goes on.
        const bool changed = !turn_->changes.empty();
        turn_.reset();
        out.push_back(common::error(why));
        if (changed) out.push_back(settings_event()); // what it would have changed did not happen
        out.push_back(common::result(failed));
        start_turns();
        return;
    }
    if (id != kInitializeId && id != kThreadId) return;
    // Without its thread nothing can happen: each prompt given so far ends as a failed
    // turn, and so does the run (its input closes, and the app server exits).
    ended_ = true;
    out.push_back(common::error(why));
    for (std::size_t i = 0; i < waiting_prompts_.size(); ++i) out.push_back(common::result(failed));
    waiting_prompts_.clear();
    reply_.close = true;
}

void AppServerParser::on_thread(const json::object& result, std::vector<Event>& out) {
    const json::object* thread = object_at(result, "thread");
    if (thread == nullptr || ended_) return;
    thread_id_ = std::string(string_at(*thread, "id"));
    // Its id is what a later resume continues; a title once Codex has one.
    json::object info;
    if (is_thread_id(thread_id_)) info["harnessSessionId"] = thread_id_;
    if (const std::string_view title = string_at(*thread, "name"); !title.empty()) info["title"] = title;
    if (!info.empty()) out.push_back(common::make_event(HD_EVENT_SESSION_INFO, info));
    // Its reasoning effort is its thinking level (null: the model's default).
    current_.approval_policy = std::string(string_at(result, "approvalPolicy"));
    current_.model = std::string(string_at(result, "model"));
    current_.effort = std::string(string_at(result, "reasoningEffort"));
    out.push_back(settings_event());
    start_turns();
}

void AppServerParser::on_request(const json::object& message, std::vector<Event>& out) {
    const json::value& id = message.at("id");
    const std::string_view method = string_at(message, "method");
    const json::object* params = object_at(message, "params");
    if ((method != "item/commandExecution/requestApproval" && method != "item/fileChange/requestApproval") ||
        params == nullptr) {
        // Codex waits for an answer to every request; one Handler does not take (user
        // input, MCP elicitations, token refreshes) is refused at once.
        send({{"id", id}, {"error", {{"code", -32601}, {"message", "Handler does not handle '" + std::string(method) + "'"}}}});
        return;
    }
    const std::string item_id(string_at(*params, "itemId"));
    common::PermissionRequest permission;
    permission.tool_call_id = item_id;
    const auto known = items_.find(item_id);
    json::object subject = known != items_.end() ? known->second : json::object();
    if (subject.empty()) {
        subject["type"] = method == "item/fileChange/requestApproval" ? "fileChange" : "commandExecution";
        subject["command"] = string_at(*params, "command");
    }
    permission.title = item_title(subject);
    json::object input = *params;
    for (std::string_view key : {"threadId", "turnId", "itemId", "startedAtMs", "availableDecisions"}) input.erase(key);
    permission.raw_input = std::move(input);
    const json::value always = always_decision(*params, method == "item/fileChange/requestApproval");
    permission.options.push_back({"allow_once", "Allow", "allow_once"});
    if (!always.is_null())
        permission.options.push_back({"allow_always",
                                      always.is_string() ? "Allow for this session" : "Allow, and commands like it",
                                      "allow_always"});
    permission.options.push_back({"reject_once", "Reject", "reject_once"});
    json::object mine{{"requestId", id}, {"method", method}};
    if (!always.is_null()) mine["always"] = always;
    permission.meta["codex"] = std::move(mine);
    asked_[id_key(id)] = item_id;
    out.push_back(common::permission_request(permission));
}

void AppServerParser::on_notification(std::string_view method, const json::object& params, std::vector<Event>& out) {
    if (method == "item/started" || method == "item/completed") {
        if (const json::object* item = object_at(params, "item")) on_item(method == "item/completed", *item, out);
    } else if (method == "item/agentMessage/delta") {
        const std::string_view delta = string_at(params, "delta");
        if (delta.empty()) return;
        streamed_.emplace(string_at(params, "itemId"));
        out.push_back(common::agent_message_chunk(delta));
    } else if (method == "item/reasoning/summaryTextDelta" || method == "item/reasoning/textDelta") {
        const std::string_view delta = string_at(params, "delta");
        if (delta.empty()) return;
        streamed_.emplace(string_at(params, "itemId"));
        out.push_back(common::agent_thought_chunk(delta));
    } else if (method == "turn/plan/updated") {
        std::vector<common::PlanEntry> entries;
        if (const json::array* steps = array_at(params, "plan"))
            for (const json::value& entry : *steps)
                if (const json::object* step = entry.if_object()) {
                    common::PlanEntry plan_entry;
                    plan_entry.content = std::string(string_at(*step, "step"));
                    // Codex's three statuses; anything else it prints is still to do.
                    const std::string_view status = string_at(*step, "status");
                    plan_entry.status = status == "inProgress" ? "in_progress"
                                        : status == "completed" ? "completed"
                                                                : "pending";
                    entries.push_back(std::move(plan_entry));
                }
        out.push_back(common::plan(entries));
    } else if (method == "thread/tokenUsage/updated") {
        on_usage(params, out);
    } else if (method == "thread/name/updated") {
        if (const std::string_view title = string_at(params, "threadName"); !title.empty())
            out.push_back(common::make_event(HD_EVENT_SESSION_INFO, json::object{{"title", title}}));
    } else if (method == "turn/started") {
        on_turn_started(params);
    } else if (method == "turn/completed") {
        on_turn_completed(params, out);
    } else if (method == "error" || method == "warning") {
        // Trouble Codex recovers from ("Reconnecting... 2/5"), its notes (a model it has
        // no metadata for), or the reason a turn failed: the person waiting should see it.
        const json::object* error = object_at(params, "error");
        const std::string_view text = error != nullptr ? string_at(*error, "message") : string_at(params, "message");
        if (text.empty()) return;
        last_error_ = std::string(text);
        out.push_back(common::error(text));
    } else if (method == "serverRequest/resolved") {
        // A question Codex withdrew before anyone answered it (the turn ended).
        const json::value* id = params.if_contains("requestId");
        const auto found = id == nullptr ? asked_.end() : asked_.find(id_key(*id));
        if (found == asked_.end()) return;
        out.push_back(common::make_event(HD_EVENT_PERMISSION_ANSWER,
                                         json::object{{"toolCallId", found->second}, {"kind", "cancelled"}}));
        asked_.erase(found);
    }
}

void AppServerParser::on_item(bool completed, const json::object& item, std::vector<Event>& out) {
    const std::string_view type = string_at(item, "type");
    const std::string id(string_at(item, "id"));
    if (is_tool_item(type)) {
        items_[id] = item;
        if (announced_.insert(id).second) out.push_back(common::tool_call(make_call(item)));
        common::ToolCallUpdate update;
        update.id = id;
        update.status = completed ? item_status(item) : std::string("in_progress");
        if (completed) update.content = item_output(item);
        out.push_back(common::tool_call_update(update));
        if (completed) items_.erase(id);
        return;
    }
    if (!completed) return;
    // Text that streamed as deltas is already out; an item that came whole is sent whole.
    const bool streamed = streamed_.erase(id) > 0;
    if (type == "agentMessage") {
        const std::string_view text = string_at(item, "text");
        if (!streamed && !text.empty()) out.push_back(common::agent_message_chunk(text));
        last_message_ = std::string(text);
    } else if (type == "reasoning") {
        const std::string text = reasoning_text(item);
        if (!streamed && !text.empty()) out.push_back(common::agent_thought_chunk(text));
    } else if (type == "plan") {
        const std::string_view text = string_at(item, "text");
        if (!text.empty()) out.push_back(common::agent_thought_chunk(text));
    }
}

void AppServerParser::on_usage(const json::object& params, std::vector<Event>& out) {
    const json::object* usage = object_at(params, "tokenUsage");
    if (usage == nullptr) return;
    // The thread's whole spend goes with each result.
    if (const json::value* total = usage->if_contains("total")) usage_ = *total;
    // The context in use is what the last request to the model held, as Codex itself counts
    // it (its TUI's "context left"); its size the model's window, when Codex knows it.
    const json::object* last = object_at(*usage, "last");
    const auto used = last == nullptr ? std::nullopt : common::int_at(*last, "totalTokens");
    if (!used) return;
    json::object payload{{"used", *used}};
    if (const auto size = common::int_at(*usage, "modelContextWindow")) payload["size"] = *size;
    out.push_back(common::make_event(HD_EVENT_USAGE, payload));
}

void AppServerParser::on_turn_started(const json::object& params) {
    if (!turn_) return;
    const json::object* started = object_at(params, "turn");
    if (started == nullptr) return;
    const std::string_view id = string_at(*started, "id");
    if (!turn_->id.empty() && id != turn_->id) return;
    turn_->id = std::string(id);
    turn_->started = true;
    interrupt(); // a cancel that came before
}

void AppServerParser::on_turn_completed(const json::object& params, std::vector<Event>& out) {
    const json::object* turn_object = object_at(params, "turn");
    const std::string_view status = turn_object == nullptr ? std::string_view() : string_at(*turn_object, "status");
    common::TurnResult turn;
    turn.result = last_message_;
    if (!usage_.is_null()) turn.usage = usage_;
    if (status == "interrupted") turn.stop_reason = "cancelled";
    if (status == "failed") {
        turn.is_error = true;
        const json::object* error = turn_object == nullptr ? nullptr : object_at(*turn_object, "error");
        const std::string_view text = error == nullptr ? std::string_view() : string_at(*error, "message");
        const std::string why = text.empty() ? std::string("Codex's turn failed") : std::string(text);
        if (why != last_error_) out.push_back(common::error(why));
        turn.result = why;
    }
    out.push_back(common::result(turn));
    last_message_.clear();
    last_error_.clear();
    turn_.reset();
    // handlerd ends the input of a one-shot run after its result (the app server then
    // exits); a conversation's stays open, and its next prompt may already wait.
    start_turns();
}

} // namespace handler::codex
