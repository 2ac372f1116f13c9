// The container engine behind one interface, so sessions can be tested with a fake and
// the podman specifics (its command line, its JSON) stay in podman_runtime.*. Every
// container Handler starts is labelled, which is how a restarted handlerd finds the
// containers that outlived it (conmon keeps them running) and re-adopts them.
#pragma once

#include "core/result.hpp"
#include "runtime/confinement.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::runtime {

// Labels on every container Handler starts.
inline constexpr const char* kManagedLabel = "io.handler.managed"; // value "1"
inline constexpr const char* kSessionLabel = "io.handler.session"; // value: the session id
// Selects every container Handler manages, for list() at start-up.
inline constexpr const char* kManagedSelector = "io.handler.managed=1";

// Where handlerd's own folders appear inside every session container (read-only).
inline constexpr const char* kControlMountPoint = "/run/handler"; // the shim's socket
inline constexpr const char* kHelperMountPoint = "/opt/handler";  // handler-shim and co.
inline constexpr const char* kAccountStateMountPoint = "/var/lib/handler/account"; // read-write
inline constexpr const char* kAccountStateFolder = "account-state"; // <data>/account-state/<id>
// A session's own state (a conversation's transcript, for its resume), read-write.
inline constexpr const char* kSessionStateMountPoint = "/var/lib/handler/session";
inline constexpr const char* kSessionStateFolder = "state"; // <data>/sessions/<id>/state
// Debian's (and most distributions') system trust store, where a session's trust bundle
// goes so tools that read only the system store trust handler's CA too.
inline constexpr const char* kSystemTrustStore = "/etc/ssl/certs/ca-certificates.crt";

// Zero is never valid (STYLE.md): a zero-filled value reads as a mistake.
enum class NetworkMode {
    none = 1,        // loopback only; the session's way out is a mounted unix socket
    slirp4netns = 2, // user-mode network (needs a usable /dev/net/tun)
};

enum class ContainerState { created = 1, running, paused, exited, unknown };

struct EnvEntry {
    std::string name;
    std::string value;
    friend bool operator==(const EnvEntry&, const EnvEntry&) = default;
};

// A host folder visible read-only inside (knowledge folders, the egress socket's folder).
struct ReadOnlyMount {
    std::filesystem::path host_path;
    std::filesystem::path container_path; // empty: the same path as on the host
    friend bool operator==(const ReadOnlyMount&, const ReadOnlyMount&) = default;
};

// What one session's container runs and sees. Plain values; the runtime validates them.
struct ContainerSpec {
    std::string session_id;            // [A-Za-z0-9][A-Za-z0-9_.-]{0,63}; names the container
    std::string image;                 // a local image reference; never pulled
    std::vector<std::string> argv;     // argv[0] is the program
    std::vector<EnvEntry> env;         // in order; a later entry of one name wins
    std::filesystem::path workdir;     // empty: the project folder
    std::filesystem::path project_path; // mounted read-write at the same absolute path
    // Mounted read-only instead: a task that only reads the project (the Changes).
    bool project_read_only = false;
    std::vector<ReadOnlyMount> read_only_mounts;
    // Folders handlerd provides for this session alone, mounted read-only at the fixed
    // places above: the session's control folder (where handlerd listens for the shim)
    // and the folder of handler's in-container helper programs. The control folder lives
    // in handler's runtime folder, which the protected-paths rule would refuse, so it is
    // named here rather than in read_only_mounts, and must be named after the session:
    // a bug can then never show the whole runtime folder (and the API socket) inside.
    // Empty: not mounted.
    std::filesystem::path control_dir;
    std::filesystem::path helper_dir;
    // The account's own state (a harness's login), read-write at kAccountStateMountPoint;
    // handlerd's, one per account, so checked like the control folder. Empty: none.
    std::filesystem::path account_state_dir;
    // The session's own state, read-write at kSessionStateMountPoint: <data>/sessions/
    // <session id>/state, checked to be this session's. Empty: none.
    std::filesystem::path session_state_dir;
    // A file directly in control_dir, mounted read-only over kSystemTrustStore: the
    // system's CAs plus handler's own (docs/network.md, "Keys"). Empty: not mounted.
    std::filesystem::path trust_bundle;
    NetworkMode network = NetworkMode::none;
    bool tty = false;         // allocate a terminal (interactive harnesses)
    bool interactive = false; // keep stdin open
    std::map<std::string, std::string> labels; // extra labels; io.handler.* is reserved
    // A PID-1 init that forwards signals and reaps zombies (podman --init, catatonit).
    // Only a test would turn it off.
    bool init = true;
};

