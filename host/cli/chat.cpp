// `handler chat` and the conversation commands (docs/conversations.md): a conversation at
// the terminal, drawn from its events, with prompts typed in and the harness's questions
// asked in place; and `handler session prompt|cancel|resume` for scripts and other
// terminals. The terminal is one more client of the conversation: what other clients
// type shows here too.
#include "cli/chat.hpp"

#include "api/prompt_images.hpp"
#include "cli/output.hpp"
#include "cli/permissions.hpp"
#include "core/paths.hpp"
#include "sessions/turns.hpp"

#include <boost/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <set>

namespace handler::cli {
namespace json = boost::json;

namespace {

// The conversation as the person at the terminal reads it. Called on the attach loop's
// thread; the prompts it sent come from the input thread, hence the lock.
class ChatPrinter {
public:
    ChatPrinter(CliContext& context, bool json_lines) : context_(context), json_lines_(json_lines) {}

    void sent(const std::string& prompt_id) {
        const std::lock_guard lock(mutex_);
        mine_.insert(prompt_id);
    }

    // True when no turn runs and none waits.
    bool idle() {
        const std::lock_guard lock(mutex_);
        return !turns_.running() && turns_.queued().empty();
    }

    void event(const json::object& message) {
        const std::string kind = text_of(message, "kind");
        const auto* payload_value = message.if_contains("payload");
        if (payload_value == nullptr || !payload_value->is_object()) return;
        const json::object& payload = payload_value->as_object();
        bool mine = false;
        {
            const std::lock_guard lock(mutex_);
            turns_.observe(kind, json::serialize(payload));
            mine = mine_.contains(text_of(payload, "promptId"));
        }
        if (json_lines_) {
            json::object line = message;
            line.erase("type");
            return write(api::OutputStream::stdout_, json::serialize(line) + "\n");
        }
        // All of it may come from inside the container: printable() keeps escape
        // sequences from reaching the terminal.
        if (kind == "user_prompt" || kind == "prompt_queued") {
            const auto* content = payload.if_contains("content");
            const std::string text = (content && content->is_object() ? printable(text_of(content->as_object(), "text")) : "") +
                                     images_note(payload);
            if (kind == "prompt_queued")
                write(api::OutputStream::stderr_, std::string(mine ? "(queued until the turn ends: " : "(another client queued: ") + text + ")\n");
            else if (!mine || ::isatty(context_.input_fd) == 0)
                write(api::OutputStream::stdout_, std::string(mine ? "> " : "> (another client) ") + text + "\n");
            at_line_start_ = true;
        } else if (kind == "agent_message_chunk") {
            const auto* content = payload.if_contains("content");
            const std::string text = content && content->is_object() ? text_of(content->as_object(), "text") : "";
            if (text.empty()) return;
            write(api::OutputStream::stdout_, printable(text, true));
            at_line_start_ = text.back() == '\n';
        } else if (kind == "tool_call") {
            line_break();
            write(api::OutputStream::stdout_, "  * " + printable(text_of(payload, "title")) + "\n");
        } else if (kind == "tool_call_update" && text_of(payload, "status") == "failed") {
            line_break();
            write(api::OutputStream::stdout_, "  * " + printable(text_of(payload, "toolCallId")) + " failed\n");
        } else if (kind == "error") {
            line_break();
            write(api::OutputStream::stderr_, "handler: " + printable(text_of(payload, "message")) + "\n");
        } else if (kind == "prompt_withdrawn") {
            write(api::OutputStream::stderr_, "(a waiting prompt was withdrawn)\n");
        } else if (kind == "result") {
            line_break();
            if (text_of(payload, "stopReason") == "cancelled") write(api::OutputStream::stderr_, "(cancelled)\n");
            if (::isatty(context_.input_fd) != 0) write(api::OutputStream::stderr_, "\n");
        }
    }

private:
    void write(api::OutputStream stream, const std::string& text) { write_output(context_, stream, text); }
    void line_break() {
        if (!at_line_start_) write(api::OutputStream::stdout_, "\n");
        at_line_start_ = true;
    }

