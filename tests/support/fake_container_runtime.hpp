// A ContainerRuntime that runs nothing: containers and images live in maps, every call is
// recorded, and a test can make any call fail once (STYLE.md: fakes live in
// tests/support). Behaves like podman where callers depend on it: ids are unique,
// stopping a stopped container is fine, removing or inspecting a missing one is
// not_found, list() returns only containers with the managed label and the selector.
#pragma once

#include "runtime/container_runtime.hpp"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace handler::testing {

class FakeContainerRuntime final : public runtime::ContainerRuntime {
public:
    struct Container {
        runtime::ContainerSpec spec;
        runtime::ContainerInfo info;
    };
    struct Import {
        std::filesystem::path tarball;
        std::string reference;
        bool tarball_existed = false; // whether the file was there when import ran
    };

    Result<std::string> create_and_start(const runtime::ContainerSpec& spec) override {
        calls.push_back("create_and_start");
        if (auto error = take_failure("create_and_start")) return *error;
        if (!images.count(spec.image))
            return make_error(ErrorCode::not_found, "image " + spec.image + " is not present");
        const std::string name = "handler-" + spec.session_id;
        for (const auto& [id, container] : containers)
            if (container.info.name == name)
                return make_error(ErrorCode::conflict, "container " + name + " already exists");
        const std::string id = "fake" + std::to_string(++next_id_);
        runtime::ContainerInfo info;
        info.id = id;
        info.name = name;
        info.image = spec.image;
        info.state = runtime::ContainerState::running;
        info.labels = spec.labels;
        info.labels[runtime::kManagedLabel] = "1";
        info.labels[runtime::kSessionLabel] = spec.session_id;
        containers[id] = Container{spec, std::move(info)};
        return id;
    }

    // Runs nothing: records the spec and answers with task_handler (unset: exit 0, no output).
    Result<runtime::ExecResult> run_task(const runtime::ContainerSpec& spec,
                                         const runtime::TaskOptions& options) override {
        calls.push_back("run_task");
        tasks.push_back({spec, options});
        if (auto error = take_failure("run_task")) return *error;
        if (!images.count(spec.image))
            return make_error(ErrorCode::not_found, "image " + spec.image + " is not present");
        if (task_handler) return task_handler(spec);
        return runtime::ExecResult{};
    }
    struct Task {
        runtime::ContainerSpec spec;
        runtime::TaskOptions options;
    };
    std::vector<Task> tasks;
    std::function<Result<runtime::ExecResult>(const runtime::ContainerSpec&)> task_handler;

    Result<runtime::ExecResult> exec(const std::string& id,
                                     const runtime::ExecRequest& request) override {
        calls.push_back("exec");
        execs.emplace_back(id, request);
        if (auto error = take_failure("exec")) return *error;
        auto found = containers.find(id);
        if (found == containers.end())
            return make_error(ErrorCode::not_found, "no container " + id);
        if (found->second.info.state != runtime::ContainerState::running)
            return make_error(ErrorCode::conflict, "container " + id + " is not running");
        if (exec_handler) return exec_handler(id, request);
        return runtime::ExecResult{};
    }

    Result<void> stop(const std::string& id, std::chrono::milliseconds) override {
        calls.push_back("stop");
        if (auto error = take_failure("stop")) return *error;
        auto found = containers.find(id);
        if (found == containers.end()) return make_error(ErrorCode::not_found, "no container " + id);
        if (found->second.info.state == runtime::ContainerState::running) {
            found->second.info.state = runtime::ContainerState::exited;
            found->second.info.exit_code = 143; // SIGTERM, as the init reports it
        }
        return {};
    }

    Result<void> remove(const std::string& id) override {
        calls.push_back("remove");
        if (auto error = take_failure("remove")) return *error;
        if (containers.erase(id) == 0) return make_error(ErrorCode::not_found, "no container " + id);
        return {};
    }

    Result<runtime::ContainerInfo> inspect(const std::string& id) override {
        calls.push_back("inspect");
        if (auto error = take_failure("inspect")) return *error;
        auto found = containers.find(id);
        if (found == containers.end()) return make_error(ErrorCode::not_found, "no container " + id);
        return found->second.info;
    }

