#include "plugins/registry_harness_catalog.hpp"

#include "plugins/registry.hpp"

namespace handler::plugins {
namespace {

// A harness plugin's parser of one session's output, as the session service sees it.
class PluginEvents final : public sessions::EventParser {
public:
    explicit PluginEvents(std::unique_ptr<EventStream> stream) : stream_(std::move(stream)) {}
    Result<ParsedEvents> feed(std::string_view bytes) override { return stream_->feed(bytes); }
    Result<ParsedEvents> answer(std::string_view request, std::string_view answer) override {
        return stream_->answer(request, answer);
    }
    Result<ParsedEvents> prompt(std::string_view prompt) override { return stream_->prompt(prompt); }
    Result<ParsedEvents> cancel() override { return stream_->cancel(); }
    Result<ParsedEvents> set(std::string_view name, std::string_view value) override {
        return stream_->set(name, value);
    }

private:
    std::unique_ptr<EventStream> stream_;
};

} // namespace

bool RegistryHarnessCatalog::has_harness(std::string_view harness) const { return registry_.harness(harness).ok(); }

Result<HarnessDescription> RegistryHarnessCatalog::describe(std::string_view harness) const {
    auto found = registry_.harness(harness);
    if (!found) return found.take_error();
    const auto record = registry_.record(harness);
    if (!record || !record->harness)
        return make_error(ErrorCode::invalid_argument,
                          record && !record->description_error.empty()
                              ? record->description_error
                              : "plugin '" + std::string(harness) + "' has no description");
    return *record->harness;
}

Result<LaunchSpec> RegistryHarnessCatalog::launch(std::string_view harness, const LaunchRequest& request) {
    auto found = registry_.harness(harness);
    if (!found) return found.take_error();
    return (*found)->launch(request);
}

Result<LaunchSpec> RegistryHarnessCatalog::contribute(std::string_view addon, const LaunchRequest& request) {
    auto found = registry_.addon(addon);
    if (!found) return found.take_error();
    return (*found)->contribute(request);
}

Result<sessions::OpenedEvents> RegistryHarnessCatalog::open_events(std::string_view harness,
                                                                   std::string_view session_id,
                                                                   std::optional<std::string_view> harness_session) {
    auto found = registry_.harness(harness);
    if (!found) return found.take_error();
    auto stream = (*found)->open_events(session_id, harness_session);
    if (!stream) return stream.take_error();
    sessions::OpenedEvents opened;
    opened.parser = std::make_unique<PluginEvents>(std::move(*stream));
    // The plugin says in describe() whether its stdout is JSON for machines, and whether
    // its stdin is a protocol of its own. One that cannot be read never gets this far:
    // plan_start refuses its sessions.
    if (auto described = describe(harness)) {
        opened.mode = described->events;
        opened.owns_input = described->stdin_protocol;
    }
    return opened;
}

Result<std::optional<runtime::LayerRecipe>> RegistryHarnessCatalog::image_recipe(std::string_view harness) {
    auto found = registry_.harness(harness);
    if (!found) return found.take_error();
    auto recipe = (*found)->image_recipe();
    if (!recipe) return recipe.take_error();
    if (recipe->run_steps.empty() && recipe->env.empty()) return std::optional<runtime::LayerRecipe>();
    runtime::LayerRecipe layer;
    layer.name = (*found)->id();
    layer.version = (*found)->version();
    for (const auto& variable : recipe->env) layer.env.emplace_back(variable.name, variable.value);
    layer.run_steps = recipe->run_steps;
    return std::optional<runtime::LayerRecipe>(std::move(layer));
}

} // namespace handler::plugins
