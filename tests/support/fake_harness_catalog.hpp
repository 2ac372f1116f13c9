// The session service's port to the plugins (sessions/harness_catalog.hpp) without any
// plugin: harnesses and addons the test defines as functions, with the descriptions it
// gives them; every launch request is recorded.
#pragma once

#include "sessions/harness_catalog.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::testing {

class FakeHarnessCatalog final : public sessions::HarnessCatalog {
public:
    using LaunchFn = std::function<Result<plugins::LaunchSpec>(const plugins::LaunchRequest&)>;
    struct Harness {
        plugins::HarnessDescription description;
        LaunchFn launch; // null: a spec running `true`
        std::optional<runtime::LayerRecipe> recipe;
        // Null: the harness has no event parser (open_events is unavailable).
        std::function<std::unique_ptr<sessions::EventParser>()> parser;
        // Set: describe() fails with this (a plugin whose description is broken).
        std::optional<Error> description_error;
    };

    std::map<std::string, Harness, std::less<>> harnesses;
    std::map<std::string, LaunchFn, std::less<>> addons;
    std::vector<plugins::LaunchRequest> launches; // every launch asked for, in order
    // Each open_events, in order: unset for a new harness, else the harness session id of
    // one that already ran.
    std::vector<std::optional<std::string>> reopened;

    bool has_harness(std::string_view harness) const override { return harnesses.contains(harness); }

    Result<plugins::HarnessDescription> describe(std::string_view harness) const override {
        const auto found = harnesses.find(harness);
        if (found == harnesses.end())
            return make_error(ErrorCode::not_found, "no plugin '" + std::string(harness) + "' is installed");
        if (found->second.description_error) return *found->second.description_error;
        return found->second.description;
    }

    Result<plugins::LaunchSpec> launch(std::string_view harness, const plugins::LaunchRequest& request) override {
        launches.push_back(request);
        const auto found = harnesses.find(harness);
        if (found == harnesses.end())
            return make_error(ErrorCode::not_found, "no plugin '" + std::string(harness) + "' is installed");
        if (found->second.launch) return found->second.launch(request);
        plugins::LaunchSpec spec;
        spec.arguments = {"true"};
        return spec;
    }

    Result<plugins::LaunchSpec> contribute(std::string_view addon, const plugins::LaunchRequest& request) override {
        const auto found = addons.find(addon);
        if (found == addons.end())
            return make_error(ErrorCode::not_found, "no addon plugin '" + std::string(addon) + "'");
        return found->second(request);
    }

    Result<sessions::OpenedEvents> open_events(std::string_view harness, std::string_view,
                                               std::optional<std::string_view> harness_session) override {
        reopened.push_back(harness_session ? std::optional<std::string>(*harness_session) : std::nullopt);
        const auto found = harnesses.find(harness);
        if (found == harnesses.end() || !found->second.parser)
            return make_error(ErrorCode::unavailable, "no events");
        sessions::OpenedEvents opened;
        opened.parser = found->second.parser();
        opened.mode = found->second.description.events;
        opened.owns_input = found->second.description.stdin_protocol;
        return opened;
    }

    Result<std::optional<runtime::LayerRecipe>> image_recipe(std::string_view harness) override {
        const auto found = harnesses.find(harness);
        if (found == harnesses.end())
            return make_error(ErrorCode::not_found, "no plugin '" + std::string(harness) + "' is installed");
        return found->second.recipe;
    }
};

} // namespace handler::testing
