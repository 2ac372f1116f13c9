// GET /api/v1/sessions/{id}/changes (docs/api.md, "Changes"): answered later, once the
// Changes container has run on ChangesSource's worker (api/http_types.hpp, Response::later).
#pragma once

#include "api/changes_source.hpp"
#include "api/http_types.hpp"

#include <string>
#include <utility>
#include <vector>

namespace handler::store {
class Store;
}

namespace handler::api {

Response changes_route(store::Store& store, ChangesSource* source, const std::string& method,
                       const std::string& target, const std::vector<std::pair<std::string, std::string>>& query,
                       const std::string& session_id);

} // namespace handler::api
