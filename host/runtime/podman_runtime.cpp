#include "runtime/podman_runtime.hpp"

#include "core/text.hpp"
#include "runtime/seccomp_profile.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>

namespace handler::runtime {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr std::string_view kSetupHint =
    "Check rootless podman for this user: `podman info` must work (subordinate ids in "
    "/etc/subuid, XDG_RUNTIME_DIR set); see docs/containers.md.";

bool valid_session_id(std::string_view id) {
    if (id.empty() || id.size() > 64 || !std::isalnum(static_cast<unsigned char>(id[0])))
        return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
}

using text::valid_env_name;

// A container id or name as podman prints them. Refusing a leading '-' keeps a value
// from being read as an option.
bool valid_container_ref(std::string_view ref) {
    if (ref.empty() || ref.size() > 128 || ref[0] == '-') return false;
    return std::all_of(ref.begin(), ref.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
}

bool valid_image_ref(std::string_view ref) {
    if (ref.empty() || ref[0] == '-' || ref.size() > 255) return false;
    return std::none_of(ref.begin(), ref.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c));
    });
}

// `--volume SRC:DST:OPTIONS` splits on ':' and `--tmpfs`/`--mount` on ','; a path with
// either would be read as something else, so such paths are refused, not escaped.
bool safe_for_volume(const fs::path& path) {
    const std::string& text = path.native();
    return text.find_first_of(":,\n") == std::string::npos;
}

// A folder of handlerd's to mount read-write (an account's or a session's state): where it
// really is, once it is known to exist, be absolute and fit a volume argument. `what`
// names it in the error.
Result<fs::path> existing_folder(const fs::path& folder, const std::string& what) {
    std::error_code error;
    fs::path real = fs::canonical(folder, error);
    if (error || !fs::is_directory(real, error) || !folder.is_absolute() || !safe_for_volume(real))
        return make_error(ErrorCode::invalid_argument, what + " '" + folder.string() + "' is not an existing absolute folder");
    return real;
}

// `ancestor` is `path` or one of its parents (both absolute and normal).
bool is_within(const fs::path& path, const fs::path& ancestor) {
    auto [end_ancestor, end_path] =
        std::mismatch(ancestor.begin(), ancestor.end(), path.begin(), path.end());
    (void)end_path;
    return end_ancestor == ancestor.end();
}

// Lexically normal, without a trailing separator ("/a/b/" is "/a/b"), so that paths
// compare element by element.
fs::path normal_absolute(const fs::path& path) {
    fs::path normal = path.lexically_normal();
    if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
    return normal;
}

fs::path best_canonical(const fs::path& path) {
    std::error_code error;
    fs::path resolved = fs::weakly_canonical(path, error);
    return error ? normal_absolute(path) : resolved;
}

// The podman sub-command ("podman run") and the container or session, for messages.
std::string command_name(const std::vector<std::string>& argv) {
    std::string name = argv.empty() ? "podman" : argv[0];
    for (std::size_t i = 1; i < argv.size(); ++i) {
        if (argv[i].starts_with('-')) break;
        name += ' ' + argv[i];
        if (argv[i] != "container" && argv[i] != "image") break;
    }
    return name;
}

std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    std::size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
    return text.substr(start);
}

bool says_not_found(const std::string& text) {
    return text.find("no such container") != std::string::npos ||
           text.find("no such object") != std::string::npos ||
           text.find("no container with name or ID") != std::string::npos;
}

Error command_failed(const std::vector<std::string>& argv, const CommandResult& result,
                     std::string_view subject) {
    std::string stderr_text = trimmed(result.stderr_text);
    if (stderr_text.size() > 2000) stderr_text = stderr_text.substr(0, 2000) + " ...";
    ErrorCode code = says_not_found(stderr_text) ? ErrorCode::not_found : ErrorCode::unavailable;
    std::string message = "`" + command_name(argv) + "`";
    if (!subject.empty()) message += " for " + std::string(subject);
    message += " failed (exit " + std::to_string(result.exit_code) + "): " +
               (stderr_text.empty() ? std::string("no error output") : stderr_text) + ".";
    if (code != ErrorCode::not_found) message += " " + std::string(kSetupHint);
    return make_error(code, std::move(message));
}