struct ExecRequest {
    std::vector<std::string> argv;
    std::vector<EnvEntry> env;
    std::filesystem::path workdir; // empty: the container's
    std::optional<std::string> stdin_data;
    std::int64_t timeout_ms = 60'000;
};

struct ExecResult {
    int exit_code = 0;
    std::string stdout_text;
    std::string stderr_text;
};

// A container that runs one task to its end (run_task): in the foreground, removed once
// it ends, killed when it runs longer than `timeout_ms`.
struct TaskOptions {
    std::int64_t timeout_ms = 30'000;
    std::size_t output_limit_bytes = std::size_t{16} << 20; // stdout or stderr; more fails
};

// The label on a task's container instead of kManagedLabel: start-up's list() never takes
// one for a session's. Its value names the task ("changes").
inline constexpr const char* kTaskLabel = "io.handler.task";

struct ContainerInfo {
    std::string id;   // the full id
    std::string name; // handler-<session id>
    std::string image;
    ContainerState state = ContainerState::unknown;
    int exit_code = 0; // meaningful once exited
    std::map<std::string, std::string> labels;

    // The io.handler.session label; empty for a container that lacks it.
    std::string session_id() const;
};

class ContainerRuntime {
public:
    virtual ~ContainerRuntime() = default;

    // Creates and starts the session's container detached; returns its id.
    virtual Result<std::string> create_and_start(const ContainerSpec& spec) = 0;
    // Runs `spec` to its end under a session's confinement (the same flags) and returns
    // what it printed; the container is named handler-task-<spec.session_id>, labelled
    // kTaskLabel (never kManagedLabel) and removed when it ends.
    virtual Result<ExecResult> run_task(const ContainerSpec& spec, const TaskOptions& options) = 0;
    // Runs a command in a running container and waits for it.
    virtual Result<ExecResult> exec(const std::string& id, const ExecRequest& request) = 0;
    // SIGTERM to the init, then SIGKILL after `grace`. Stopping a stopped one is fine.
    virtual Result<void> stop(const std::string& id, std::chrono::milliseconds grace) = 0;
    // Removes the container (stopping it first if needed). not_found if there is none.
    virtual Result<void> remove(const std::string& id) = 0;
    // not_found if there is no such container.
    virtual Result<ContainerInfo> inspect(const std::string& id) = 0;
    // Every container (running or not) carrying the label `selector` ("key=value").
    virtual Result<std::vector<ContainerInfo>> list(const std::string& selector) = 0;
    virtual Result<bool> image_exists(const std::string& reference) = 0;
    // Makes image `reference` from a root filesystem tarball (no registry needed).
    virtual Result<void> import_image(const std::filesystem::path& tarball,
                                      const std::string& reference) = 0;
    // Builds image `reference` from `context_dir`/Containerfile (FROM an image that is
    // already here; RUN steps may download, so the build has a network).
    virtual Result<void> build_image(const std::filesystem::path& context_dir,
                                     const std::string& reference) = 0;
    // The same, telling `on_output` what the build prints as it prints it. The default
    // builds quietly and says nothing (runtimes that cannot stream).
    virtual Result<void> build_image_streaming(const std::filesystem::path& context_dir,
                                               const std::string& reference,
                                               const std::function<void(std::string_view)>& on_output) {
        (void)on_output;
        return build_image(context_dir, reference);
    }
    // Every "repository:tag" of images in `repository` ("localhost/handler-codex").
    virtual Result<std::vector<std::string>> image_tags(const std::string& repository) = 0;
    // Removes the image `reference` unless a container (running or not) uses it: then
    // conflict, and the image stays.
    virtual Result<void> remove_image(const std::string& reference) = 0;
    // The limits the containers it starts run under, and which of them hold on this
    // machine; empty until it has started one (only then does it know the machine).
    virtual std::vector<LimitReport> limits() = 0;
};

std::string_view to_string(ContainerState state);
std::string_view to_string(NetworkMode mode);

} // namespace handler::runtime
