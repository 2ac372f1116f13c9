// The session service's one port to the plugins: what it asks of harness and addon
// plugins when it starts a session, and what it knows of each harness before it does.
// In handlerd it is the plugin registry (plugins/registry_harness_catalog.hpp); in the
// session tests, a fake (tests/support/fake_harness_catalog.hpp).
//
// Threading: called on the io thread, like every call into a plugin.
#pragma once

#include "core/result.hpp"
#include "plugins/harness_description.hpp"
#include "plugins/launch_spec.hpp"
#include "runtime/image_builder.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace handler::sessions {

// One headless session's event parser: the harness plugin's, behind the waist, in
// handlerd. Fed the harness's stdout in pieces of any size; what it writes for the
// harness's stdin goes there.
class EventParser {
public:
    virtual ~EventParser() = default;
    virtual Result<plugins::ParsedEvents> feed(std::string_view bytes) = 0;
    // A client's answer to a permission request it emitted (`request`: that payload).
    virtual Result<plugins::ParsedEvents> answer(std::string_view request, std::string_view answer) {
        (void)request;
        (void)answer;
        return make_error(ErrorCode::unavailable, "this harness takes no answers to permission requests");
    }
    // A prompt (the user_prompt payload) in the protocol of a harness whose stdin is one.
    virtual Result<plugins::ParsedEvents> prompt(std::string_view prompt) {
        (void)prompt;
        return plugins::ParsedEvents{};
    }
    // Interrupts the running turn of a conversation; its result then says "cancelled".
    virtual Result<plugins::ParsedEvents> cancel() {
        return make_error(ErrorCode::unavailable, "this harness cannot interrupt a turn");
    }
    // Changes "model", "mode" or "thinking_level" of the live conversation.
    virtual Result<plugins::ParsedEvents> set(std::string_view name, std::string_view value) {
        (void)value;
        return make_error(ErrorCode::unavailable, "this harness cannot change its " + std::string(name) +
                                                      " while it runs");
    }
};

struct OpenedEvents {
    std::unique_ptr<EventParser> parser;
    std::string mode = "text"; // "structured": stdout is the harness's JSON, for machines
    // The harness's stdin is its protocol (its describe() says "stdin":"protocol"), written by the
    // parser only: clients' input is not passed on, it would break the protocol.
    bool owns_input = false;
};

class HarnessCatalog {
public:
    virtual ~HarnessCatalog() = default;

    // Whether a loaded harness plugin has this id (to tell an agent's name from a
    // harness's).
    virtual bool has_harness(std::string_view harness) const = 0;
    // What harness `harness` says of itself, parsed once. not_found: no such harness;
    // unavailable: it was refused or failed (the message is its record's);
    // invalid_argument: its describe() is not what docs/contracts.md says (the message
    // names the plugin).
    virtual Result<plugins::HarnessDescription> describe(std::string_view harness) const = 0;
    // The container of one session. not_found: no such harness.
    virtual Result<plugins::LaunchSpec> launch(std::string_view harness, const plugins::LaunchRequest& request) = 0;
    // What addon `addon` adds to one session. not_found: no such addon.
    virtual Result<plugins::LaunchSpec> contribute(std::string_view addon, const plugins::LaunchRequest& request) = 0;
    // A parser for a headless session of `harness`; unavailable: the harness has none.
    // `harness_session` set: its harness already runs (handlerd restarted), and that is
    // the harness's own session id from its last session_info (empty: none came).
    virtual Result<OpenedEvents> open_events(std::string_view harness, std::string_view session_id,
                                             std::optional<std::string_view> harness_session = std::nullopt) = 0;
    // What harness `harness` adds to the base image; nullopt: nothing (its sessions run
    // the base image).
    virtual Result<std::optional<runtime::LayerRecipe>> image_recipe(std::string_view harness) = 0;
};

} // namespace handler::sessions
