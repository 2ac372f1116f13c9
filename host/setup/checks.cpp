#include "setup/checks.hpp"

#include "runtime/seccomp_profile.hpp"

#include <boost/json.hpp>
#include <toml++/toml.h>

#include <cstdlib>
#include <sstream>

namespace handler::setup {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr long kCgroup2Magic = 0x63677270; // CGROUP2_SUPER_MAGIC from linux/magic.h
constexpr long long kWantedSubordinateIds = 65536;
constexpr int kPodmanTimeoutMs = 60'000;
constexpr const char* kInstallPodman =
    "sudo apt-get install podman runc slirp4netns uidmap fuse-overlayfs";

std::string trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

std::string last_line(const std::string& text) {
    const std::string trimmed = trim(text);
    const auto newline = trimmed.rfind('\n');
    return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

// A string value from one of the user's container TOML files: nullopt when the file or
// the key is absent; an error when the file is not TOML (setup then leaves it alone).
Result<std::optional<std::string>> toml_string(SystemProbe& probe, const fs::path& file,
                                               const std::string& table, const std::string& key) {
    auto text = probe.read_file(file);
    if (!text) return std::optional<std::string>();
    try {
        const toml::table root = toml::parse(*text, file.string());
        return root[table][key].value<std::string>();
    } catch (const toml::parse_error& error) {
        return make_error(ErrorCode::invalid_argument,
                          file.string() + ":" + std::to_string(error.source().begin.line) +
                              " is not valid TOML (" + std::string(error.description()) + ")");
    }
}

long long json_count(const json::object& store, std::string_view field) {
    if (const auto* section = store.if_contains(field); section != nullptr && section->is_object())
        if (const auto* number = section->as_object().if_contains("number");
            number != nullptr && number->is_number())
            return number->to_number<long long>();
    return 0;
}

std::string plural(long long count, const std::string& noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

} // namespace

std::string_view to_string(CheckStatus status) {
    switch (status) {
    case CheckStatus::ok: return "ok";
    case CheckStatus::warn: return "warn";
    case CheckStatus::problem: return "problem";
    }
    return "problem";
}

ContainerConfigPaths container_config_paths(SystemProbe& probe) {
    fs::path base;
    if (auto config = probe.env("XDG_CONFIG_HOME"); config && !config->empty() && (*config)[0] == '/')
        base = *config;
    else
        base = fs::path(probe.env("HOME").value_or("/")) / ".config";
    return {base / "containers" / "containers.conf", base / "containers" / "storage.conf"};
}

Result<PodmanInfo> parse_podman_info(std::string_view json_text) {
    boost::system::error_code error;
    const json::value parsed = json::parse(json_text, error);
    if (error || !parsed.is_object())
        return make_error(ErrorCode::invalid_argument,
                          "`podman info --format json` did not print a JSON object");
    const auto& root = parsed.as_object();
    const auto string_at = [&](std::initializer_list<std::string_view> path) -> std::string {
        const json::value* node = &parsed;
        for (const auto part : path) {
            if (!node->is_object()) return {};
            node = node->as_object().if_contains(part);
            if (node == nullptr) return {};
        }
        return node->is_string() ? std::string(node->as_string()) : std::string();
    };
    PodmanInfo info;
    info.version = string_at({"version", "Version"});
    info.runtime_name = string_at({"host", "ociRuntime", "name"});
    info.cgroup_version = string_at({"host", "cgroupVersion"});
    info.graph_driver = string_at({"store", "graphDriverName"});
    if (info.graph_driver.empty())
        return make_error(ErrorCode::invalid_argument,
                          "`podman info --format json` has no store.graphDriverName");
    if (const auto* store = root.if_contains("store"); store != nullptr && store->is_object()) {
        info.image_count = json_count(store->as_object(), "imageStore");
        info.container_count = json_count(store->as_object(), "containerStore");
    }
    if (auto confinement = runtime::parse_host_confinement(json_text)) info.confinement = std::move(*confinement);
    return info;
}

Check check_root(SystemProbe& probe) {
    Check check{"user", CheckStatus::ok, "", "", "", AutoFix::none};
    if (probe.uid() != 0) {
        check.found = "running as " + probe.user_name() + " (uid " + std::to_string(probe.uid()) + ")";
        return check;
    }
    check.status = CheckStatus::problem;
    check.found = "you are root";
    check.fix_command = "su - handler -c 'handler setup'   (or another normal user; to make "
                        "one: useradd -m NAME, which also gives it /etc/subuid and /etc/subgid "
                        "entries)";
    check.explanation =
        "Handler refuses to set up or run handlerd as root: agents never run as root, and "
        "rootless podman run by root fails on machines like this one (no CAP_SYS_RESOURCE: "
        "\"setrlimit ... Operation not permitted\"). Run setup as the normal user who will "
        "use Handler.";
    return check;
}

PodmanProbe check_podman(SystemProbe& probe) {
    PodmanProbe result{{"podman", CheckStatus::ok, "", "", "", AutoFix::none}, std::nullopt};
    Check& check = result.check;
    check.explanation = "Handler runs every session in a rootless Podman container.";
    const auto path = probe.find_program("podman");
    if (!path) {
        check.status = CheckStatus::problem;
        check.found = "podman is not installed (not found on PATH)";
        check.fix_command = kInstallPodman;
        return result;
    }
    auto output = probe.run({"podman", "info", "--format", "json"}, kPodmanTimeoutMs);
    if (!output || output->exit_code != 0) {
        check.status = CheckStatus::problem;
        const std::string why = !output ? output.error().message
                                : output->timed_out
                                    ? "it did not answer within 60 s"
                                    : last_line(output->err);
        check.found = "podman is installed (" + path->string() +
                      ") but `podman info` failed: " + why;
        check.fix_command = "podman info   (shows the whole error)";
        return result;
    }
    auto info = parse_podman_info(output->out);
    if (!info) {
        check.status = CheckStatus::problem;
        check.found = info.error().message;
        check.fix_command = "podman info --format json";
        return result;
    }
    check.found = "podman " + info->version + " (" + path->string() + ")";
    if (const int major = std::atoi(info->version.c_str()); major < 4) {
        check.status = CheckStatus::warn;
        check.found += ", older than 4.0, the oldest Handler is tested with";
        check.fix_command = "upgrade podman (Debian 12 ships 4.3.1)";
    }
    result.info = std::move(*info);
    return result;
}

bool cgroup_hybrid(SystemProbe& probe) {
    const auto magic = probe.filesystem_magic("/sys/fs/cgroup");
    return probe.exists("/sys/fs/cgroup/unified") && magic && *magic != kCgroup2Magic;
}

Check check_runtime(SystemProbe& probe, const std::optional<PodmanInfo>& info) {
    Check check{"runtime", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "crun, podman's usual OCI runtime, refuses cgroup v1 in hybrid mode "
                        "(\"cgroups in hybrid mode not supported\"); runc works there.";
    const std::string in_use = info ? info->runtime_name : std::string();
    if (!cgroup_hybrid(probe)) {
        const auto magic = probe.filesystem_magic("/sys/fs/cgroup");
        check.found = std::string(magic && *magic == kCgroup2Magic ? "cgroup v2" : "cgroup v1") +
                      ": any OCI runtime works" +
                      (in_use.empty() ? std::string() : " (podman uses " + in_use + ")");
        return check;
    }
    const auto paths = container_config_paths(probe);
    if (!probe.find_program("runc")) {
        check.status = CheckStatus::problem;
        check.found = "this host uses cgroup v1 in hybrid mode, and runc is not installed";
        check.fix_command = "sudo apt-get install runc   (then run handler setup again: it "
                            "selects runc in " + paths.containers_conf.string() + ")";
        return check;
    }
    auto configured = toml_string(probe, paths.containers_conf, "engine", "runtime");
    if (!configured) {
        check.status = CheckStatus::problem;
        check.found = "cgroup v1 hybrid needs runc, but " + configured.error().message +
                      ", so setup leaves it alone";
        check.fix_command = "fix or move away " + paths.containers_conf.string() +
                            ", then run handler setup";
        return check;
    }
    if (*configured && **configured == "runc") {
        check.found = "cgroup v1 hybrid; runc is installed and selected in " +
                      paths.containers_conf.string();
        return check;
    }
    // Podman picking runc today only because crun is absent would silently break the
    // day crun gets installed: pin it either way.
    check.status = in_use == "runc" ? CheckStatus::warn : CheckStatus::problem;
    check.found = "cgroup v1 hybrid; " +
                  (in_use.empty() ? std::string("podman's runtime is unknown")
                                  : "podman uses " + in_use) +
                  ", and " + paths.containers_conf.string() + " does not select runc";
    check.fix_command = "handler setup   (writes [engine] runtime = \"runc\" to " +
                        paths.containers_conf.string() + ")";
    check.auto_fix = AutoFix::select_runc;
    return check;
}

Check check_storage(SystemProbe& probe, const std::optional<PodmanInfo>& info) {
    Check check{"storage", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "With the vfs storage driver every container start copies the whole "
                        "image (seconds per session); overlay starts one in a fraction of a "
                        "second.";
    const auto paths = container_config_paths(probe);
    auto configured = toml_string(probe, paths.storage_conf, "storage", "driver");
    if (!configured) {
        check.status = CheckStatus::problem;
        check.found = configured.error().message + ", so setup leaves it alone";
        check.fix_command = "fix or move away " + paths.storage_conf.string() +
                            ", then run handler setup";
        return check;
    }
    const bool selects_overlay = *configured && **configured == "overlay";
    const std::string write_overlay = "handler setup   (writes [storage] driver = \"overlay\" to " +
                                      paths.storage_conf.string() + ")";
    if (!info) {
        // Choosing overlay before podman's first use avoids the reset later. With a
        // podman that is installed but failing, or storage from an earlier install,
        // what it holds is unknown: leave it.
        fs::path data_home;
        if (auto data = probe.env("XDG_DATA_HOME"); data && !data->empty() && (*data)[0] == '/')
            data_home = *data;
        else
            data_home = fs::path(probe.env("HOME").value_or("/")) / ".local" / "share";
        const fs::path store = data_home / "containers" / "storage";
        if (!selects_overlay && (probe.find_program("podman") || probe.exists(store))) {
            check.status = CheckStatus::warn;
            check.found = "cannot tell which driver podman uses, since podman does not "
                          "answer (see the podman check)";
            check.fix_command = "handler setup, once podman works";
            return check;
        }
        if (selects_overlay) {
            check.found = "podman is not usable yet; " + paths.storage_conf.string() +
                          " selects overlay";
            return check;
        }
        check.status = CheckStatus::problem;
        check.found = "podman is not usable yet, and " + paths.storage_conf.string() +
                      " does not select overlay";
        check.fix_command = write_overlay;
        check.auto_fix = AutoFix::select_overlay;
        return check;
    }
    if (info->graph_driver == "overlay") {
        check.found = "podman stores images with overlay";
        return check;
    }
    check.status = CheckStatus::problem;
    check.found = "podman stores images with " + info->graph_driver;
    if (info->image_count + info->container_count > 0) {
        // Switching drivers hides what the old one holds; only a reset switches, and
        // deleting someone's images is their call.
        check.found += " and holds " + plural(info->image_count, "image") + " and " +
                       plural(info->container_count, "container") +
                       "; switching to overlay needs a reset that deletes them";
        check.fix_command = "podman system reset   (deletes all podman images, containers "
                            "and volumes of this user), then handler setup";
        return check;
    }
    if (!selects_overlay) {
        check.fix_command = write_overlay;
        check.auto_fix = AutoFix::select_overlay;
        return check;
    }
    // storage.conf asks for overlay, but podman's database remembers the driver of its
    // first run and keeps it until reset.
    auto volumes = probe.run({"podman", "volume", "ls", "--quiet"}, kPodmanTimeoutMs);
    const bool has_volumes = !volumes || volumes->exit_code != 0 || !trim(volumes->out).empty();
    check.found += " although " + paths.storage_conf.string() +
                   " selects overlay (podman's database keeps the driver of its first run)";
    if (has_volumes) {
        check.found += "; it holds volumes, which a reset deletes";
        check.fix_command = "podman system reset   (deletes this user's podman volumes), then "
                            "handler setup";
        return check;
    }
    check.fix_command = "podman system reset --force   (the store is empty: nothing is lost)";
    check.auto_fix = AutoFix::reset_empty_storage;
    return check;
}

Check check_subordinate_ids(SystemProbe& probe) {
    Check check{"subids", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "Rootless containers map their users onto the subordinate ids listed "
                        "for you in /etc/subuid and /etc/subgid, through newuidmap/newgidmap.";
    const std::string user = probe.user_name();
    const std::string uid = std::to_string(probe.uid());
    const auto count_ids = [&](const fs::path& file) {
        long long total = 0;
        auto text = probe.read_file(file);
        if (!text) return total;
        std::stringstream lines(*text);
        for (std::string line; std::getline(lines, line);) {
            std::stringstream fields(line);
            std::string owner, start, count;
            if (!std::getline(fields, owner, ':') || !std::getline(fields, start, ':') ||
                !std::getline(fields, count))
                continue;
            if (owner == user || owner == uid) total += std::atoll(count.c_str());
        }
        return total;
    };
    const long long uids = count_ids("/etc/subuid");
    const long long gids = count_ids("/etc/subgid");
    const std::string usermod = "sudo usermod --add-subuids 100000-165535 --add-subgids "
                                "100000-165535 " + user +
                                "   (pick a range no other line of /etc/subuid uses)";
    if (uids == 0 || gids == 0) {
        check.status = CheckStatus::problem;
        check.found = std::string("no entry for ") + user + " in " +
                      (uids == 0 && gids == 0 ? "/etc/subuid and /etc/subgid"
                       : uids == 0            ? "/etc/subuid"
                                              : "/etc/subgid");
        check.fix_command = usermod;
        return check;
    }
    check.found = user + " has " + std::to_string(uids) + " subordinate uids and " +
                  std::to_string(gids) + " gids";
    if (!probe.find_program("newuidmap") || !probe.find_program("newgidmap")) {
        check.status = CheckStatus::problem;
        check.found += ", but newuidmap/newgidmap are not installed";
        check.fix_command = "sudo apt-get install uidmap";
        return check;
    }
    if (uids < kWantedSubordinateIds || gids < kWantedSubordinateIds) {
        check.status = CheckStatus::warn;
        check.found += "; fewer than 65536, so images with high ids may not unpack";
        check.fix_command = usermod;
    }
    return check;
}

// What distributions ship and scripts/install.sh sets as root: the kernel still checks
// the opener's rights in its own namespace, so 0666 grants nothing by itself.
constexpr std::string_view kTunFix =
    "sudo chmod 0666 /dev/net/tun && echo 'KERNEL==\"tun\", MODE=\"0666\"' | sudo tee "
    "/etc/udev/rules.d/60-handler-tun.rules   (the udev rule keeps it after a reboot; "
    "scripts/install.sh does both)";

Check check_tun(SystemProbe& probe) {
    Check check{"tun", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "Harness images (built the first time a harness runs: podman "
                        "build's RUN steps) and agents with network `open` get their "
                        "network from slirp4netns, which opens /dev/net/tun as you. Only "
                        "the base image and `none` or `filtered` sessions on it do without.";
    check.needed_for_base_image = false;
    if (!probe.exists("/dev/net/tun")) {
        check.status = CheckStatus::problem;
        check.found = "/dev/net/tun does not exist";
        check.fix_command = "sudo modprobe tun";
        return check;
    }
    if (!probe.readable_and_writable("/dev/net/tun")) {
        check.status = CheckStatus::problem;
        check.found = "/dev/net/tun exists but " + probe.user_name() +
                      " cannot open it (its mode is 0600 on some VMs; distributions use 0666)";
        check.fix_command = std::string(kTunFix);
        return check;
    }
    check.found = "/dev/net/tun is usable by " + probe.user_name();
    return check;
}

Check check_user_namespaces(SystemProbe& probe) {
    Check check{"userns", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "Rootless podman puts every container in a user namespace that you, "
                        "not root, create.";
    auto maximum = probe.read_file("/proc/sys/user/max_user_namespaces");
    if (maximum && trim(*maximum) == "0") {
        check.status = CheckStatus::problem;
        check.found = "user namespaces are disabled (user.max_user_namespaces = 0)";
        check.fix_command = "sudo sysctl -w user.max_user_namespaces=15000   (to keep it: a "
                            "file in /etc/sysctl.d/)";
        return check;
    }
    // Debian kernels before 5.10-ish, and some hardened ones, gate them separately.
    auto unprivileged = probe.read_file("/proc/sys/kernel/unprivileged_userns_clone");
    if (unprivileged && trim(*unprivileged) == "0") {
        check.status = CheckStatus::problem;
        check.found = "unprivileged user namespaces are disabled "
                      "(kernel.unprivileged_userns_clone = 0)";
        check.fix_command = "sudo sysctl -w kernel.unprivileged_userns_clone=1   (to keep it: "
                            "a file in /etc/sysctl.d/)";
        return check;
    }
    check.found = "user namespaces are enabled" +
                  (maximum ? " (max " + trim(*maximum) + ")" : std::string());
    return check;
}

bool has_systemd_user_session(SystemProbe& probe) {
    auto init = probe.read_file("/proc/1/comm");
    if (!init || trim(*init) != "systemd") return false;
    auto answer = probe.run({"systemctl", "--user", "show-environment"}, 5'000);
    return answer && answer->exit_code == 0;
}

Check check_systemd_user(SystemProbe& probe) {
    Check check{"systemd", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "A systemd user service starts handlerd at login; without one, "
                        "handlerd runs as a detached daemon that you start again after a "
                        "reboot.";
    if (has_systemd_user_session(probe)) {
        check.found = "a systemd user session runs; setup writes handlerd.service for it";
        return check;
    }
    auto init = probe.read_file("/proc/1/comm");
    check.status = CheckStatus::warn;
    check.found = "no systemd user session" +
                  (init ? " (PID 1 is " + trim(*init) + ")" : std::string()) +
                  "; handlerd runs detached";
    check.fix_command = "handlerd --detach   (after a reboot; setup starts it now)";
    return check;
}

Check check_seccomp(SystemProbe& probe, const std::optional<PodmanInfo>& info) {
    Check check{"seccomp", CheckStatus::ok, "", "", "", AutoFix::none};
    check.explanation = "Sessions run under Handler's seccomp profile, podman's own with no new namespaces "
                        "and no kernel extras on top (docs/security.md); without it no session starts.";
    check.needed_for_base_image = false;
    if (!info) {
        check.status = CheckStatus::problem;
        check.found = "unknown: podman info did not answer (see the podman check)";
        return check;
    }
    const runtime::HostConfinement& host = info->confinement;
    if (!host.seccomp_enabled) {
        check.status = CheckStatus::problem;
        check.found = "podman reports seccomp as off (seccompEnabled false)";
        check.fix_command = "install podman from your distribution (built with seccomp) and libseccomp2";
        return check;
    }
    auto base = probe.read_file(host.seccomp_profile_path);
    auto derived = base ? runtime::derive_session_profile(*base, host.seccomp_profile_path.string())
                        : Result<std::string>(base.take_error());
    if (!derived) {
        check.status = CheckStatus::problem;
        check.found = derived.error().message;
        check.fix_command = "sudo apt-get install --reinstall golang-github-containers-common   (Debian's "
                            "package of " + host.seccomp_profile_path.string() + ")";
        return check;
    }
    check.found = "Handler's profile builds on " + host.seccomp_profile_path.string();
    return check;
}

Check check_limits(const std::optional<PodmanInfo>& info, const runtime::SessionLimits& limits) {
    Check check{"limits", CheckStatus::ok, "", "", "", AutoFix::none};
    check.needed_for_base_image = false;
    const runtime::HostConfinement host = info ? info->confinement : runtime::HostConfinement{};
    std::string held, not_held;
    for (const runtime::LimitReport& limit : runtime::describe_limits(limits, host)) {
        std::string& list = limit.holds ? held : not_held;
        list += (list.empty() ? "" : ", ") + limit.name + " " + limit.value;
        if (!limit.holds) check.explanation += (check.explanation.empty() ? "" : " ") + limit.name + ": " + limit.how + ".";
    }
    check.found = "per session: " + held;
    if (not_held.empty()) return check;
    check.status = CheckStatus::warn;
    check.found += "; not as a whole here: " + not_held;
    check.fix_command = "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and delegate the memory and "
                        "pids controllers to your user (systemd's user@.service Delegate=)";
    return check;
}

std::vector<Check> run_checks(SystemProbe& probe, const runtime::SessionLimits& limits) {
    auto podman = check_podman(probe);
    std::vector<Check> checks;
    checks.push_back(podman.check);
    checks.push_back(check_runtime(probe, podman.info));
    checks.push_back(check_storage(probe, podman.info));
    checks.push_back(check_subordinate_ids(probe));
    checks.push_back(check_user_namespaces(probe));
    checks.push_back(check_tun(probe));
    checks.push_back(check_seccomp(probe, podman.info));
    checks.push_back(check_limits(podman.info, limits));
    checks.push_back(check_systemd_user(probe));
    return checks;
}

} // namespace handler::setup
