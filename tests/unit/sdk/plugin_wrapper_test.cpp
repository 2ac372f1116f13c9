// The plugin-side wrappers (handler/plugin.hpp) against a fake host: what a plugin
// author's class sees, and what crosses the waist when it misbehaves.
#include "unit/sdk/fake_host.hpp"

#include <handler/plugin.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using handler::sdk::Host;
using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;
using handler::sdk::StringSink;
using handler::testing::FakeEventSink;
using handler::testing::FakeHost;
using handler::testing::FakeLaunchBuilder;

// Echoes each fed piece as one event, and fails on "bad".
class EchoParser : public handler::sdk::EventParser {
public:
    void feed(std::string_view bytes, handler::sdk::EventSink& sink) override {
        if (bytes == "bad") throw PluginError(HD_STATUS_INVALID_ARGUMENT, "bad bytes");
        sink.emit(HD_EVENT_AGENT_MESSAGE_CHUNK, handler::sdk::json_quote(bytes));
    }
};

// What a test wants the next call to do.
enum class Behaviour { work, throw_runtime_error, throw_plugin_error, throw_invalid_argument, throw_int };

Behaviour next_behaviour = Behaviour::work;

void misbehave() {
    switch (next_behaviour) {
    case Behaviour::work: return;
    case Behaviour::throw_runtime_error: throw std::runtime_error("the harness broke");
    case Behaviour::throw_plugin_error: throw PluginError(HD_STATUS_DENIED, "not for this account");
    case Behaviour::throw_invalid_argument: throw std::invalid_argument("no thinking level 'vast'");
    case Behaviour::throw_int: throw 42;
    }
}

class TestHarness : public handler::sdk::Harness {
public:
    explicit TestHarness(const Host& host) {
        misbehave();
        host.info("created");
    }
    std::string describe() override {
        misbehave();
        return R"({"default_hosts":["example.com"]})";
    }
    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        misbehave();
        host().storage_set("last-session", request.session_id);
        launch.image("img").argument("agent").arguments(request.extra_args).env("PROMPT", request.prompt);
        if (request.model == "needs-workdir") launch.workdir("/somewhere");
        if (request.model == "needs-secret") launch.env_from_secret("KEY", "api-key");
    }
    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view session_id) override {
        if (session_id == "no-events") return nullptr;
        return std::make_unique<EchoParser>();
    }
};

class SdkPluginWrapper : public ::testing::Test {
protected:
    void SetUp() override { next_behaviour = Behaviour::work; }
    void TearDown() override {
        if (instance_ != nullptr) info_.destroy(instance_);
        next_behaviour = Behaviour::work;
    }

    hd_status create() { return info_.create(&host_.api, &instance_, error_.sink()); }

    hd_status launch(const hd_launch_request& request, FakeLaunchBuilder& builder) {
        return info_.harness->launch(instance_, &request, &builder.raw, error_.sink());
    }

    static hd_launch_request request(const char* session, const char* prompt, const char* model = "") {
        hd_launch_request raw{};
        raw.struct_size = sizeof raw;
        raw.mode = HD_LAUNCH_HEADLESS;
        raw.start_mode = HD_START_GUARDED;
        raw.session_id = {session, std::strlen(session)};
        raw.prompt = {prompt, std::strlen(prompt)};
        raw.model = {model, std::strlen(model)};
        return raw;
    }

    FakeHost host_;
    hd_plugin_info info_ = handler::sdk::detail::make_harness_info<TestHarness>("test", "1.0.0", "Test", nullptr);
    void* instance_ = nullptr;
    StringSink error_;
};

TEST_F(SdkPluginWrapper, InfoDescribesAHarnessOfThisAbi) {
    EXPECT_EQ(info_.struct_size, sizeof(hd_plugin_info));
    EXPECT_EQ(info_.abi_major, HD_ABI_MAJOR);
    EXPECT_EQ(info_.abi_minor, HD_ABI_MINOR);
    EXPECT_EQ(info_.kind, HD_PLUGIN_KIND_HARNESS);
    EXPECT_STREQ(info_.id, "test");
    ASSERT_NE(info_.harness, nullptr);
    EXPECT_EQ(info_.addon, nullptr);
    EXPECT_EQ(info_.harness->struct_size, sizeof(hd_harness_vtable));
    EXPECT_NE(info_.harness->launch, nullptr);
}

