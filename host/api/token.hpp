// The API token that TCP callers present (docs/api.md, "TCP guards"). The unix socket
// needs none: its file mode is the authentication. The token lives in
// Paths::token_file(), mode 0600, made on first start.
#pragma once

#include "core/result.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace handler::api {

// 32 random bytes from OpenSSL's CSPRNG, as 64 lowercase hex digits: safe in a header,
// a cookie and a shell without quoting.
inline constexpr std::size_t kTokenBytes = 32;

// Reads the token from `file`, or makes one there if the file does not exist. The
// folder must exist (the daemon makes the data folder). A file that group or others
// may read is refused rather than silently fixed: someone may already have read it, and
// the error tells the user to `chmod 600` (or delete it for a fresh token). A file owned
// by another user, a symbolic link, or content that is not a token is refused too.
Result<std::string> load_or_create_token(const std::filesystem::path& file);

// Constant-time comparison (CRYPTO_memcmp), so response timing does not reveal how many
// leading characters of a guess were right. Only the length is compared in variable time,
// and the length of a token is not a secret.
bool token_equals(std::string_view presented, std::string_view expected);

} // namespace handler::api
