// The one check that a file or folder is this user's alone: a regular file (or a
// folder), not a symbolic link, owned by the effective user, with no group or other
// permission bits. Files that hold secrets (the API token, the CA key, account keys) and
// the folders around the API socket are held to it.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <string_view>

struct stat;

namespace handler {

enum class PrivateKind { file = 1, folder };

// What a refusal says, besides the path and what is wrong.
struct PrivateAdvice {
    std::string_view what; // names it ("the CA key", "the API token file")
    std::string_view fix;  // what to do instead of `chmod` ("remove it and start handlerd again")
};

// On an open descriptor (O_NOFOLLOW), so what is checked is what is read. The message
// names the file, what is wrong (type, owner with both uids, or mode) and the fix: for a
// mode, `chmod 600 PATH` (700 for a folder), then `advice.fix`; otherwise `advice.fix`.
Result<void> check_private(int fd, const std::filesystem::path& path, PrivateKind kind,
                           const PrivateAdvice& advice);
// By path, without following a final symbolic link (lstat).
Result<void> check_private(const std::filesystem::path& path, PrivateKind kind,
                           const PrivateAdvice& advice);
// Type and owner only: for a folder whose mode the caller then sets itself.
Result<void> check_owned(const std::filesystem::path& path, PrivateKind kind,
                         const PrivateAdvice& advice);

} // namespace handler
