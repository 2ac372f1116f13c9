// From what a harness plugin asked for (plugins::LaunchSpec) to what the container runtime
// runs (runtime::ContainerSpec): the harness's program wrapped in handler-shim, the
// session's control folder and handler's helper folder mounted, and the project as the
// working folder. Pure, so the exact container a session gets is unit-tested.
#pragma once

#include "core/paths.hpp"
#include "core/result.hpp"
#include "plugins/launch_spec.hpp"
#include "runtime/container_runtime.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace handler::sessions {

// The shim's name in the helper folder, and the socket it connects to inside.
inline constexpr const char* kShimProgram = "handler-shim";
inline constexpr const char* kControlSocketName = "control.sock";

struct LaunchContext {
    std::string session_id;
    std::filesystem::path project_path;
    std::string default_image; // for a harness that names none
    std::filesystem::path control_dir;
    std::filesystem::path helper_dir;
    bool tty = true;
    std::uint16_t rows = 24;
    std::uint16_t cols = 80;
    // Inside the container: the shim bridges 127.0.0.1:proxy_port to the session's
    // egress proxy socket, and the proxy variables point there. 0: none.
    std::uint16_t proxy_port = 0;
    // The stand-in for each key the harness asked for (secret_env), by secret name.
    std::map<std::string, std::string> stand_ins;
    // The control folder holds handler's CA (kCaCertificateName) and the system's CAs plus
    // it (kTrustBundleName): point every TLS library in the container at them.
    bool trust_ca = false;
    // Open mode: a real (user-mode) network besides the proxy. The proxy variables stay,
    // so keys are still put in, but what goes around the proxy is not seen.
    bool open_network = false;
    // The account's state folder on the host (made by the session service); empty when
    // the session has no account.
    std::filesystem::path account_state_dir;
    // The session's own state folder on the host; empty unless the harness keeps one.
    std::filesystem::path session_state_dir;
};

inline constexpr const char* kProxySocketName = "proxy.sock";
inline constexpr const char* kCaCertificateName = "ca.crt";
inline constexpr const char* kTrustBundleName = "ca-bundle.crt";

Result<runtime::ContainerSpec> container_spec(const plugins::LaunchSpec& launch,
                                              const LaunchContext& context);

// The CAs a session trusts besides handler's, for the hosts it reaches through a tunnel
// (no key of it goes there): those handlerd itself verifies upstreams with, OpenSSL's
// SSL_CERT_FILE when set, else the system's bundle. So what the session trusts is what
// handlerd trusts, however the machine's owner chose it.
std::filesystem::path system_trust_bundle(const GetEnv& getenv);

// Writes handler's CA (kCaCertificateName) and the system's CAs from `system_bundle` plus
// it (kTrustBundleName) into the session's control folder, for the container to trust.
// Read-only inside (the control folder is mounted so), and written before it starts.
Result<void> write_trust_files(const std::filesystem::path& control_dir, const std::string& ca_certificate_pem,
                               const std::filesystem::path& system_bundle);

// What addon `addon` contributes, added to the harness's `spec`: its variables, files
// and keys join the harness's, and the hosts it needs go to `addon_hosts` as rules (they
// join the session's allow-list; only the harness's own hosts pass in `none` mode). An
// addon adds and never replaces: one that sets the image, the program or the working
// folder, or a variable or file the harness (or an earlier addon) set, is refused,
// naming what.
Result<void> merge_addon(std::string_view addon, const plugins::LaunchSpec& contribution,
                         plugins::LaunchSpec& spec, std::vector<std::string>& addon_hosts);

} // namespace handler::sessions