ContainerState state_from(std::string_view status) {
    if (status == "running") return ContainerState::running;
    if (status == "exited" || status == "stopped") return ContainerState::exited;
    if (status == "created" || status == "configured" || status == "initialized")
        return ContainerState::created;
    if (status == "paused") return ContainerState::paused;
    return ContainerState::unknown;
}

std::string string_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value && value->is_string() ? std::string(value->get_string()) : std::string();
}

int int_at(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    if (!value) return 0;
    if (value->is_int64()) return static_cast<int>(value->get_int64());
    if (value->is_uint64()) return static_cast<int>(value->get_uint64());
    return 0;
}

std::map<std::string, std::string> labels_at(const json::object& object, std::string_view key) {
    std::map<std::string, std::string> labels;
    const json::value* value = object.if_contains(key);
    if (!value || !value->is_object()) return labels;
    for (const auto& [name, label] : value->get_object())
        if (label.is_string()) labels.emplace(std::string(name), std::string(label.get_string()));
    return labels;
}

Result<json::array> parse_array(std::string_view text, std::string_view what) {
    boost::system::error_code error;
    json::value value = json::parse(text, error);
    if (error || !value.is_array())
        return make_error(ErrorCode::internal,
                          "could not read the JSON of `" + std::string(what) + "`" +
                              (error ? ": " + error.message() : ": not a JSON array") +
                              ". Is this podman 4.x?");
    return std::move(value.get_array());
}

} // namespace

std::string ContainerInfo::session_id() const {
    auto found = labels.find(kSessionLabel);
    return found == labels.end() ? std::string() : found->second;
}

std::string_view to_string(ContainerState state) {
    switch (state) {
    case ContainerState::created: return "created";
    case ContainerState::running: return "running";
    case ContainerState::paused: return "paused";
    case ContainerState::exited: return "exited";
    case ContainerState::unknown: break;
    }
    return "unknown";
}

std::string_view to_string(NetworkMode mode) {
    switch (mode) {
    case NetworkMode::none: return "none";
    // Said explicitly though it is the default: the host's loopback (handlerd's API
    // port, other local services) must stay out of reach even in open mode.
    case NetworkMode::slirp4netns: return "slirp4netns:allow_host_loopback=false";
    }
    return "invalid";
}

std::string container_name(std::string_view session_id) {
    return "handler-" + std::string(session_id);
}

PodmanOptions PodmanOptions::for_user(const fs::path& home, const Paths& paths, unsigned uid) {
    PodmanOptions options;
    options.home = home;
    options.seccomp_profile = paths.data_dir / "session-seccomp.json";
    options.protected_paths = {
        home / ".ssh",
        home / ".aws",
        home / ".gnupg",
        home / ".config" / "containers",
        home / ".local" / "share" / "containers", // podman's storage: images, other containers
        paths.config_dir,
        paths.data_dir,
        paths.runtime_dir,
        paths.runtime_dir.parent_path(), // XDG_RUNTIME_DIR: the podman socket lives there
        fs::path("/run/user") / std::to_string(uid),
        "/run/podman",
        "/var/run/docker.sock",
    };
    return options;
}

PodmanRuntime::PodmanRuntime(CommandRunner& runner, PodmanOptions options)
    : runner_(runner), options_(std::move(options)), host_(options_.host) {}

Result<void> PodmanRuntime::prepare_confinement() {
    std::lock_guard lock(confinement_mutex_);
    if (!host_) {
        auto result = query({"info", "--format", "json"});
        if (!result) return result.take_error();
        std::vector<std::string> argv = {options_.program, "info", "--format", "json"};
        if (result->exit_code != 0) return command_failed(argv, *result, "");
        auto host = parse_host_confinement(result->stdout_text);
        if (!host) return host.take_error();
        host_ = std::move(*host);
    }
    if (profile_written_) return {};
    if (!host_->seccomp_enabled)
        return make_error(ErrorCode::unavailable,
                          "podman reports seccomp as off on this machine (`podman info`: seccompEnabled "
                          "false); Handler starts no session without its seccomp profile (docs/security.md)");
    if (options_.seccomp_profile.empty() || host_->seccomp_profile_path.empty())
        return make_error(ErrorCode::unavailable,
                          "no seccomp profile to build on: `podman info` names none (seccompProfilePath)");
    if (auto written = write_session_profile(host_->seccomp_profile_path, options_.seccomp_profile); !written)
        return written.take_error();
    profile_written_ = true;
    return {};
}

