#include "sessions/network_change.hpp"

#include "network/network_mode.hpp"

#include <string>

namespace handler::sessions {

Result<store::SessionChanges> plan_network_change(const store::Session& session, const NetworkChange& change,
                                                  std::int64_t now_ms, std::chrono::milliseconds learn_window) {
    const auto mode = network::parse_mode(change.mode, network::ModeHolder::session);
    if (!mode)
        return make_error(ErrorCode::invalid_argument,
                          "network mode '" + std::string(change.mode) + "' is not one of " +
                              network::mode_list(network::ModeHolder::session));
    if (*mode == network::Mode::open)
        return make_error(ErrorCode::invalid_argument,
                          "a running session cannot be made open: open gives the container a network of its own, "
                          "which only a new session gets (`handler run AGENT --network open`); learn lets every "
                          "public host through for a while instead (`handler network learn " +
                              session.id + "`)");
    if (change.minutes && *mode != network::Mode::learn)
        return make_error(ErrorCode::invalid_argument, "'minutes' is for mode learn only");
    if (change.minutes && (*change.minutes < 1 || *change.minutes > kMaxLearnMinutes))
        return make_error(ErrorCode::invalid_argument,
                          "'minutes' must be a whole number from 1 to " + std::to_string(kMaxLearnMinutes));
    if (session.state != store::SessionState::running && session.state != store::SessionState::starting)
        return make_error(ErrorCode::conflict, "session " + session.id + " is " +
                                                   std::string(store::to_string(session.state)) +
                                                   "; a network mode is changed only while it runs");
    store::SessionChanges changes;
    changes.network_mode = std::optional<store::NetworkMode>(*mode);
    if (*mode == network::Mode::learn) {
        const std::int64_t window =
            change.minutes ? *change.minutes * 60 * 1000 : static_cast<std::int64_t>(learn_window.count());
        changes.learn_until = std::optional<store::TimeMs>(now_ms + window);
    } else {
        changes.learn_until = std::optional<store::TimeMs>();
    }
    return changes;
}

} // namespace handler::sessions
