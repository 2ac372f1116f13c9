// How the CLI reaches handlerd. An interface so the CLI's commands are unit-tested
// against a fake daemon; the real one speaks HTTP over the unix socket.
#pragma once

#include "api/client.hpp"
#include "api/http_types.hpp"
#include "core/result.hpp"

#include <filesystem>
#include <memory>
#include <string_view>

namespace handler::cli {

class ApiClient {
public:
    virtual ~ApiClient() = default;
    // Error{unavailable} when handlerd does not answer; any HTTP status is a Response.
    virtual Result<api::Response> call(std::string_view method, std::string_view target,
                                       std::string_view body) = 0;
    // The terminal WebSocket of a session (api::client::attach_terminal).
    virtual Result<api::client::TerminalEnd> attach(std::string_view target,
                                                    api::client::TerminalHooks& hooks) {
        (void)target;
        (void)hooks;
        return make_error(ErrorCode::unavailable, "this client cannot attach to terminals");
    }
};

std::unique_ptr<ApiClient> make_unix_socket_client(std::filesystem::path socket,
                                                   unsigned timeout_ms);

} // namespace handler::cli