std::vector<LimitReport> PodmanRuntime::limits() {
    std::lock_guard lock(confinement_mutex_);
    return host_ ? describe_limits(options_.limits, *host_) : std::vector<LimitReport>{};
}

Result<CommandResult> PodmanRuntime::podman(std::vector<std::string> arguments,
                                            std::int64_t timeout_ms,
                                            std::optional<std::string> stdin_data) {
    CommandRequest request;
    request.argv = std::move(arguments);
    request.argv.insert(request.argv.begin(), options_.program);
    request.timeout_ms = timeout_ms > 0 ? timeout_ms : options_.command_timeout_ms;
    request.stdin_data = std::move(stdin_data);
    return run_request(std::move(request));
}

Result<CommandResult> PodmanRuntime::query(std::vector<std::string> arguments) {
    CommandRequest request;
    request.argv = std::move(arguments);
    request.argv.insert(request.argv.begin(), options_.program);
    request.timeout_ms = options_.command_timeout_ms;
    request.abandon_when_stopping = true;
    return run_request(std::move(request));
}

Result<CommandResult> PodmanRuntime::run_request(CommandRequest request) {
    auto result = runner_.run(request);
    if (!result) {
        Error error = result.take_error();
        error.message = "`" + command_name(request.argv) + "`: " + error.message;
        return error;
    }
    return result;
}

Result<fs::path> PodmanRuntime::check_mount_source(const fs::path& path,
                                                   std::string_view what) const {
    std::string name(what);
    if (path.empty() || !path.is_absolute())
        return make_error(ErrorCode::invalid_argument,
                          name + " must be an absolute path, got '" + path.string() + "'");
    std::error_code error;
    fs::path resolved = fs::canonical(path, error);
    if (error || !fs::is_directory(resolved, error))
        return make_error(ErrorCode::invalid_argument,
                          name + " '" + path.string() + "' is not an existing folder");
    if (!safe_for_volume(resolved) || !safe_for_volume(normal_absolute(path)))
        return make_error(ErrorCode::invalid_argument,
                          name + " '" + path.string() +
                              "' contains ':', ',' or a newline, which podman's mount syntax "
                              "cannot carry; rename or move the folder");
    // Checked on both the path as given and where its symlinks lead.
    for (const fs::path& candidate : {normal_absolute(path), resolved}) {
        if (!options_.home.empty() && is_within(best_canonical(options_.home), candidate))
            return make_error(ErrorCode::forbidden,
                              name + " '" + path.string() +
                                  "' would show the whole home folder inside the container; "
                                  "use a folder inside it");
        for (const fs::path& protected_path : options_.protected_paths) {
            if (protected_path.empty()) continue;
            fs::path guarded = best_canonical(protected_path);
            if (is_within(guarded, candidate) || is_within(candidate, guarded))
                return make_error(ErrorCode::forbidden,
                                  name + " '" + path.string() + "' overlaps '" +
                                      guarded.string() +
                                      "', which a session must never see; choose another folder");
        }
    }
    return resolved;
}

Result<std::vector<std::string>> PodmanRuntime::run_command(const ContainerSpec& spec) const {
    return command_for(spec, RunKind::session, nullptr);
}

Result<std::vector<std::string>> PodmanRuntime::task_command(const ContainerSpec& spec,
                                                             const TaskOptions& options) const {
    return command_for(spec, RunKind::task, &options);
}

