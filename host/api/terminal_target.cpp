#include "api/terminal_target.hpp"

#include <boost/url/parse.hpp>

#include <charconv>
#include <vector>

namespace handler::api {

std::optional<Result<TerminalTarget>> parse_terminal_target(std::string_view target) {
    auto url = boost::urls::parse_origin_form(target);
    if (!url) return std::nullopt;
    std::vector<std::string> segments;
    for (auto segment : url->segments()) segments.emplace_back(segment);
    if (segments.size() != 5 || segments[0] != "api" || segments[1] != "v1" ||
        segments[2] != "sessions" || segments[4] != "terminal" || segments[3].empty())
        return std::nullopt;
    TerminalTarget parsed;
    parsed.session_id = segments[3];
    for (auto param : url->params()) {
        const std::string key(param.key);
        const std::string value(param.value);
        if (key == "from") {
            std::uint64_t from = 0;
            auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), from);
            if (error != std::errc() || end != value.data() + value.size() || value.empty())
                return Result<TerminalTarget>(make_error(
                    ErrorCode::invalid_argument,
                    "query parameter 'from' must be a byte offset (a whole number), got '" + value + "'"));
            parsed.options.from = from;
        } else if (key == "after") {
            std::int64_t after = 0;
            auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), after);
            if (error != std::errc() || end != value.data() + value.size() || value.empty() || after < 0)
                return Result<TerminalTarget>(make_error(
                    ErrorCode::invalid_argument,
                    "query parameter 'after' must be an event's seq (a whole number), got '" + value + "'"));
            parsed.options.events_after = after;
        } else if (key == "read_only" || key == "events" || key == "output") {
            if (value != "0" && value != "1" && value != "true" && value != "false")
                return Result<TerminalTarget>(make_error(
                    ErrorCode::invalid_argument,
                    "query parameter '" + key + "' must be 1 or 0, got '" + value + "'"));
            const bool on = value == "1" || value == "true";
            if (key == "events") parsed.options.events = on;
            else if (key == "output") parsed.options.output = on;
            else parsed.options.read_only = on;
        } else {
            return Result<TerminalTarget>(make_error(
                ErrorCode::invalid_argument, "unknown query parameter '" + key +
                                                 "' (the terminal takes from, read_only, events, after and output)"));
        }
    }
    return Result<TerminalTarget>(std::move(parsed));
}

} // namespace handler::api
