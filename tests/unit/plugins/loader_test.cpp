// The loader and registry over the fixture plugins (tests/fixtures/plugins): every
// deliberately broken plugin is listed with the state and the message a person needs,
// and the good ones can be called end to end through the real host services.
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <boost/dll/library_info.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <dlfcn.h>

namespace {

using handler::ErrorCode;
using handler::plugins::EventKind;
using handler::plugins::HostServices;
using handler::plugins::LaunchMode;
using handler::plugins::LaunchRequest;
using handler::plugins::MemoryPluginStorage;
using handler::plugins::PluginDir;
using handler::plugins::PluginRecord;
using handler::plugins::PluginRegistry;
using handler::plugins::PluginState;
using handler::testing::contains;
using handler::testing::fixture_plugin_dir;
using handler::testing::TempDir;
using handler::testing::copy_fixture;

std::string library_of(const std::string& name) {
    return (fixture_plugin_dir() / name / ("lib" + name + ".so")).string();
}

// dlopen(RTLD_NOLOAD) succeeds only for a library that is already in the process.
bool is_in_process(const std::string& library) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
    return handle != nullptr; // not closed: nothing loaded is ever unloaded
}

class PluginLoader : public ::testing::Test {
protected:
    void SetUp() override { registry_.load({PluginDir{fixture_plugin_dir(), "builtin"}}); }

    PluginRecord record(const std::string& id) {
        const auto found = registry_.record(id);
        EXPECT_TRUE(found.has_value()) << "no record for " << id;
        return found.value_or(PluginRecord{});
    }

    // Asserts `id` is refused or failed with a message that names its .so and `parts`.
    void expect_not_loaded(const std::string& id, PluginState state,
                           const std::vector<std::string>& parts) {
        const PluginRecord r = record(id);
        EXPECT_EQ(r.state, state) << id << ": " << r.message;
        EXPECT_TRUE(contains(r.message, "plugin '" + id + "' (" + library_of(id) + ")")) << r.message;
        for (const std::string& part : parts) EXPECT_TRUE(contains(r.message, part)) << r.message;
    }

    LaunchRequest request(LaunchMode mode, std::string prompt) {
        LaunchRequest r;
        r.mode = mode;
        r.session_id = "s_7f3a2c";
        r.project_path = "/home/u/project";
        r.prompt = std::move(prompt);
        r.model = "m1";
        return r;
    }

    MemoryPluginStorage storage_;
    HostServices services_{storage_, handler::testing::quiet_logger()};
    PluginRegistry registry_{services_};
};

TEST_F(PluginLoader, EveryFixtureIsListedInNameOrder) {
    std::vector<std::string> ids;
    for (const PluginRecord& r : registry_.list()) ids.push_back(r.id);
    EXPECT_EQ(ids, (std::vector<std::string>{"code-wrong-major", "good", "good-addon", "id-mismatch",
                                             "newer-minor", "no-entry-symbol", "older-minor", "throws-in-create",
                                             "truncated-info", "undefined-symbol", "wrong-major"}));
}

TEST_F(PluginLoader, GoodHarnessLoads) {
    const PluginRecord r = record("good");
    EXPECT_EQ(r.state, PluginState::loaded) << r.message;
    EXPECT_EQ(r.message, "");
    EXPECT_EQ(r.kind, "harness");
    EXPECT_EQ(r.version, "1.2.3");
    EXPECT_EQ(r.abi, "1.1");
    EXPECT_EQ(r.name, "Good fixture");
    EXPECT_EQ(r.library, library_of("good"));
    EXPECT_EQ(r.manifest, (fixture_plugin_dir() / "good" / "plugin.toml").string());
    EXPECT_EQ(r.source, "builtin");
    EXPECT_EQ(handler::plugins::to_string(r.state), "loaded");
}

TEST_F(PluginLoader, WrongMajorIsRefusedFromItsManifestBeforeAnyCodeRuns) {
    expect_not_loaded("wrong-major", PluginState::refused,
                      {"was built for plugin ABI 2.0, but this handlerd speaks 1.1: rebuild it "
                       "against SDK 1.x or upgrade handlerd"});
    EXPECT_EQ(record("wrong-major").abi, "2.0");
    EXPECT_FALSE(is_in_process(library_of("wrong-major")));
}

