#include "setup/setup.hpp"

#include "runtime/podman_runtime.hpp"
#include "setup/user_config.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>

namespace handler::setup {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr int kResetTimeoutMs = 120'000;
constexpr int kDaemonStartTimeoutMs = 30'000;
constexpr int kMaxFixRounds = 3;

struct Outcome {
    std::vector<Check> checks;
    std::vector<ConfigChange> changes;
    std::vector<std::string> notes; // what setup did or could not do, in sentences
    std::string daemon;             // "running", "started", "failed", "not started"
    std::string image;              // "present", "built", "failed"; empty: not tried
    std::string image_reference;
    std::vector<std::string> image_progress;
    bool refused = false;
};

fs::path config_home(SystemProbe& probe) {
    if (auto config = probe.env("XDG_CONFIG_HOME"); config && !config->empty() && (*config)[0] == '/')
        return *config;
    return fs::path(probe.env("HOME").value_or("/")) / ".config";
}

void record(Outcome& outcome, Result<ConfigChange> change) {
    if (!change) {
        outcome.notes.push_back("not changed: " + change.error().message);
        return;
    }
    if (change->changed) outcome.changes.push_back(std::move(*change));
}

void apply(AutoFix fix, SetupContext& context, Outcome& outcome) {
    const auto paths = container_config_paths(context.probe);
    switch (fix) {
    case AutoFix::none: return;
    case AutoFix::select_runc:
        record(outcome, set_toml_string(paths.containers_conf, "engine", "runtime", "runc"));
        return;
    case AutoFix::select_overlay:
        record(outcome, set_toml_string(paths.storage_conf, "storage", "driver", "overlay"));
        return;
    case AutoFix::reset_empty_storage: {
        auto reset = context.probe.run({"podman", "system", "reset", "--force"}, kResetTimeoutMs);
        if (reset && reset->exit_code == 0)
            outcome.notes.push_back("ran `podman system reset --force` (the store was empty) "
                                    "so podman switches to overlay");
        else
            outcome.notes.push_back("`podman system reset --force` failed: " +
                                    (reset ? reset->err : reset.error().message));
        return;
    }
    }
}

// The image builder's commands go through the probe like every other command setup runs,
// so the setup tests fake podman and mmdebstrap with FakeSystemProbe.
class ProbeCommandRunner final : public runtime::CommandRunner {
public:
    explicit ProbeCommandRunner(SystemProbe& probe) : probe_(probe) {}
    Result<runtime::CommandResult> run(const runtime::CommandRequest& request) override {
        auto output = probe_.run(request.argv, static_cast<int>(request.timeout_ms));
        if (!output) return output.take_error();
        if (output->timed_out)
            return make_error(ErrorCode::unavailable,
                              "`" + runtime::describe_command(request.argv) + "` did not finish in " +
                                  std::to_string(request.timeout_ms / 1000) + " s: " + output->err);
        return runtime::CommandResult{output->exit_code, std::move(output->out),
                                      std::move(output->err)};
    }

private:
    SystemProbe& probe_;
};

bool base_image_checks_pass(const Outcome& outcome) {
    return std::none_of(outcome.checks.begin(), outcome.checks.end(), [](const Check& check) {
        return check.status == CheckStatus::problem && check.needed_for_base_image;
    });
}

// Only once podman is usable: a build on a machine with problems would fail for the
// reason the checks already name, after a minute of downloading.
void ensure_base_image(SetupContext& context, const SetupOptions& options, Outcome& outcome) {
    if (!base_image_checks_pass(outcome)) {
        outcome.notes.push_back("the base image is built once the problems above are fixed");
        return;
    }
    ProbeCommandRunner runner(context.probe);
    runtime::PodmanRuntime podman(runner, runtime::PodmanOptions{});
    std::map<std::string, std::string> environment;
    for (const char* name : {"XDG_CACHE_HOME", "HOME"})
        if (auto value = context.probe.env(name)) environment[name] = *value;
    runtime::ImageBuilder builder(
        runner, podman,
        runtime::ImageBuilderOptions{
            runtime::default_build_dir([&environment](const char* name) -> const char* {
                auto found = environment.find(name);
                return found == environment.end() ? nullptr : found->second.c_str();
            })});
    const auto recipe = context.base_image_recipe.value_or(runtime::default_base_recipe());
    bool built = false;
    auto reference = builder.ensure_base_image(recipe, [&](const std::string& line) {
        // Its progress says whether it builds: "building base image ..." comes first then.
        if (line.rfind("building", 0) == 0) built = true;
        outcome.image_progress.push_back(line);
        // A build takes about a minute: say so as it happens, not afterwards.
        if (!options.json) context.out << line << "\n" << std::flush;
    });
    if (!reference) {
        outcome.image = "failed";
        outcome.notes.push_back("base image not built: " + reference.error().message);
        return;
    }
    outcome.image = built ? "built" : "present";
    outcome.image_reference = *reference;
}

void start_daemon(SetupContext& context, Outcome& outcome) {
    if (context.daemon_running()) {
        outcome.daemon = "running";
        return;
    }
    const fs::path handlerd = context.probe.self_dir() / "handlerd";
    auto started = context.probe.run({handlerd.string(), "--detach"}, kDaemonStartTimeoutMs);
    if (started && started->exit_code == 0 && context.daemon_running()) {
        outcome.daemon = "started";
        return;
    }
    outcome.daemon = "failed";
    std::string why = !started ? started.error().message
                               : started->err.empty() ? started->out : started->err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    outcome.notes.push_back("could not start " + handlerd.string() + " --detach: " + why);
}

const char* marker(CheckStatus status) {
    switch (status) {
    case CheckStatus::ok: return "✓";
    case CheckStatus::warn: return "!";
    case CheckStatus::problem: return "✗";
    }
    return "✗";
}

// A handlerd that would not start is a problem too: setup promises a running daemon.
bool any_problem(const Outcome& outcome) {
    if (outcome.daemon == "failed" || outcome.image == "failed") return true;
    return std::any_of(outcome.checks.begin(), outcome.checks.end(),
                       [](const Check& check) { return check.status == CheckStatus::problem; });
}

void print_human(std::ostream& out, const Outcome& outcome, const SetupOptions& options) {
    for (const auto& check : outcome.checks) {
        out << "  " << marker(check.status) << " " << check.id
            << std::string(check.id.size() < 9 ? 9 - check.id.size() : 1, ' ') << check.found
            << "\n";
        if (check.status == CheckStatus::ok) continue;
        if (!check.fix_command.empty()) out << "      fix: " << check.fix_command << "\n";
        if (!check.explanation.empty()) out << "      why: " << check.explanation << "\n";
    }
    for (const auto& change : outcome.changes) {
        out << "changed: " << change.file.string() << ": " << change.what;
        if (!change.backup.empty()) out << " (the previous file is " << change.backup.string() << ")";
        out << "\n";
    }
    for (const auto& note : outcome.notes) out << "note: " << note << "\n";
    if (outcome.daemon == "running")
        out << "handlerd is running; `handler status` shows its socket and web address.\n";
    else if (outcome.daemon == "started")
        out << "handlerd started in the background; `handler status` shows its socket and "
               "web address.\n";
    if (options.check_only) out << "(--check: nothing was changed or started)\n";
    if (outcome.refused) return;
    const auto problems = std::count_if(outcome.checks.begin(), outcome.checks.end(),
                                        [](const Check& c) { return c.status == CheckStatus::problem; });
    if (problems > 0)
        out << problems << (problems == 1 ? " problem remains" : " problems remain")
            << ": run the fix commands above, then `handler setup` again.\n";
    if (outcome.daemon == "failed")
        out << "handlerd did not start (see the note above); fix that, then run `handler "
               "setup` again.\n";
    if (outcome.image == "failed")
        out << "the base image could not be built (see the note above); fix that, then run "
               "`handler setup` again.\n";
    if (problems == 0 && outcome.daemon != "failed" && outcome.image != "failed")
        out << "Ready: no problems found.\n";
}

void print_json(std::ostream& out, const Outcome& outcome, const SetupOptions& options,
                const std::string& user) {
    json::array checks;
    for (const auto& check : outcome.checks)
        checks.push_back(json::object{{"id", check.id},
                                      {"status", to_string(check.status)},
                                      {"found", check.found},
                                      {"fix", check.fix_command},
                                      {"explanation", check.explanation}});
    json::array changes;
    for (const auto& change : outcome.changes)
        changes.push_back(json::object{{"file", change.file.string()},
                                       {"backup", change.backup.string()},
                                       {"what", change.what}});
    json::array notes;
    for (const auto& note : outcome.notes) notes.emplace_back(note);
    json::object root{{"user", user},
                      {"ok", !any_problem(outcome)},
                      {"check_only", options.check_only},
                      {"checks", std::move(checks)},
                      {"changes", std::move(changes)},
                      {"notes", std::move(notes)}};
    if (!outcome.daemon.empty()) root["daemon"] = outcome.daemon;
    if (!outcome.image.empty()) {
        json::array progress;
        for (const auto& line : outcome.image_progress) progress.emplace_back(line);
        root["image"] = json::object{{"status", outcome.image},
                                     {"reference", outcome.image_reference},
                                     {"progress", std::move(progress)}};
    }
    out << json::serialize(root) << "\n";
}

} // namespace

