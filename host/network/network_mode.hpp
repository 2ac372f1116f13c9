// The network mode, one type for the store, the API, the policy and the sessions
// (docs/network.md, "Modes"). An agent holds none, filtered or open; learn is a mode a
// session is started in (`handler run --network learn`), never an agent's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::network {

// Zero is not a value, so a zeroed struct reads as invalid (STYLE.md).
enum class Mode {
    none = 1, // only the harness's model-provider hosts
    filtered, // those plus the allow-list
    open,     // anything public
    learn,    // open until learn_until, recording what filtered would have refused
};

// Who holds the mode, which decides what it may be.
enum class ModeHolder { agent = 1, session };

std::string_view to_string(Mode mode);
bool may_hold(ModeHolder holder, Mode mode);
// The mode named `text` when `holder` may hold it.
std::optional<Mode> parse_mode(std::string_view text, ModeHolder holder = ModeHolder::session);
// The words `holder` may use, in order ("none", "filtered", "open"[, "learn"]).
std::vector<std::string> mode_names(ModeHolder holder);
// Them quoted and joined for a message: "'none', 'filtered' or 'open'".
std::string mode_list(ModeHolder holder);

} // namespace handler::network
