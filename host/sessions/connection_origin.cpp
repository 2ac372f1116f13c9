#include "sessions/connection_origin.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace handler::sessions {
namespace json = boost::json;

namespace {

// The container's bytes as valid UTF-8 (the API serves JSON): each byte that does not
// start a well-formed sequence becomes U+FFFD.
std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        std::uint32_t code_point = 0;
        if (byte < 0x80) length = 1, code_point = byte;
        else if ((byte & 0xe0) == 0xc0) length = 2, code_point = byte & 0x1f;
        else if ((byte & 0xf0) == 0xe0) length = 3, code_point = byte & 0x0f;
        else if ((byte & 0xf8) == 0xf0) length = 4, code_point = byte & 0x07;
        bool good = length != 0 && i + length <= text.size();
        for (std::size_t k = 1; good && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            good = (next & 0xc0) == 0x80;
            code_point = (code_point << 6) | (next & 0x3f);
        }
        good = good && !(length == 2 && code_point < 0x80) && !(length == 3 && code_point < 0x800) &&
               !(length == 4 && (code_point < 0x10000 || code_point > 0x10ffff)) &&
               !(code_point >= 0xd800 && code_point <= 0xdfff);
        if (good) {
            out.append(text.substr(i, length));
            i += length;
        } else {
            out.append("\xef\xbf\xbd");
            ++i;
        }
    }
    return out;
}

std::vector<std::string_view> arguments_of(std::string_view command) {
    std::vector<std::string_view> arguments;
    while (true) {
        const auto end = command.find('\0');
        arguments.push_back(command.substr(0, end));
        if (end == std::string_view::npos) break;
        command.remove_prefix(end + 1);
    }
    return arguments;
}

std::string joined(const std::vector<std::string_view>& arguments) {
    std::string out;
    for (const auto& argument : arguments) {
        if (!out.empty()) out.push_back(' ');
        out.append(argument);
    }
    return out;
}

std::string basename_of(std::string_view path) {
    const auto slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// A shell's script argument: `-c SCRIPT`, or -c among other single-letter flags (`-lc`,
// `-ec`) right before it; `bash -c -l SCRIPT` (flags after -c) too.
std::optional<std::string_view> shell_script(const std::vector<std::string_view>& arguments) {
    if (arguments.empty()) return std::nullopt;
    const std::string name = basename_of(arguments.front());
    if (name != "sh" && name != "bash" && name != "dash" && name != "zsh" && name != "ash" && name != "ksh")
        return std::nullopt;
    bool seen_c = false;
    for (std::size_t i = 1; i < arguments.size(); ++i) {
        const std::string_view argument = arguments[i];
        if (argument.size() >= 2 && argument[0] == '-' && argument[1] != '-') {
            if (argument.find('c') != std::string_view::npos) seen_c = true;
            continue;
        }
        if (seen_c) return argument;
        return std::nullopt;
    }
    return std::nullopt;
}

// Whether `part` occurs in `whole` as whole words: at each end the text ends, or a space,
// quote or shell operator sits. So the command `ls` is not found in `--tools`.
bool contains_words(std::string_view whole, std::string_view part) {
    constexpr std::string_view kBoundary = " \t\n'\"`;&|()<>=";
    if (part.empty()) return false;
    for (std::size_t at = whole.find(part); at != std::string_view::npos; at = whole.find(part, at + 1)) {
        const bool before = at == 0 || kBoundary.find(whole[at - 1]) != std::string_view::npos;
        const std::size_t end = at + part.size();
        const bool after = end == whole.size() || kBoundary.find(whole[end]) != std::string_view::npos;
        if (before && after) return true;
    }
    return false;
}

std::string command_of(const json::object& input) {
    const json::value* command = input.if_contains("command");
    if (command == nullptr) return {};
    if (command->is_string()) return std::string(command->get_string());
    std::string out;
    if (const json::array* parts = command->if_array())
        for (const json::value& part : *parts) {
            if (!part.is_string()) return {};
            if (!out.empty()) out.push_back(' ');
            out.append(part.get_string());
        }
    return out;
}

std::string note_of(shim::OwnerStatus status) {
    switch (status) {
    case shim::OwnerStatus::found: return {};
    case shim::OwnerStatus::no_connection:
        return "unknown: the connection had closed before the shim looked (a short request, or the program exited)";
    case shim::OwnerStatus::no_process:
        return "unknown: no process in the container holds the connection any more (it exited, or passed the "
               "socket on)";
    case shim::OwnerStatus::unreadable: return "unknown: the shim could not read the container's /proc";
    }
    return "unknown";
}

} // namespace