Result<std::vector<std::string>> PodmanRuntime::command_for(const ContainerSpec& spec, RunKind kind,
                                                            const TaskOptions* task) const {
    if (!valid_session_id(spec.session_id))
        return make_error(ErrorCode::invalid_argument,
                          "session id '" + spec.session_id +
                              "' is not usable in a container name (letters, digits, '_', '.', "
                              "'-'; at most 64, starting with a letter or digit)");
    if (!valid_image_ref(spec.image))
        return make_error(ErrorCode::invalid_argument,
                          "image reference '" + spec.image + "' is empty or malformed");
    if (spec.argv.empty() || spec.argv.front().empty())
        return make_error(ErrorCode::invalid_argument,
                          "session " + spec.session_id + ": nothing to run (empty argv)");
    if (spec.network != NetworkMode::none && spec.network != NetworkMode::slirp4netns)
        return make_error(ErrorCode::invalid_argument,
                          "session " + spec.session_id + ": unknown network mode");

    auto project = check_mount_source(spec.project_path, "project folder");
    if (!project) return project.take_error();
    const fs::path project_inside = normal_absolute(spec.project_path);

    fs::path workdir = spec.workdir.empty() ? project_inside : normal_absolute(spec.workdir);
    if (!workdir.is_absolute())
        return make_error(ErrorCode::invalid_argument,
                          "working folder '" + spec.workdir.string() + "' must be absolute");

    std::vector<std::string> argv;
    if (kind == RunKind::session) {
        argv = {
            "run",
            "--detach",
            "--name", container_name(spec.session_id),
            "--label", std::string(kManagedLabel) + "=1",
            "--label", std::string(kSessionLabel) + "=" + spec.session_id,
        };
    } else {
        // In the foreground, removed at its end, and killed by conmon at its time limit
        // even if handlerd (the podman client's parent) is gone by then.
        const auto seconds = (std::max<std::int64_t>(task->timeout_ms, 1000) + 999) / 1000;
        argv = {
            "run",
            "--rm",
            "--name", "handler-task-" + spec.session_id,
            "--label", std::string(kTaskLabel) + "=" + spec.session_id,
            "--timeout=" + std::to_string(seconds),
        };
    }
    for (const auto& [key, value] : spec.labels) {
        if (key.empty() || key.starts_with("io.handler.") ||
            key.find_first_of("=\n") != std::string::npos)
            return make_error(ErrorCode::invalid_argument,
                              "label '" + key + "' is empty, malformed or reserved (io.handler.*)");
        argv.insert(argv.end(), {"--label", key + "=" + value});
    }
    std::optional<HostConfinement> host;
    {
        std::lock_guard lock(confinement_mutex_);
        host = host_;
    }
    if (!host || options_.seccomp_profile.empty())
        return make_error(ErrorCode::internal, "session " + spec.session_id +
                                                   ": this machine's confinement is not known yet (podman info)");
    argv.insert(argv.end(), {
        "--pull=never",
        "--userns=keep-id",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
        "--network=" + std::string(to_string(spec.network)),
    });
    const auto confined = confinement_arguments(options_.limits, *host, options_.seccomp_profile,
                                                options_.container_home);
    argv.insert(argv.end(), confined.begin(), confined.end());
    argv.push_back("--volume=" + project->string() + ":" + project_inside.string() +
                   (spec.project_read_only ? ":ro" : ":rw"));
    if (spec.init) argv.emplace_back("--init");

    std::set<fs::path> destinations = {project_inside};
    if (auto mounted = add_mounts(spec, destinations, argv); !mounted) return mounted.take_error();

    argv.push_back("--workdir=" + workdir.string());
    if (spec.tty) argv.emplace_back("--tty");
    if (spec.interactive) argv.emplace_back("--interactive");
    // HOME first so a spec's own HOME (a later --env of the same name) still wins.
    argv.push_back("--env=HOME=" + options_.container_home);
    for (const EnvEntry& entry : spec.env) {
        if (!valid_env_name(entry.name))
            return make_error(ErrorCode::invalid_argument,
                              "environment variable name '" + entry.name + "' is not valid");
        argv.push_back("--env=" + entry.name + "=" + entry.value);
    }
    argv.push_back(spec.image);
    argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
    return argv;
}