TEST_F(PluginLoader, NewerMinorIsRefusedBeforeAnyCodeRuns) {
    expect_not_loaded("newer-minor", PluginState::refused,
                      {"built for plugin ABI 1.2", "this handlerd speaks 1.1", "upgrade handlerd"});
    EXPECT_FALSE(is_in_process(library_of("newer-minor")));
}

TEST_F(PluginLoader, CodeThatDisagreesWithItsManifestAboutTheAbiIsRefused) {
    expect_not_loaded("code-wrong-major", PluginState::refused,
                      {"built for plugin ABI 2.1", "speaks 1.1", "its code says 2.1", "says 1.1",
                       "plugin.toml"});
}

TEST_F(PluginLoader, MissingEntrySymbolIsRefused) {
    expect_not_loaded("no-entry-symbol", PluginState::refused,
                      {"does not export hd_plugin_entry", "HD_HARNESS_PLUGIN"});
}

TEST_F(PluginLoader, IdMismatchIsRefusedNamingBothIds) {
    expect_not_loaded("id-mismatch", PluginState::refused,
                      {"called 'someone-else' by its code but 'id-mismatch' by"});
    EXPECT_FALSE(registry_.record("someone-else").has_value());
}

TEST_F(PluginLoader, ThrowInCreateIsFailedWithTheMessage) {
    expect_not_loaded("throws-in-create", PluginState::failed,
                      {"failed to start: create() returned FAILED: fixture: the configuration is missing"});
}

TEST_F(PluginLoader, UndefinedSymbolIsRefusedWithTheLinkerReason) {
    expect_not_loaded("undefined-symbol", PluginState::refused,
                      {"could not be loaded", "undefined symbol: hd_fixture_defined_nowhere"});
}

// struct_size ends before `addon`, where the fixture left garbage: the loader must
// read that field as NULL (else it would refuse a harness that sets an addon table).
TEST_F(PluginLoader, TruncatedInfoFromAnOlderMinorLoads) {
    const PluginRecord r = record("truncated-info");
    EXPECT_EQ(r.state, PluginState::loaded) << r.message;
    auto harness = registry_.harness("truncated-info");
    ASSERT_TRUE(harness) << harness.error().message;
    auto json = (*harness)->describe();
    ASSERT_TRUE(json) << json.error().message;
    EXPECT_EQ(*json, R"({"default_hosts":[],"credentials":[]})");
}

// A harness built for ABI 1.0 loads in a 1.1 handlerd; what 1.1 appended reads as
// missing, so it holds no conversation's cancel and says so, rather than crash.
TEST_F(PluginLoader, AHarnessBuiltForTheOlderMinorLoadsWithoutTheNewCalls) {
    const PluginRecord r = record("older-minor");
    EXPECT_EQ(r.state, PluginState::loaded) << r.message;
    EXPECT_EQ(r.abi, "1.0");
    auto harness = registry_.harness("older-minor");
    ASSERT_TRUE(harness) << harness.error().message;
    auto stream = (*harness)->open_events("s_1");
    ASSERT_TRUE(stream) << stream.error().message;
    auto cancelled = (*stream)->cancel();
    ASSERT_FALSE(cancelled);
    EXPECT_EQ(cancelled.error().code, handler::ErrorCode::unavailable);
    EXPECT_TRUE(contains(cancelled.error().message, "cannot interrupt a turn")) << cancelled.error().message;
    auto set = (*stream)->set("model", "opus");
    ASSERT_FALSE(set);
    EXPECT_EQ(set.error().code, handler::ErrorCode::unavailable);
}

TEST_F(PluginLoader, OnlyTheEntryPointIsExported) {
    for (const std::string name : {"good", "good-addon", "truncated-info"}) {
        boost::dll::library_info info(library_of(name));
        EXPECT_EQ(info.symbols(), std::vector<std::string>{"hd_plugin_entry"}) << name;
    }
}

