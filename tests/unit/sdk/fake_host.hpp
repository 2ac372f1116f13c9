// A fake of the host side of the waist, for testing the plugin-side wrappers
// (handler/plugin.hpp) without handlerd: an hd_host_api backed by a map and a log
// list, and builders/sinks that record what a plugin asked for. Every table is a
// plain C struct, filled exactly as a host would.
#pragma once

#include <handler/host.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace handler::testing {

struct FakeHost {
    std::map<std::string, std::string> storage;
    std::vector<std::pair<hd_log_level, std::string>> log_lines;
    hd_host_api api{};

    FakeHost() {
        api.struct_size = sizeof api;
        api.abi_major = HD_ABI_MAJOR;
        api.abi_minor = HD_ABI_MINOR;
        api.context = this;
        api.log = [](void* c, hd_log_level level, hd_str message) {
            self(c).log_lines.emplace_back(level, std::string(sdk::to_view(message)));
        };
        api.storage_get = [](void* c, hd_str key, hd_sink out) {
            auto& map = self(c).storage;
            const auto found = map.find(std::string(sdk::to_view(key)));
            if (found == map.end()) return HD_STATUS_NOT_FOUND;
            sdk::write_to(out, found->second);
            return HD_STATUS_OK;
        };
        api.storage_set = [](void* c, hd_str key, hd_str value) {
            self(c).storage[std::string(sdk::to_view(key))] = sdk::to_view(value);
            return HD_STATUS_OK;
        };
        api.storage_remove = [](void* c, hd_str key) {
            self(c).storage.erase(std::string(sdk::to_view(key)));
            return HD_STATUS_OK;
        };
        // network_*, secret_stand_in and container_* stay NULL: "not provided".
    }
    FakeHost(const FakeHost&) = delete;
    FakeHost& operator=(const FakeHost&) = delete;

    static FakeHost& self(void* context) { return *static_cast<FakeHost*>(context); }
};

// Records what a plugin put into a launch.
struct FakeLaunchBuilder {
    std::string image;
    std::vector<std::string> arguments;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::pair<std::string, std::string>> secret_env;
    hd_status secret_answer = HD_STATUS_OK;
    hd_launch_builder raw{};

    FakeLaunchBuilder() {
        raw.struct_size = sizeof raw;
        raw.context = this;
        raw.set_image = [](void* c, hd_str value) { self(c).image = sdk::to_view(value); };
        raw.add_argument = [](void* c, hd_str argument) {
            self(c).arguments.emplace_back(sdk::to_view(argument));
        };
        raw.set_env = [](void* c, hd_str name, hd_str value) {
            self(c).env.emplace_back(sdk::to_view(name), sdk::to_view(value));
        };
        raw.set_env_from_secret = [](void* c, hd_str name, hd_str secret) {
            self(c).secret_env.emplace_back(sdk::to_view(name), sdk::to_view(secret));
            return self(c).secret_answer;
        };
    }
    FakeLaunchBuilder(const FakeLaunchBuilder&) = delete;
    FakeLaunchBuilder& operator=(const FakeLaunchBuilder&) = delete;

    static FakeLaunchBuilder& self(void* context) { return *static_cast<FakeLaunchBuilder*>(context); }
};

struct FakeEventSink {
    std::vector<std::pair<hd_event_kind, std::string>> events;
    hd_event_sink raw{};

    FakeEventSink() {
        raw.struct_size = sizeof raw;
        raw.context = this;
        raw.emit = [](void* c, hd_event_kind kind, hd_str json) {
            static_cast<FakeEventSink*>(c)->events.emplace_back(kind, std::string(sdk::to_view(json)));
        };
    }
    FakeEventSink(const FakeEventSink&) = delete;
    FakeEventSink& operator=(const FakeEventSink&) = delete;
};

} // namespace handler::testing
