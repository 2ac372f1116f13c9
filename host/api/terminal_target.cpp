#include "api/terminal_target.hpp"

#include "api/terminal_protocol.hpp"

#include <boost/url/parse.hpp>

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
        if (auto set = set_attach_option(parsed.options, key, value, OptionSource::query); !set)
            return Result<TerminalTarget>(set.take_error());
    }
    return Result<TerminalTarget>(std::move(parsed));
}

} // namespace handler::api
