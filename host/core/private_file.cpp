#include "core/private_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace handler {
namespace {

enum class Mode { checked = 1, unchecked };

std::string octal_mode(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777);
    return text;
}

// "the CA key /path", or the path alone.
std::string describe(const PrivateAdvice& advice, const std::filesystem::path& path) {
    return advice.what.empty() ? path.string() : std::string(advice.what) + " " + path.string();
}

Error cannot_inspect(const PrivateAdvice& advice, const std::filesystem::path& path) {
    return make_error(ErrorCode::internal, "cannot inspect " + describe(advice, path) + ": " + std::strerror(errno));
}

Result<void> check(const struct stat& info, const std::filesystem::path& path, PrivateKind kind,
                   const PrivateAdvice& advice, Mode mode) {
    const std::string name = describe(advice, path);
    const bool right_type = kind == PrivateKind::file ? S_ISREG(info.st_mode) : S_ISDIR(info.st_mode);
    if (!right_type)
        return make_error(ErrorCode::forbidden,
                          name + " is not a " + (kind == PrivateKind::file ? "regular file" : "folder") +
                              (S_ISLNK(info.st_mode) ? " (it is a symbolic link)" : "") + "; " +
                              std::string(advice.fix));
    if (info.st_uid != ::geteuid())
        return make_error(ErrorCode::forbidden,
                          name + " is owned by uid " + std::to_string(info.st_uid) + ", not by you (uid " +
                              std::to_string(::geteuid()) + "); " + std::string(advice.fix));
    if (mode == Mode::checked && (info.st_mode & 077) != 0)
        return make_error(ErrorCode::forbidden,
                          name + " has mode " + octal_mode(info.st_mode) +
                              ", so other users may read or change it; run `chmod " +
                              (kind == PrivateKind::file ? "600 " : "700 ") + path.string() + "`, or " +
                              std::string(advice.fix));
    return {};
}

Result<void> check_path(const std::filesystem::path& path, PrivateKind kind, const PrivateAdvice& advice,
                        Mode mode) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) return cannot_inspect(advice, path);
    return check(info, path, kind, advice, mode);
}

} // namespace

Result<void> check_private(int fd, const std::filesystem::path& path, PrivateKind kind,
                           const PrivateAdvice& advice) {
    struct stat info {};
    if (::fstat(fd, &info) != 0) return cannot_inspect(advice, path);
    return check(info, path, kind, advice, Mode::checked);
}

Result<void> check_private(const std::filesystem::path& path, PrivateKind kind, const PrivateAdvice& advice) {
    return check_path(path, kind, advice, Mode::checked);
}

Result<void> check_owned(const std::filesystem::path& path, PrivateKind kind, const PrivateAdvice& advice) {
    return check_path(path, kind, advice, Mode::unchecked);
}

} // namespace handler