void OpenToolCalls::observe(std::string_view kind, std::string_view payload) {
    if (kind != "tool_call" && kind != "tool_call_update" && kind != "result") return;
    if (kind == "result") {
        // The turn is over: whatever it ran has been reported (a background process it
        // left behind is then explained by no tool call, which is what it is).
        open_.clear();
        return;
    }
    boost::system::error_code error;
    const json::value parsed = json::parse(payload, error);
    const json::object* object = error ? nullptr : parsed.if_object();
    const json::value* id = object ? object->if_contains("toolCallId") : nullptr;
    if (id == nullptr || !id->is_string() || id->get_string().empty()) return;
    const std::string_view call_id = id->get_string();
    if (kind == "tool_call_update") {
        const json::value* status = object->if_contains("status");
        if (status != nullptr && status->is_string() &&
            (status->get_string() == "completed" || status->get_string() == "failed"))
            if (auto found = open_.find(call_id); found != open_.end()) open_.erase(found);
        return;
    }
    const json::value* call_kind = object->if_contains("kind");
    const json::value* input = object->if_contains("rawInput");
    if (call_kind == nullptr || !call_kind->is_string() || call_kind->get_string() != "execute" || input == nullptr ||
        !input->is_object())
        return;
    std::string command = command_of(input->get_object());
    if (command.empty() || command.size() > kMaxCommandBytes) return;
    if (open_.size() >= kMaxOpen && !open_.contains(call_id)) {
        // The oldest goes: a harness that never reports its calls' ends fills nothing.
        auto oldest = std::min_element(open_.begin(), open_.end(), [](const auto& a, const auto& b) {
            return a.second.order < b.second.order;
        });
        open_.erase(oldest);
    }
    Call call;
    call.id = std::string(call_id);
    if (const json::value* title = object->if_contains("title"); title != nullptr && title->is_string())
        call.title = std::string(title->get_string());
    call.command = std::move(command);
    call.order = ++next_order_;
    open_[call.id] = std::move(call);
}

std::optional<OpenToolCalls::Call> OpenToolCalls::match(const std::vector<shim::OwnerProcess>& chain) const {
    for (const auto& process : chain) {
        const auto arguments = arguments_of(process.command);
        const std::string line = joined(arguments);
        const auto script = shell_script(arguments);
        const Call* best = nullptr;
        std::size_t best_gap = 0;
        for (const auto& [id, call] : open_) {
            std::optional<std::size_t> gap; // how much the two differ: less is closer
            if (contains_words(line, call.command)) gap = line.size() - call.command.size();
            else if (script && contains_words(call.command, *script))
                gap = call.command.size() - script->size();
            if (!gap) continue;
            if (best == nullptr || *gap < best_gap || (*gap == best_gap && call.order > best->order)) {
                best = &call;
                best_gap = *gap;
            }
        }
        if (best != nullptr) return *best;
    }
    return std::nullopt;
}

std::string display_command(const shim::OwnerProcess& process) {
    std::string line = joined(arguments_of(process.command));
    if (process.truncated) line += "…";
    return valid_utf8(line);
}

store::NetworkOrigin unknown_origin(const std::string& session_id, std::int64_t connection, std::string why) {
    store::NetworkOrigin origin;
    origin.session_id = session_id;
    origin.connection = connection;
    origin.parents = "[]";
    origin.note = std::move(why);
    return origin;
}

store::NetworkOrigin origin_of(const std::string& session_id, std::int64_t connection,
                               const shim::OwnerAnswer& answer, const OpenToolCalls& calls, bool events) {
    if (answer.status != shim::OwnerStatus::found || answer.processes.empty())
        return unknown_origin(session_id, connection, note_of(answer.status));
    store::NetworkOrigin origin;
    origin.session_id = session_id;
    origin.connection = connection;
    origin.pid = answer.processes.front().pid;
    origin.command = display_command(answer.processes.front());
    json::array parents;
    for (std::size_t i = 1; i < answer.processes.size(); ++i)
        parents.push_back(json::object{{"pid", answer.processes[i].pid},
                                       {"command", display_command(answer.processes[i])}});
    origin.parents = json::serialize(parents);
    if (auto call = calls.match(answer.processes)) {
        origin.tool_call_id = valid_utf8(call->id);
        origin.tool_call_title = valid_utf8(call->title);
    } else {
        origin.note = events ? "no tool call: the harness itself, or a process no running tool call started"
                             : "no tool call known: this session reports no tool calls (a terminal session, or a "
                               "harness without events)";
    }
    return origin;
}

} // namespace handler::sessions
