// A harness's permission requests as the terminal meets them: which are still open, the
// option a person's word names, and the question asked at the terminal while a headless
// run goes on (docs/harnesses.md, "Permission requests").
#pragma once

#include "cli/output.hpp" // printable()

#include "core/result.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace handler::cli {

// The permission_request payloads among `events` (the API's event records, oldest first)
// that no permission_answer has closed; each has a string toolCallId.
std::vector<boost::json::object> open_requests(const boost::json::array& events);

// The optionId `word` names in `request`: an optionId itself, its number in the list
// (from 1), or one of allow / always / reject for the option of that kind. Otherwise an
// error listing what it offers.
Result<std::string> choose_option(const boost::json::object& request, std::string_view word);

// "Write hello.txt: 1 Allow, 2 Allow always, 3 Reject", on one line and without control
// characters: the title comes from inside the container, and a question is no place for
// an escape sequence the terminal would act on.
std::string describe_request(const boost::json::object& request);

// Asks the person at the terminal, on a thread of its own so the session's output and
// events keep flowing while they think; a request answered elsewhere meanwhile (the web
// UI, another terminal) is dropped from the question. `answer` sends (toolCallId,
// optionId) to handlerd and returns what to print when it could not.
class TerminalAsker {
public:
    using Send = std::function<std::string(const std::string& tool_call, const std::string& option)>;
    // What a conversation (`handler chat`) does with a line typed while no question is
    // open (a prompt), and with the end of the input.
    struct Lines {
        std::function<void(const std::string& line)> line;
        std::function<void()> end;
    };
    TerminalAsker(int input_fd, std::ostream& err, Send send, Lines lines = {});
    ~TerminalAsker();
    TerminalAsker(const TerminalAsker&) = delete;
    TerminalAsker& operator=(const TerminalAsker&) = delete;

    void asked(const boost::json::object& request);
    void answered(const std::string& tool_call);

private:
    void run();
    void ask(const boost::json::object& request);
    // A line typed at the terminal; empty when the question was withdrawn or we stop.
    std::string read_line(const std::string& tool_call);
    // One poll of the input while no question waits (Lines); false once it has ended.
    bool read_free_line();

    int input_fd_;
    std::ostream& err_;
    Send send_;
    Lines lines_;
    std::string partial_; // what was typed of the next line
    bool input_ended_ = false;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<boost::json::object> waiting_;
    std::vector<std::string> answered_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace handler::cli