TEST_F(SdkPluginWrapper, CreateHandsTheHostToTheInstanceAndLogsThroughIt) {
    ASSERT_EQ(create(), HD_STATUS_OK) << error_.text();
    ASSERT_NE(instance_, nullptr);
    ASSERT_EQ(host_.log_lines.size(), 1u);
    EXPECT_EQ(host_.log_lines[0].first, HD_LOG_INFO);
    EXPECT_EQ(host_.log_lines[0].second, "created");

    StringSink json;
    ASSERT_EQ(info_.harness->describe(instance_, json.sink(), error_.sink()), HD_STATUS_OK);
    EXPECT_EQ(json.text(), R"({"default_hosts":["example.com"]})");
}

TEST_F(SdkPluginWrapper, LaunchFillsTheHostsBuilderAndUsesStorage) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    FakeLaunchBuilder builder;
    hd_launch_request raw = request("s_1", "fix it");
    const hd_str extra[] = {{"--fast", 6}};
    raw.extra_args = extra;
    raw.extra_arg_count = 1;
    ASSERT_EQ(launch(raw, builder), HD_STATUS_OK) << error_.text();
    EXPECT_EQ(builder.image, "img");
    EXPECT_EQ(builder.arguments, (std::vector<std::string>{"agent", "--fast"}));
    ASSERT_EQ(builder.env.size(), 1u);
    EXPECT_EQ(builder.env[0], (std::pair<std::string, std::string>{"PROMPT", "fix it"}));
    EXPECT_EQ(host_.storage.at("last-session"), "s_1");
}

TEST_F(SdkPluginWrapper, ExceptionsInCreateBecomeFailedWithTheirMessage) {
    next_behaviour = Behaviour::throw_runtime_error;
    EXPECT_EQ(create(), HD_STATUS_FAILED);
    EXPECT_EQ(instance_, nullptr);
    EXPECT_EQ(error_.text(), "the harness broke");
}

TEST_F(SdkPluginWrapper, PluginErrorKeepsItsStatus) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    next_behaviour = Behaviour::throw_plugin_error;
    FakeLaunchBuilder builder;
    EXPECT_EQ(launch(request("s", "p"), builder), HD_STATUS_DENIED);
    EXPECT_EQ(error_.text(), "not for this account");
}

// Bad input the plugin was given is the caller's mistake, reported as such.
TEST_F(SdkPluginWrapper, InvalidArgumentIsAnInvalidArgument) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    next_behaviour = Behaviour::throw_invalid_argument;
    FakeLaunchBuilder builder;
    EXPECT_EQ(launch(request("s", "p"), builder), HD_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(error_.text(), "no thinking level 'vast'");
}

TEST_F(SdkPluginWrapper, NonStandardExceptionsBecomeFailedToo) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    next_behaviour = Behaviour::throw_int;
    StringSink json;
    EXPECT_EQ(info_.harness->describe(instance_, json.sink(), error_.sink()), HD_STATUS_FAILED);
    EXPECT_NE(error_.text().find("not a std::exception"), std::string::npos) << error_.text();
    EXPECT_TRUE(json.text().empty());
}

TEST_F(SdkPluginWrapper, ExceptionWithoutAnErrorSinkStillReturnsAStatus) {
    next_behaviour = Behaviour::throw_runtime_error;
    EXPECT_EQ(info_.create(&host_.api, &instance_, hd_sink{}), HD_STATUS_FAILED);
}

TEST_F(SdkPluginWrapper, MissingBuilderFunctionFailsTheLaunchWithUnsupported) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    FakeLaunchBuilder builder; // has no set_workdir
    EXPECT_EQ(launch(request("s", "p", "needs-workdir"), builder), HD_STATUS_UNSUPPORTED);
    EXPECT_NE(error_.text().find("set_workdir"), std::string::npos) << error_.text();
}

TEST_F(SdkPluginWrapper, RefusedSecretFailsTheLaunchWithTheHostsStatus) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    FakeLaunchBuilder builder;
    builder.secret_answer = HD_STATUS_DENIED;
    EXPECT_EQ(launch(request("s", "p", "needs-secret"), builder), HD_STATUS_DENIED);
    EXPECT_NE(error_.text().find("api-key"), std::string::npos) << error_.text();
}

TEST_F(SdkPluginWrapper, NullRequestIsAnInvalidArgumentNotACrash) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    FakeLaunchBuilder builder;
    EXPECT_EQ(info_.harness->launch(instance_, nullptr, &builder.raw, error_.sink()),
              HD_STATUS_INVALID_ARGUMENT);
}

