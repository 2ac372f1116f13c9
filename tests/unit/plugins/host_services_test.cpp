// The host services a plugin gets (hd_host_api), called through the C table exactly
// as a plugin would, with the SDK's plugin-side Host wrapper on top where it helps.
#include "plugins/host_services.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <handler/plugin.hpp>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <string>
#include <vector>

namespace {

using handler::plugins::HostServices;
using handler::plugins::MemoryPluginStorage;
using handler::plugins::PluginHostApi;
using handler::sdk::Host;
using handler::sdk::StringSink;
using handler::testing::contains;

class PluginHostServices : public ::testing::Test {
protected:
    // Log lines land in log_, as "level message".
    static std::shared_ptr<spdlog::logger> capture(std::ostringstream& out) {
        auto logger = std::make_shared<spdlog::logger>(
            "plugin-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
        logger->set_level(spdlog::level::trace);
        logger->set_pattern("%l %v");
        return logger;
    }

    std::ostringstream log_;
    std::shared_ptr<spdlog::logger> logger_ = capture(log_);
    MemoryPluginStorage storage_;
    HostServices services_{storage_, logger_};
};

TEST_F(PluginHostServices, ApiSpeaksThisAbiAndFillsEveryService) {
    const auto api = services_.make_api("alpha");
    const hd_host_api& raw = *api->api();
    EXPECT_EQ(raw.struct_size, sizeof(hd_host_api));
    EXPECT_EQ(raw.abi_major, HD_ABI_MAJOR);
    EXPECT_EQ(raw.abi_minor, HD_ABI_MINOR);
    EXPECT_EQ(raw.context, api.get());
    EXPECT_NE(raw.log, nullptr);
    EXPECT_NE(raw.network_allow_host, nullptr);
    EXPECT_NE(raw.network_bind_secret, nullptr);
    EXPECT_NE(raw.secret_stand_in, nullptr);
    EXPECT_NE(raw.container_spawn, nullptr);
    EXPECT_NE(raw.container_exec, nullptr);
    EXPECT_NE(raw.container_stop, nullptr);
    EXPECT_NE(raw.storage_get, nullptr);
    EXPECT_NE(raw.storage_set, nullptr);
    EXPECT_NE(raw.storage_remove, nullptr);
}

TEST_F(PluginHostServices, LogLinesCarryThePluginIdAndLevel) {
    const auto api = services_.make_api("alpha");
    const Host host(api->api());
    host.warn("disk is full");
    host.debug("details");
    logger_->flush();
    EXPECT_TRUE(contains(log_.str(), "warning [plugin alpha] disk is full")) << log_.str();
    EXPECT_TRUE(contains(log_.str(), "debug [plugin alpha] details")) << log_.str();
}

TEST_F(PluginHostServices, OverlongLogLinesAreCut) {
    const auto api = services_.make_api("alpha");
    Host(api->api()).info(std::string(PluginHostApi::kMaxLogMessageBytes + 10, 'x'));
    logger_->flush();
    EXPECT_TRUE(contains(log_.str(), "(cut: longer than 16 KiB)"));
    EXPECT_LT(log_.str().size(), PluginHostApi::kMaxLogMessageBytes + 200);
}

TEST_F(PluginHostServices, StorageRoundTripIsKeptPerPlugin) {
    const auto alpha_api = services_.make_api("alpha");
    const auto beta_api = services_.make_api("beta");
    const Host alpha(alpha_api->api());
    const Host beta(beta_api->api());
    EXPECT_TRUE(alpha.storage_set("token", "a"));
    EXPECT_TRUE(beta.storage_set("token", "b"));
    EXPECT_EQ(alpha.storage_get("token"), std::optional<std::string>("a"));
    EXPECT_EQ(beta.storage_get("token"), std::optional<std::string>("b"));
    EXPECT_EQ(*storage_.get("alpha", "token").value(), "a"); // really in the storage, by plugin id
    EXPECT_TRUE(alpha.storage_remove("token"));
    EXPECT_EQ(alpha.storage_get("token"), std::nullopt);
    EXPECT_EQ(beta.storage_get("token"), std::optional<std::string>("b"));
}

TEST_F(PluginHostServices, MissingKeyIsNotFound) {
    const auto api = services_.make_api("alpha");
    StringSink value;
    EXPECT_EQ(api->api()->storage_get(api->api()->context, {"nope", 4}, value.sink()), HD_STATUS_NOT_FOUND);
    EXPECT_TRUE(value.text().empty());
}

TEST_F(PluginHostServices, StorageLimitsAreInvalidArguments) {
    const auto api = services_.make_api("alpha");
    const hd_host_api& raw = *api->api();
    EXPECT_EQ(raw.storage_set(raw.context, {"", 0}, {"v", 1}), HD_STATUS_INVALID_ARGUMENT);
    const std::string big(PluginHostApi::kMaxStorageValueBytes + 1, 'v');
    EXPECT_EQ(raw.storage_set(raw.context, {"k", 1}, {big.data(), big.size()}), HD_STATUS_INVALID_ARGUMENT);
    logger_->flush();
    EXPECT_TRUE(contains(log_.str(), "[plugin alpha] storage_set: the value for 'k'")) << log_.str();
}

// The store's failures reach the plugin as a status and the log as the message.
class FailingStorage final : public handler::plugins::PluginStorage {
public:
    handler::Result<std::optional<std::string>> get(std::string_view, std::string_view) override {
        return handler::make_error(handler::ErrorCode::internal, "database is locked");
    }
    handler::Result<void> set(std::string_view, std::string_view, std::string_view) override {
        return handler::make_error(handler::ErrorCode::forbidden, "read-only database");
    }
    handler::Result<void> remove(std::string_view, std::string_view) override {
        throw std::runtime_error("must not escape into the plugin");
    }
};

TEST_F(PluginHostServices, StorageFailuresBecomeStatusesAndLogLines) {
    FailingStorage failing;
    HostServices services(failing, logger_);
    const auto api = services.make_api("alpha");
    const Host host(api->api());
    const auto lookup = host.storage_lookup("k");
    EXPECT_EQ(lookup.status().code(), HD_STATUS_FAILED);
    EXPECT_FALSE(host.storage_set("k", "v"));
    const hd_host_api& raw = *api->api();
    EXPECT_EQ(raw.storage_set(raw.context, {"k", 1}, {"v", 1}), HD_STATUS_DENIED);
    EXPECT_EQ(raw.storage_remove(raw.context, {"k", 1}), HD_STATUS_FAILED); // the throw was caught
    logger_->flush();
    EXPECT_TRUE(contains(log_.str(), "[plugin alpha] storage_get: database is locked")) << log_.str();
    EXPECT_TRUE(contains(log_.str(), "[plugin alpha] storage_set: read-only database")) << log_.str();
}

// What the session services hand to handlerd's session manager, and what they answer.
class RecordingSessions final : public handler::plugins::PluginSessions {
public:
    handler::Result<std::size_t> allow_host(const std::string& plugin_id, const std::string& session_id,
                                            const std::string& rule, const std::string& reason) override {
        calls.push_back(plugin_id + " " + session_id + " " + rule + " " + reason);
        if (rule.starts_with("127.")) return handler::make_error(handler::ErrorCode::forbidden, "loopback is the user's");
        if (rule.starts_with("bad")) return handler::make_error(handler::ErrorCode::invalid_argument, "not a host");
        return std::size_t{1};
    }
    handler::Result<std::string> stand_in(const std::string& plugin_id, const std::string& session_id,
                                          const std::string& kind) override {
        calls.push_back(plugin_id + " " + session_id + " " + kind);
        if (kind != "anthropic-api-key") return handler::make_error(handler::ErrorCode::not_found, "no such key");
        return std::string("sk-ant-api03-STANDIN");
    }
    std::vector<std::string> calls;
};

TEST_F(PluginHostServices, SessionServicesGoToTheSessionManagerNamingThePlugin) {
    RecordingSessions sessions;
    services_.set_sessions(&sessions);
    const auto api = services_.make_api("alpha");
    const Host host(api->api());
    EXPECT_TRUE(host.allow_host("s_1", "cdn.example.com", 443, "assets").ok());
    EXPECT_TRUE(host.allow_host("", "*.example.org", 0, "").ok());
    const auto refused = host.allow_host("s_1", "127.0.0.1", 8765, "the API");
    EXPECT_EQ(refused.code(), HD_STATUS_DENIED);
    EXPECT_EQ(host.allow_host("s_1", "bad", 0, "").code(), HD_STATUS_INVALID_ARGUMENT);
    logger_->flush();
    // No error sink in network_allow_host: the reason is in the log.
    EXPECT_TRUE(contains(log_.str(), "[plugin alpha] network_allow_host 127.0.0.1:8765: loopback is the user's"))
        << log_.str();

    const auto stand_in = host.secret_stand_in("s_1", "anthropic-api-key");
    ASSERT_TRUE(stand_in.ok()) << stand_in.status().message();
    EXPECT_EQ(stand_in.value(), "sk-ant-api03-STANDIN");
    const auto missing = host.secret_stand_in("s_1", "openai-api-key");
    EXPECT_EQ(missing.status().code(), HD_STATUS_NOT_FOUND);
    EXPECT_EQ(missing.status().message(), "no such key");
    EXPECT_EQ(sessions.calls, (std::vector<std::string>{"alpha s_1 cdn.example.com:443 assets", "alpha  *.example.org ",
                                                        "alpha s_1 127.0.0.1:8765 the API", "alpha s_1 bad ",
                                                        "alpha s_1 anthropic-api-key", "alpha s_1 openai-api-key"}));

    // Taken back (handlerd stopping): unsupported again, and nothing reaches the manager.
    services_.set_sessions(nullptr);
    EXPECT_EQ(host.allow_host("s_1", "cdn.example.com", 443, "").code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.secret_stand_in("s_1", "anthropic-api-key").status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(sessions.calls.size(), 6u);
}

TEST_F(PluginHostServices, NotYetAvailableServicesAreCallableAndSaySo) {
    const auto api = services_.make_api("alpha");
    const Host host(api->api());
    EXPECT_EQ(host.allow_host("", "example.com", 443, "needs it").code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.bind_secret("", "k", "example.com", "Authorization", "Bearer {}").code(),
              HD_STATUS_UNSUPPORTED);
    const auto stand_in = host.secret_stand_in("s_1", "anthropic");
    EXPECT_EQ(stand_in.status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(stand_in.status().message(), "secret_stand_in is not available in this handlerd yet");
    const auto spawned = host.container_spawn({"s_1", "alpine", {"true"}, {}, ""});
    EXPECT_EQ(spawned.status().message(), "container_spawn is not available in this handlerd yet");
    const auto exec = host.container_exec("c", {"ls"});
    EXPECT_EQ(exec.status().message(), "container_exec is not available in this handlerd yet");
    const auto stop = host.container_stop("c", 100);
    EXPECT_EQ(stop.code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(stop.message(), "container_stop is not available in this handlerd yet");
}

} // namespace
