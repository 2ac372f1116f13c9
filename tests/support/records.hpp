// Test helpers for store records that GCC 12 will not let tests aggregate-initialise
// in part (-Wmissing-field-initializers) once the records grow.
#pragma once

#include "store/records.hpp"

#include <optional>
#include <string>

namespace handler::testing {

inline store::NewSession session_of(std::optional<std::int64_t> agent, std::int64_t project,
                                    std::string harness) {
    store::NewSession session;
    session.agent_id = agent;
    session.project_id = project;
    session.harness = std::move(harness);
    return session;
}

} // namespace handler::testing
