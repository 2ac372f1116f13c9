// A running session's network mode, changed by its user (POST /api/v1/sessions/{id}/network,
// `handler network learn`): which changes are allowed, and what is recorded. Pure.
//
// A session may be made stricter at any time (filtered, none). learn widens it for a while
// (every public host passes and is recorded, for N minutes, then it is filtered again): that
// is the user's choice, through the authenticated API only; nothing in the container can
// reach the API. open is refused on a running session: open's own network (slirp4netns) is
// given to a container when it starts, so it would pass everything through the proxy while
// tools that ignore the proxy still had no route, which is neither mode.
#pragma once

#include "core/result.hpp"
#include "store/records.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace handler::sessions {

struct NetworkChange {
    std::string_view mode;              // none | filtered | learn
    std::optional<std::int64_t> minutes; // learn only: 1 to kMaxLearnMinutes; unset: the default
};

inline constexpr std::int64_t kMaxLearnMinutes = 120;

// The changes to record for `change` on `session` at `now_ms`; learn lasts `learn_window`
// unless minutes are given. invalid_argument for a mode or minutes that cannot be; conflict
// for a session that is not running.
Result<store::SessionChanges> plan_network_change(const store::Session& session, const NetworkChange& change,
                                                  std::int64_t now_ms, std::chrono::milliseconds learn_window);

} // namespace handler::sessions