    CliContext& context_;
    const bool json_lines_;
    std::mutex mutex_;
    std::set<std::string> mine_;
    sessions::Turns turns_;
    bool at_line_start_ = true;
};

// POSTs `body` to `target`; the message to print when handlerd refused, empty when it took it.
std::string post(CliContext& context, const std::string& target, const json::value& body, json::value* answer) {
    auto client = context.connect();
    auto response = client->call("POST", target, json::serialize(body));
    if (!response) return response.error().message;
    boost::system::error_code error;
    json::value parsed = json::parse(response->body, error);
    if (response->status / 100 == 2) {
        if (answer != nullptr && !error) *answer = std::move(parsed);
        return {};
    }
    const auto* message = !error && parsed.is_object() ? parsed.as_object().if_contains("message") : nullptr;
    return message != nullptr && message->is_string() ? std::string(message->as_string())
                                                      : "handlerd answered " + std::to_string(response->status);
}

// The conversation to talk in: --session's (resumed when it has ended), or a new one.
std::optional<std::string> open_conversation(Session& session, const Options& options) {
    CliContext& context = session.context();
    if (!options.session_id.empty()) {
        auto record = session.call("GET", session_path(options.session_id));
        if (!record) return std::nullopt;
        const std::string state = text_of(record->as_object(), "state");
        if (state != "running" && state != "starting" && !session.call("POST", session_path(options.session_id) + "/resume"))
            return std::nullopt;
        return options.session_id;
    }
    json::object body = {{"directory", context.current_dir.string()}, {"conversation", true}};
    if (!options.target.empty()) body["name"] = options.target;
    if (options.session_network) body["network"] = *options.session_network;
    if (options.session_model) body["model"] = *options.session_model;
    if (options.session_thinking) body["thinking"] = *options.session_thinking;
    json::value value = body;
    auto created = session.call("POST", "/api/v1/sessions", &value);
    if (!created) return std::nullopt;
    return std::string(created->as_object().at("id").as_string());
}

} // namespace

int command_chat(Session& session, const Options& options) {
    CliContext& context = session.context();
    auto opened = open_conversation(session, options);
    if (!opened) return session.exit_code();
    const std::string id = *opened;
    const bool keyboard = context.input_fd >= 0 && ::isatty(context.input_fd) != 0;
    if (keyboard)
        context.err << "handler: conversation " << id << ". Type a prompt and press Enter; ctrl-d stops it "
                    << "(`handler session resume " << id << "` continues it), ctrl-c leaves it running.\n"
                    << std::flush;
    ChatPrinter printer(context, options.json_output);
    std::mutex ending_mutex;
    bool input_ended = false, stopping = false;
    // Once the input has ended and every prompt has had its turn, the conversation stops
    // (a script's prompts all run first); it can be resumed.
    const auto stop_when_done = [&] {
        {
            const std::lock_guard lock(ending_mutex);
            if (!input_ended || stopping || !printer.idle()) return;
            stopping = true;
        }
        if (std::string failed = post(context, session_path(id) + "/stop", json::object{}, nullptr); !failed.empty())
            context.err << "handler: " << failed << '\n';
    };
    TerminalAsker::Lines lines;
    lines.line = [&](const std::string& line) {
        json::value answer;
        if (std::string failed = post(context, session_path(id) + "/prompts", json::object{{"text", line}}, &answer);
            !failed.empty()) {
            context.err << "handler: " << failed << '\n' << std::flush;
            return;
        }
        if (answer.is_object()) printer.sent(text_of(answer.as_object(), "promptId"));
    };
    lines.end = [&] {
        {
            const std::lock_guard lock(ending_mutex);
            input_ended = true;
        }
        stop_when_done();
    };
    const int input_fd = context.input_fd >= 0 ? context.input_fd : -1;
    TerminalAsker asker(input_fd, context.err,
                        [&context, id](const std::string& call, const std::string& option) {
                            json::value body = {{"toolCallId", call}, {"optionId", option}};
                            return post(context, session_path(id) + "/answers", body, nullptr);
                        },
                        std::move(lines));
    api::client::TerminalHooks hooks;
    hooks.event = [&](const json::object& message) {
        printer.event(message);
        const std::string kind = text_of(message, "kind");
        const auto* payload = message.if_contains("payload");
        if (payload != nullptr && payload->is_object()) {
            if (kind == "permission_request") asker.asked(payload->as_object());
            if (kind == "permission_answer") asker.answered(text_of(payload->as_object(), "toolCallId"));
        }
        if (kind == "result") stop_when_done();
    };
    auto client = context.connect();
    auto end = client->attach(session_path(id) + "/terminal?events=1&output=0", hooks);
    if (!end) return session.fail(end.error().message, end.error().code == ErrorCode::unavailable ? kExitUnavailable : kExitRefused);
    if (end->how == api::client::TerminalEnd::How::ended && !end->reason.empty())
        return session.fail(end->reason);
    if (keyboard) context.err << "handler: conversation " << id << " stopped; `handler session resume " << id
                              << "` continues it.\n";
    return kExitOk;
}

int command_session_prompt(Session& session, const Options& options) {
    if (!options.prompt || (options.prompt->empty() && options.images.empty()))
        return session.fail("the prompt is empty", kExitUsage);
    json::object body{{"text", *options.prompt}};
    json::array images;
    for (const auto& file : options.images) {
        std::error_code unknown;
        if (std::filesystem::file_size(file, unknown) > api::kMaxImageBytes && !unknown)
            return session.fail(file + " is larger than " + std::to_string(api::kMaxImageBytes / (1024 * 1024)) +
                                    " MiB, the most a model API takes per image",
                                kExitUsage);
        auto bytes = read_file(file);
        if (!bytes) return session.fail(bytes.error().message, kExitUsage);
        auto image = api::image_of_file(*bytes, file);
        if (!image) return session.fail(image.error().message, kExitUsage);
        images.push_back(json::object{{"mimeType", image->mime_type}, {"data", std::move(image->data)}});
    }
    if (!images.empty()) body["images"] = std::move(images);
    json::value request = std::move(body);
    auto answer = session.call("POST", session_path(options.target) + "/prompts", &request);
    if (!answer) return session.exit_code();
    if (options.json_output) {
        print_json(session.context().out, *answer);
        return kExitOk;
    }
    const auto& fields = answer->as_object();
    const auto* queued = fields.if_contains("queued");
    session.context().out << "Prompt " << text_of(fields, "promptId")
                          << (queued != nullptr && queued->is_bool() && queued->as_bool()
                                  ? " waits for the running turn.\n"
                                  : " started a turn.\n");
    return kExitOk;
}

int command_session_cancel(Session& session, const Options& options) {
    if (!session.call("POST", session_path(options.target) + "/cancel")) return session.exit_code();
    session.context().out << "Cancelling the running turn of " << options.target << ".\n";
    return kExitOk;
}

int command_session_resume(Session& session, const Options& options) {
    if (!session.call("POST", session_path(options.target) + "/resume")) return session.exit_code();
    session.context().out << "Resuming conversation " << options.target << " in a new container ("
                          << "`handler chat --session " << options.target << "` talks in it).\n";
    return kExitOk;
}

} // namespace handler::cli
