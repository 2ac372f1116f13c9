#include "setup/system_probe.hpp"

#include "runtime/process.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <pwd.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace handler::setup {
namespace fs = std::filesystem;

namespace {

class RealSystemProbe final : public SystemProbe {
public:
    // The spawning itself is runtime::SystemCommandRunner's (descriptor hygiene, output
    // limits, timeouts): one way to run a program in handler, not two.
    Result<CommandOutput> run(const std::vector<std::string>& argv, int timeout_ms) override {
        if (argv.empty()) return make_error(ErrorCode::invalid_argument, "empty command");
        if (!find_program(argv[0]))
            return make_error(ErrorCode::not_found, argv[0] + " is not installed (not on PATH)");
        runtime::CommandRequest request;
        request.argv = argv;
        request.timeout_ms = timeout_ms;
        auto ran = runner_.run(request);
        if (!ran) {
            // A program that hangs is something to report about the machine, not a
            // failure of setup itself.
            if (ran.error().code == ErrorCode::unavailable) {
                CommandOutput output;
                output.timed_out = true;
                output.err = ran.error().message;
                return output;
            }
            return ran.take_error();
        }
        CommandOutput output;
        output.exit_code = ran->exit_code;
        output.out = std::move(ran->stdout_text);
        output.err = std::move(ran->stderr_text);
        return output;
    }

    std::optional<fs::path> find_program(const std::string& program) override {
        if (program.find('/') != std::string::npos)
            return ::access(program.c_str(), X_OK) == 0 ? std::optional<fs::path>(program)
                                                        : std::nullopt;
        const char* path = std::getenv("PATH");
        std::stringstream folders(path != nullptr ? path : "/usr/bin:/bin");
        std::string folder;
        while (std::getline(folders, folder, ':')) {
            if (folder.empty()) continue;
            const fs::path candidate = fs::path(folder) / program;
            struct stat info {};
            if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
                ::access(candidate.c_str(), X_OK) == 0)
                return candidate;
        }
        return std::nullopt;
    }

    Result<std::string> read_file(const fs::path& path) override {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return make_error(errno == ENOENT ? ErrorCode::not_found : ErrorCode::internal,
                              "cannot read " + path.string() + ": " + std::strerror(errno));
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    }

    bool exists(const fs::path& path) override {
        struct stat info {};
        return ::stat(path.c_str(), &info) == 0;
    }

    bool readable_and_writable(const fs::path& path) override {
        return ::access(path.c_str(), R_OK | W_OK) == 0;
    }

    std::optional<long> filesystem_magic(const fs::path& path) override {
        struct statfs info {};
        if (::statfs(path.c_str(), &info) != 0) return std::nullopt;
        return static_cast<long>(info.f_type);
    }

    unsigned uid() override { return ::getuid(); }

    std::string user_name() override {
        if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr) return entry->pw_name;
        return std::to_string(::getuid());
    }

    std::optional<std::string> env(const std::string& name) override {
        const char* value = std::getenv(name.c_str());
        return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
    }

    fs::path self_dir() override {
        std::error_code error;
        const fs::path self = fs::read_symlink("/proc/self/exe", error);
        return error ? fs::path() : self.parent_path();
    }

private:
    runtime::SystemCommandRunner runner_;
};

} // namespace

std::unique_ptr<SystemProbe> make_system_probe() { return std::make_unique<RealSystemProbe>(); }

} // namespace handler::setup