std::string systemd_unit(const fs::path& handlerd_path) {
    return "# Written by `handler setup`. Enable with:\n"
           "#   systemctl --user daemon-reload && systemctl --user enable --now handlerd\n"
           "[Unit]\n"
           "Description=Handler daemon: keeps coding-agent sessions running\n"
           "\n"
           "[Service]\n"
           "ExecStart=" + handlerd_path.string() + "\n"
           "Restart=on-failure\n"
           "# handlerd starts containers through podman, and their conmon monitors stay in\n"
           "# this unit's cgroup. With the default KillMode=control-group, stopping or\n"
           "# restarting handlerd would kill every running agent container; with\n"
           "# KillMode=process only handlerd stops, and it re-adopts the containers when it\n"
           "# starts again (podman's own units do the same).\n"
           "KillMode=process\n"
           "Delegate=yes\n"
           "\n"
           "[Install]\n"
           "WantedBy=default.target\n";
}

int run_setup(const SetupOptions& options, SetupContext& context) {
    Outcome outcome;
    const std::string user = context.probe.user_name();
    // First, so the image build's live progress lines come after it.
    if (!options.json) context.out << "handler setup: checking this machine for " << user << "\n";
    const Check root = check_root(context.probe);
    if (root.status == CheckStatus::problem) {
        outcome.checks.push_back(root);
        outcome.refused = true;
        if (options.json)
            print_json(context.out, outcome, options, user);
        else
            print_human(context.out, outcome, options);
        return 1;
    }

    outcome.checks = run_checks(context.probe, context.limits);
    if (!options.check_only) {
        // A fix can reveal the next step (overlay selected, then the empty store reset),
        // so check again after fixing, a bounded number of times; no fix runs twice.
        std::set<AutoFix> applied;
        for (int round = 0; round < kMaxFixRounds; ++round) {
            bool fixed = false;
            for (const auto& check : outcome.checks)
                if (check.auto_fix != AutoFix::none && applied.insert(check.auto_fix).second) {
                    apply(check.auto_fix, context, outcome);
                    fixed = true;
                }
            if (!fixed) break;
            outcome.checks = run_checks(context.probe, context.limits);
        }
        if (has_systemd_user_session(context.probe))
            record(outcome,
                   write_text_file(config_home(context.probe) / "systemd" / "user" /
                                       "handlerd.service",
                                   systemd_unit(context.probe.self_dir() / "handlerd"),
                                   "the handlerd user service; enable it with: systemctl "
                                   "--user daemon-reload && systemctl --user enable handlerd"));
        ensure_base_image(context, options, outcome);
        start_daemon(context, outcome);
    }

    if (options.json)
        print_json(context.out, outcome, options, user);
    else
        print_human(context.out, outcome, options);
    return any_problem(outcome) ? 1 : 0;
}

} // namespace handler::setup
