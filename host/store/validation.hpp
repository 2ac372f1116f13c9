// The rules for names, hosts and other values the store accepts (docs/domain-model.md).
// They live beside the store, not in the API layer, so every way in (API, CLI, a later
// import) is held to the same rules. Each failure is invalid_argument with a message
// that quotes the value and says what would be accepted.
#pragma once

#include "core/result.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::store {

inline constexpr std::size_t kMaxGoalBytes = 4 * 1024;
inline constexpr std::size_t kMaxInstructionsBytes = 64 * 1024;
inline constexpr std::size_t kMaxAllowedHosts = 256;
// The same limits as the plugin waist (host/plugins/host_services.hpp).
inline constexpr std::size_t kMaxPluginKeyBytes = 1024;
inline constexpr std::size_t kMaxPluginValueBytes = 1024 * 1024;
inline constexpr std::size_t kMaxBaseUrlBytes = 2048;

// 1–64 ASCII letters, digits, spaces, '-', '_', '.', not starting or ending with a
// space. ASCII only, because uniqueness ignores case and SQLite's NOCASE folds only ASCII.
Result<void> check_context_name(std::string_view name);
// 1–128 bytes of UTF-8 without control characters or surrounding spaces: folder names
// become project names, and folders are named freely.
Result<void> check_project_name(std::string_view name);
// 1–64 of [A-Za-z0-9._-], starting with a letter or digit: typed on command lines
// (`handler run NAME`, `handler terminal NAME`).
Result<void> check_agent_name(std::string_view name);
Result<void> check_account_name(std::string_view name);
// One of secrets::account_kinds().
Result<void> check_account_kind(std::string_view kind);
// A model name as harnesses take it on their command lines ("sonnet",
// "anthropic/claude-opus-4-7:high", "gpt-5.1-codex"): 1–128 of [A-Za-z0-9._:/@+-],
// starting with a letter or digit, so that it can never be read as an option.
Result<void> check_model_name(std::string_view model);
// A thinking level: 1 to 16 lowercase letters (each harness has its own words for them).
Result<void> check_thinking_level(std::string_view level);

// An http:// or https:// URL with a host (name, IPv4 or [IPv6]), an optional port 1–65535
// and an optional path; no user:password@, query or fragment; at most kMaxBaseUrlBytes.
// Returns it with scheme and host in lower case and no trailing '/'.
Result<std::string> normalize_base_url(std::string_view url);
// The base_url an account of `kind` is stored with: for local kinds `base_url`
// normalized, or the kind's default when unset; for other kinds none, and a given one
// is refused ("base_url is only for llama-cpp and ollama accounts").
Result<std::optional<std::string>> account_base_url(std::string_view kind,
                                                    const std::optional<std::string>& base_url);

// A plugin id: 1–64 of [a-z0-9._-], starting with a letter or digit.
Result<void> check_harness(std::string_view harness);
// An agent's addons: plugin ids (as check_harness), each once; the list as given.
Result<std::vector<std::string>> check_addons(const std::vector<std::string>& addons);
// Absolute, normalized (no '.', '..', '//' or trailing '/') and not '/' itself.
Result<void> check_project_path(std::string_view path);
Result<void> check_text(std::string_view field, std::string_view value, std::size_t max_bytes);

// A host rule as network::parse_rule reads it (network/host_rule.hpp), so every rule
// stored is one the policy decides with; returns its canonical text. `field` names the
// entry in messages ("allowed_hosts[2]").
Result<std::string> normalize_host_pattern(std::string_view pattern, std::string_view field);
// Normalizes every entry and refuses duplicates and lists over kMaxAllowedHosts.
Result<std::vector<std::string>> normalize_allowed_hosts(const std::vector<std::string>& hosts);

} // namespace handler::store
