// A machine described by the test: files, programs on PATH, command answers, the user.
// Records every command it was asked to run, so tests can assert what setup did (and,
// with --check, that it did nothing).
#pragma once

#include "setup/system_probe.hpp"

#include "core/paths.hpp"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace handler::testing {

class FakeSystemProbe final : public setup::SystemProbe {
public:
    // A normal user on a machine where everything is right: cgroup v2, podman 4.3.1 with
    // overlay, subordinate ids, usable tun, user namespaces, no systemd.
    FakeSystemProbe() {
        programs = {"podman", "runc", "newuidmap", "newgidmap"};
        files["/etc/subuid"] = "alice:100000:65536\n";
        files["/etc/subgid"] = "alice:100000:65536\n";
        files["/proc/sys/user/max_user_namespaces"] = "96365\n";
        files["/proc/1/comm"] = "bash\n";
        magics["/sys/fs/cgroup"] = kCgroup2Magic;
        paths = {"/dev/net/tun"};
        accessible = {"/dev/net/tun"};
        environment["HOME"] = "/home/alice";
        files[kSeccompProfile] = R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]})";
        answer({"podman", "info", "--format", "json"}, 0, podman_info("crun", "overlay", 0, 0));
    }

    static constexpr const char* kSeccompProfile = "/usr/share/containers/seccomp.json";

    static constexpr long kCgroup2Magic = 0x63677270;
    static constexpr long kTmpfsMagic = 0x01021994;

    // The machine of MACHINE.md: cgroup v1 hybrid (tmpfs at /sys/fs/cgroup plus unified/).
    void make_cgroup_hybrid() {
        magics["/sys/fs/cgroup"] = kTmpfsMagic;
        paths.insert("/sys/fs/cgroup/unified");
    }

    static std::string podman_info(const std::string& runtime, const std::string& driver,
                                   int images, int containers, const std::string& version = "4.3.1") {
        return R"({"host":{"cgroupVersion":"v1","cgroupControllers":[],"ociRuntime":{"name":")" + runtime +
               R"(","path":"/usr/bin/)" + runtime + R"("},"security":{"rootless":true,"seccompEnabled":true,)"
               R"("seccompProfilePath":")" + std::string(kSeccompProfile) + R"("}},"store":{"graphDriverName":")" +
               driver + R"(","containerStore":{"number":)" + std::to_string(containers) +
               R"(},"imageStore":{"number":)" + std::to_string(images) +
               R"(}},"version":{"Version":")" + version + R"("}})";
    }

    void answer(const std::vector<std::string>& argv, int exit_code, std::string out,
                std::string err = "") {
        answers[argv] = setup::CommandOutput{exit_code, std::move(out), std::move(err), false};
    }

    Result<setup::CommandOutput> run(const std::vector<std::string>& argv, int) override {
        ran.push_back(argv);
        if (!argv.empty() && argv[0].find('/') == std::string::npos && !programs.count(argv[0]))
            return make_error(ErrorCode::not_found, argv[0] + " is not installed (not on PATH)");
        if (auto found = answers.find(argv); found != answers.end()) {
            auto output = found->second;
            if (on_run) on_run(argv);
            return output;
        }
        if (on_run) on_run(argv);
        return setup::CommandOutput{0, "", "", false};
    }
    std::optional<std::filesystem::path> find_program(const std::string& program) override {
        if (!programs.count(program)) return std::nullopt;
        return std::filesystem::path("/usr/bin") / program;
    }
    Result<std::string> read_file(const std::filesystem::path& path) override {
        if (auto found = files.find(path.string()); found != files.end()) return found->second;
        // Setup's writers change real files (in a test's TempDir); checks must see them.
        if (!real_files_under.empty() &&
            path.string().rfind(real_files_under.string(), 0) == 0)
            return handler::read_file(path);
        return make_error(ErrorCode::not_found, "no " + path.string());
    }
    bool exists(const std::filesystem::path& path) override {
        return paths.count(path.string()) || files.count(path.string());
    }
    bool readable_and_writable(const std::filesystem::path& path) override {
        return accessible.count(path.string()) > 0;
    }
    std::optional<long> filesystem_magic(const std::filesystem::path& path) override {
        if (auto found = magics.find(path.string()); found != magics.end()) return found->second;
        return std::nullopt;
    }
    unsigned uid() override { return user_id; }
    std::string user_name() override { return name; }
    std::optional<std::string> env(const std::string& variable) override {
        if (auto found = environment.find(variable); found != environment.end())
            return found->second;
        return std::nullopt;
    }
    std::filesystem::path self_dir() override { return "/opt/handler/bin"; }

    std::set<std::string> programs;
    std::map<std::string, std::string> files;
    std::set<std::string> paths;
    std::set<std::string> accessible;
    std::map<std::string, long> magics;
    std::map<std::string, std::string> environment;
    std::map<std::vector<std::string>, setup::CommandOutput> answers;
    std::filesystem::path real_files_under; // read from disk below this folder
    std::vector<std::vector<std::string>> ran;
    // Called after each command, to change the machine (e.g. a reset switches the driver).
    std::function<void(const std::vector<std::string>&)> on_run;
    unsigned user_id = 1000;
    std::string name = "alice";
};

} // namespace handler::testing
