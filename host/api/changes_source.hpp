// What GET /api/v1/sessions/{id}/changes needs (docs/api.md, "Changes"): a session's
// changes, computed off handlerd's I/O thread because it runs a container (a second or
// more). The daemon passes sessions::ChangesService; route tests pass it over a fake
// ContainerRuntime.
#pragma once

#include "core/result.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace handler::api {

struct ChangesRequest {
    std::string session_id;
    std::filesystem::path project; // the session's project folder
    std::int64_t since_ms = 0;     // the session's created_at: "changed since" without git
};

class ChangesSource {
public:
    virtual ~ChangesSource() = default;
    // `done` is called exactly once, on any thread (possibly before this returns), with
    // the answer's body or the error to send.
    virtual void changes(ChangesRequest request, std::function<void(Result<boost::json::object>)> done) = 0;
};

} // namespace handler::api
