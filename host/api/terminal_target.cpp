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
        } else if (key == "read_only" || key == "events") {
            if (value != "0" && value != "1" && value != "true" && value != "false")
                return Result<TerminalTarget>(make_error(
                    ErrorCode::invalid_argument,
                    "query parameter '" + key + "' must be 1 or 0, got '" + value + "'"));
            (key == "events" ? parsed.options.events : parsed.options.read_only) = value == "1" || value == "true";
        } else {
            return Result<TerminalTarget>(make_error(
                ErrorCode::invalid_argument,
                "unknown query parameter '" + key + "' (the terminal takes from, read_only and events)"));
        }
    }
    return Result<TerminalTarget>(std::move(parsed));
}

} // namespace handler::api
