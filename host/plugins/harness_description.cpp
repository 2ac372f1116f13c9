#include "plugins/harness_description.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>

namespace handler::plugins {
namespace {

namespace json = boost::json;

// Reads the optional fields of one describe() answer; the first mistake is kept.
class Reader {
public:
    Reader(std::string_view plugin_id, const json::object& object) : plugin_id_(plugin_id), object_(object) {}

    void strings(const char* key, std::vector<std::string>& out) {
        const auto* list = list_of(key);
        if (list == nullptr) return;
        for (const auto& item : *list) {
            if (!item.is_string()) return wrong(key, "a list of strings");
            out.emplace_back(item.as_string());
        }
    }

    // A list of objects with `first` (required) and `second`, `third` (optional) string
    // fields, or of strings standing for `first`.
    template <class Item>
    void items(const char* key, std::vector<Item>& out, const char* first,
               std::initializer_list<std::pair<const char*, std::string Item::*>> fields) {
        const auto* list = list_of(key);
        if (list == nullptr) return;
        const std::string shape = std::string("a list of strings or of objects with a string \"") + first + "\"";
        for (const auto& item : *list) {
            Item made{};
            if (item.is_string()) {
                made.*(fields.begin()->second) = std::string(item.as_string());
                out.push_back(std::move(made));
                continue;
            }
            const auto* fields_of = item.if_object();
            if (fields_of == nullptr) return wrong(key, shape);
            for (const auto& [name, member] : fields) {
                const auto* value = fields_of->if_contains(name);
                if (value == nullptr) continue;
                if (!value->is_string()) return wrong(key, shape);
                made.*member = std::string(value->as_string());
            }
            if ((made.*(fields.begin()->second)).empty()) return wrong(key, shape);
            out.push_back(std::move(made));
        }
    }

    void text(const char* key, std::string& out) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr) return;
        if (!value->is_string()) return wrong(key, "a string");
        out = std::string(value->as_string());
    }

    Result<void> result() const {
        if (error_.empty()) return {};
        return make_error(ErrorCode::invalid_argument, error_);
    }

private:
    const json::array* list_of(const char* key) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr || !error_.empty()) return nullptr;
        if (!value->is_array()) {
            wrong(key, "a list");
            return nullptr;
        }
        return &value->as_array();
    }
    void wrong(const char* key, const std::string& shape) {
        if (error_.empty())
            error_ = "plugin '" + std::string(plugin_id_) + "': describe: \"" + key + "\" must be " + shape +
                     " (docs/contracts.md, \"describe JSON\")";
    }

    std::string_view plugin_id_;
    const json::object& object_;
    std::string error_;
};

} // namespace

bool HarnessDescription::takes_credential(std::string_view kind) const {
    return credentials.empty() ||
           std::any_of(credentials.begin(), credentials.end(), [&](const auto& each) { return each.kind == kind; });
}

bool HarnessDescription::takes_thinking_level(std::string_view level) const {
    return thinking_levels.empty() || std::find(thinking_levels.begin(), thinking_levels.end(), level) !=
                                          thinking_levels.end();
}

// Unlike the other lists, never assumed: a conversation needs a harness that keeps its
// input open between turns, which a harness must say it does.
bool HarnessDescription::holds_conversations() const {
    return std::find(launch_modes.begin(), launch_modes.end(), "conversation") != launch_modes.end();
}

bool HarnessDescription::takes_images() const {
    return std::find(prompt_content.begin(), prompt_content.end(), "image") != prompt_content.end();
}

std::string HarnessDescription::credentials_text() const {
    std::string text;
    for (const auto& credential : credentials) {
        if (!text.empty()) text += ", ";
        text += credential.label.empty() ? credential.kind : credential.label + " (" + credential.kind + ")";
    }
    return text;
}

Result<HarnessDescription> parse_harness_description(std::string_view plugin_id, std::string_view text) {
    boost::system::error_code error;
    const auto value = json::parse(text, error);
    if (error || !value.is_object())
        return make_error(ErrorCode::invalid_argument,
                          "plugin '" + std::string(plugin_id) + "': describe did not return a JSON object");
    HarnessDescription description;
    Reader reader(plugin_id, value.as_object());
    reader.strings("default_hosts", description.default_hosts);
    reader.items<HarnessCredential>("credentials", description.credentials, "kind",
                                    {{"kind", &HarnessCredential::kind},
                                     {"env", &HarnessCredential::env},
                                     {"label", &HarnessCredential::label}});
    reader.items<HarnessModel>("models", description.models, "id",
                               {{"id", &HarnessModel::id}, {"label", &HarnessModel::label}});
    reader.items<HarnessMode>("modes", description.modes, "id",
                              {{"id", &HarnessMode::id}, {"label", &HarnessMode::label}});
    reader.strings("thinking_levels", description.thinking_levels);
    reader.strings("launch_modes", description.launch_modes);
    reader.strings("mcp", description.mcp_transports);
    reader.strings("prompt_content", description.prompt_content);
    reader.text("events", description.events);
    std::string input;
    reader.text("stdin", input);
    description.stdin_protocol = input == "protocol";
    if (auto checked = reader.result(); !checked) return checked.take_error();
    return description;
}

} // namespace handler::plugins
