// Shell completions generated from the CLI11 command tree (`handler completions bash`).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace handler::cli {

// shell is "bash", "zsh" or "fish"; returns an empty string for anything else.
std::string generate_completions(const CLI::App& app, std::string_view shell);

} // namespace handler::cli