// Every mount but the project's: read-only folders, the session's control folder (and
// the trust bundle in it), the helper programs and the account's state. `destinations`
// holds the mount points taken so far; two mounts at one point are refused.
Result<void> PodmanRuntime::add_mounts(const ContainerSpec& spec, std::set<fs::path>& destinations,
                                       std::vector<std::string>& argv) const {
    for (const ReadOnlyMount& mount : spec.read_only_mounts) {
        auto source = check_mount_source(mount.host_path, "read-only mount");
        if (!source) return source.take_error();
        fs::path destination = mount.container_path.empty()
                                   ? normal_absolute(mount.host_path)
                                   : normal_absolute(mount.container_path);
        if (!destination.is_absolute() || !safe_for_volume(destination))
            return make_error(ErrorCode::invalid_argument,
                              "mount destination '" + destination.string() +
                                  "' must be absolute and free of ':' and ','");
        if (!destinations.insert(destination).second)
            return make_error(ErrorCode::conflict,
                              "two mounts at '" + destination.string() + "'");
        argv.push_back("--volume=" + source->string() + ":" + destination.string() + ":ro");
    }

    if (!spec.control_dir.empty()) {
        std::error_code error;
        const fs::path control = fs::canonical(spec.control_dir, error);
        if (error || !fs::is_directory(control, error) || !spec.control_dir.is_absolute())
            return make_error(ErrorCode::invalid_argument,
                              "session control folder '" + spec.control_dir.string() +
                                  "' is not an existing absolute folder");
        if (control.filename() != spec.session_id || !safe_for_volume(control))
            return make_error(ErrorCode::invalid_argument,
                              "session control folder '" + spec.control_dir.string() +
                                  "' must be a folder named after session " + spec.session_id);
        if (!destinations.insert(kControlMountPoint).second)
            return make_error(ErrorCode::conflict,
                              std::string("two mounts at '") + kControlMountPoint + "'");
        argv.push_back("--volume=" + control.string() + ":" + kControlMountPoint + ":ro");
        if (!spec.trust_bundle.empty()) {
            const fs::path bundle = fs::canonical(spec.trust_bundle, error);
            if (error || bundle.parent_path() != control || !fs::is_regular_file(bundle, error))
                return make_error(ErrorCode::invalid_argument,
                                  "trust bundle '" + spec.trust_bundle.string() +
                                      "' must be a file in the session's control folder");
            if (!destinations.insert(kSystemTrustStore).second)
                return make_error(ErrorCode::conflict, std::string("two mounts at '") + kSystemTrustStore + "'");
            argv.push_back("--volume=" + bundle.string() + ":" + kSystemTrustStore + ":ro");
        }
    } else if (!spec.trust_bundle.empty()) {
        return make_error(ErrorCode::invalid_argument, "a trust bundle needs the session's control folder");
    }
    if (!spec.helper_dir.empty()) {
        auto helpers = check_mount_source(spec.helper_dir, "helper program folder");
        if (!helpers) return helpers.take_error();
        if (!destinations.insert(kHelperMountPoint).second)
            return make_error(ErrorCode::conflict,
                              std::string("two mounts at '") + kHelperMountPoint + "'");
        argv.push_back("--volume=" + helpers->string() + ":" + kHelperMountPoint + ":ro");
    }

    if (!spec.account_state_dir.empty()) {
        auto checked = existing_folder(spec.account_state_dir, "account state folder");
        if (!checked) return checked.take_error();
        const fs::path& state = *checked;
        // Read-write, and beside handler's database and keys: only a folder that is
        // plainly one account's (account-state/<id>) may go in, so that a bug can never
        // show the data folder itself.
        const std::string id = state.filename().string();
        if (state.parent_path().filename() != kAccountStateFolder || id.empty() ||
            id.find_first_not_of("0123456789") != std::string::npos)
            return make_error(ErrorCode::invalid_argument, "account state folder '" + state.string() +
                                                               "' is not a folder " + kAccountStateFolder +
                                                               "/<account id>");
        if (!destinations.insert(kAccountStateMountPoint).second)
            return make_error(ErrorCode::conflict, std::string("two mounts at '") + kAccountStateMountPoint + "'");
        argv.push_back("--volume=" + state.string() + ":" + kAccountStateMountPoint + ":rw");
    }

    if (!spec.session_state_dir.empty()) {
        auto checked = existing_folder(spec.session_state_dir, "session state folder");
        if (!checked) return checked.take_error();
        const fs::path& state = *checked;
        // Read-write beside the session's output log: only this session's own folder.
        if (state.filename() != kSessionStateFolder || state.parent_path().filename() != spec.session_id ||
            spec.session_id.empty())
            return make_error(ErrorCode::invalid_argument, "session state folder '" + state.string() +
                                                               "' is not the folder <sessions>/" + spec.session_id +
                                                               "/" + kSessionStateFolder);
        if (!destinations.insert(kSessionStateMountPoint).second)
            return make_error(ErrorCode::conflict, std::string("two mounts at '") + kSessionStateMountPoint + "'");
        argv.push_back("--volume=" + state.string() + ":" + kSessionStateMountPoint + ":rw");
    }

    return {};
}

