// Per-plugin key-value storage, one of the host services behind the plugin waist
// (hd_host_api.storage_*). The store implements it on SQLite; tests use a map.
#pragma once

#include "core/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace handler::plugins {

class PluginStorage {
public:
    virtual ~PluginStorage() = default;
    // std::nullopt when the key is not set.
    virtual Result<std::optional<std::string>> get(std::string_view plugin_id,
                                                   std::string_view key) = 0;
    virtual Result<void> set(std::string_view plugin_id, std::string_view key,
                             std::string_view value) = 0;
    virtual Result<void> remove(std::string_view plugin_id, std::string_view key) = 0;
};

} // namespace handler::plugins
