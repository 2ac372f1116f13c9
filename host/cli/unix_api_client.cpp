#include "api/client.hpp"
#include "cli/api_client.hpp"

namespace handler::cli {
namespace {

class UnixSocketClient final : public ApiClient {
public:
    UnixSocketClient(std::filesystem::path socket, unsigned timeout_ms)
        : socket_(std::move(socket)), timeout_ms_(timeout_ms) {}

    Result<api::Response> call(std::string_view method, std::string_view target,
                               std::string_view body) override {
        return api::client::request(socket_, std::string(method), std::string(target),
                                    std::string(body), timeout_ms_);
    }

    Result<api::client::TerminalEnd> attach(std::string_view target,
                                            api::client::TerminalHooks& hooks) override {
        return api::client::attach_terminal(socket_, target, hooks, timeout_ms_);
    }

private:
    std::filesystem::path socket_;
    unsigned timeout_ms_;
};

} // namespace

std::unique_ptr<ApiClient> make_unix_socket_client(std::filesystem::path socket,
                                                   unsigned timeout_ms) {
    return std::make_unique<UnixSocketClient>(std::move(socket), timeout_ms);
}

} // namespace handler::cli