Result<std::string> PodmanRuntime::create_and_start(const ContainerSpec& spec) {
    if (auto prepared = prepare_confinement(); !prepared) {
        Error error = prepared.take_error();
        error.message = "session " + spec.session_id + " not started: " + error.message;
        return error;
    }
    auto arguments = run_command(spec);
    if (!arguments) return arguments.take_error();
    auto result = podman(*arguments);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        std::vector<std::string> argv = *arguments;
        argv.insert(argv.begin(), options_.program);
        return command_failed(argv, *result, "session " + spec.session_id);
    }
    // stdout is the id; warnings (such as ignored resource limits on cgroup v1) go to
    // stderr and are not errors.
    std::string id = trimmed(result->stdout_text);
    if (auto newline = id.rfind('\n'); newline != std::string::npos) id = id.substr(newline + 1);
    if (!valid_container_ref(id))
        return make_error(ErrorCode::internal, "`podman run` for session " + spec.session_id +
                                                   " printed no container id: '" + id + "'");
    return id;
}

Result<ExecResult> PodmanRuntime::run_task(const ContainerSpec& spec, const TaskOptions& options) {
    if (auto prepared = prepare_confinement(); !prepared) {
        Error error = prepared.take_error();
        error.message = "task " + spec.session_id + " not run: " + error.message;
        return error;
    }
    auto arguments = task_command(spec, options);
    if (!arguments) return arguments.take_error();
    CommandRequest request;
    request.argv = std::move(*arguments);
    request.argv.insert(request.argv.begin(), options_.program);
    // podman's own start and removal on top of the task's time (conmon kills it then).
    request.timeout_ms = options.timeout_ms + options_.command_timeout_ms;
    request.output_limit_bytes = options.output_limit_bytes;
    // A stopping handlerd does not wait for it: nobody reads the answer, and podman removes
    // the container when it ends (--rm, and conmon's --timeout ends it).
    request.abandon_when_stopping = true;
    auto result = run_request(request);
    if (!result) return result.take_error();
    // 125: podman itself failed (the image, a mount); 126, 127 and the rest are the task's.
    if (result->exit_code == 125) return command_failed(request.argv, *result, "task " + spec.session_id);
    return ExecResult{result->exit_code, std::move(result->stdout_text), std::move(result->stderr_text)};
}

Result<ExecResult> PodmanRuntime::exec(const std::string& id, const ExecRequest& request) {
    if (!valid_container_ref(id))
        return make_error(ErrorCode::invalid_argument, "container id '" + id + "' is malformed");
    if (request.argv.empty() || request.argv.front().empty())
        return make_error(ErrorCode::invalid_argument, "nothing to run (empty argv)");
    std::vector<std::string> arguments = {"exec"};
    if (request.stdin_data) arguments.emplace_back("--interactive");
    if (!request.workdir.empty()) {
        if (!request.workdir.is_absolute())
            return make_error(ErrorCode::invalid_argument,
                              "working folder '" + request.workdir.string() + "' must be absolute");
        arguments.push_back("--workdir=" + request.workdir.string());
    }
    for (const EnvEntry& entry : request.env) {
        if (!valid_env_name(entry.name))
            return make_error(ErrorCode::invalid_argument,
                              "environment variable name '" + entry.name + "' is not valid");
        arguments.push_back("--env=" + entry.name + "=" + entry.value);
    }
    arguments.push_back(id);
    arguments.insert(arguments.end(), request.argv.begin(), request.argv.end());
    auto result = podman(std::move(arguments), request.timeout_ms, request.stdin_data);
    if (!result) return result.take_error();
    // 125 is podman's own failure (no such container, not running); 126 and 127 (not
    // executable, not found) and anything else are the program's status, as in a shell.
    if (result->exit_code == 125)
        return command_failed({options_.program, "exec"}, *result, "container " + id);
    return ExecResult{result->exit_code, std::move(result->stdout_text),
                      std::move(result->stderr_text)};
}

