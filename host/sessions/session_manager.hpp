// The session service: one rootless container per session, its output, and the clients
// attached to it (docs/architecture.md, "Sessions").
//
// For each live session handlerd listens on <runtime>/sessions/<id>/control.sock; that
// folder is mounted read-only into the container, where handler-shim (the container's
// first process) owns the terminal and connects out to it (shim/include/handler/
// shim_protocol.hpp says why outward). Output goes to the session's output log, to a
// replay buffer for clients that attach late, and to every attached client; input from
// any client goes to the shim. Nothing of this lives in the container runtime: when
// handlerd stops, containers keep running, their shims keep the recent output, and the
// next handlerd re-adopts them with reconcile().
//
// Threading: all public calls on the io thread. Container commands (podman, hundreds of
// milliseconds each) run one at a time on a worker thread, in the order they were asked
// for, and their results are applied back on the io thread.
#pragma once

#include "api/event_hub.hpp"
#include "api/session_control.hpp"
#include "core/clock.hpp"
#include "network/policy.hpp"
#include "plugins/host_services.hpp"
#include "plugins/launch_spec.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/image_builder.hpp"
#include "sessions/harness_catalog.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace handler::store {
class Store;
}
namespace handler::secrets {
class SecretStore;
}
namespace handler::network {
class TlsContexts;
}

namespace handler::sessions {

struct SessionManagerOptions {
    std::filesystem::path control_root; // <runtime>/sessions
    std::filesystem::path output_root;  // <data>/sessions
    std::filesystem::path helper_dir;   // the folder holding handler-shim
    std::string default_image;          // for harnesses that name no image
    // The user's home folder, never a project: a start from there says what to do instead.
    std::filesystem::path home_dir;
    std::size_t replay_bytes = std::size_t{1} << 20;
    std::uint64_t log_limit_bytes = std::uint64_t{64} << 20;
    // What a session's events may take in the database: the program inside writes them,
    // so they are bounded like its output log. Past it, events stop (the log goes on).
    std::uint64_t events_limit_bytes = std::uint64_t{64} << 20;
    std::chrono::milliseconds stop_grace{10'000};
    // A headless session is stopped this long after it was created (zero: never), with an
    // error event saying why: nobody watches it, and a harness may retry without end.
    std::chrono::milliseconds headless_timeout{0};
    // After the shim's connection drops without an exit, how long until the container
    // is inspected (a container that died with its shim sends no exit).
    std::chrono::milliseconds lost_link_check{1'500};
    // Non-empty: start() refuses with this (handlerd running as root: agents never do).
    std::string refuse_sessions;
    // The egress proxy: the port the shim listens on inside (0: no proxy, no network at
    // all), names resolved to fixed addresses (the [network] resolve test setting), and
    // how long `--network learn` lets everything through.
    std::uint16_t proxy_port = 3128;
    std::map<std::string, std::vector<network::Address>> resolve;
    std::map<std::string, network::HostPort> resolve_endpoints; // "name:port" -> address:port
    std::chrono::milliseconds learn_window{15 * 60 * 1000};
    // Keys (docs/network.md, "Keys"): where the real values are, the proxy's TLS side,
    // the CA certificate containers trust, and the system's own CAs to trust with it.
    // Null/empty: sessions get no keys (a harness that asks for one is refused).
    secrets::SecretStore* secret_store = nullptr;
    network::TlsContexts* tls = nullptr;
    std::filesystem::path image_build_dir; // private; where harness images are built
    // Where accounts keep their own state (a harness's login), a folder per account id,
    // mounted read-write into that account's sessions when the harness asks. Empty: none.
    std::filesystem::path account_state_root;
    std::string ca_certificate_pem;
    std::filesystem::path system_ca_bundle = "/etc/ssl/certs/ca-certificates.crt";
};

class SessionManager final : public api::SessionControl, public plugins::PluginSessions {
public:
    // Everything passed must outlive the manager.
    SessionManager(boost::asio::io_context& io, store::Store& store,
                   runtime::ContainerRuntime& runtime, HarnessCatalog& harnesses,
                   api::EventHub& events, const Clock& clock, SessionManagerOptions options);
    ~SessionManager() override;
    SessionManager(const SessionManager&) = delete;
    SessionManager& operator=(const SessionManager&) = delete;

    // At start: re-adopts the running containers of live sessions, records the exit code
    // of those whose containers ended while no handlerd was watching, and marks the
    // rest lost. `done` runs on the io thread once every session has its state.
    void reconcile(std::function<void()> done = {});

    // handlerd is stopping: closes the control sockets and detaches every client.
    // Containers keep running for the next handlerd.
    void shut_down();

    Result<store::Session> start(const api::StartRequest& request) override;
    Result<store::Session> stop(std::string_view id) override;
    Result<void> remove(std::string_view id) override;
    Result<api::SessionLog> log(std::string_view id) override;

    Result<api::Attached> attach(std::string_view id, std::weak_ptr<api::TerminalClient> client,
                                 const api::AttachOptions& options) override;
    void detach(std::uint64_t attach_id) override;
    void input(std::uint64_t attach_id, std::string_view bytes) override;
    void input_eof(std::uint64_t attach_id) override;
    void resize(std::uint64_t attach_id, std::uint16_t rows, std::uint16_t cols) override;
    Result<void> answer(std::string_view id, std::string_view tool_call_id,
                        std::string_view option_id) override;
    // Conversations (docs/conversations.md).
    Result<api::SubmittedPrompt> prompt(std::string_view id, const api::Prompt& prompt) override;
    Result<void> withdraw(std::string_view id, std::string_view prompt_id) override;
    Result<void> cancel(std::string_view id) override;
    // A new container for the same session: the same agent (or harness), model, thinking
    // level, network mode and MCP servers, continuing the harness's own conversation (the
    // last harnessSessionId its parser reported) from the session's state folder.
    Result<store::Session> resume(std::string_view id) override;
    Result<api::Applied> configure(std::string_view id, std::string_view name, std::string_view value) override;
    // Image builds (docs/api.md, "Images"); any thread.
    std::vector<api::ImageBuild> image_builds() const override;
    Result<store::Session> set_network(std::string_view id, std::string_view mode,
                                       std::optional<std::int64_t> minutes) override;

    // plugins::PluginSessions, for plugins' host services; any thread. A session uses a
    // plugin when it is its harness or one of its agent's addons, and it must be live.
    // An allowed host joins the session's addon hosts (kept with the session, shown with
    // it), recorded on the io thread. A rule naming a loopback, private, link-local or
    // this machine's own address is refused: those only the user may allow.
    Result<std::size_t> allow_host(const std::string& plugin_id, const std::string& session_id,
                                   const std::string& rule, const std::string& reason) override;
    Result<std::string> stand_in(const std::string& plugin_id, const std::string& session_id,
                                 const std::string& kind) override;

    // Every session's proxy connections: the most open at once since the last call
    // (the sum of each proxy's own peak, so at least the true one) and those open now.
    struct ProxyConnections {
        std::size_t peak = 0;
        std::size_t open = 0;
    };
    ProxyConnections take_proxy_connections();

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

} // namespace handler::sessions
