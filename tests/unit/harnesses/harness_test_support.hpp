// What the tests of every built-in harness plugin share: reading events, checking that a
// parser gives the same events however its input is cut, and a fixture that loads a
// built plugin with the real loader, as handlerd does.
#pragma once

#include "plugins/host_services.hpp"
#include "plugins/memory_plugin_storage.hpp"
#include "plugins/registry.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <plugin_common/events.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace handler::testing::harnesses {

using plugin_common::Event;

inline boost::json::object payload(const Event& event) { return boost::json::parse(event.json).as_object(); }

inline bool same(const std::vector<Event>& a, const std::vector<Event>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const Event& x, const Event& y) { return x.kind == y.kind && x.json == y.json; });
}

inline std::string describe(const std::vector<Event>& events) {
    std::string out;
    for (const Event& event : events) out += std::to_string(event.kind) + " " + event.json + "\n";
    return out;
}

template <class Parser>
std::vector<Event> parse_all(std::string_view output) {
    Parser parser;
    return parser.feed(output);
}

// The events of `transcript` fed whole, then cut in two at every byte, then one byte at
// a time: all must be the same, since stdout arrives in pieces of any size.
template <class Parser>
void expect_same_events_wherever_split(std::string_view transcript, std::size_t expected_count) {
    const std::vector<Event> whole = parse_all<Parser>(transcript);
    ASSERT_EQ(whole.size(), expected_count) << describe(whole);
    for (std::size_t cut = 0; cut <= transcript.size(); ++cut) {
        Parser parser;
        std::vector<Event> events = parser.feed(transcript.substr(0, cut));
        for (Event& event : parser.feed(transcript.substr(cut))) events.push_back(std::move(event));
        ASSERT_TRUE(same(events, whole)) << "cut at " << cut << ":\n" << describe(events);
    }
    Parser bytewise;
    std::vector<Event> events;
    for (char byte : transcript)
        for (Event& event : bytewise.feed(std::string_view(&byte, 1))) events.push_back(std::move(event));
    EXPECT_TRUE(same(events, whole)) << describe(events);
}

// Runs `argv` for real, as podman would (no shell of ours in between), with HOME set to
// `home`; its stdout, or "exit N" appended when it fails.
inline std::string run_argv(const std::vector<std::string>& argv, const std::string& home) {
    int out[2];
    if (::pipe(out) != 0) return "pipe failed";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::string home_env = "HOME=" + home, path_env = "PATH=/usr/bin:/bin";
    char* env[] = {home_env.data(), path_env.data(), nullptr};
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    std::string output;
    char buffer[4096];
    for (ssize_t n; spawned == 0 && (n = ::read(out[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
    ::close(out[0]);
    if (spawned != 0) return "spawn failed";
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) output += "exit " + std::to_string(WEXITSTATUS(status));
    return output;
}

// A built-in harness plugin, loaded from the build tree by the real loader.
class HarnessPluginTest : public ::testing::Test {
protected:
    explicit HarnessPluginTest(std::string id) : id_(std::move(id)) {}

    void SetUp() override {
        registry_.load({plugins::PluginDir{HANDLER_BUILTIN_PLUGIN_DIR, "builtin"}});
        auto found = registry_.harness(id_);
        ASSERT_TRUE(found) << found.error().message;
        harness_ = *found;
    }

    static plugins::LaunchRequest request(plugins::LaunchMode mode, plugins::StartMode start, std::string prompt,
                                          std::string account_kind) {
        plugins::LaunchRequest r;
        r.mode = mode;
        r.start_mode = start;
        r.session_id = "s_1";
        r.project_path = "/home/u/project";
        r.prompt = std::move(prompt);
        r.account_kind = std::move(account_kind);
        return r;
    }

    std::vector<std::string> arguments(const plugins::LaunchRequest& r) {
        auto spec = harness_->launch(r);
        EXPECT_TRUE(spec) << (spec ? "" : spec.error().message);
        return spec ? spec->arguments : std::vector<std::string>{};
    }

    // The plugin's own parser, fed `transcript` in two pieces, gives what `expected` holds.
    void expect_plugin_events(std::string_view transcript, const std::vector<Event>& expected) {
        auto stream = harness_->open_events("s_1");
        ASSERT_TRUE(stream) << stream.error().message;
        const std::size_t half = transcript.size() / 2;
        auto first = (*stream)->feed(transcript.substr(0, half));
        ASSERT_TRUE(first) << first.error().message;
        auto second = (*stream)->feed(transcript.substr(half));
        ASSERT_TRUE(second) << second.error().message;
        std::vector<plugins::SessionEvent> events = first->events;
        events.insert(events.end(), second->events.begin(), second->events.end());
        ASSERT_EQ(events.size(), expected.size());
        for (std::size_t i = 0; i < events.size(); ++i) {
            EXPECT_EQ(static_cast<int>(events[i].kind), static_cast<int>(expected[i].kind));
            EXPECT_EQ(events[i].json, expected[i].json);
        }
    }

    std::string id_;
    plugins::MemoryPluginStorage storage_;
    plugins::HostServices services_{storage_, quiet_logger()};
    plugins::PluginRegistry registry_{services_};
    std::shared_ptr<plugins::LoadedHarness> harness_;
};

} // namespace handler::testing::harnesses
