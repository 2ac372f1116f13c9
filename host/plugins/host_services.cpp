#include "plugins/host_services.hpp"

#include <handler/host.hpp>

#include <spdlog/spdlog.h>

#include <optional>
#include <shared_mutex>
#include <string>

namespace handler::plugins {
namespace {

using sdk::to_view;
using sdk::write_to;

PluginHostApi& self(void* context) { return *static_cast<PluginHostApi*>(context); }

spdlog::level::level_enum to_spdlog(hd_log_level level) {
    switch (level) {
    case HD_LOG_TRACE: return spdlog::level::trace;
    case HD_LOG_DEBUG: return spdlog::level::debug;
    case HD_LOG_INFO: return spdlog::level::info;
    case HD_LOG_WARN: return spdlog::level::warn;
    case HD_LOG_ERROR: return spdlog::level::err;
    }
    // A level from a newer minor, or garbage: still worth seeing.
    return spdlog::level::info;
}

hd_status to_status(ErrorCode code) {
    switch (code) {
    case ErrorCode::not_found: return HD_STATUS_NOT_FOUND;
    case ErrorCode::invalid_argument:
    case ErrorCode::too_large: return HD_STATUS_INVALID_ARGUMENT;
    case ErrorCode::unauthorized:
    case ErrorCode::forbidden:
    case ErrorCode::conflict: return HD_STATUS_DENIED;
    case ErrorCode::unavailable:
    case ErrorCode::incompatible:
    case ErrorCode::internal: return HD_STATUS_FAILED;
    }
    return HD_STATUS_FAILED;
}

} // namespace

HostServices::HostServices(PluginStorage& storage, std::shared_ptr<spdlog::logger> logger)
    : storage_(storage), logger_(logger ? std::move(logger) : spdlog::default_logger()) {}

std::unique_ptr<PluginHostApi> HostServices::make_api(std::string plugin_id) {
    return std::unique_ptr<PluginHostApi>(new PluginHostApi(std::move(plugin_id), *this));
}

PluginHostApi::PluginHostApi(std::string plugin_id, HostServices& services)
    : plugin_id_(std::move(plugin_id)), storage_(services.storage_), logger_(services.logger_),
      services_(services), api_{} {
    api_.struct_size = sizeof api_;
    api_.abi_major = HD_ABI_MAJOR;
    api_.abi_minor = HD_ABI_MINOR;
    api_.context = this;
    api_.log = &PluginHostApi::log;
    api_.network_allow_host = &PluginHostApi::network_allow_host;
    api_.network_bind_secret = &PluginHostApi::network_bind_secret;
    api_.secret_stand_in = &PluginHostApi::secret_stand_in;
    api_.container_spawn = &PluginHostApi::container_spawn;
    api_.container_exec = &PluginHostApi::container_exec;
    api_.container_stop = &PluginHostApi::container_stop;
    api_.storage_get = &PluginHostApi::storage_get;
    api_.storage_set = &PluginHostApi::storage_set;
    api_.storage_remove = &PluginHostApi::storage_remove;
}

// Every callback below runs on a plugin's call stack: nothing may throw out of it.

void PluginHostApi::log(void* context, hd_log_level level, hd_str message) noexcept {
    try {
        PluginHostApi& host = self(context);
        std::string_view text = to_view(message);
        const bool cut = text.size() > kMaxLogMessageBytes;
        if (cut) text = text.substr(0, kMaxLogMessageBytes);
        host.logger_->log(to_spdlog(level), "[plugin {}] {}{}", host.plugin_id_, text,
                          cut ? " (cut: longer than 16 KiB)" : "");
    } catch (...) {
        // Losing one log line is better than failing the plugin's call.
    }
}

hd_status PluginHostApi::not_yet(const char* service, hd_sink out_error) {
    const std::string message = std::string(service) + " is not available in this handlerd yet";
    try {
        logger_->debug("[plugin {}] asked for {}", plugin_id_, message);
    } catch (...) {
    }
    write_to(out_error, message);
    return HD_STATUS_UNSUPPORTED;
}

hd_status PluginHostApi::network_allow_host(void* context, hd_str session_id, hd_str host_pattern,
                                            uint16_t port, hd_str reason) noexcept {
    PluginHostApi& host = self(context);
    try {
        const std::shared_lock lock(host.services_.sessions_mutex_);
        if (host.services_.sessions_ == nullptr) return host.not_yet("network_allow_host", hd_sink{});
        std::string rule(to_view(host_pattern));
        if (port != 0) rule += ":" + std::to_string(port);
        const auto added =
            host.services_.sessions_->allow_host(host.plugin_id_, std::string(to_view(session_id)), rule,
                                                 std::string(to_view(reason)));
        // No error sink in this call (sdk.h): the reason for a refusal goes to the log.
        if (!added) {
            host.logger_->warn("[plugin {}] network_allow_host {}: {}", host.plugin_id_, rule,
                               added.error().message);
            return to_status(added.error().code);
        }
        return HD_STATUS_OK;
    } catch (const std::exception& error) {
        host.logger_->error("[plugin {}] network_allow_host: {}", host.plugin_id_, error.what());
        return HD_STATUS_FAILED;
    } catch (...) {
        return HD_STATUS_FAILED;
    }
}

hd_status PluginHostApi::network_bind_secret(void* context, hd_str, hd_str, hd_str, hd_str,
                                             hd_str) noexcept {
    return self(context).not_yet("network_bind_secret", hd_sink{});
}

hd_status PluginHostApi::secret_stand_in(void* context, hd_str session_id, hd_str secret_name,
                                         hd_sink out_stand_in, hd_sink out_error) noexcept {
    PluginHostApi& host = self(context);
    try {
        const std::shared_lock lock(host.services_.sessions_mutex_);
        if (host.services_.sessions_ == nullptr) return host.not_yet("secret_stand_in", out_error);
        auto stand_in = host.services_.sessions_->stand_in(host.plugin_id_, std::string(to_view(session_id)),
                                                           std::string(to_view(secret_name)));
        if (!stand_in) {
            write_to(out_error, stand_in.error().message);
            return to_status(stand_in.error().code);
        }
        write_to(out_stand_in, *stand_in);
        return HD_STATUS_OK;
    } catch (const std::exception& error) {
        write_to(out_error, std::string("secret_stand_in: ") + error.what());
        return HD_STATUS_FAILED;
    } catch (...) {
        return HD_STATUS_FAILED;
    }
}

hd_status PluginHostApi::container_spawn(void* context, const hd_container_spec*, hd_sink,
                                         hd_sink out_error) noexcept {
    return self(context).not_yet("container_spawn", out_error);
}

hd_status PluginHostApi::container_exec(void* context, hd_str, const hd_str*, size_t, hd_sink,
                                        int32_t*, hd_sink out_error) noexcept {
    return self(context).not_yet("container_exec", out_error);
}

hd_status PluginHostApi::container_stop(void* context, hd_str, uint32_t,
                                        hd_sink out_error) noexcept {
    return self(context).not_yet("container_stop", out_error);
}

// storage_* have no error sink (sdk.h), so the reason for a failure goes to the log,
// where the plugin's Host wrapper tells its author to look.
hd_status PluginHostApi::check_key(const char* call, std::string_view key) {
    if (!key.empty() && key.size() <= kMaxStorageKeyBytes) return HD_STATUS_OK;
    logger_->warn("[plugin {}] {}: the key must be 1 to {} bytes long, got {}", plugin_id_, call,
                  kMaxStorageKeyBytes, key.size());
    return HD_STATUS_INVALID_ARGUMENT;
}

hd_status PluginHostApi::storage_get(void* context, hd_str key, hd_sink out_value) noexcept {
    PluginHostApi& host = self(context);
    try {
        if (const hd_status bad = host.check_key("storage_get", to_view(key)); bad != HD_STATUS_OK)
            return bad;
        Result<std::optional<std::string>> value = host.storage_.get(host.plugin_id_, to_view(key));
        if (!value) {
            host.logger_->warn("[plugin {}] storage_get: {}", host.plugin_id_, value.error().message);
            return to_status(value.error().code);
        }
        if (!value->has_value()) return HD_STATUS_NOT_FOUND;
        write_to(out_value, **value);
        return HD_STATUS_OK;
    } catch (...) {
        return HD_STATUS_FAILED;
    }
}

hd_status PluginHostApi::storage_set(void* context, hd_str key, hd_str value) noexcept {
    PluginHostApi& host = self(context);
    try {
        if (const hd_status bad = host.check_key("storage_set", to_view(key)); bad != HD_STATUS_OK)
            return bad;
        if (value.size > kMaxStorageValueBytes) {
            host.logger_->warn("[plugin {}] storage_set: the value for '{}' is {} bytes, over the "
                               "limit of {}; keep large data in files",
                               host.plugin_id_, to_view(key), value.size, kMaxStorageValueBytes);
            return HD_STATUS_INVALID_ARGUMENT;
        }
        Result<void> done = host.storage_.set(host.plugin_id_, to_view(key), to_view(value));
        if (!done) {
            host.logger_->warn("[plugin {}] storage_set: {}", host.plugin_id_, done.error().message);
            return to_status(done.error().code);
        }
        return HD_STATUS_OK;
    } catch (...) {
        return HD_STATUS_FAILED;
    }
}

hd_status PluginHostApi::storage_remove(void* context, hd_str key) noexcept {
    PluginHostApi& host = self(context);
    try {
        if (const hd_status bad = host.check_key("storage_remove", to_view(key)); bad != HD_STATUS_OK)
            return bad;
        Result<void> done = host.storage_.remove(host.plugin_id_, to_view(key));
        if (!done) {
            host.logger_->warn("[plugin {}] storage_remove: {}", host.plugin_id_, done.error().message);
            return to_status(done.error().code);
        }
        return HD_STATUS_OK;
    } catch (...) {
        return HD_STATUS_FAILED;
    }
}

} // namespace handler::plugins
