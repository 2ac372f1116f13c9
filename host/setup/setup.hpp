// `handler setup`: checks the machine, applies the fixes that only touch the user's own
// files, builds the base image when it is missing (docs/images.md), writes the systemd
// user unit where systemd runs, and starts handlerd. Safe to run any number of times.
// docs/setup.md.
#pragma once

#include "runtime/image_builder.hpp"
#include "setup/checks.hpp"
#include "setup/system_probe.hpp"

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace handler::setup {

struct SetupOptions {
    bool check_only = false; // --check: look, never write or start anything
    bool json = false;       // --json: one JSON object on stdout
};

struct SetupContext {
    SystemProbe& probe;
    std::ostream& out;
    // Whether handlerd answers on its socket; the CLI asks its API client.
    std::function<bool()> daemon_running;
    // The base image to ensure once the checks pass; unset: runtime::default_base_recipe()
    // of this host. Its commands (podman, mmdebstrap) run through `probe`, so tests fake them.
    std::optional<runtime::BaseImageRecipe> base_image_recipe = std::nullopt;
    // The sessions' limits from config.toml, for the limits check.
    runtime::SessionLimits limits = {};
};

// The systemd user unit for handlerd at `handlerd_path`.
std::string systemd_unit(const std::filesystem::path& handlerd_path);

// 0 when no problem remains (warnings allowed), 1 otherwise, and for root.
int run_setup(const SetupOptions& options, SetupContext& context);

} // namespace handler::setup
