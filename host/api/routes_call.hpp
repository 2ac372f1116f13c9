// A parsed request as the route table's translation units see it (routes.cpp and the
// routes_<area>.cpp files): private to host/api.
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
