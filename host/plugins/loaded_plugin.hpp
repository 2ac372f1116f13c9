// A plugin whose code is loaded and whose instance exists, seen from handlerd: typed C++
// calls that translate to the C vtables and back. Errors come back as Result values
// whose message names the plugin and the call; nothing a plugin does reaches the caller
// as an exception.
//
// Calls into one instance are serialised here (sdk.h rule 7), so any thread may use a
// LoadedHarness. An EventStream keeps its harness alive.
#pragma once

#include "core/result.hpp"
#include "plugins/launch_spec.hpp"

#include <handler/sdk.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace handler::plugins {

class PluginHostApi;

// What the loader hands over once create() succeeded. The vtables are copies made with
// read_struct, so a field an older plugin did not have reads as NULL.
struct PluginInstance {
    std::string id;
    std::string kind; // "harness" | "addon"
    std::string version;
    std::unique_ptr<PluginHostApi> host_api; // must outlive `instance`
    void* instance = nullptr;
    void (*destroy)(void*) = nullptr;
    hd_harness_vtable harness{};
    hd_addon_vtable addon{};

    PluginInstance();
    PluginInstance(PluginInstance&&) noexcept;
    PluginInstance& operator=(PluginInstance&&) noexcept;
    ~PluginInstance();
};

class LoadedPlugin {
public:
    LoadedPlugin(const LoadedPlugin&) = delete;
    LoadedPlugin& operator=(const LoadedPlugin&) = delete;
    virtual ~LoadedPlugin(); // destroys the instance; the code stays loaded

    const std::string& id() const { return parts_.id; }
    const std::string& kind() const { return parts_.kind; }
    const std::string& version() const { return parts_.version; }

    // The plugin's JSON description (an object; checked before it is returned).
    Result<std::string> describe();
    Result<ImageRecipe> image_recipe();

    // Bounds on what a plugin can make handlerd hold from one call.
    static constexpr std::size_t kMaxDescribeBytes = std::size_t{1024} * 1024;
    static constexpr std::size_t kMaxErrorBytes = std::size_t{64} * 1024;

protected:
    explicit LoadedPlugin(PluginInstance parts);

    using DescribeFn = hd_status (*)(void*, hd_sink, hd_sink);
    using RecipeFn = hd_status (*)(void*, const hd_recipe_builder*, hd_sink);
    using LaunchFn = hd_status (*)(void*, const hd_launch_request*, const hd_launch_builder*, hd_sink);

    Result<LaunchSpec> call_launch(LaunchFn function, const char* call, const LaunchRequest& request);

    PluginInstance parts_;
    DescribeFn describe_fn_ = nullptr;
    RecipeFn recipe_fn_ = nullptr;
    std::mutex mutex_; // one call into the instance at a time
    friend class EventStream;
};

class EventStream;

class LoadedHarness final : public LoadedPlugin,
                            public std::enable_shared_from_this<LoadedHarness> {
public:
    explicit LoadedHarness(PluginInstance parts);

    // The container to start for `request`.
    Result<LaunchSpec> launch(const LaunchRequest& request);
    // A parser for one headless session's output; an error (code unavailable) when the
    // harness has none.
    // `harness_session` set: the harness already runs (handlerd restarted), and that is
    // its own session id (empty when it never said).
    Result<std::unique_ptr<EventStream>> open_events(std::string_view session_id,
                                                     std::optional<std::string_view> harness_session = std::nullopt);
};

class LoadedAddon final : public LoadedPlugin {
public:
    explicit LoadedAddon(PluginInstance parts);

    // What the addon adds to a session it is enabled for (merged by the caller into the
    // harness's LaunchSpec).
    Result<LaunchSpec> contribute(const LaunchRequest& request);
};

// One session's event parser inside a harness plugin.
class EventStream {
public:
    EventStream(const EventStream&) = delete;
    EventStream& operator=(const EventStream&) = delete;
    ~EventStream();

    // Feeds a piece of the harness's stdout (any size, any split); returns the events
    // the plugin emitted for it, and what it wrote for the harness's stdin.
    Result<ParsedEvents> feed(std::string_view bytes);
    // A client's answer (`answer`, {"optionId":...}) to the permission request whose
    // event payload is `request`; unavailable when the harness takes none.
    Result<ParsedEvents> answer(std::string_view request, std::string_view answer);
    // A prompt (the user_prompt payload) for a harness whose stdin is its protocol;
    // nothing when the harness takes its prompt on its command line.
    Result<ParsedEvents> prompt(std::string_view prompt);
    // Interrupts the running turn; unavailable when the harness cannot.
    Result<ParsedEvents> cancel();
    // Changes "model", "mode" or "thinking_level" of the live conversation; unavailable
    // (or the plugin's UNSUPPORTED) when it cannot while it runs.
    Result<ParsedEvents> set(std::string_view name, std::string_view value);

private:
    friend class LoadedHarness;
    EventStream(std::shared_ptr<LoadedHarness> harness, void* parser);
    template <class Call>
    Result<ParsedEvents> call_parser(const char* name, Call&& call);

    std::shared_ptr<LoadedHarness> harness_;
    void* parser_;
};

} // namespace handler::plugins
