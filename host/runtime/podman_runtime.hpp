// ContainerRuntime over the podman CLI (rootless; docs/containers.md lists every flag
// and why). Each call is one podman command through a CommandRunner, so the unit tests
// assert the exact command line with a fake and parse real podman output samples.
#pragma once

#include "core/paths.hpp"
#include "runtime/confinement.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/process.hpp"

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace handler::runtime {

struct PodmanOptions {
    std::string program = "podman";
    // No mount may be this folder or one of its parents (which would show all of it);
    // folders inside it, where projects usually live, are fine.
    std::filesystem::path home;
    // Folders no mount may touch at all: equal, parent or inside. Secrets and the
    // machinery that controls containers (the podman socket, its storage, handler's data).
    std::vector<std::filesystem::path> protected_paths;
    // HOME inside the container: an empty private tmpfs, never the user's home.
    std::string container_home = "/home/agent";
    // Sizes and process and memory limits (runtime/confinement.hpp).
    SessionLimits limits;
    // Where the sessions' seccomp profile is written (runtime/seccomp_profile.hpp) before
    // the first container starts.
    std::filesystem::path seccomp_profile;
    // What `podman info` would say about confinement here; unset: asked before the first
    // container starts. Set by tests.
    std::optional<HostConfinement> host;
    std::int64_t command_timeout_ms = 60'000;

    // The protections for a user whose home is `home` and whose Handler folders are
    // `paths` (the seccomp profile goes in its data folder); `uid` names /run/user/UID,
    // where the podman socket lives.
    static PodmanOptions for_user(const std::filesystem::path& home, const Paths& paths,
                                  unsigned uid);
};

class PodmanRuntime final : public ContainerRuntime {
public:
    PodmanRuntime(CommandRunner& runner, PodmanOptions options);

    Result<std::string> create_and_start(const ContainerSpec& spec) override;
    Result<ExecResult> run_task(const ContainerSpec& spec, const TaskOptions& options) override;
    Result<ExecResult> exec(const std::string& id, const ExecRequest& request) override;
    Result<void> stop(const std::string& id, std::chrono::milliseconds grace) override;
    Result<void> remove(const std::string& id) override;
    Result<ContainerInfo> inspect(const std::string& id) override;
    Result<std::vector<ContainerInfo>> list(const std::string& selector) override;
    Result<bool> image_exists(const std::string& reference) override;
    Result<void> import_image(const std::filesystem::path& tarball,
                              const std::string& reference) override;
    Result<void> build_image(const std::filesystem::path& context_dir,
                             const std::string& reference) override;
    Result<void> build_image_streaming(const std::filesystem::path& context_dir, const std::string& reference,
                                       const std::function<void(std::string_view)>& on_output) override;
    Result<std::vector<std::string>> image_tags(const std::string& repository) override;
    Result<void> remove_image(const std::string& reference) override;
    std::vector<LimitReport> limits() override;

    // The `podman run` argv for `spec`, after validation. Public so tests and
    // `handler doctor`-style tools can show exactly what would run. Needs the machine's
    // confinement: options' host, or the one create_and_start asked podman for.
    Result<std::vector<std::string>> run_command(const ContainerSpec& spec) const;
    // The `podman run` argv of run_task: the same confinement, in the foreground.
    Result<std::vector<std::string>> task_command(const ContainerSpec& spec, const TaskOptions& options) const;

private:
    enum class RunKind { session = 1, task };
    Result<std::vector<std::string>> command_for(const ContainerSpec& spec, RunKind kind,
                                                 const TaskOptions* task) const;
    Result<CommandResult> podman(std::vector<std::string> arguments,
                                 std::int64_t timeout_ms = 0,
                                 std::optional<std::string> stdin_data = std::nullopt);
    // A podman command that only asks (ps, inspect, image exists): a stopping handlerd
    // does not wait for its answer (CommandRequest::abandon_when_stopping).
    Result<CommandResult> query(std::vector<std::string> arguments);
    Result<CommandResult> run_request(CommandRequest request);
    Result<std::filesystem::path> check_mount_source(const std::filesystem::path& path,
                                                     std::string_view what) const;
    Result<void> add_mounts(const ContainerSpec& spec, std::set<std::filesystem::path>& destinations,
                            std::vector<std::string>& argv) const;
    // Learns the machine's confinement (once) and writes the seccomp profile (once):
    // without them no container starts.
    Result<void> prepare_confinement();

    CommandRunner& runner_;
    PodmanOptions options_;
    mutable std::mutex confinement_mutex_;
    std::optional<HostConfinement> host_;
    bool profile_written_ = false;
};

// Parsers for podman's JSON, exposed for the tests that feed them real output.
Result<ContainerInfo> parse_podman_inspect(std::string_view json);
Result<std::vector<ContainerInfo>> parse_podman_ps(std::string_view json);
// The "repository:tag" names in `podman images --format json` that are in `repository`.
Result<std::vector<std::string>> parse_podman_image_names(std::string_view json, std::string_view repository);

// The container name for a session: handler-<session id>.
std::string container_name(std::string_view session_id);

} // namespace handler::runtime
