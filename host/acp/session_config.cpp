#include "acp/session_config.hpp"

#include <algorithm>

namespace handler::acp {
namespace json = boost::json;

namespace {

struct StartMode {
    const char* id;
    const char* name;
    const char* description;
};
// Handler's start modes are the session's network modes seen from the harness
// (docs/harnesses.md, "Start modes"); the ids are handlerd's words for them.
constexpr StartMode kStartModes[] = {
    {"none", "Locked down", "No network but the model's host; the agent asks before acting"},
    {"filtered", "Guarded", "The hosts the agent and project allow; the harness's usual permissions"},
    {"open", "Open", "Any host; the agent asks nothing (the container is the sandbox)"},
};

constexpr const char* kOnResumeNote = "Takes effect when the conversation is resumed";

std::vector<Choice> read_choices(const json::object& description, std::string_view key) {
    std::vector<Choice> out;
    const auto* list = description.if_contains(key);
    if (list == nullptr || !list->is_array()) return out;
    for (const auto& item : list->as_array()) {
        if (item.is_string()) {
            out.push_back({std::string(item.as_string()), std::string(item.as_string())});
            continue;
        }
        const auto* object = item.if_object();
        const auto* id = object ? object->if_contains("id") : nullptr;
        if (id == nullptr || !id->is_string() || id->as_string().empty()) continue;
        const auto* label = object->if_contains("label");
        out.push_back({std::string(id->as_string()), label && label->is_string() && !label->as_string().empty()
                                                         ? std::string(label->as_string())
                                                         : std::string(id->as_string())});
    }
    return out;
}

std::vector<std::string> read_strings(const json::object& description, std::string_view key,
                                      std::string_view field = {}) {
    std::vector<std::string> out;
    const auto* list = description.if_contains(key);
    if (list == nullptr || !list->is_array()) return out;
    for (const auto& item : list->as_array()) {
        if (item.is_string()) out.emplace_back(item.as_string());
        else if (!field.empty() && item.is_object())
            if (const auto* value = item.as_object().if_contains(field); value && value->is_string())
                out.emplace_back(value->as_string());
    }
    return out;
}

bool has(const std::vector<Choice>& choices, std::string_view id) {
    return std::any_of(choices.begin(), choices.end(), [id](const Choice& choice) { return choice.id == id; });
}

json::array select_options(const std::vector<Choice>& choices) {
    json::array out;
    for (const auto& choice : choices) out.push_back(json::object{{"value", choice.id}, {"name", choice.label}});
    return out;
}

// The choices with the current value among them: a value the harness did not declare
// (a local server's model, or one another client chose) is shown as it is, and an
// unknown one as the harness's default.
std::vector<Choice> with_current(std::vector<Choice> choices, const std::string& current, std::string& shown) {
    shown = current.empty() ? std::string(kDefaultValue) : current;
    if (current.empty()) choices.insert(choices.begin(), Choice{std::string(kDefaultValue), "Harness default"});
    else if (!has(choices, current)) choices.push_back({current, current});
    return choices;
}

json::object select(std::string_view id, std::string_view name, std::string_view category,
                    std::string current, json::array options, const Settings& settings) {
    json::object option{{"id", id}, {"name", name}, {"category", category}, {"type", "select"},
                        {"currentValue", std::move(current)}, {"options", std::move(options)}};
    if (settings.on_resume.count(std::string(id)) != 0) option["description"] = kOnResumeNote;
    return option;
}

std::vector<Choice> start_mode_choices() {
    std::vector<Choice> out;
    for (const auto& mode : kStartModes) out.push_back({mode.id, mode.name});
    return out;
}

std::vector<Choice> harness_modes(const HarnessChoices& harness, const Settings& settings) {
    std::vector<Choice> modes = harness.modes;
    if (!settings.mode.empty() && !is_start_mode(settings.mode) && !has(modes, settings.mode))
        modes.push_back({settings.mode, settings.mode});
    return modes;
}

std::string current_mode(const Settings& settings) {
    if (!settings.mode.empty()) return settings.mode;
    return settings.start_mode.empty() ? std::string("filtered") : settings.start_mode;
}

std::string joined(const std::vector<Choice>& choices) {
    std::string out;
    for (const auto& choice : choices) out += (out.empty() ? "" : ", ") + choice.id;
    return out;
}

} // namespace

HarnessChoices read_harness_choices(std::string_view harness_id, const json::object& description) {
    HarnessChoices out;
    out.harness = std::string(harness_id);
    out.models = read_choices(description, "models");
    out.modes = read_choices(description, "modes");
    out.thinking_levels = read_strings(description, "thinking_levels");
    out.launch_modes = read_strings(description, "launch_modes");
    out.credentials = read_strings(description, "credentials", "kind");
    return out;
}

json::array config_options(const HarnessChoices& harness, const Settings& settings) {
    json::array out;
    if (!harness.models.empty() || !settings.model.empty()) {
        std::string current;
        auto models = with_current(harness.models, settings.model, current);
        out.push_back(select("model", "Model", "model", current, select_options(models), settings));
    }
    const auto modes = harness_modes(harness, settings);
    json::array mode_options = select_options(start_mode_choices());
    if (!modes.empty())
        mode_options = json::array{
            json::object{{"group", "start"}, {"name", "Start mode"}, {"options", std::move(mode_options)}},
            json::object{{"group", "harness"}, {"name", harness.harness + " modes"}, {"options", select_options(modes)}}};
    out.push_back(select("mode", "Mode", "mode", current_mode(settings), std::move(mode_options), settings));
    if (!harness.thinking_levels.empty()) {
        std::vector<Choice> levels;
        for (const auto& level : harness.thinking_levels) levels.push_back({level, level});
        std::string current;
        levels = with_current(std::move(levels), settings.thought_level, current);
        out.push_back(select("thought_level", "Thinking", "thought_level", current, select_options(levels), settings));
    }
    return out;
}

json::object legacy_modes(const HarnessChoices& harness, const Settings& settings) {
    json::array available;
    for (const auto& mode : kStartModes)
        available.push_back(json::object{{"id", mode.id}, {"name", mode.name}, {"description", mode.description}});
    for (const auto& mode : harness_modes(harness, settings))
        available.push_back(json::object{{"id", mode.id}, {"name", mode.label}});
    return json::object{{"currentModeId", current_mode(settings)}, {"availableModes", std::move(available)}};
}

bool is_start_mode(std::string_view id) {
    return std::any_of(std::begin(kStartModes), std::end(kStartModes),
                       [id](const StartMode& mode) { return id == mode.id; });
}

std::string start_mode_of(std::string_view network_mode) {
    if (network_mode == "none" || network_mode == "open") return std::string(network_mode);
    return "filtered";
}

Result<Change> change_for(const HarnessChoices& harness, std::string_view config_id, std::string_view value) {
    const std::string text(value);
    if (config_id == "model") {
        // The declared models are suggestions (a local model server takes any name);
        // handlerd checks the name's form.
        if (value.empty() || value == kDefaultValue)
            return make_error(ErrorCode::invalid_argument,
                              "choose a model by its name" +
                                  (harness.models.empty() ? std::string()
                                                          : " (" + harness.harness + " suggests " + joined(harness.models) + ")"));
        return Change{"model", text};
    }
    if (config_id == "mode") {
        if (!is_start_mode(value) && !has(harness.modes, value))
            return make_error(ErrorCode::invalid_argument,
                              "'" + text + "' is not a mode of this session: the start modes none, filtered, open" +
                                  (harness.modes.empty() ? std::string() : ", or " + harness.harness +
                                                                               "'s " + joined(harness.modes)));
        return Change{"mode", text};
    }
    if (config_id == "thought_level") {
        if (std::find(harness.thinking_levels.begin(), harness.thinking_levels.end(), value) ==
            harness.thinking_levels.end()) {
            std::string levels;
            for (const auto& level : harness.thinking_levels) levels += (levels.empty() ? "" : ", ") + level;
            return make_error(ErrorCode::invalid_argument,
                              "'" + text + "' is not a thinking level of " + harness.harness +
                                  (levels.empty() ? std::string(" (it has none)") : " (" + levels + ")"));
        }
        return Change{"thinking_level", text};
    }
    return make_error(ErrorCode::invalid_argument,
                      "unknown config option '" + std::string(config_id) + "'; this session has model, mode and thought_level");
}

void apply_change(Settings& settings, std::string_view config_id, std::string_view value, bool on_resume) {
    std::string* field = config_id == "model" ? &settings.model
                         : config_id == "mode" ? &settings.mode
                                               : &settings.thought_level;
    *field = std::string(value);
    if (on_resume) settings.on_resume.insert(std::string(config_id));
    else settings.on_resume.erase(std::string(config_id));
}

} // namespace handler::acp