Result<void> PodmanRuntime::stop(const std::string& id, std::chrono::milliseconds grace) {
    if (!valid_container_ref(id))
        return make_error(ErrorCode::invalid_argument, "container id '" + id + "' is malformed");
    // podman counts whole seconds; round up so the grace is never shorter than asked.
    auto seconds = (std::max<std::int64_t>(grace.count(), 0) + 999) / 1000;
    std::vector<std::string> arguments = {"stop", "--time=" + std::to_string(seconds), id};
    auto result = podman(arguments, seconds * 1000 + options_.command_timeout_ms);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "container " + id);
    }
    return {};
}

Result<void> PodmanRuntime::remove(const std::string& id) {
    if (!valid_container_ref(id))
        return make_error(ErrorCode::invalid_argument, "container id '" + id + "' is malformed");
    std::vector<std::string> arguments = {"rm", "--force", id};
    auto result = podman(arguments);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "container " + id);
    }
    return {};
}

Result<ContainerInfo> PodmanRuntime::inspect(const std::string& id) {
    if (!valid_container_ref(id))
        return make_error(ErrorCode::invalid_argument, "container id '" + id + "' is malformed");
    std::vector<std::string> arguments = {"container", "inspect", "--format=json", id};
    auto result = query(arguments);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "container " + id);
    }
    return parse_podman_inspect(result->stdout_text);
}

Result<std::vector<ContainerInfo>> PodmanRuntime::list(const std::string& selector) {
    if (selector.empty() || selector.find('\n') != std::string::npos)
        return make_error(ErrorCode::invalid_argument, "label selector '" + selector + "' is malformed");
    // Filters on the managed label too: list() never returns a container Handler did not start.
    std::vector<std::string> arguments = {"ps", "--all", "--format=json",
                                          "--filter=label=" + std::string(kManagedSelector)};
    if (selector != kManagedSelector) arguments.push_back("--filter=label=" + selector);
    auto result = query(arguments);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "");
    }
    return parse_podman_ps(result->stdout_text);
}

Result<bool> PodmanRuntime::image_exists(const std::string& reference) {
    if (!valid_image_ref(reference))
        return make_error(ErrorCode::invalid_argument,
                          "image reference '" + reference + "' is empty or malformed");
    std::vector<std::string> arguments = {"image", "exists", reference};
    auto result = query(arguments);
    if (!result) return result.take_error();
    if (result->exit_code == 0) return true;
    if (result->exit_code == 1) return false;
    arguments.insert(arguments.begin(), options_.program);
    return command_failed(arguments, *result, "image " + reference);
}

Result<void> PodmanRuntime::import_image(const fs::path& tarball, const std::string& reference) {
    if (!valid_image_ref(reference))
        return make_error(ErrorCode::invalid_argument,
                          "image reference '" + reference + "' is empty or malformed");
    std::error_code error;
    if (!tarball.is_absolute() || !fs::is_regular_file(tarball, error))
        return make_error(ErrorCode::invalid_argument,
                          "image tarball '" + tarball.string() + "' is not an existing file");
    std::vector<std::string> arguments = {"import", "--quiet", tarball.string(), reference};
    // A rootfs of hundreds of MB takes a while to unpack.
    auto result = podman(arguments, 20 * 60 * 1000);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "image " + reference);
    }
    return {};
}

Result<void> PodmanRuntime::build_image(const fs::path& context_dir, const std::string& reference) {
    return build_image_streaming(context_dir, reference, {});
}

Result<void> PodmanRuntime::build_image_streaming(const fs::path& context_dir, const std::string& reference,
                                                  const std::function<void(std::string_view)>& on_output) {
    if (!valid_image_ref(reference))
        return make_error(ErrorCode::invalid_argument,
                          "image reference '" + reference + "' is empty or malformed");
    std::error_code error;
    if (!context_dir.is_absolute() || !fs::is_regular_file(context_dir / "Containerfile", error))
        return make_error(ErrorCode::invalid_argument,
                          "image build folder '" + context_dir.string() + "' has no Containerfile");
    // --pull=never: the FROM image is ours, built here; no registry is asked. Layers
    // are not kept: each recipe is one image, rebuilt whole when it changes.
    // Without a listener the build is quiet; with one, its steps' output is the progress.
    std::vector<std::string> arguments = {"build", "--pull=never", "--layers=false",
                                          "--tag", reference, "--file",
                                          (context_dir / "Containerfile").string(), context_dir.string()};
    if (!on_output) arguments.insert(arguments.begin() + 1, "--quiet");
    CommandRequest request;
    request.argv = arguments;
    request.argv.insert(request.argv.begin(), options_.program);
    request.timeout_ms = 30 * 60 * 1000; // npm downloads a few hundred MB for some harnesses
    request.on_output = on_output;
    auto result = run_request(std::move(request));
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "image " + reference);
    }
    return {};
}

