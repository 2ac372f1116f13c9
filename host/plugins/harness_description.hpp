// What a harness plugin says of itself in describe() (docs/contracts.md, "describe JSON"),
// parsed once into a value the rest of handlerd reads: the session service checks a
// request against it before a session is recorded, and the API lists it with the plugin.
//
// An empty list means "not declared", never "nothing allowed": a harness that names no
// thinking levels or no credentials (the shell harness, most third-party plugins) gets
// every request passed on to its own launch, which checks it as it always did.
//
// A description that cannot be read does not unload the plugin: the registry keeps the
// error on its record (registry.cpp, `description_error`), `handler plugins list` shows
// it as `harness_error` (api/routes_json.cpp), and every start of a session of that
// harness is refused with it (RegistryHarnessCatalog::describe, then plan_start).
#pragma once

#include "core/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace handler::plugins {

struct HarnessModel {
    std::string id;    // what --model passes on, in the harness's own words
    std::string label; // for people
    friend bool operator==(const HarnessModel&, const HarnessModel&) = default;
};

struct HarnessCredential {
    std::string kind;  // an account kind ("anthropic-api-key")
    std::string env;   // where the harness reads it; empty: not a variable (a login, a server)
    std::string label; // for people
    friend bool operator==(const HarnessCredential&, const HarnessCredential&) = default;
};

struct HarnessMode {
    std::string id;
    std::string label;
    friend bool operator==(const HarnessMode&, const HarnessMode&) = default;
};

struct HarnessDescription {
    std::vector<std::string> default_hosts;
    std::vector<HarnessCredential> credentials;
    // Suggestions, never a limit: a local model server takes any name.
    std::vector<HarnessModel> models;
    std::vector<HarnessMode> modes;
    std::vector<std::string> thinking_levels;
    std::vector<std::string> launch_modes; // "conversation" among them: it holds conversations
    std::vector<std::string> mcp_transports; // "mcp": the MCP server transports it honours
    // "prompt_content": what a conversation's prompt may carry besides text ("image").
    std::vector<std::string> prompt_content;
    std::string events = "text"; // "structured", "text" or "none"
    bool stdin_protocol = false; // "stdin": "protocol": its stdin is the parser's alone

    // Whether an account of `kind` may run this harness (true when none are declared).
    bool takes_credential(std::string_view kind) const;
    bool holds_conversations() const;
    // Never assumed either: images sent to a harness that drops them would be lost unsaid.
    bool takes_images() const;
    // Whether `level` is one of its thinking levels (true when none are declared).
    bool takes_thinking_level(std::string_view level) const;
    // The credentials in the harness's own words: "Anthropic API key (anthropic-api-key), ...".
    std::string credentials_text() const;

    friend bool operator==(const HarnessDescription&, const HarnessDescription&) = default;
};

// Parses plugin `plugin_id`'s describe() answer. Every key is optional and unknown keys
// are ignored; a list item may be an object (as documented) or a plain string (its id,
// or its kind for a credential). A key of the wrong type is refused, naming the plugin
// and the key.
Result<HarnessDescription> parse_harness_description(std::string_view plugin_id, std::string_view json);

} // namespace handler::plugins
