#include "setup/system_probe.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace handler::setup {
namespace fs = std::filesystem;

namespace {

// Closes both ends on scope exit unless handed over.
struct Pipe {
    int read_end = -1;
    int write_end = -1;
    ~Pipe() {
        if (read_end >= 0) ::close(read_end);
        if (write_end >= 0) ::close(write_end);
    }
};

class RealSystemProbe final : public SystemProbe {
public:
    Result<CommandOutput> run(const std::vector<std::string>& argv, int timeout_ms) override {
        if (argv.empty()) return make_error(ErrorCode::invalid_argument, "empty command");
        if (!find_program(argv[0]))
            return make_error(ErrorCode::not_found, argv[0] + " is not installed (not on PATH)");
        Pipe out, err;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return io_error("pipe");
        out.read_end = fds[0], out.write_end = fds[1];
        if (::pipe2(fds, O_CLOEXEC) != 0) return io_error("pipe");
        err.read_end = fds[0], err.write_end = fds[1];

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, out.write_end, 1);
        posix_spawn_file_actions_adddup2(&actions, err.write_end, 2);
        std::vector<char*> args;
        for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
        args.push_back(nullptr);
        pid_t pid = 0;
        const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0)
            return make_error(spawned == ENOENT ? ErrorCode::not_found : ErrorCode::internal,
                              "cannot run " + argv[0] + ": " + std::strerror(spawned));
        ::close(out.write_end), out.write_end = -1;
        ::close(err.write_end), err.write_end = -1;

        CommandOutput result;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        pollfd polls[2] = {{out.read_end, POLLIN, 0}, {err.read_end, POLLIN, 0}};
        std::string* sinks[2] = {&result.out, &result.err};
        int open_count = 2;
        while (open_count > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            if (left <= 0) {
                result.timed_out = true;
                ::kill(pid, SIGKILL);
                break;
            }
            const int ready = ::poll(polls, 2, static_cast<int>(left));
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0) break;
            for (int i = 0; i < 2; ++i) {
                if (polls[i].fd < 0 || polls[i].revents == 0) continue;
                char buffer[4096];
                const ssize_t count = ::read(polls[i].fd, buffer, sizeof buffer);
                if (count > 0) {
                    sinks[i]->append(buffer, static_cast<std::size_t>(count));
                } else if (count == 0 || errno != EINTR) {
                    polls[i].fd = -1;
                    --open_count;
                }
            }
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        result.exit_code = (!result.timed_out && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
        return result;
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
    static Error io_error(const char* what) {
        return make_error(ErrorCode::internal, std::string(what) + ": " + std::strerror(errno));
    }
};

} // namespace

std::unique_ptr<SystemProbe> make_system_probe() { return std::make_unique<RealSystemProbe>(); }

} // namespace handler::setup