Result<std::vector<std::string>> PodmanRuntime::image_tags(const std::string& repository) {
    if (!valid_image_ref(repository) || repository.find(':') != std::string::npos)
        return make_error(ErrorCode::invalid_argument, "image repository '" + repository + "' is empty or malformed");
    std::vector<std::string> arguments = {"images", "--format=json", "--filter=reference=" + repository};
    auto result = query(arguments);
    if (!result) return result.take_error();
    if (result->exit_code != 0) {
        arguments.insert(arguments.begin(), options_.program);
        return command_failed(arguments, *result, "");
    }
    return parse_podman_image_names(result->stdout_text, repository);
}

Result<void> PodmanRuntime::remove_image(const std::string& reference) {
    if (!valid_image_ref(reference))
        return make_error(ErrorCode::invalid_argument, "image reference '" + reference + "' is empty or malformed");
    // Never --force: an image a container still uses (a running session's) must stay.
    std::vector<std::string> arguments = {"rmi", reference};
    auto result = podman(arguments);
    if (!result) return result.take_error();
    if (result->exit_code == 0) return {};
    arguments.insert(arguments.begin(), options_.program);
    auto failed = command_failed(arguments, *result, "image " + reference);
    return make_error(ErrorCode::conflict, failed.message);
}

Result<std::vector<std::string>> parse_podman_image_names(std::string_view text, std::string_view repository) {
    auto array = parse_array(text, "podman images");
    if (!array) return array.take_error();
    std::vector<std::string> names;
    const std::string prefix = std::string(repository) + ":";
    for (const json::value& entry : *array) {
        const json::object* object = entry.if_object();
        const json::value* listed = object == nullptr ? nullptr : object->if_contains("Names");
        if (listed == nullptr || !listed->is_array()) continue;
        for (const json::value& name : listed->get_array())
            if (name.is_string() && name.get_string().starts_with(prefix)) names.emplace_back(name.get_string());
    }
    return names;
}

Result<ContainerInfo> parse_podman_inspect(std::string_view text) {
    auto array = parse_array(text, "podman container inspect");
    if (!array) return array.take_error();
    if (array->empty() || !array->front().is_object())
        return make_error(ErrorCode::not_found, "`podman container inspect` returned no container");
    const json::object& object = array->front().get_object();
    ContainerInfo info;
    info.id = string_at(object, "Id");
    info.name = string_at(object, "Name");
    info.image = string_at(object, "ImageName");
    if (const json::value* state = object.if_contains("State"); state && state->is_object()) {
        info.state = state_from(string_at(state->get_object(), "Status"));
        info.exit_code = int_at(state->get_object(), "ExitCode");
    }
    if (const json::value* config = object.if_contains("Config"); config && config->is_object())
        info.labels = labels_at(config->get_object(), "Labels");
    if (info.id.empty())
        return make_error(ErrorCode::internal, "`podman container inspect` printed no Id");
    return info;
}

Result<std::vector<ContainerInfo>> parse_podman_ps(std::string_view text) {
    auto array = parse_array(text, "podman ps");
    if (!array) return array.take_error();
    std::vector<ContainerInfo> containers;
    for (const json::value& entry : *array) {
        if (!entry.is_object()) continue;
        const json::object& object = entry.get_object();
        ContainerInfo info;
        info.id = string_at(object, "Id");
        if (const json::value* names = object.if_contains("Names");
            names && names->is_array() && !names->get_array().empty() &&
            names->get_array().front().is_string())
            info.name = std::string(names->get_array().front().get_string());
        info.image = string_at(object, "Image");
        info.state = state_from(string_at(object, "State"));
        info.exit_code = int_at(object, "ExitCode");
        info.labels = labels_at(object, "Labels");
        if (!info.id.empty()) containers.push_back(std::move(info));
    }
    return containers;
}

} // namespace handler::runtime
