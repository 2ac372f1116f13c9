#include "plugin_common/json_lines.hpp"

#include "plugin_common/json_access.hpp"
#include "plugin_common/json_line.hpp"

#include <exception>
#include <optional>
#include <utility>

namespace handler::plugin_common {

std::vector<Event> JsonLinesParser::feed(std::string_view bytes) {
    std::vector<Event> out;
    lines_.feed(
        bytes,
        [&](std::string_view line) {
            std::vector<Event> events = parse_line(line);
            for (Event& event : events) out.push_back(std::move(event));
        },
        [&](std::size_t length) {
            out.push_back(error(agent_ + " printed a line of " + std::to_string(length) + " bytes, more than the " +
                                std::to_string(lines_.max_line()) +
                                " this parser reads, so its events are missing (the session's raw output has it)"));
        });
    return out;
}

std::vector<Event> JsonLinesParser::parse_line(std::string_view line) {
    std::vector<Event> out;
    const std::optional<boost::json::value> value = parse_json_line(line);
    if (!value || !value->is_object()) return out;
    try {
        on_object(value->get_object(), out);
    } catch (const std::exception&) {
        out.clear();
    }
    return out;
}

std::string display_path(std::string_view path, std::string_view cwd) {
    while (cwd.size() > 1 && cwd.back() == '/') cwd.remove_suffix(1);
    if (cwd.empty() || cwd == "/") return std::string(path);
    if (path == cwd) return ".";
    if (path.size() > cwd.size() && path.substr(0, cwd.size()) == cwd && path[cwd.size()] == '/')
        return std::string(path.substr(cwd.size() + 1));
    return std::string(path);
}

std::string first_line_of(std::string_view text, std::size_t max_bytes) {
    const std::size_t end = text.find('\n');
    std::string line = truncate_utf8(text.substr(0, end), max_bytes);
    if (end != std::string_view::npos && text.find_first_not_of(" \t\r\n", end) != std::string_view::npos)
        line += " \xe2\x80\xa6";
    return line;
}

} // namespace handler::plugin_common
