// pi's headless output (`pi -p --mode json`, one JSON object per line: the session
// header, then agent, turn, message and tool_execution events) turned into Handler's
// session events. Kept apart from the plugin's entry point so the unit tests drive it.
#pragma once

#include <plugin_common/events.hpp>
#include <plugin_common/json_lines.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace handler::pi {

using plugin_common::Event;

class JsonModeParser final : public plugin_common::JsonLinesParser {
public:
    JsonModeParser() : JsonLinesParser("pi") {}
    explicit JsonModeParser(std::size_t max_line) : JsonLinesParser("pi", max_line) {}

private:
    void on_object(const boost::json::object& message, std::vector<Event>& out) override;
    void on_message_start(const boost::json::object& message, std::vector<Event>& out);
    void on_message_end(const boost::json::object& message, std::vector<Event>& out);
    void announce(std::string_view id, std::string_view name, const boost::json::value* arguments,
                  std::vector<Event>& out);
    void on_agent_end(std::vector<Event>& out);

    std::string cwd_;                 // from the session header: titles name files relative to it
    std::string model_;               // provider/model last reported
    std::set<std::string> announced_; // tool calls already shown
    // The last assistant message: its text is the answer, its stop reason the outcome.
    std::string answer_;
    std::string stop_reason_;
    std::string error_message_;
    bool answered_ = false;
    // Over the run: what the model calls cost (pi prices them) and how many there were.
    double cost_usd_ = 0;
    bool priced_ = false;
    std::int64_t model_calls_ = 0;
};

// What one of pi's tool calls is about, for a person ("write hello.txt", "bash: ls").
std::string tool_title(std::string_view name, const boost::json::object& arguments, std::string_view cwd);
// ACP's ToolKind for one of pi's tools.
std::string_view tool_kind(std::string_view name);

} // namespace handler::pi
