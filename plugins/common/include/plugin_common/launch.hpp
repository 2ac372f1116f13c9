// Pieces of a harness's command line that more than one harness needs.
#pragma once

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace handler::plugin_common {

// The start of an argv that runs `program` (with the arguments that follow) with its
// stdin on /dev/null. For headless runs of harnesses that read all of a stdin that is not
// a terminal before they start (Codex, Vibe): a headless session's stdin is its caller's,
// which for a run started detached or from the web UI never ends, so the run would wait
// forever. `$0` is the program, so nothing from the prompt is ever read by the shell.
inline std::vector<std::string> without_stdin(std::string_view program) {
    return {"sh", "-c", "exec \"$0\" \"$@\" </dev/null", std::string(program)};
}

// The start of an argv that writes `contents` to $HOME/`path` (its folders made) and then
// runs `program` with the arguments that follow, its stdin on /dev/null when
// `close_stdin`. For a harness that reads a setting only from a file in its home (pi's
// models.json): a session's home is new each time. `path` is the plugin's own constant
// (no quotes, no `$`); the contents pass as an argument, never through the shell's parser.
inline std::vector<std::string> with_home_file(std::string_view path, std::string_view contents,
                                               std::string_view program, bool close_stdin) {
    const std::string file = "\"$HOME/" + std::string(path) + "\"";
    std::string script = "mkdir -p \"$(dirname " + file + ")\" && printf %s \"$1\" > " + file +
                         " && shift && exec \"$0\" \"$@\"";
    if (close_stdin) script += " </dev/null";
    return {"sh", "-c", script, std::string(program), std::string(contents)};
}

// `level` if it is one of the harness's thinking levels (`words`); otherwise throws
// std::invalid_argument naming them, for the person who asked.
inline std::string_view thinking_level(std::string_view agent, std::string_view level,
                                       std::initializer_list<std::string_view> words) {
    std::string list;
    for (std::string_view word : words) {
        if (word == level) return level;
        list += (list.empty() ? "" : ", ") + std::string(word);
    }
    throw std::invalid_argument(std::string(agent) + " has no thinking level '" + std::string(level) +
                                "'; its levels are " + list);
}

// Whether `text` has a UUID's shape (8-4-4-4-12 hex digits; `lower_case_only`: no A-F):
// the harnesses' own session and thread ids. Such an id comes back from the container's
// output and goes onto a command line or into a request to resume, so nothing else may.
inline bool is_uuid(std::string_view text, bool lower_case_only = false) {
    if (text.size() != 36) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                         (!lower_case_only && c >= 'A' && c <= 'F');
        if (i == 8 || i == 13 || i == 18 || i == 23 ? c != '-' : !hex) return false;
    }
    return true;
}

} // namespace handler::plugin_common
