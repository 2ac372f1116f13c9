// The real values of accounts' keys, kept outside every container and outside the
// database: one file per account in <data>/secrets/ (folder 0700, files 0600), so a copy
// of handler.db for a bug report never carries a key. Values never reach a log line or an
// API answer; the API can only say whether an account has one.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace handler::secrets {

class SecretStore {
public:
    explicit SecretStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

    Result<void> put(std::int64_t account_id, std::string_view value);
    // nullopt: none stored. An error for a file that others could read (it is refused,
    // not used: the key may have leaked; the message says so and how to fix the mode).
    Result<std::optional<std::string>> get(std::int64_t account_id) const;
    bool has(std::int64_t account_id) const;
    Result<void> remove(std::int64_t account_id);

    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path file(std::int64_t account_id) const;
    std::filesystem::path dir_;
};

} // namespace handler::secrets
