#include "core/paths.hpp"

#include "core/file_descriptor.hpp"
#include "core/private_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace handler {
namespace fs = std::filesystem;

namespace {

Result<fs::path> xdg_dir(const GetEnv& getenv, const char* variable, const char* home_relative) {
    if (const char* value = getenv(variable); value != nullptr && value[0] == '/')
        return fs::path(value);
    const char* home = getenv("HOME");
    if (home == nullptr || home[0] != '/')
        return make_error(ErrorCode::invalid_argument,
                          std::string("neither ") + variable +
                              " nor HOME is set to an absolute path; set HOME and try again");
    return fs::path(home) / home_relative;
}

} // namespace

Result<Paths> Paths::from_environment(const GetEnv& getenv, unsigned uid) {
    auto config = xdg_dir(getenv, "XDG_CONFIG_HOME", ".config");
    if (!config) return config.take_error();
    auto data = xdg_dir(getenv, "XDG_DATA_HOME", ".local/share");
    if (!data) return data.take_error();

    fs::path runtime;
    if (const char* value = getenv("XDG_RUNTIME_DIR"); value != nullptr && value[0] == '/') {
        runtime = value;
    } else if (fs::path user_run = "/run/user/" + std::to_string(uid);
               ::access(user_run.c_str(), W_OK) == 0) {
        runtime = user_run;
    } else {
        runtime = "/tmp/handler-runtime-" + std::to_string(uid);
    }
    return Paths{*config / "handler", *data / "handler", runtime / "handler"};
}

Result<Paths> Paths::from_process_environment() {
    return from_environment([](const char* name) { return std::getenv(name); }, ::getuid());
}

Result<void> ensure_private_dir(const fs::path& dir, unsigned mode) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot create folder " + dir.string() + ": " + error.message());
    // The mode is ours to set; type and owner are not.
    if (auto owned = check_owned(dir, PrivateKind::folder,
                                 {"", "remove it (or set XDG_RUNTIME_DIR to a private folder) and try again"});
        !owned)
        return owned;
    struct stat info {};
    if (::lstat(dir.c_str(), &info) != 0)
        return make_error(ErrorCode::internal,
                          "cannot inspect folder " + dir.string() + ": " + std::strerror(errno));
    if ((info.st_mode & 07777) != mode && ::chmod(dir.c_str(), mode) != 0)
        return make_error(ErrorCode::internal,
                          "cannot set mode of " + dir.string() + ": " + std::strerror(errno));
    return {};
}

Result<void> write_file_atomic(const fs::path& path, std::string_view contents, unsigned mode) {
    const fs::path temporary = path.string() + ".tmp-" + std::to_string(::getpid());
    FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                             mode));
    if (!fd.valid())
        return make_error(ErrorCode::internal,
                          "cannot write " + temporary.string() + ": " + std::strerror(errno));
    // open() applies the umask; set the mode we promised explicitly.
    ::fchmod(fd.get(), mode);
    std::size_t written = 0;
    while (written < contents.size()) {
        const ssize_t n = ::write(fd.get(), contents.data() + written, contents.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            const std::string reason = std::strerror(errno);
            fd.reset();
            ::unlink(temporary.c_str());
            return make_error(ErrorCode::internal,
                              "cannot write " + temporary.string() + ": " + reason);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0 || fd.close() != 0) {
        const std::string reason = std::strerror(errno);
        ::unlink(temporary.c_str());
        return make_error(ErrorCode::internal, "cannot write " + path.string() + ": " + reason);
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        ::unlink(temporary.c_str());
        return make_error(ErrorCode::internal, "cannot replace " + path.string() + ": " + reason);
    }
    return {};
}

Result<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return make_error(ErrorCode::not_found, "cannot read " + path.string() + ": " +
                                                    std::strerror(errno));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

fs::path builtin_plugin_dir() {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (error) return {};
    return exe.parent_path().parent_path() / "lib" / "handler" / "plugins";
}

fs::path builtin_helper_dir() {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (error) return {};
    return exe.parent_path().parent_path() / "libexec" / "handler";
}

fs::path builtin_ui_dir() {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (error) return {};
    return exe.parent_path().parent_path() / "share" / "handler" / "ui";
}

} // namespace handler