TEST_F(PluginLoader, GoodHarnessDescribesItself) {
    auto harness = registry_.harness("good");
    ASSERT_TRUE(harness) << harness.error().message;
    EXPECT_EQ((*harness)->id(), "good");
    EXPECT_EQ((*harness)->version(), "1.2.3");
    auto json = (*harness)->describe();
    ASSERT_TRUE(json) << json.error().message;
    const auto value = boost::json::parse(*json);
    EXPECT_EQ(value.at("default_hosts").as_array().at(0).as_string(), "api.example.com");
    auto recipe = (*harness)->image_recipe();
    ASSERT_TRUE(recipe);
    EXPECT_EQ(recipe->run_steps, std::vector<std::string>{"echo good"});
    ASSERT_EQ(recipe->env.size(), 1u);
    EXPECT_EQ(recipe->env[0].name, "GOOD");
}

TEST_F(PluginLoader, GoodHarnessLaunchIsCollectedIntoALaunchSpec) {
    auto harness = registry_.harness("good");
    ASSERT_TRUE(harness);
    LaunchRequest headless = request(LaunchMode::headless, "fix the test");
    headless.extra_args = {"--verbose"};
    auto spec = (*harness)->launch(headless);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->image, "fixture/good:1");
    EXPECT_EQ(spec->arguments,
              (std::vector<std::string>{"good-agent", "--prompt", "fix the test", "--verbose"}));
    EXPECT_EQ(spec->workdir, "/home/u/project");
    ASSERT_EQ(spec->env.size(), 3u);
    EXPECT_EQ(spec->env[0], (handler::plugins::EnvVar{"SESSION", "s_7f3a2c"}));
    EXPECT_EQ(spec->env[1], (handler::plugins::EnvVar{"LAUNCH_COUNT", "1"}));
    // The plugin asked a service that is not there yet and got the host's answer.
    EXPECT_EQ(spec->env[2],
              (handler::plugins::EnvVar{"STAND_IN", "secret_stand_in is not available in this handlerd yet"}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"api.example.com", 443}}));
    EXPECT_EQ(spec->secret_env, (std::vector<handler::plugins::SecretEnv>{{"API_KEY", "example-key"}}));
    EXPECT_EQ(spec->files, (std::vector<handler::plugins::ContainerFile>{{"/etc/good.conf", "model=m1", 0600}}));

    // Its storage went through the host services into the storage, under its id.
    EXPECT_EQ(*storage_.get("good", "launches").value(), "1");
    auto again = (*harness)->launch(request(LaunchMode::interactive, ""));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->arguments, std::vector<std::string>{"good-agent"});
    EXPECT_EQ(again->env[1].value, "2");
}

TEST_F(PluginLoader, PluginErrorsComeBackAsResults) {
    auto harness = registry_.harness("good");
    ASSERT_TRUE(harness);
    auto thrown = (*harness)->launch(request(LaunchMode::headless, "throw"));
    ASSERT_FALSE(thrown);
    EXPECT_EQ(thrown.error().code, ErrorCode::internal);
    EXPECT_EQ(thrown.error().message, "plugin 'good': launch failed (FAILED): asked to throw");
    auto invalid = (*harness)->launch(request(LaunchMode::headless, "invalid"));
    ASSERT_FALSE(invalid);
    EXPECT_EQ(invalid.error().code, ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(invalid.error().message, "the prompt 'invalid' is not allowed"));
}

TEST_F(PluginLoader, EventsAreParsedAcrossArbitrarySplits) {
    auto harness = registry_.harness("good");
    ASSERT_TRUE(harness);
    auto stream = (*harness)->open_events("s_7f3a2c");
    ASSERT_TRUE(stream) << stream.error().message;
    std::vector<handler::plugins::SessionEvent> events;
    for (const char* piece : {"hel", "lo\nwor", "ld\n"}) {
        auto got = (*stream)->feed(piece);
        ASSERT_TRUE(got) << got.error().message;
        events.insert(events.end(), got->events.begin(), got->events.end());
    }
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind, EventKind::agent_message_chunk);
    EXPECT_EQ(events[0].json, R"({"content":{"type":"text","text":"hello"}})");
    EXPECT_EQ(events[1].json, R"({"content":{"type":"text","text":"world"}})");
    auto failed = (*stream)->feed("boom\n");
    ASSERT_FALSE(failed);
    EXPECT_TRUE(contains(failed.error().message, "the parser met a boom line"));
}

