// The API's request and response, free of any transport type, so the route handlers
// (host/api/routes*.cpp) are plain functions that unit tests call directly and only
// host/api/server.cpp includes Beast.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace handler::api {

struct Request {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path and query, e.g. "/api/v1/agents?project=3"
    std::string body;    // raw; JSON for POST/PATCH
    // Which listener it came through: the unix socket is trusted by file mode, TCP by
    // token or the page's cookie. The web page's login routes depend on it (a login link
    // is made only over the unix socket, traded only over TCP).
    bool over_tcp = false;
    // The few headers a route reads: the page's files are sent gzipped when the browser
    // takes it, and logout ends the session its cookie names.
    std::string accept_encoding;
    std::string session_cookie; // the handler_session cookie's value, or empty
};

struct Response {
    unsigned status = 200;
    std::string body;    // JSON unless content_type says otherwise
    std::string content_type = "application/json";
    std::map<std::string, std::string> headers;
    // Set by a route whose answer must wait for work that may not hold the I/O thread (a
    // model server's test, a Changes run in a container): the transport calls it once with
    // a `reply` that any thread may call once, and sends that Response instead of this one.
    // (Initialized, so that the aggregate initializations of Response elsewhere stay
    // warning-free under -Wmissing-field-initializers.)
    std::function<void(std::function<void(Response)> reply)> later = nullptr;
};

// Implemented by the route table; called by the transport for each request.
class RequestHandler {
public:
    virtual ~RequestHandler() = default;
    virtual Response handle(const Request& request) = 0;
};

} // namespace handler::api
