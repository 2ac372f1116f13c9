// The session service's port to the plugins (sessions/harness_catalog.hpp) as handlerd
// has it: the plugin registry's loaded harnesses and addons, their descriptions as the
// registry parsed them at load, and their event parsers behind the waist.
#pragma once

#include "sessions/harness_catalog.hpp"

namespace handler::plugins {

class PluginRegistry;

class RegistryHarnessCatalog final : public sessions::HarnessCatalog {
public:
    // `registry` must outlive the catalog.
    explicit RegistryHarnessCatalog(const PluginRegistry& registry) : registry_(registry) {}

    bool has_harness(std::string_view harness) const override;
    Result<HarnessDescription> describe(std::string_view harness) const override;
    Result<LaunchSpec> launch(std::string_view harness, const LaunchRequest& request) override;
    Result<LaunchSpec> contribute(std::string_view addon, const LaunchRequest& request) override;
    // The parser's mode and whether it owns the harness's stdin come from the
    // description's "events" and "stdin".
    Result<sessions::OpenedEvents> open_events(std::string_view harness, std::string_view session_id,
                                               std::optional<std::string_view> harness_session = std::nullopt) override;
    Result<std::optional<runtime::LayerRecipe>> image_recipe(std::string_view harness) override;

private:
    const PluginRegistry& registry_;
};

} // namespace handler::plugins
