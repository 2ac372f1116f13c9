// A parsed request as the routes see it, shared by the translation units that hold
// routes (routes.cpp, routes_images.cpp).
#pragma once

#include "api/routes.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::api {

struct Routes::Call {
    std::string method;
    std::string target;                // as received, for messages
    std::vector<std::string> segments; // decoded, after /api/v1
    std::vector<std::pair<std::string, std::string>> query; // decoded, in order
    std::string_view body;
    bool over_tcp = false;
    std::string_view session_cookie;
};

} // namespace handler::api
