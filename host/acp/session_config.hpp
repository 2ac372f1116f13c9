// A conversation's settings as ACP config options (and the legacy `modes`), built from
// what its harness says of itself (GET /api/v1/plugins: models, modes, thinking levels)
// and the values the conversation runs with. Pure: agent.* keeps the values and asks
// handlerd to change them.
//
//   model          category model:         the harness's declared models
//   mode           category mode:          the start modes (Locked down, Guarded, Open:
//                                          handlerd's network modes none, filtered, open)
//                                          and, grouped apart, the harness's own modes
//   thought_level  category thought_level: the harness's thinking levels
#pragma once

#include "core/result.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace handler::acp {

struct Choice {
    std::string id;
    std::string label;
};

// What a harness offers, from its "harness" object in GET /api/v1/plugins.
struct HarnessChoices {
    std::string harness;
    std::vector<Choice> models;
    std::vector<Choice> modes;
    std::vector<std::string> thinking_levels;
    std::vector<std::string> launch_modes;
    std::vector<std::string> credentials; // account kinds it runs on (empty: not declared)
};
HarnessChoices read_harness_choices(std::string_view harness_id, const boost::json::object& description);

// The values in use; empty: not known (the harness's own default).
struct Settings {
    std::string start_mode; // the session's network mode as a start mode (none, filtered, open)
    std::string model;
    std::string mode;
    std::string thought_level;
    // Config ids set to a value the conversation takes only when it is resumed.
    std::set<std::string> on_resume;
};

// The value a config option shows while nothing is known of it.
inline constexpr std::string_view kDefaultValue = "default";

boost::json::array config_options(const HarnessChoices& harness, const Settings& settings);
// The legacy SessionModeState: the same choices as the mode option.
boost::json::object legacy_modes(const HarnessChoices& harness, const Settings& settings);

// The start mode of a network mode ("learn" reads as Guarded, like "filtered").
std::string start_mode_of(std::string_view network_mode);
bool is_start_mode(std::string_view id);

struct Change {
    std::string setting; // handlerd's name: model, mode, thinking_level
    std::string value;
};
// session/set_config_option (or set_mode, with config id "mode") checked against the
// choices: what to ask handlerd for, or invalid_argument naming the values it takes. A
// model may be any name (the declared ones are suggestions, as everywhere in Handler).
Result<Change> change_for(const HarnessChoices& harness, std::string_view config_id, std::string_view value);
// Records a change that handlerd accepted into `settings`.
void apply_change(Settings& settings, std::string_view config_id, std::string_view value, bool on_resume);

} // namespace handler::acp
