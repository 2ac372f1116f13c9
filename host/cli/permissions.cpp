#include "cli/permissions.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>

namespace handler::cli {
namespace json = boost::json;

namespace {

std::string text_at(const json::object& object, std::string_view field) {
    const auto* value = object.if_contains(field);
    return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

const json::array& options_of(const json::object& request) {
    static const json::array none;
    const auto* options = request.if_contains("options");
    return options != nullptr && options->is_array() ? options->as_array() : none;
}

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

} // namespace

std::vector<json::object> open_requests(const json::array& events) {
    std::vector<json::object> open;
    for (const auto& event : events) {
        const auto* record = event.if_object();
        if (record == nullptr) continue;
        const std::string kind = text_at(*record, "kind");
        const auto* payload = record->if_contains("payload");
        if (payload == nullptr || !payload->is_object()) continue;
        const std::string call = text_at(payload->as_object(), "toolCallId");
        if (call.empty()) continue; // nothing could answer it
        std::erase_if(open, [&](const json::object& request) { return text_at(request, "toolCallId") == call; });
        if (kind == "permission_request") open.push_back(payload->as_object());
    }
    return open;
}

Result<std::string> choose_option(const json::object& request, std::string_view word) {
    const json::array& options = options_of(request);
    static const std::map<std::string_view, std::string_view> kinds = {
        {"allow", "allow_once"}, {"yes", "allow_once"},      {"always", "allow_always"},
        {"reject", "reject_once"}, {"deny", "reject_once"}, {"no", "reject_once"}};
    std::size_t number = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), number);
    const bool numbered = error == std::errc() && end == word.data() + word.size();
    const auto kind = kinds.find(word);
    std::string offered;
    for (std::size_t i = 0; i < options.size(); ++i) {
        const auto* option = options[i].if_object();
        if (option == nullptr) continue;
        const std::string id = text_at(*option, "optionId");
        if (id == word || (numbered && number == i + 1) ||
            (kind != kinds.end() && text_at(*option, "kind") == kind->second))
            return id;
        offered += (offered.empty() ? "" : ", ") + id;
    }
    return make_error(ErrorCode::invalid_argument,
                      "'" + std::string(word) + "' is not an answer to this request; it offers " +
                          (offered.empty() ? std::string("nothing") : offered) +
                          " (or allow, always, reject, or an option's number)");
}

std::string describe_request(const json::object& request) {
    std::string title = text_at(request, "title");
    if (title.empty()) title = "tool call " + text_at(request, "toolCallId");
    std::string choices;
    const json::array& options = options_of(request);
    for (std::size_t i = 0; i < options.size(); ++i)
        if (const auto* option = options[i].if_object())
            choices += (choices.empty() ? "" : ", ") + std::to_string(i + 1) + " " + text_at(*option, "name");
    return printable(title + ": " + choices);
}

TerminalAsker::TerminalAsker(int input_fd, std::ostream& err, Send send, Lines lines)
    : input_fd_(input_fd), err_(err), send_(std::move(send)), lines_(std::move(lines)), thread_([this] { run(); }) {}

TerminalAsker::~TerminalAsker() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void TerminalAsker::asked(const json::object& request) {
    {
        const std::lock_guard lock(mutex_);
        waiting_.push_back(request);
    }
    wake_.notify_all();
}

void TerminalAsker::answered(const std::string& tool_call) {
    const std::lock_guard lock(mutex_);
    answered_.push_back(tool_call);
    std::erase_if(waiting_, [&](const json::object& request) { return text_at(request, "toolCallId") == tool_call; });
}

void TerminalAsker::run() {
    for (;;) {
        json::object request;
        {
            std::unique_lock lock(mutex_);
            // Without Lines the input is only read for answers; with them, it is read
            // all the time, a question taking the next line.
            const bool reading = lines_.line && !input_ended_;
            if (!reading) wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
            if (stopping_) return;
            if (!waiting_.empty()) {
                request = std::move(waiting_.front());
                waiting_.pop_front();
            }
        }
        if (!request.empty()) {
            ask(request);
        } else if (!read_free_line()) {
            input_ended_ = true;
            if (lines_.end) lines_.end();
        }
    }
}

void TerminalAsker::ask(const json::object& request) {
    const std::string call = text_at(request, "toolCallId");
    for (;;) {
        err_ << "\nhandler: the agent asks before it acts. " << describe_request(request)
             << "\n  answer (number, allow, always or reject): " << std::flush;
        const std::string line = trimmed(read_line(call));
        if (line.empty()) return; // answered elsewhere, or we are stopping
        auto option = choose_option(request, line);
        if (!option) {
            err_ << "handler: " << option.error().message << '\n';
            continue;
        }
        if (std::string failed = send_(call, *option); !failed.empty()) err_ << "handler: " << failed << '\n';
        return;
    }
}

bool TerminalAsker::read_free_line() {
    pollfd fd{input_fd_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, 200);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) return true;
    char buffer[4096];
    const ssize_t n = ::read(input_fd_, buffer, sizeof buffer);
    if (n <= 0) {
        if (!trimmed(partial_).empty()) lines_.line(std::exchange(partial_, std::string()));
        return false;
    }
    partial_.append(buffer, static_cast<std::size_t>(n));
    for (auto end = partial_.find('\n'); end != std::string::npos; end = partial_.find('\n')) {
        std::string line = partial_.substr(0, end);
        partial_.erase(0, end + 1);
        if (!trimmed(line).empty()) lines_.line(line);
    }
    return true;
}

std::string TerminalAsker::read_line(const std::string& tool_call) {
    std::string line = std::exchange(partial_, std::string()); // begun before the question came
    for (;;) {
        {
            const std::lock_guard lock(mutex_);
            if (stopping_) return {};
            if (std::find(answered_.begin(), answered_.end(), tool_call) != answered_.end()) {
                err_ << "\nhandler: answered from another client\n" << std::flush;
                return {};
            }
        }
        pollfd fd{input_fd_, POLLIN, 0};
        const int ready = ::poll(&fd, 1, 200);
        if (ready < 0 && errno != EINTR) return {};
        if (ready <= 0) continue;
        char byte = 0;
        const ssize_t n = ::read(input_fd_, &byte, 1);
        if (n <= 0) return {}; // the terminal is gone: another client may still answer
        if (byte == '\n') {
            if (!trimmed(line).empty()) return line;
            line.clear();
            continue;
        }
        line += byte;
    }
}

} // namespace handler::cli
