// The host services behind the plugin waist (sdk.h hd_host_api): what handlerd offers
// every plugin. Each plugin gets its own hd_host_api whose context names it, so its log
// lines carry its id and its storage (and later its network rules) are its own.
#pragma once

#include "core/result.hpp"
#include "plugins/plugin_storage.hpp"

#include <handler/sdk.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

namespace spdlog {
class logger;
}

namespace handler::plugins {

class PluginHostApi;

// What a plugin may do to the sessions that use it (sdk.h: network_allow_host,
// secret_stand_in): handlerd's session manager. A session uses a plugin when the plugin
// is its harness or one of its agent's addons; nothing here reaches another session.
// Called from any thread.
class PluginSessions {
public:
    virtual ~PluginSessions() = default;
    // Adds `rule` (as `handler network allow` takes it) to the allow-list of session
    // `session_id`, or of every live session using the plugin when empty; it applies from
    // the session's next connection. Returns how many sessions it was added to.
    virtual Result<std::size_t> allow_host(const std::string& plugin_id, const std::string& session_id,
                                           const std::string& rule, const std::string& reason) = 0;
    // The stand-in session `session_id` holds for its key of kind `kind`.
    virtual Result<std::string> stand_in(const std::string& plugin_id, const std::string& session_id,
                                         const std::string& kind) = 0;
};

// One per handlerd. Holds the services' implementations; network_bind_secret and the
// container services answer HD_STATUS_UNSUPPORTED ("not available in this handlerd
// yet"), as do the session services until set_sessions() gives them an implementation,
// but they are present and callable so plugins can already be written against them.
//
// Plugins may call services from threads of their own, so every implementation behind
// this (storage, logger, sessions) must be thread-safe.
class HostServices {
public:
    // `storage` must outlive every PluginHostApi made here. Logs go to `logger`
    // (spdlog's default logger when null).
    explicit HostServices(PluginStorage& storage, std::shared_ptr<spdlog::logger> logger = nullptr);

    // The hd_host_api for plugin `plugin_id`. Must outlive the plugin instance created
    // with it (the registry keeps both together).
    std::unique_ptr<PluginHostApi> make_api(std::string plugin_id);

    // Where the session services go; null (the default, and before `sessions` goes away)
    // makes them answer UNSUPPORTED. Waits for calls under way on plugins' threads.
    void set_sessions(PluginSessions* sessions) {
        const std::unique_lock lock(sessions_mutex_);
        sessions_ = sessions;
    }

    // Where the loader reports what it loaded and refused, so a test can keep it quiet.
    const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }

private:
    PluginStorage& storage_;
    std::shared_ptr<spdlog::logger> logger_;
    friend class PluginHostApi;
    // Held shared by every call into `sessions_`, so it cannot go away under one.
    std::shared_mutex sessions_mutex_;
    PluginSessions* sessions_ = nullptr;
};

// One plugin's view of the host services. Not movable: hd_host_api.context points here.
class PluginHostApi {
public:
    PluginHostApi(const PluginHostApi&) = delete;
    PluginHostApi& operator=(const PluginHostApi&) = delete;

    const hd_host_api* api() const { return &api_; }
    const std::string& plugin_id() const { return plugin_id_; }

    // Bounds on what one plugin can put into handlerd's log and database.
    static constexpr std::size_t kMaxLogMessageBytes = std::size_t{16} * 1024;
    static constexpr std::size_t kMaxStorageKeyBytes = 1024;
    static constexpr std::size_t kMaxStorageValueBytes = std::size_t{1024} * 1024;

private:
    friend class HostServices;
    PluginHostApi(std::string plugin_id, HostServices& services);

    static void log(void* context, hd_log_level level, hd_str message) noexcept;
    static hd_status network_allow_host(void* context, hd_str session_id, hd_str host_pattern,
                                        uint16_t port, hd_str reason) noexcept;
    static hd_status network_bind_secret(void* context, hd_str session_id, hd_str secret_name,
                                         hd_str host_pattern, hd_str header_name,
                                         hd_str value_template) noexcept;
    static hd_status secret_stand_in(void* context, hd_str session_id, hd_str secret_name,
                                     hd_sink out_stand_in, hd_sink out_error) noexcept;
    static hd_status container_spawn(void* context, const hd_container_spec* spec,
                                     hd_sink out_container_id, hd_sink out_error) noexcept;
    static hd_status container_exec(void* context, hd_str container_id, const hd_str* argv,
                                    size_t argc, hd_sink out_output, int32_t* out_exit_code,
                                    hd_sink out_error) noexcept;
    static hd_status container_stop(void* context, hd_str container_id, uint32_t grace_ms,
                                    hd_sink out_error) noexcept;
    static hd_status storage_get(void* context, hd_str key, hd_sink out_value) noexcept;
    static hd_status storage_set(void* context, hd_str key, hd_str value) noexcept;
    static hd_status storage_remove(void* context, hd_str key) noexcept;

    // Logs that `service` was asked for and is not there yet; returns UNSUPPORTED.
    hd_status not_yet(const char* service, hd_sink out_error);
    hd_status check_key(const char* call, std::string_view key);

    std::string plugin_id_;
    PluginStorage& storage_;
    std::shared_ptr<spdlog::logger> logger_;
    HostServices& services_;
    hd_host_api api_;
};

} // namespace handler::plugins
