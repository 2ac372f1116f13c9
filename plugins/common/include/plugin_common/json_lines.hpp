// JsonLinesParser: the part every harness's JSON-lines output parser shares. Stdout
// arrives in pieces of any size; this cuts it into lines (LineBuffer), parses each
// (parse_json_line) and hands every JSON object to the harness's on_object. Lines that are
// not JSON objects (a harness's stray log line) yield nothing: handlerd keeps the raw
// output anyway.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/line_buffer.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace handler::plugin_common {

class JsonLinesParser {
public:
    // `agent` names the harness in error events ("Codex printed a line of …").
    explicit JsonLinesParser(std::string agent, std::size_t max_line = LineBuffer::kDefaultMaxLine)
        : agent_(std::move(agent)), lines_(max_line) {}
    virtual ~JsonLinesParser() = default;
    JsonLinesParser(const JsonLinesParser&) = delete;
    JsonLinesParser& operator=(const JsonLinesParser&) = delete;

    // The events completed by this piece of stdout, in order. A piece may split a line or
    // a UTF-8 sequence anywhere; what is incomplete waits for the next piece.
    std::vector<Event> feed(std::string_view bytes);

    // The events of one complete line. One odd line must not cost the events of the lines
    // after it (nor escape as a failed feed call): if on_object throws, that line's
    // half-built events are dropped and the parser goes on.
    std::vector<Event> parse_line(std::string_view line);

protected:
    virtual void on_object(const boost::json::object& message, std::vector<Event>& out) = 0;

private:
    std::string agent_;
    LineBuffer lines_;
};

} // namespace handler::plugin_common
