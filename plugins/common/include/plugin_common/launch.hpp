// Pieces of a harness's command line that more than one harness needs.
#pragma once

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

} // namespace handler::plugin_common
