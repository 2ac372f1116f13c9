// POST /api/v1/sessions/{id}/network: a running session's network mode, by its user
// (docs/api.md, "Network"). Only through this authenticated API: a container has no route
// to it, so nothing inside a session can widen its own network.
#include "api/routes.hpp"

#include "api/routes_json.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace handler::api {
namespace json = boost::json;

Response Routes::session_network(const std::string& id, std::string_view raw_body) {
    if (info_.sessions == nullptr) return no_session_service();
    auto body = parse_body(raw_body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"mode", "minutes"}); !known) return error_response(known.error());
    auto mode = reader.required_string("mode");
    if (!mode) return error_response(mode.error());
    std::optional<std::int64_t> minutes;
    if (const auto* value = body->if_contains("minutes")) {
        if (!value->is_int64())
            return error_response(ErrorCode::invalid_argument, "field 'minutes' must be a whole number of minutes");
        minutes = value->as_int64();
    }
    auto updated = info_.sessions->set_network(id, *mode, minutes);
    if (!updated) return error_response(updated.error());
    return json_response(200, to_json(*updated));
}

} // namespace handler::api