TEST_F(PluginLoader, EventStreamKeepsItsHarnessAlive) {
    std::unique_ptr<handler::plugins::EventStream> stream;
    {
        MemoryPluginStorage storage;
        HostServices services(storage, handler::testing::quiet_logger());
        auto registry = std::make_unique<PluginRegistry>(services);
        registry->load({PluginDir{fixture_plugin_dir(), "builtin"}});
        auto harness = registry->harness("good");
        ASSERT_TRUE(harness);
        auto opened = (*harness)->open_events("s_1");
        ASSERT_TRUE(opened);
        stream = std::move(*opened);
        registry.reset();
        auto events = stream->feed("still here\n");
        ASSERT_TRUE(events) << events.error().message;
        EXPECT_EQ(events->events.size(), 1u);
        stream.reset(); // before `services` goes: the instance's host api points into it
    }
}

TEST_F(PluginLoader, GoodAddonContributes) {
    auto addon = registry_.addon("good-addon");
    ASSERT_TRUE(addon) << addon.error().message;
    auto spec = (*addon)->contribute(request(LaunchMode::interactive, ""));
    ASSERT_TRUE(spec) << spec.error().message;
    // This registry's host has no session manager: the host service says so.
    EXPECT_EQ(spec->env, (std::vector<handler::plugins::EnvVar>{
                             {"ADDON_SESSION", "s_7f3a2c"},
                             {"ADDON_ALLOW", "network_allow_host failed (UNSUPPORTED); handlerd's log says why"}}));
    EXPECT_EQ(spec->allowed_hosts, (std::vector<handler::plugins::AllowedHost>{{"cdn.example.com", 0}}));
    auto recipe = (*addon)->image_recipe();
    ASSERT_TRUE(recipe);
    EXPECT_EQ(recipe->run_steps, std::vector<std::string>{"install-addon"});
    auto json = (*addon)->describe();
    ASSERT_TRUE(json);
    EXPECT_EQ(*json, "{}");
    EXPECT_EQ(registry_.addons().size(), 1u);
    EXPECT_EQ(registry_.harnesses().size(), 3u); // good, older-minor, truncated-info
}

TEST_F(PluginLoader, LookupsExplainWhatIsWrong) {
    auto missing = registry_.harness("nope");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ErrorCode::not_found);
    EXPECT_TRUE(contains(missing.error().message, "no plugin 'nope' is installed"));

    auto refused = registry_.harness("wrong-major");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
    EXPECT_EQ(refused.error().message, record("wrong-major").message);

    auto failed = registry_.harness("throws-in-create");
    ASSERT_FALSE(failed);
    EXPECT_TRUE(contains(failed.error().message, "configuration is missing"));

    auto wrong_kind = registry_.harness("good-addon");
    ASSERT_FALSE(wrong_kind);
    EXPECT_EQ(wrong_kind.error().message, "plugin 'good-addon' is an addon, not a harness");
    EXPECT_FALSE(registry_.addon("good"));
}

// ------------------------------------------------------------------ search path

class PluginSearchPath : public ::testing::Test {
protected:
    MemoryPluginStorage storage_;
    HostServices services_{storage_, handler::testing::quiet_logger()};
    PluginRegistry registry_{services_};
    TempDir temp_;
};

TEST_F(PluginSearchPath, LibraryWithoutManifestIsRefused) {
    const auto user = temp_.path() / "user";
    std::filesystem::create_directories(user / "stray");
    std::filesystem::copy_file(library_of("good"), user / "stray" / "libstray.so");
    std::filesystem::copy_file(library_of("good"), user / "loose.so");
    registry_.load({PluginDir{user, "user"}});
    const auto records = registry_.list();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].library, (user / "loose.so").string());
    EXPECT_EQ(records[1].library, (user / "stray" / "libstray.so").string());
    for (const PluginRecord& r : records) {
        EXPECT_EQ(r.state, PluginState::refused);
        EXPECT_EQ(r.source, "user");
        EXPECT_EQ(r.manifest, "");
        EXPECT_TRUE(contains(r.message, r.library + " has no plugin.toml beside it")) << r.message;
    }
    EXPECT_EQ(records[1].id, "libstray");
}

