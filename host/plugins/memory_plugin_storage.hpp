// PluginStorage kept in memory, for processes that have no database: tools such as
// handler_plugin_probe, and tests. handlerd itself uses the store's SQLite one.
#pragma once

#include "plugins/plugin_storage.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace handler::plugins {

class MemoryPluginStorage final : public PluginStorage {
public:
    Result<std::optional<std::string>> get(std::string_view plugin_id,
                                           std::string_view key) override {
        const std::lock_guard lock(mutex_);
        const auto found = values_.find({std::string(plugin_id), std::string(key)});
        if (found == values_.end()) return std::optional<std::string>();
        return std::optional<std::string>(found->second);
    }
    Result<void> set(std::string_view plugin_id, std::string_view key,
                     std::string_view value) override {
        const std::lock_guard lock(mutex_);
        values_[{std::string(plugin_id), std::string(key)}] = std::string(value);
        return {};
    }
    Result<void> remove(std::string_view plugin_id, std::string_view key) override {
        const std::lock_guard lock(mutex_);
        values_.erase({std::string(plugin_id), std::string(key)});
        return {};
    }

private:
    std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, std::string> values_;
};

} // namespace handler::plugins
