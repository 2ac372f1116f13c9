// The target of the terminal WebSocket, /api/v1/sessions/{id}/terminal?from=N&read_only=1,
// parsed before the upgrade so a malformed one gets an ordinary HTTP error. Transport-free
// so the unit tests call it directly.
#pragma once

#include "api/session_control.hpp"
#include "core/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace handler::api {

struct TerminalTarget {
    std::string session_id;
    AttachOptions options;
};

// nullopt: not a terminal path at all (some other route). An Error: it is one, but its
// query is malformed (unknown parameter, bad number).
std::optional<Result<TerminalTarget>> parse_terminal_target(std::string_view target);

} // namespace handler::api