    Result<std::vector<runtime::ContainerInfo>> list(const std::string& selector) override {
        if (before_list) before_list(); // a test holding podman's answer back
        calls.push_back("list");
        if (auto error = take_failure("list")) return *error;
        const auto equals = selector.find('=');
        const std::string key = selector.substr(0, equals);
        const std::string value = equals == std::string::npos ? "" : selector.substr(equals + 1);
        std::vector<runtime::ContainerInfo> found;
        for (const auto& [id, container] : containers) {
            const auto& labels = container.info.labels;
            auto managed = labels.find(runtime::kManagedLabel);
            auto wanted = labels.find(key);
            if (managed != labels.end() && managed->second == "1" && wanted != labels.end() &&
                (equals == std::string::npos || wanted->second == value))
                found.push_back(container.info);
        }
        return found;
    }

    Result<bool> image_exists(const std::string& reference) override {
        calls.push_back("image_exists");
        if (auto error = take_failure("image_exists")) return *error;
        return images.count(reference) > 0;
    }

    Result<void> import_image(const std::filesystem::path& tarball,
                              const std::string& reference) override {
        calls.push_back("import_image");
        std::error_code ignored;
        imports.push_back({tarball, reference, std::filesystem::exists(tarball, ignored)});
        if (auto error = take_failure("import_image")) return *error;
        images.insert(reference);
        return {};
    }

    Result<void> build_image(const std::filesystem::path& context_dir,
                             const std::string& reference) override {
        if (on_build) on_build(); // before anything is recorded: it may run on another thread
        calls.push_back("build_image");
        std::ifstream file(context_dir / "Containerfile");
        std::stringstream text;
        text << file.rdbuf();
        builds.push_back({reference, text.str()});
        if (auto error = take_failure("build_image")) return *error;
        images.insert(reference);
        return {};
    }
    // What a streamed build prints (build_output, in pieces of build_piece bytes), then the build.
    Result<void> build_image_streaming(const std::filesystem::path& context_dir, const std::string& reference,
                                       const std::function<void(std::string_view)>& on_output) override {
        for (std::size_t at = 0; on_output && at < build_output.size(); at += build_piece)
            on_output(std::string_view(build_output).substr(at, build_piece));
        return build_image(context_dir, reference);
    }
    std::string build_output;
    std::size_t build_piece = 7; // pieces are not lines
    Result<std::vector<std::string>> image_tags(const std::string& repository) override {
        calls.push_back("image_tags");
        std::vector<std::string> tags;
        for (const auto& image : images)
            if (image.starts_with(repository + ":")) tags.push_back(image);
        return tags;
    }

    Result<void> remove_image(const std::string& reference) override {
        calls.push_back("remove_image " + reference);
        for (const auto& [id, container] : containers)
            if (container.info.image == reference)
                return make_error(ErrorCode::conflict, "image " + reference + " is in use by container " + id);
        if (images.erase(reference) == 0) return make_error(ErrorCode::not_found, "no image " + reference);
        return {};
    }

    // What limits() answers once a container has started (as podman's does).
    std::vector<runtime::LimitReport> reported_limits = {
        {"processes", "4096", true, "RLIMIT_NPROC"},
        {"memory", "8192 MiB", false, "no memory controller here"},
    };
    std::vector<runtime::LimitReport> limits() override {
        return next_id_ == 0 ? std::vector<runtime::LimitReport>{} : reported_limits;
    }

    struct Build {
        std::string reference;
        std::string containerfile; // as it was when the build ran
    };
    std::vector<Build> builds;
    std::function<void()> on_build; // e.g. to hold a build while the test looks around

    // The next call of `method` ("exec", "import_image", ...) fails with `error`.
    void fail_next(const std::string& method, Error error) {
        failures_[method].push_back(std::move(error));
    }

    // Ends a running container as if its program exited with `exit_code`.
    void exit_container(const std::string& id, int exit_code) {
        auto& info = containers.at(id).info;
        info.state = runtime::ContainerState::exited;
        info.exit_code = exit_code;
    }

    std::set<std::string> images;
    std::map<std::string, Container> containers; // by id
    std::vector<Import> imports;
    std::vector<std::pair<std::string, runtime::ExecRequest>> execs;
    std::vector<std::string> calls; // method names, in order
    // Answers exec on a running container; unset: exit 0 with no output.
    std::function<Result<runtime::ExecResult>(const std::string&, const runtime::ExecRequest&)>
        exec_handler;
    // Runs at the start of list(), on the caller's thread.
    std::function<void()> before_list;

private:
    std::optional<Error> take_failure(const std::string& method) {
        auto found = failures_.find(method);
        if (found == failures_.end() || found->second.empty()) return std::nullopt;
        Error error = std::move(found->second.front());
        found->second.pop_front();
        return error;
    }

    std::map<std::string, std::deque<Error>> failures_;
    int next_id_ = 0;
};

} // namespace handler::testing
