#include "plugins/plugin_record.hpp"

namespace handler::plugins {

std::string_view to_string(PluginState state) {
    switch (state) {
    case PluginState::loaded: return "loaded";
    case PluginState::refused: return "refused";
    case PluginState::failed: return "failed";
    case PluginState::disabled: return "disabled";
    }
    return "refused";
}

} // namespace handler::plugins
