// GET /api/v1/images and /api/v1/images/{id}: the harness image builds of this handlerd
// run, with their logs (docs/api.md, "Images"). Live progress comes as image.build events.
#include "api/routes.hpp"
#include "api/routes_call.hpp"

#include "api/routes_json.hpp"

#include <boost/json/array.hpp>

#include <charconv>

namespace handler::api {
namespace json = boost::json;

Response Routes::images(const Call& call) {
    if (call.method != "GET") {
        Response response = error_response(ErrorCode::invalid_argument,
                                           call.method + " is not allowed on " + call.target + "; use GET");
        response.status = 405;
        response.headers["Allow"] = "GET";
        return response;
    }
    std::string session;
    for (const auto& [key, value] : call.query) {
        if (key != "session" || !session.empty())
            return error_response(ErrorCode::invalid_argument,
                                  key == "session" ? "query parameter 'session' is given twice"
                                                   : "unknown query parameter '" + key + "'; this route takes session");
        session = value;
    }
    const std::vector<ImageBuild> builds = info_.sessions ? info_.sessions->image_builds() : std::vector<ImageBuild>{};
    if (call.segments.size() == 2) {
        if (!call.query.empty())
            return error_response(ErrorCode::invalid_argument, "GET " + call.target + " takes no query parameters");
        std::int64_t id = 0;
        const std::string& text = call.segments[1];
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
        for (const auto& build : builds)
            if (error == std::errc() && end == text.data() + text.size() && build.id == id)
                return json_response(200, to_json(build, true));
        return error_response(ErrorCode::not_found,
                              "image build '" + text + "' is not known to this handlerd (only its own run's, "
                              "and the last finished ones, are kept)");
    }
    json::array list;
    for (const auto& build : builds)
        if (session.empty() || build.session == session) list.push_back(to_json(build, true));
    return json_response(200, json::object{{"images", std::move(list)}});
}

} // namespace handler::api
