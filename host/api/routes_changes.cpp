#include "api/routes_changes.hpp"

#include "api/routes_json.hpp"
#include "store/store.hpp"

namespace handler::api {

Response changes_route(store::Store& store, ChangesSource* source, const std::string& method,
                       const std::string& target, const std::vector<std::pair<std::string, std::string>>& query,
                       const std::string& session_id) {
    if (method != "GET") {
        Response refused = error_response(ErrorCode::invalid_argument, method + " is not allowed on " + target + "; use GET");
        refused.status = 405;
        refused.headers["Allow"] = "GET";
        return refused;
    }
    if (!query.empty())
        return error_response(ErrorCode::invalid_argument,
                              "unknown query parameter '" + query.front().first + "'; this route takes none");
    auto session = store.get_session(session_id);
    if (!session) return error_response(session.error());
    auto project = store.get_project(session->project_id);
    if (!project) return error_response(project.error());
    if (source == nullptr)
        return error_response(ErrorCode::unavailable, "this handlerd computes no Changes (it has no container runtime)");
    ChangesRequest request{session->id, project->path, session->created_at};
    Response response;
    response.later = [source, request = std::move(request)](std::function<void(Response)> reply) mutable {
        source->changes(std::move(request), [reply = std::move(reply)](Result<boost::json::object> answer) {
            reply(answer ? json_response(200, *answer) : error_response(answer.error()));
        });
    };
    return response;
}

} // namespace handler::api