TEST_F(SdkPluginWrapper, EventParserRoundTrip) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    void* parser = nullptr;
    ASSERT_EQ(info_.harness->events_open(instance_, {"s", 1}, &parser, error_.sink()), HD_STATUS_OK);
    ASSERT_NE(parser, nullptr);
    FakeEventSink sink;
    EXPECT_EQ(info_.harness->events_feed(parser, {"hi", 2}, &sink.raw, error_.sink()), HD_STATUS_OK);
    EXPECT_EQ(info_.harness->events_feed(parser, {"bad", 3}, &sink.raw, error_.sink()),
              HD_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(error_.text(), "bad bytes");
    info_.harness->events_close(parser);
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].first, HD_EVENT_AGENT_MESSAGE_CHUNK);
    EXPECT_EQ(sink.events[0].second, "\"hi\"");
}

TEST_F(SdkPluginWrapper, NoParserIsUnsupported) {
    ASSERT_EQ(create(), HD_STATUS_OK);
    void* parser = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(info_.harness->events_open(instance_, {"no-events", 9}, &parser, error_.sink()),
              HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(parser, nullptr);
}

class TestAddon : public handler::sdk::Addon {
public:
    void contribute(const LaunchRequest& request, LaunchBuilder& launch) override {
        launch.env("ADDON", request.session_id);
    }
};

TEST(SdkPluginWrapperAddon, AddonInfoAndContribute) {
    const hd_plugin_info info =
        handler::sdk::detail::make_addon_info<TestAddon>("addon", "1.0.0", "Addon", "An addon");
    EXPECT_EQ(info.kind, HD_PLUGIN_KIND_ADDON);
    EXPECT_EQ(info.harness, nullptr);
    ASSERT_NE(info.addon, nullptr);
    FakeHost host;
    void* instance = nullptr;
    StringSink error;
    const hd_status created = info.create(&host.api, &instance, error.sink());
    const std::unique_ptr<void, void (*)(void*)> owned(instance, info.destroy);
    ASSERT_EQ(created, HD_STATUS_OK);
    FakeLaunchBuilder builder;
    hd_launch_request request{};
    request.struct_size = sizeof request;
    request.session_id = {"s_2", 3};
    ASSERT_EQ(info.addon->contribute(instance, &request, &builder.raw, error.sink()), HD_STATUS_OK);
    StringSink json;
    ASSERT_EQ(info.addon->describe(instance, json.sink(), error.sink()), HD_STATUS_OK);
    ASSERT_EQ(builder.env.size(), 1u);
    EXPECT_EQ(builder.env[0].second, "s_2");
    EXPECT_EQ(json.text(), "{}"); // the default describe
}

// ------------------------------------------------------------------ Host

TEST(SdkHost, StorageRoundTrip) {
    FakeHost fake;
    const Host host(&fake.api);
    EXPECT_EQ(host.storage_get("k"), std::nullopt);
    EXPECT_TRUE(host.storage_set("k", "v"));
    EXPECT_EQ(fake.storage.at("k"), "v");
    EXPECT_EQ(host.storage_get("k"), std::optional<std::string>("v"));
    EXPECT_TRUE(host.storage_remove("k"));
    EXPECT_EQ(host.storage_get("k"), std::nullopt);
    const auto lookup = host.storage_lookup("k");
    ASSERT_TRUE(lookup.ok());
    EXPECT_FALSE(lookup->has_value());
}

TEST(SdkHost, LogLevelsReachTheHost) {
    FakeHost fake;
    const Host host(&fake.api);
    host.debug("d");
    host.warn("w");
    host.error("e");
    ASSERT_EQ(fake.log_lines.size(), 3u);
    EXPECT_EQ(fake.log_lines[0], (std::pair<hd_log_level, std::string>{HD_LOG_DEBUG, "d"}));
    EXPECT_EQ(fake.log_lines[1].first, HD_LOG_WARN);
    EXPECT_EQ(fake.log_lines[2].first, HD_LOG_ERROR);
}

TEST(SdkHost, NullServicesAreUnsupportedErrorValues) {
    FakeHost fake;
    const Host host(&fake.api);
    const auto allow = host.allow_host("", "example.com", 443, "because");
    EXPECT_EQ(allow.code(), HD_STATUS_UNSUPPORTED);
    EXPECT_NE(allow.message().find("network_allow_host"), std::string::npos) << allow.message();
    EXPECT_EQ(host.bind_secret("", "k", "h", "Authorization", "Bearer {}").code(), HD_STATUS_UNSUPPORTED);
    const auto stand_in = host.secret_stand_in("s", "k");
    EXPECT_FALSE(stand_in.ok());
    EXPECT_EQ(stand_in.status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.container_spawn({}).status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.container_exec("c", {"ls"}).status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.container_stop("c", 1000).code(), HD_STATUS_UNSUPPORTED);
    // value() on an error throws inside the plugin, where the trampoline catches it.
    try {
        (void)stand_in.value();
        ADD_FAILURE() << "value() on an error must throw";
    } catch (const PluginError& error) {
        EXPECT_EQ(error.status(), HD_STATUS_UNSUPPORTED);
    }
}

TEST(SdkHost, NoHostAtAllIsSafe) {
    const Host host;
    host.info("dropped");
    EXPECT_EQ(host.storage_get("k"), std::nullopt);
    EXPECT_FALSE(host.storage_set("k", "v"));
    EXPECT_FALSE(host.storage_remove("k"));
    EXPECT_EQ(host.storage_lookup("k").status().code(), HD_STATUS_UNSUPPORTED);
    const Host null_host(nullptr);
    EXPECT_EQ(null_host.abi_major(), 0);
}

// An older host filled a shorter hd_host_api: what lies past its struct_size must read
// as "not provided", even if the memory there is not zero.
TEST(SdkHost, ServicesBeyondTheHostsStructSizeAreUnsupported) {
    FakeHost fake;
    fake.api.struct_size = offsetof(hd_host_api, container_spawn);
    fake.api.container_spawn = [](void*, const hd_container_spec*, hd_sink, hd_sink) {
        ADD_FAILURE() << "a field past struct_size was called";
        return HD_STATUS_OK;
    };
    fake.api.secret_stand_in = [](void*, hd_str, hd_str, hd_sink out, hd_sink) {
        handler::sdk::write_to(out, "sk-standin");
        return HD_STATUS_OK;
    };
    const Host host(&fake.api);
    EXPECT_EQ(host.container_spawn({}).status().code(), HD_STATUS_UNSUPPORTED);
    EXPECT_EQ(host.storage_get("k"), std::nullopt); // storage_* are past it too
    EXPECT_FALSE(host.storage_set("k", "v"));
    EXPECT_TRUE(fake.storage.empty());
    // Inside struct_size still works.
    EXPECT_EQ(host.secret_stand_in("s", "k").value(), "sk-standin");
}

TEST(SdkHost, HostErrorsCarryTheHostsMessage) {
    FakeHost fake;
    fake.api.container_spawn = [](void*, const hd_container_spec* spec, hd_sink, hd_sink error) {
        const hd_container_spec copy = handler::sdk::read_struct(spec);
        handler::sdk::write_to(error, "no image " + std::string(handler::sdk::to_view(copy.image)));
        return HD_STATUS_NOT_FOUND;
    };
    fake.api.container_exec = [](void*, hd_str, const hd_str* argv, size_t argc, hd_sink out,
                                 int32_t* exit_code, hd_sink) {
        for (size_t i = 0; i < argc; ++i) handler::sdk::write_to(out, handler::sdk::to_view(argv[i]));
        *exit_code = 3;
        return HD_STATUS_OK;
    };
    const Host host(&fake.api);
    handler::sdk::ContainerSpec spec;
    spec.image = "alpine";
    const auto spawned = host.container_spawn(spec);
    EXPECT_EQ(spawned.status().code(), HD_STATUS_NOT_FOUND);
    EXPECT_EQ(spawned.status().message(), "no image alpine");
    const auto exec = host.container_exec("c1", {"echo", "hi"});
    ASSERT_TRUE(exec.ok());
    EXPECT_EQ(exec->exit_code, 3);
    EXPECT_EQ(exec->output, "echohi");
}

// ------------------------------------------------------------------ json_quote

TEST(SdkJsonQuote, EscapesWhatJsonRequires) {
    using handler::sdk::json_quote;
    EXPECT_EQ(json_quote(""), "\"\"");
    EXPECT_EQ(json_quote("a\"b\\c\n\t"), R"("a\"b\\c\n\t")");
    EXPECT_EQ(json_quote(std::string_view("\x01", 1)), R"("\u0001")");
    EXPECT_EQ(json_quote("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(SdkJsonQuote, InvalidUtf8BecomesReplacementCharacters) {
    using handler::sdk::json_quote;
    EXPECT_EQ(json_quote("a\xff"), "\"a\xef\xbf\xbd\"");
    EXPECT_EQ(json_quote("\xc3"), "\"\xef\xbf\xbd\"");         // cut short
    EXPECT_EQ(json_quote("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\""); // overlong
    EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); // surrogate
}

} // namespace
