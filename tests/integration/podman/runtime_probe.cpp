// A small driver for the podman integration tests: each sub-command is one call on the
// REAL PodmanRuntime (real podman, real SystemCommandRunner), so the shell test checks
// exactly the command line handlerd will use. Errors go to stderr with exit status 1
// (2: not found); `exec` exits with the program's own status.
//
//   runtime_probe run SESSION IMAGE PROJECT -- ARGV...   prints the container id
//   runtime_probe exec ID -- ARGV...                      prints the program's output
//   runtime_probe inspect ID                              prints key=value lines
//   runtime_probe list SELECTOR                           prints "id session state" lines
//   runtime_probe stop ID GRACE_MS | remove ID | image-exists REF | import TARBALL REF
//   runtime_probe ensure-base-image    this host's base image (docs/images.md): progress
//                                      on stderr, the reference on stdout
//   runtime_probe ensure-layer NAME VERSION BASE   a plugin image whose recipe does nothing,
//                                      built on BASE (older ones of NAME pruned); progress on
//                                      stderr, the reference on stdout
#include "core/paths.hpp"
#include "runtime/image_builder.hpp"
#include "runtime/podman_runtime.hpp"

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace handler;
using namespace handler::runtime;

int failed(const Error& error) {
    std::cerr << "runtime_probe: " << error.message << "\n";
    return error.code == ErrorCode::not_found ? 2 : 1;
}

int usage() {
    std::cerr << "usage: runtime_probe run|exec|inspect|list|stop|remove|image-exists|import|"
                 "ensure-base-image ...\n";
    return 64;
}

// Everything after "--" (the program and its arguments).
std::vector<std::string> after_dashes(const std::vector<std::string>& arguments, std::size_t from) {
    for (std::size_t i = from; i < arguments.size(); ++i)
        if (arguments[i] == "--") return {arguments.begin() + static_cast<long>(i) + 1, arguments.end()};
    return {};
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> arguments(argv + 1, argv + argc);
    if (arguments.empty()) return usage();
    const char* home = std::getenv("HOME");
    auto paths = Paths::from_process_environment();
    if (!home || !paths) {
        std::cerr << "runtime_probe: HOME and the XDG folders must be set\n";
        return 1;
    }
    SystemCommandRunner runner;
    PodmanRuntime runtime(runner, PodmanOptions::for_user(home, *paths, ::getuid()));
    const std::string& command = arguments[0];

    if (command == "run" && arguments.size() >= 5) {
        ContainerSpec spec;
        spec.session_id = arguments[1];
        spec.image = arguments[2];
        spec.project_path = arguments[3];
        spec.argv = after_dashes(arguments, 4);
        auto id = runtime.create_and_start(spec);
        if (!id) return failed(id.error());
        std::cout << *id << "\n";
        return 0;
    }
    if (command == "exec" && arguments.size() >= 4) {
        ExecRequest request;
        request.argv = after_dashes(arguments, 2);
        auto result = runtime.exec(arguments[1], request);
        if (!result) return failed(result.error());
        std::cout << result->stdout_text;
        std::cerr << result->stderr_text;
        return result->exit_code;
    }
    if (command == "inspect" && arguments.size() == 2) {
        auto info = runtime.inspect(arguments[1]);
        if (!info) return failed(info.error());
        std::cout << "id=" << info->id << "\nname=" << info->name << "\nimage=" << info->image
                  << "\nstate=" << to_string(info->state) << "\nexit_code=" << info->exit_code
                  << "\nsession=" << info->session_id() << "\n";
        return 0;
    }
    if (command == "list" && arguments.size() == 2) {
        auto list = runtime.list(arguments[1]);
        if (!list) return failed(list.error());
        for (const ContainerInfo& info : *list)
            std::cout << info.id << " " << info.session_id() << " " << to_string(info.state) << "\n";
        return 0;
    }
    if (command == "stop" && arguments.size() == 3) {
        auto stopped = runtime.stop(arguments[1], std::chrono::milliseconds(std::stoll(arguments[2])));
        return stopped ? 0 : failed(stopped.error());
    }
    if (command == "remove" && arguments.size() == 2) {
        auto removed = runtime.remove(arguments[1]);
        return removed ? 0 : failed(removed.error());
    }
    if (command == "image-exists" && arguments.size() == 2) {
        auto exists = runtime.image_exists(arguments[1]);
        if (!exists) return failed(exists.error());
        std::cout << (*exists ? "yes" : "no") << "\n";
        return 0;
    }
    if (command == "import" && arguments.size() == 3) {
        auto imported = runtime.import_image(arguments[1], arguments[2]);
        return imported ? 0 : failed(imported.error());
    }
    if (command == "ensure-base-image" && arguments.size() == 1) {
        ImageBuilder builder(runner, runtime);
        auto reference = builder.ensure_base_image(
            default_base_recipe(), [](const std::string& line) { std::cerr << line << "\n"; });
        if (!reference) return failed(reference.error());
        std::cout << *reference << "\n";
        return 0;
    }
    if (command == "ensure-layer" && arguments.size() == 4) {
        // A plugin NAME at VERSION whose recipe does nothing, on image BASE.
        const LayerRecipe recipe{arguments[1], arguments[2], {}, {"true"}};
        auto build_dir = std::filesystem::path(home) / ".cache/handler/probe-build";
        auto reference = ensure_layer_image(runtime, build_dir, arguments[3], recipe,
                                            [](const std::string& line) { std::cerr << line << "\n"; });
        if (!reference) return failed(reference.error());
        std::cout << *reference << "\n";
        return 0;
    }
    return usage();
}
