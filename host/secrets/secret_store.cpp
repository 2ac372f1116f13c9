#include "secrets/secret_store.hpp"

#include "core/file_descriptor.hpp"
#include "core/paths.hpp"
#include "core/private_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::secrets {
namespace fs = std::filesystem;

fs::path SecretStore::file(std::int64_t account_id) const {
    return dir_ / (std::to_string(account_id) + ".key");
}

Result<void> SecretStore::put(std::int64_t account_id, std::string_view value) {
    if (auto made = ensure_private_dir(dir_); !made) return made;
    return write_file_atomic(file(account_id), value, 0600);
}

Result<std::optional<std::string>> SecretStore::get(std::int64_t account_id) const {
    const fs::path path = file(account_id);
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::optional<std::string>();
        return make_error(ErrorCode::internal, "cannot open " + path.string() + ": " + std::strerror(errno));
    }
    if (auto mine = check_private(fd.get(), path, PrivateKind::file,
                                  {"the key file", "replace the key with `handler account set-key` (until "
                                                   "then it is not used, and it may have leaked)"});
        !mine)
        return mine.take_error();
    std::string value;
    char buffer[4096];
    ssize_t got;
    while ((got = ::read(fd.get(), buffer, sizeof buffer)) > 0) value.append(buffer, static_cast<std::size_t>(got));
    return std::optional<std::string>(std::move(value));
}

bool SecretStore::has(std::int64_t account_id) const {
    std::error_code ignored;
    return fs::exists(file(account_id), ignored);
}

Result<void> SecretStore::remove(std::int64_t account_id) {
    std::error_code error;
    fs::remove(file(account_id), error);
    if (error) return make_error(ErrorCode::internal, "cannot remove " + file(account_id).string() + ": " + error.message());
    return {};
}

} // namespace handler::secrets