TEST_F(PluginSearchPath, DuplicateIdLaterOnThePathIsRefusedNamingTheFirst) {
    copy_fixture(temp_, "good", "builtin/good");
    copy_fixture(temp_, "good", "user/good-copy");
    registry_.load({PluginDir{temp_.path() / "builtin", "builtin"}, PluginDir{temp_.path() / "user", "user"}});
    const auto records = registry_.list();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].state, PluginState::loaded) << records[0].message;
    EXPECT_EQ(records[0].source, "builtin");
    EXPECT_EQ(records[1].state, PluginState::refused);
    EXPECT_TRUE(contains(records[1].message, (temp_.path() / "user/good-copy/libgood.so").string()));
    EXPECT_TRUE(contains(records[1].message, "has the same id as " +
                                                 (temp_.path() / "builtin/good/libgood.so").string() +
                                                 " (builtin)"))
        << records[1].message;
    // The lookup finds the one that loaded.
    auto harness = registry_.harness("good");
    ASSERT_TRUE(harness);
    EXPECT_EQ(registry_.record("good")->source, "builtin");
}

TEST_F(PluginSearchPath, UnusableManifestIsListedWithItsPosition) {
    temp_.write("plugins/broken/plugin.toml", "id = \"broken\"\nkind = \"harness\"\nabi = 1\n");
    registry_.load({PluginDir{temp_.path() / "plugins", "user"}});
    const auto records = registry_.list();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].id, "broken");
    EXPECT_EQ(records[0].state, PluginState::refused);
    const std::string manifest = (temp_.path() / "plugins/broken/plugin.toml").string();
    EXPECT_EQ(records[0].manifest, manifest);
    EXPECT_TRUE(contains(records[0].message, manifest + ": missing key 'version'")) << records[0].message;
}

TEST_F(PluginSearchPath, ManifestNamingAMissingLibraryIsRefused) {
    temp_.write("plugins/ghost/plugin.toml", "id = \"ghost\"\nkind = \"harness\"\nversion = \"1\"\n"
                                             "abi = \"1.0\"\nlibrary = \"libghost.so\"\n");
    registry_.load({PluginDir{temp_.path() / "plugins", "user"}});
    const auto r = registry_.record("ghost");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, PluginState::refused);
    EXPECT_TRUE(contains(r->message, "names library 'libghost.so', which is not in its folder")) << r->message;
}

TEST_F(PluginSearchPath, DisabledPluginIsListedAndItsCodeNeverLoaded) {
    copy_fixture(temp_, "good", "user/good");
    const std::string library = (temp_.path() / "user/good/libgood.so").string();
    registry_.load({PluginDir{temp_.path() / "user", "user"}}, {"good"});
    const auto r = registry_.record("good");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, PluginState::disabled);
    EXPECT_TRUE(contains(r->message, "[plugins] disabled")) << r->message;
    EXPECT_FALSE(registry_.harness("good"));
    EXPECT_FALSE(is_in_process(library));
}

TEST_F(PluginSearchPath, MissingFolderIsNotAnError) {
    registry_.load({PluginDir{temp_.path() / "does-not-exist", "user"}});
    EXPECT_TRUE(registry_.list().empty());
}

TEST_F(PluginSearchPath, DefaultIsBuiltinThenUser) {
    handler::Paths paths{"/c/handler", "/d/handler", "/r/handler"};
    const auto path = handler::plugins::default_search_path(paths);
    ASSERT_EQ(path.size(), 2u);
    EXPECT_EQ(path[0].path, handler::builtin_plugin_dir());
    EXPECT_EQ(path[0].source, "builtin");
    EXPECT_EQ(path[1].path, "/d/handler/plugins");
    EXPECT_EQ(path[1].source, "user");
}

} // namespace
