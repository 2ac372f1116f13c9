// One fuzz target per harness output parser (harnesses/*/), driven through its library
// the way tests/unit/harnesses drives it. The output comes from inside a container, and
// the parser runs in handlerd: an agent writes whatever it likes there.
//
// Input: the harness's stdout, line by line, with lines of ours between that stand for
// what handlerd does meanwhile (when the parser has that call):
//   @answer N        a client picks option N (or the option id N) of the last permission
//                    request the parser emitted
//   @prompt TEXT     a prompt
//   @cancel          a cancel of the running turn
//   @set NAME VALUE  a setting changed (model, mode, thinking_level)
//
// Properties: every event is of a known kind and has its kind's shape (event_contract.hpp);
// what the parser writes to the harness's stdin is whole JSON lines, so nothing the
// harness printed can add a line of its own there; stdout cut into pieces anywhere gives
// the same events and the same writes as stdout fed a line at a time; a call throws only
// what its header says (std::invalid_argument, or PluginError for a setting).
#pragma once

#include "core/utf8.hpp"
#include "fuzz/event_contract.hpp"
#include "fuzz/fuzz_support.hpp"

#include <plugin_common/events.hpp>
#include <plugin_common/sdk_parser.hpp>

#include <handler/plugin.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

namespace handler::fuzz {

template <class Parser>
class ParserRun {
public:
    // One step of the input: a line of stdout (as a whole, or cut into pieces), or one
    // of our lines.
    void stdout_line(std::string_view line, bool in_pieces) {
        if (!in_pieces) return take(parser_.feed(line));
        for (const auto piece : pieces_of(line)) take(parser_.feed(piece));
    }

    void ours(std::string_view raw) {
        // What handlerd passes on came to it as JSON (the API, ACP), so it is valid UTF-8.
        const std::string clean = with_valid_utf8(raw);
        const std::string_view line = clean;
        const auto space = line.find(' ');
        const std::string_view verb = line.substr(0, space);
        const std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
        try {
            if constexpr (requires(Parser p, std::string_view text) { p.answer(text, text); })
                if (verb == "@answer") return take(parser_.answer(last_request_, answer_for(rest)));
            if constexpr (requires(Parser p, std::string_view text) { p.prompt(text); })
                if (verb == "@prompt") return take(parser_.prompt(plugin_common::user_prompt(rest).json));
            if constexpr (requires(Parser p) { p.cancel(); })
                if (verb == "@cancel") return take(parser_.cancel());
            if constexpr (requires(Parser p, std::string_view text) { p.set(text, text); })
                if (verb == "@set") {
                    const auto split = rest.find(' ');
                    return take(parser_.set(rest.substr(0, split),
                                            split == std::string_view::npos ? std::string_view() : rest.substr(split + 1)));
                }
        } catch (const std::invalid_argument& refused) {
            log_ += "refused: " + std::string(refused.what()) + "\n";
        } catch (const handler::sdk::PluginError& refused) {
            log_ += "unsupported: " + std::string(refused.what()) + "\n";
        }
    }

    // Everything the parser emitted and wrote, in order, as one text to compare.
    const std::string& log() const { return log_; }

private:
    void take(const std::vector<plugin_common::Event>& events) {
        for (const auto& event : events) {
            check_event(event.kind, event.json);
            if (event.kind == HD_EVENT_PERMISSION_REQUEST) last_request_ = event.json;
            log_ += std::to_string(event.kind) + " " + event.json + "\n";
        }
        if constexpr (requires(Parser p) { p.take_reply(); }) {
            const plugin_common::Reply reply = parser_.take_reply();
            check(reply.input.empty() || reply.input.ends_with('\n'), "what goes to stdin ends its line", reply.input);
            std::string_view rest = reply.input;
            while (!rest.empty()) {
                const std::string_view line = rest.substr(0, rest.find('\n'));
                rest.remove_prefix(line.size() + 1);
                boost::system::error_code error;
                const auto value = boost::json::parse(line, error);
                check(!error && value.is_object(), "each line written to stdin is one JSON object", line);
            }
            if (!reply.input.empty() || reply.close) log_ += "stdin: " + reply.input + (reply.close ? "<closed>\n" : "\n");
        }
    }

    // {"optionId":...}: option N of the last request, or N itself when it is no number.
    std::string answer_for(std::string_view choice) const {
        std::string option(choice);
        std::size_t index = 0;
        const auto [end, error] = std::from_chars(choice.data(), choice.data() + choice.size(), index);
        boost::system::error_code parse_error;
        const auto request = boost::json::parse(last_request_, parse_error);
        if (error == std::errc() && end == choice.data() + choice.size() && !parse_error && request.is_object())
            if (const auto* options = request.as_object().if_contains("options"); options && options->is_array()) {
                const auto& list = options->as_array();
                if (!list.empty() && list[index % list.size()].is_object())
                    if (const auto* id = list[index % list.size()].as_object().if_contains("optionId"); id && id->is_string())
                        option = std::string(id->as_string());
            }
        return boost::json::serialize(boost::json::object{{"optionId", option}});
    }

    // Small, so that lines over the limit are reached too.
    static constexpr std::size_t kMaxLineBytes = 4096;

    Parser parser_{kMaxLineBytes};
    std::string last_request_;
    std::string log_;
};

template <class Parser>
int fuzz_harness_parser(const std::uint8_t* data, std::size_t size) {
    ParserRun<Parser> cut;
    ParserRun<Parser> whole;
    std::string_view input = as_text(data, size);
    while (!input.empty()) {
        const auto end = input.find('\n');
        const std::string_view line = input.substr(0, end == std::string_view::npos ? input.size() : end + 1);
        input.remove_prefix(line.size());
        if (line.starts_with('@')) {
            const std::string_view ours = line.substr(0, line.size() - (line.ends_with('\n') ? 1 : 0));
            cut.ours(ours);
            whole.ours(ours);
        } else {
            cut.stdout_line(line, true);
            whole.stdout_line(line, false);
        }
    }
    check(cut.log() == whole.log(), "stdout cut anywhere gives the same events and writes",
          "cut:\n" + cut.log() + "\nwhole:\n" + whole.log());
    return 0;
}

} // namespace handler::fuzz
