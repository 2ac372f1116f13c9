#include "cli/session_commands.hpp"

#include "cli/output.hpp"
#include "cli/permissions.hpp"
#include "cli/terminal.hpp"
#include "sessions/terminal_filter.hpp"

#include <boost/json.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>

namespace handler::cli {
namespace json = boost::json;

namespace {

// A headless run's events: with --json each is a JSON line; otherwise the result's text
// is the answer. A harness whose stdout is structured (its JSON, for machines) has its
// stdout left out; a plain one's is printed as it comes, as before.
struct HeadlessPrinter {
    CliContext& context;
    bool json_lines = false;
    bool structured = false;
    // A harness asks before it acts / a request was answered (by anyone).
    std::function<void(const json::object& request)> on_request;
    std::function<void(const std::string& tool_call)> on_answer;
    // The run's result said it failed (a harness whose program outlives its turns, like
    // Codex's app server, exits 0 anyway).
    mutable bool failed = false;

    void output(api::OutputStream stream, std::string_view bytes) const {
        if (stream == api::OutputStream::stdout_ && (structured || json_lines)) return;
        write_output(context, stream, bytes);
    }

    void event(const json::object& message) const {
        const auto* event_kind = message.if_contains("kind");
        const auto* event_payload = message.if_contains("payload");
        if (event_kind != nullptr && event_payload != nullptr && event_payload->is_object()) {
            const auto* is_error = event_payload->as_object().if_contains("isError");
            if (*event_kind == "result") failed = is_error != nullptr && is_error->is_bool() && is_error->as_bool();
            if (*event_kind == "permission_request" && on_request) on_request(event_payload->as_object());
            const auto* call = event_payload->as_object().if_contains("toolCallId");
            if (*event_kind == "permission_answer" && on_answer && call != nullptr && call->is_string())
                on_answer(std::string(call->as_string()));
        }
        if (json_lines) {
            json::object line = message;
            line.erase("type");
            write_output(context, api::OutputStream::stdout_, json::serialize(line) + "\n");
            return;
        }
        const auto* kind = message.if_contains("kind");
        const auto* payload = message.if_contains("payload");
        if (!structured || kind == nullptr || payload == nullptr || !payload->is_object()) return;
        // The answer goes to stdout, what went wrong to stderr (the harness's own stderr
        // passes through too). A failed turn's result repeats its error, so it is left out.
        const json::object& fields = payload->as_object();
        const auto print = [&](api::OutputStream stream, const char* field) {
            const auto* text = fields.if_contains(field);
            if (text == nullptr || !text->is_string() || text->as_string().empty()) return;
            // The harness made it of what the container printed: it reaches this terminal
            // the way the session's output does (sessions/terminal_filter.hpp).
            std::string line = sessions::TerminalFilter().filter(text->as_string());
            if (line.empty() || line.back() != '\n') line += '\n';
            write_output(context, stream, line);
        };
        if (*kind == "error") {
            print(api::OutputStream::stderr_, "message");
        } else if (*kind == "result") {
            const auto* is_error = fields.if_contains("isError");
            if (is_error == nullptr || !is_error->is_bool() || !is_error->as_bool()) print(api::OutputStream::stdout_, "result");
        }
    }
};

// Attaches and runs until the session ends or the user detaches; the exit code is the
// program's when it exited.
int attach_to(Session& session, const std::string& id, const Options& options,
              std::string_view query, bool with_input, bool session_tty,
              HeadlessPrinter* headless = nullptr) {
    CliContext& context = session.context();
    // A keyboard only means raw mode and detach keys for a session with a terminal; a
    // headless run reads our stdin as its own.
    const bool keyboard = with_input && session_tty && context.input_fd >= 0 &&
                          ::isatty(context.input_fd) != 0;
    auto keys = DetachKeys::parse(keyboard ? options.detach_keys : std::string());
    if (!keys) return session.fail(keys.error().message, kExitUsage);

    api::client::TerminalHooks hooks;
    hooks.output = [&context](api::OutputStream stream, std::string_view bytes) {
        write_output(context, stream, bytes);
    };
    if (headless != nullptr) {
        hooks.output = [headless](api::OutputStream stream, std::string_view bytes) {
            headless->output(stream, bytes);
        };
        hooks.events_mode = [headless](const std::string& mode) { headless->structured = mode == "structured"; };
        hooks.event = [headless](const json::object& event) { headless->event(event); };
    }
    // A headless run's input is its prompt. At a terminal, typed lines would reach the
    // program only after Ctrl-D, and a harness that reads a piped stdin to its end (codex
    // exec adds it to the prompt) would wait for that, so it gets an empty stdin. Piped
    // input is passed on.
    struct EmptyInput {
        int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ~EmptyInput() {
            if (fd >= 0) ::close(fd);
        }
    };
    std::optional<EmptyInput> empty_input;
    if (headless != nullptr && context.input_fd >= 0 && ::isatty(context.input_fd) != 0) empty_input.emplace();
    const int input_fd = empty_input ? empty_input->fd : context.input_fd;
    if (with_input) {
        hooks.input_fd = input_fd;
        hooks.filter = [&keys](std::string& bytes) { return keys->filter(bytes); };
        // A pipe session's stdin ends with ours; a terminal has no such thing.
        hooks.eof_on_input_end = !keyboard;
        if (keyboard) hooks.window_size = [&context] { return window_size(context.input_fd); };
    }
    std::optional<RawMode> raw;
    if (keyboard) raw.emplace(context.input_fd);
    auto client = context.connect();
    auto end = client->attach(session_path(id) + "/terminal" + std::string(query), hooks);
    raw.reset();
    if (!end) {
        const bool unavailable = end.error().code == ErrorCode::unavailable;
        return session.fail(end.error().message, unavailable ? kExitUnavailable : kExitRefused);
    }
    switch (end->how) {
    case api::client::TerminalEnd::How::exited:
        return static_cast<int>(end->exit_code & 0xff);
    case api::client::TerminalEnd::How::detached:
        context.err << "\r\nhandler: detached from session " << id << "; it keeps running. "
                    << "`handler attach " << id << "` returns to it.\n";
        return kExitOk;
    case api::client::TerminalEnd::How::ended:
        break;
    }
    return session.fail(end->reason.empty() ? "session " + id + " ended" : end->reason);
}

// Waits until a detached session has left `starting`, so a failure to start is reported
// here and not discovered later.
int wait_until_started(Session& session, const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
        auto answer = session.call("GET", session_path(id));
        if (!answer) return session.exit_code();
        const auto& record = answer->as_object();
        const std::string state(record.at("state").as_string());
        if (state == "failed")
            return session.fail("session " + id + " failed to start: " +
                                (record.at("message").is_string()
                                     ? std::string(record.at("message").as_string())
                                     : std::string("no reason recorded")));
        if (state != "starting") return kExitOk;
        if (std::chrono::steady_clock::now() > deadline)
            return session.fail("session " + id + " is still starting after 120 s; see "
                                "`handler session list`",
                                kExitUnavailable);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// Pages through a session's list at `path` (its `key` array, ordered by `cursor`) from
// the start, handing each page to `print`; with --follow, goes on until the session has
// ended and nothing new came.
int page_through(Session& session, const Options& options, const std::string& path, const char* key,
                 const char* cursor, const std::function<void(json::array&)>& print) {
    std::int64_t after = 0;
    bool first = true;
    for (;;) {
        auto answer = session.call("GET", session_path(options.target) + path + "?after=" + std::to_string(after));
        if (!answer) return session.exit_code();
        auto& entries = answer->as_object().at(key).as_array();
        if (!entries.empty()) after = entries.back().as_object().at(cursor).to_number<std::int64_t>();
        if (options.json_output) {
            for (const auto& entry : entries) session.context().out << json::serialize(entry) << '\n';
        } else if (!entries.empty() || (first && !options.follow)) {
            print(entries);
            first = false;
        }
        session.context().out.flush();
        if (!options.follow) return kExitOk;
        auto record = session.call("GET", session_path(options.target));
        if (!record) return session.exit_code();
        const std::string state(record->as_object().at("state").as_string());
        if ((state != "running" && state != "starting") && entries.empty()) return kExitOk;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

// One line about an event, for a person: its text, the tool call's title, the result.
std::string event_summary(std::string_view kind, const json::object& payload) {
    const auto text_at = [](const json::object& object, std::string_view field) -> std::string {
        const auto* value = object.if_contains(field);
        return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
    };
    std::string summary;
    if (kind == "user_prompt" || kind == "agent_message_chunk" || kind == "agent_thought_chunk") {
        if (const auto* content = payload.if_contains("content"); content != nullptr && content->is_object())
            summary = text_at(content->as_object(), "text");
        if (kind == "user_prompt") summary += images_note(payload);
    } else if (kind == "tool_call") {
        summary = text_at(payload, "title") + " (" + text_at(payload, "kind") + ", " + text_at(payload, "toolCallId") + ")";
    } else if (kind == "tool_call_update") {
        summary = text_at(payload, "toolCallId") + " " + text_at(payload, "status");
    } else if (kind == "plan") {
        if (const auto* entries = payload.if_contains("entries"); entries != nullptr && entries->is_array())
            for (const auto& entry : entries->as_array())
                if (entry.is_object())
                    summary += (summary.empty() ? "" : "; ") + text_at(entry.as_object(), "status") + ": " +
                               text_at(entry.as_object(), "content");
    } else if (kind == "permission_request") {
        summary = text_at(payload, "title");
    } else if (kind == "mode_changed") {
        summary = text_at(payload, "modeId") + (payload.contains("model") ? " " + text_at(payload, "model") : "");
    } else if (kind == "result") {
        const auto* failed = payload.if_contains("isError");
        summary = (failed != nullptr && failed->is_bool() && failed->as_bool() ? "failed: " : "") +
                  text_at(payload, "stopReason") + (payload.contains("result") ? ": " + text_at(payload, "result") : "");
    } else if (kind == "error") {
        summary = text_at(payload, "message");
    }
    summary = printable(summary); // it comes from inside the container: no escape sequences
    constexpr std::size_t kWidth = 160;
    if (summary.size() > kWidth) {
        std::size_t cut = kWidth;
        while (cut > 0 && (static_cast<unsigned char>(summary[cut]) & 0xC0) == 0x80) --cut; // whole characters
        summary = summary.substr(0, cut) + "\xe2\x80\xa6";
    }
    return summary;
}

// Sends one answer; what to tell the person when handlerd refused it, empty when it took it.
std::string send_answer(CliContext& context, const std::string& id, const std::string& tool_call,
                        const std::string& option) {
    json::value body = {{"toolCallId", tool_call}, {"optionId", option}};
    auto client = context.connect();
    auto response = client->call("POST", session_path(id) + "/answers", json::serialize(body));
    if (!response) return response.error().message;
    if (response->status == 204) return {};
    boost::system::error_code error;
    const auto parsed = json::parse(response->body, error);
    const auto* message = !error && parsed.is_object() ? parsed.as_object().if_contains("message") : nullptr;
    return message != nullptr && message->is_string() ? std::string(message->as_string())
                                                      : "handlerd answered " + std::to_string(response->status);
}

// Sessions as people read them: the names of their agent and project instead of ids, and
// their times as `style`. False when a lookup failed (its error is printed).
bool show_session_fields(Session& session, json::array& records, TimeStyle style) {
    const auto any_id = [&records](const char* field) {
        return std::any_of(records.begin(), records.end(), [field](const json::value& record) {
            const auto* id = record.as_object().if_contains(field);
            return id != nullptr && id->is_int64();
        });
    };
    std::map<std::int64_t, std::string> agents, projects;
    if (any_id("agent")) {
        auto names = names_by_id(session, "/api/v1/agents", "agents");
        if (!names) return false;
        agents = std::move(*names);
    }
    if (any_id("project")) {
        auto names = names_by_id(session, "/api/v1/projects", "projects");
        if (!names) return false;
        projects = std::move(*names);
    }
    for (auto& value : records) {
        auto& record = value.as_object();
        show_name(record, "agent", agents);
        show_name(record, "project", projects);
        show_times(record, {"created_at", "updated_at", "learn_until"}, session.clock(),
                   session.time_zone(), style);
    }
    return true;
}

// A session's limits, one a line, those that do not hold said so (docs/security.md).
void print_limits(std::ostream& out, const json::value& limits) {
    if (!limits.is_array()) return;
    out << "limits:\n";
    for (const json::value& entry : limits.as_array()) {
        const auto* limit = entry.if_object();
        if (limit == nullptr) continue;
        const auto text = [limit](std::string_view key) {
            const auto* value = limit->if_contains(key);
            return value != nullptr && value->is_string() ? printable(value->as_string()) : std::string();
        };
        const auto* holds = limit->if_contains("holds");
        const bool held = holds == nullptr || !holds->is_bool() || holds->as_bool();
        std::string name = text("name"), value = text("value");
        name.resize(std::max<std::size_t>(name.size(), 10), ' ');
        value.resize(std::max<std::size_t>(value.size(), 9), ' ');
        // As `handler setup` marks its checks: "!" where a limit does not hold as a whole.
        out << "  " << (held ? "✓ " : "! ") << name << ' ' << value << ' ' << text("how") << '\n';
    }
}

} // namespace

int command_run(Session& session, const Options& options, bool terminal) {
    CliContext& context = session.context();
    json::object body = {{"directory", context.current_dir.string()}};
    if (!options.target.empty()) body["name"] = options.target;
    if (options.prompt) {
        if (options.prompt->empty()) return session.fail("the prompt is empty", kExitUsage);
        body["prompt"] = *options.prompt;
    }
    if (options.session_network) body["network"] = *options.session_network;
    if (options.session_model) body["model"] = *options.session_model;
    if (options.session_thinking) body["thinking"] = *options.session_thinking;
    if (terminal && !options.args.empty()) {
        json::array args;
        for (const auto& arg : options.args) args.emplace_back(arg);
        body["args"] = std::move(args);
    }
    if (auto size = window_size(context.input_fd)) {
        body["rows"] = size->first;
        body["cols"] = size->second;
    }
    json::value value = body;
    auto created = session.call("POST", "/api/v1/sessions", &value);
    if (!created) return session.exit_code();
    const std::string id(created->as_object().at("id").as_string());
    if (options.detach) {
        if (const int waited = wait_until_started(session, id); waited != kExitOk) return waited;
        context.out << id << '\n';
        return kExitOk;
    }
    const auto* tty = created->as_object().if_contains("tty");
    if (options.prompt) {
        HeadlessPrinter printer{context, options.json_output, false, {}, {}, false};
        // A harness that asks before it acts: the person at this terminal answers, or,
        // with nobody here, any other client does (docs/harnesses.md).
        std::optional<TerminalAsker> asker;
        if (context.input_fd >= 0 && ::isatty(context.input_fd) != 0) {
            asker.emplace(context.input_fd, context.err, [&context, id](const std::string& call, const std::string& option) {
                return send_answer(context, id, call, option);
            });
            printer.on_request = [&asker](const json::object& request) { asker->asked(request); };
            printer.on_answer = [&asker](const std::string& call) { asker->answered(call); };
        } else {
            printer.on_request = [&context, id](const json::object& request) {
                const auto* call = request.if_contains("toolCallId");
                write_output(context, api::OutputStream::stderr_,
                             "handler: the agent asks before it acts and waits for an answer. " +
                                 describe_request(request) + "\n  Answer from another client, or with `handler session answer " +
                                 id + " allow|always|reject --tool-call " +
                                 printable(call != nullptr && call->is_string() ? std::string_view(call->as_string())
                                                                                : std::string_view("?")) +
                                 "`\n");
            };
        }
        const int code = attach_to(session, id, options, "?events=1", true, false, &printer);
        return code == kExitOk && printer.failed ? kExitRefused : code;
    }
    if (options.json_output) return session.fail("--json needs -p (a headless run)", kExitUsage);
    return attach_to(session, id, options, "", true, tty == nullptr || tty->as_bool());
}

int command_attach(Session& session, const Options& options) {
    auto record = session.call("GET", session_path(options.target));
    if (!record) return session.exit_code();
    const auto* tty = record->as_object().if_contains("tty");
    return attach_to(session, options.target, options, options.read_only ? "?read_only=1" : "",
                     !options.read_only, tty == nullptr || tty->as_bool());
}

int command_logs(Session& session, const Options& options) {
    if (!session.call("GET", session_path(options.target))) return session.exit_code();
    if (!options.follow) {
        auto client = session.context().connect();
        auto response = client->call("GET", session_path(options.target) + "/log", "");
        if (!response) return session.fail(response.error().message, kExitUnavailable);
        if (response->status != 200)
            return session.fail("handlerd answered " + std::to_string(response->status) + ": " +
                                response->body);
        write_output(session.context(), api::OutputStream::stdout_, response->body);
        return kExitOk;
    }
    // Everything kept, then live output from exactly where that ended.
    auto client = session.context().connect();
    auto response = client->call("GET", session_path(options.target) + "/log", "");
    if (!response) return session.fail(response.error().message, kExitUnavailable);
    write_output(session.context(), api::OutputStream::stdout_, response->body);
    const auto end = response->headers.find("X-Handler-Log-End");
    const std::string from = end == response->headers.end() ? "0" : end->second;
    const int code = attach_to(session, options.target, options, "?read_only=1&from=" + from,
                               false, false);
    // Following ends when the session does; its exit status is not ours.
    return code == kExitUnavailable || code == kExitRefused ? code : kExitOk;
}

int command_session_list(Session& session, const Options& options) {
    auto answer = session.call("GET", "/api/v1/sessions");
    if (!answer) return session.exit_code();
    auto& sessions = answer->as_object().at("sessions").as_array();
    if (options.json_output) {
        print_json(session.context().out, sessions);
        return kExitOk;
    }
    // The API lists them oldest first, so the newest is at the bottom, by the prompt.
    if (!show_session_fields(session, sessions, TimeStyle::age)) return session.exit_code();
    for (auto& record : sessions)
        if (const auto* created = record.as_object().if_contains("created_at")) {
            json::value started = *created; // the insert below may move the object's storage
            record.as_object()["started"] = std::move(started);
        }
    print_table(session.context().out, sessions,
                {"id", "agent", "project", "harness", "state", "exit_code", "mode", "started",
                 "message"});
    return kExitOk;
}

int command_session_show(Session& session, const Options& options) {
    auto record = session.call("GET", session_path(options.target));
    if (!record) return session.exit_code();
    if (options.json_output) {
        print_json(session.context().out, *record);
        return kExitOk;
    }
    json::value limits = nullptr;
    if (auto* found = record->as_object().if_contains("limits")) {
        limits = std::move(*found);
        record->as_object().erase("limits");
    }
    json::array records{std::move(*record)};
    if (!show_session_fields(session, records, TimeStyle::local_time)) return session.exit_code();
    print_record(session.context().out, records.front().as_object());
    print_limits(session.context().out, limits);
    return kExitOk;
}

int command_session_stop(Session& session, const Options& options) {
    if (!session.call("POST", session_path(options.target) + "/stop")) return session.exit_code();
    session.context().out << "Stopping session " << options.target << ".\n";
    return kExitOk;
}

int command_session_rm(Session& session, const Options& options) {
    if (options.force) {
        auto record = session.call("GET", session_path(options.target));
        if (!record) return session.exit_code();
        const std::string state(record->as_object().at("state").as_string());
        if (state == "running" || state == "starting") {
            if (!session.call("POST", session_path(options.target) + "/stop"))
                return session.exit_code();
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            for (;;) {
                auto now = session.call("GET", session_path(options.target));
                if (!now) return session.exit_code();
                const std::string current(now->as_object().at("state").as_string());
                if (current != "running" && current != "starting") break;
                if (std::chrono::steady_clock::now() > deadline)
                    return session.fail("session " + options.target + " did not stop within 30 s");
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
    }
    if (!session.call("DELETE", session_path(options.target))) return session.exit_code();
    session.context().out << "Removed session " << options.target << ".\n";
    return kExitOk;
}

namespace {

// At most `limit` bytes of `text`, cut at a character's start, "…" when cut.
std::string shortened(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) return std::string(text);
    std::size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    return std::string(text.substr(0, cut)) + "…";
}

// Who made the entry's connection: "PID COMMAND", or why that is not known. The command
// line is the process's own to write; the table prints it through printable().
std::string process_column(const json::object& entry) {
    const auto* process = entry.if_contains("process");
    if (process != nullptr && process->is_object()) {
        const auto& fields = process->as_object();
        const auto* pid = fields.if_contains("pid");
        return (pid != nullptr && pid->is_int64() ? std::to_string(pid->as_int64()) : std::string("?")) + " " +
               shortened(text_of(fields, "command"), 60);
    }
    const std::string origin = text_of(entry, "origin");
    if (origin == "unknown") return shortened(text_of(entry, "origin_note"), 60);
    return origin.empty() || origin == "untraced" ? std::string("-") : origin;
}

// The tool call it belongs to: "ID TITLE", "none" when the process is known and no tool
// call explains it, "-" when the process is not known.
std::string tool_call_column(const json::object& entry) {
    const auto* call = entry.if_contains("tool_call");
    if (call != nullptr && call->is_object())
        return shortened(text_of(call->as_object(), "id"), 40) + " " + shortened(text_of(call->as_object(), "title"), 40);
    return text_of(entry, "origin") == "no_tool_call" ? "none" : "-";
}

} // namespace

int command_network_log(Session& session, const Options& options) {
    return page_through(session, options, "/network", "entries", "id", [&](json::array& entries) {
        for (auto& entry : entries) {
            auto& object = entry.as_object();
            object["where"] = std::string(object.at("host").as_string()) + ":" +
                              std::to_string(object.at("port").to_number<std::int64_t>()) +
                              std::string(object.at("path").as_string());
            object["process"] = process_column(object);
            object["tool_call"] = tool_call_column(object);
        }
        print_table(session.context().out, entries,
                    {"id", "method", "where", "verdict", "rule", "secret", "bytes_up", "bytes_down", "process",
                     "tool_call", "reason"});
    });
}

int command_session_answer(Session& session, const Options& options) {
    // The requests still open, from the session's events, to find the one meant and the
    // option the word names.
    json::array events;
    constexpr std::size_t kPage = 1000;
    for (std::int64_t after = 0;;) {
        auto page = session.call("GET", session_path(options.target) + "/events?after=" + std::to_string(after) +
                                            "&limit=" + std::to_string(kPage));
        if (!page) return session.exit_code();
        auto& list = page->as_object().at("events").as_array();
        if (list.empty()) break;
        after = list.back().as_object().at("seq").to_number<std::int64_t>();
        const bool last = list.size() < kPage;
        for (auto& event : list) events.push_back(std::move(event));
        if (last) break;
    }
    auto open = open_requests(events);
    if (!options.tool_call.empty())
        std::erase_if(open, [&](const json::object& request) {
            const auto* call = request.if_contains("toolCallId");
            return call == nullptr || !call->is_string() || call->as_string() != options.tool_call;
        });
    if (open.empty())
        return session.fail("session " + options.target + " has no open permission request" +
                                (options.tool_call.empty() ? std::string() : " for tool call " + options.tool_call) +
                                "; `handler session events " + options.target + "` shows its requests and answers",
                            kExitRefused);
    if (open.size() > 1) {
        std::string list;
        for (const auto& request : open)
            list += "\n  " + printable(request.at("toolCallId").as_string()) + "  " + describe_request(request);
        return session.fail("session " + options.target + " has several open requests; name one with --tool-call:" + list,
                            kExitUsage);
    }
    auto option = choose_option(open.front(), options.answer);
    if (!option) return session.fail(option.error().message, kExitUsage);
    const std::string call(open.front().at("toolCallId").as_string());
    if (std::string failed = send_answer(session.context(), options.target, call, *option); !failed.empty())
        return session.fail(failed, kExitRefused);
    session.context().out << "Answered tool call " << printable(call) << " with " << printable(*option) << ".\n";
    return kExitOk;
}

int command_session_events(Session& session, const Options& options) {
    return page_through(session, options, "/events", "events", "seq", [&](json::array& events) {
        for (auto& event : events) {
            auto& object = event.as_object();
            const auto* payload = object.if_contains("payload");
            object["summary"] = event_summary(object.at("kind").as_string(),
                                              payload != nullptr && payload->is_object() ? payload->as_object()
                                                                                         : json::object());
        }
        print_table(session.context().out, events, {"seq", "kind", "summary"});
    });
}

int command_network_learned(Session& session, const Options& options) {
    auto answer = session.call("GET", session_path(options.target) + "/learned");
    if (!answer) return session.exit_code();
    auto& learned = answer->as_object().at("learned").as_array();
    if (options.json_output) {
        print_json(session.context().out, learned);
        return kExitOk;
    }
    for (auto& host : learned)
        show_times(host.as_object(), {"first_seen", "last_seen"}, session.clock(),
                   session.time_zone(), TimeStyle::age);
    print_table(session.context().out, learned, {"host", "port", "count", "first_seen", "last_seen"});
    return kExitOk;
}

// `network learn SESSION [--minutes N] | --stop`: the session's own mode, at once.
int command_network_learn(Session& session, const Options& options) {
    if (options.stop_learning && options.minutes)
        return session.fail("give --minutes or --stop, not both", kExitUsage);
    json::object body{{"mode", options.stop_learning ? "filtered" : "learn"}};
    if (options.minutes) body["minutes"] = *options.minutes;
    const json::value request = body;
    auto answer = session.call("POST", session_path(options.target) + "/network", &request);
    if (!answer) return session.exit_code();
    auto& record = answer->as_object();
    if (options.json_output) {
        print_json(session.context().out, record);
        return kExitOk;
    }
    auto& out = session.context().out;
    if (options.stop_learning) {
        out << "session " << options.target << " is filtered again; `handler network learned " << options.target
            << "` lists what it learned\n";
        return kExitOk;
    }
    json::object times{{"learn_until", record.at("learn_until")}};
    show_times(times, {"learn_until"}, session.clock(), session.time_zone(), TimeStyle::local_time);
    out << "session " << options.target << " learns until "
        << display(times.at("learn_until"))
        << ": every public host passes and each one filtered mode would refuse is recorded "
           "(`handler network learned "
        << options.target << "`)\n";
    return kExitOk;
}

// `session changes SESSION [--diff]`: the answer of GET .../changes, which handlerd
// computes in a read-only container. Paths and diffs are the project's bytes, which the
// agent wrote: everything goes through printable() so no escape sequence of theirs
// reaches the terminal, with lines kept in diffs.
int command_session_changes(Session& session, const Options& options) {
    auto answer = session.call("GET", session_path(options.target) + "/changes");
    if (!answer) return session.exit_code();
    auto& changes = answer->as_object();
    auto& out = session.context().out;
    if (options.json_output) {
        print_json(out, changes);
        return kExitOk;
    }
    const auto& files = changes.at("files").as_array();
    if (changes.at("git").as_bool()) {
        const auto& head = changes.at("head");
        out << "against git HEAD "
            << (head.is_string() ? printable(std::string_view(head.as_string()).substr(0, 12))
                                 : std::string("(none: the repository has no commit yet)"))
            << '\n';
    } else {
        out << "not a git repository: the files modified since the session started\n";
    }
    json::array rows;
    for (const auto& file_value : files) {
        const auto& file = file_value.as_object();
        std::string lines;
        if (file.at("binary").as_bool()) {
            lines = "binary";
        } else if (file.at("added").is_int64() && file.at("removed").is_int64()) {
            lines = "+" + std::to_string(file.at("added").as_int64()) + " -" +
                    std::to_string(file.at("removed").as_int64());
        } else if (const auto* size = file.if_contains("size"); size != nullptr && size->is_int64()) {
            lines = std::to_string(size->as_int64()) + " bytes";
        }
        rows.push_back(json::object{{"status", file.at("status")}, {"lines", lines}, {"path", file.at("path")}});
    }
    if (rows.empty()) {
        out << "no changes\n";
    } else {
        print_table(out, rows, {"status", "lines", "path"});
    }
    for (const auto& note : changes.at("notes").as_array()) out << "note: " << display(note) << '\n';
    if (changes.at("truncated").as_bool() && changes.at("notes").as_array().empty())
        out << "note: the list is truncated\n";
    if (!options.show_diff) return kExitOk;
    for (const auto& file_value : files) {
        const auto& file = file_value.as_object();
        if (const auto* diff = file.if_contains("diff"); diff != nullptr && diff->is_string()) {
            std::string text = printable(diff->as_string(), true);
            if (!text.empty() && text.back() != '\n') text.push_back('\n');
            out << '\n' << text;
        } else if (const auto* summary = file.if_contains("summary"); summary != nullptr && summary->is_string()) {
            out << '\n' << display(file.at("path")) << ": " << display(*summary) << '\n';
        }
    }
    return kExitOk;
}

} // namespace handler::cli
