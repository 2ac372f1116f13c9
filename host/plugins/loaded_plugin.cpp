#include "plugins/loaded_plugin.hpp"

#include "plugins/host_services.hpp"

#include <handler/host.hpp>

#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

namespace handler::plugins {
namespace {

using sdk::StringSink;
using sdk::to_str;
using sdk::to_view;

ErrorCode to_error_code(hd_status status) {
    switch (status) {
    case HD_STATUS_NOT_FOUND: return ErrorCode::not_found;
    case HD_STATUS_INVALID_ARGUMENT: return ErrorCode::invalid_argument;
    case HD_STATUS_UNSUPPORTED: return ErrorCode::unavailable;
    case HD_STATUS_DENIED: return ErrorCode::forbidden;
    case HD_STATUS_OK:
    case HD_STATUS_FAILED: return ErrorCode::internal;
    }
    return ErrorCode::internal;
}

Error call_failed(const std::string& id, const char* call, hd_status status, StringSink& error) {
    std::string reason = error.text().empty() ? std::string("it gave no reason") : error.take();
    if (error.truncated()) reason += " (cut)";
    return make_error(to_error_code(status), "plugin '" + id + "': " + call + " failed (" +
                                                 sdk::status_name(status) + "): " + reason);
}

Error out_of_memory(const std::string& id, const char* call) {
    return make_error(ErrorCode::internal,
                      "plugin '" + id + "': " + call + ": handlerd ran out of memory collecting the result");
}

// The host-implemented builders. Their callbacks run on the plugin's stack, so they
// catch everything and remember a failure instead of throwing.
struct LaunchCollector {
    LaunchSpec spec;
    bool failed = false;

    template <class Body>
    static void guard(void* context, Body&& body) noexcept {
        auto* self = static_cast<LaunchCollector*>(context);
        try {
            body(self->spec);
        } catch (...) {
            self->failed = true;
        }
    }

    hd_launch_builder builder() {
        hd_launch_builder raw{};
        raw.struct_size = sizeof raw;
        raw.context = this;
        raw.set_image = [](void* c, hd_str image) noexcept {
            guard(c, [&](LaunchSpec& s) { s.image = to_view(image); });
        };
        raw.add_argument = [](void* c, hd_str argument) noexcept {
            guard(c, [&](LaunchSpec& s) { s.arguments.emplace_back(to_view(argument)); });
        };
        raw.set_env = [](void* c, hd_str name, hd_str value) noexcept {
            guard(c, [&](LaunchSpec& s) {
                s.env.push_back({std::string(to_view(name)), std::string(to_view(value))});
            });
        };
        raw.set_workdir = [](void* c, hd_str path) noexcept {
            guard(c, [&](LaunchSpec& s) { s.workdir = to_view(path); });
        };
        raw.allow_host = [](void* c, hd_str pattern, uint16_t port) noexcept {
            guard(c, [&](LaunchSpec& s) { s.allowed_hosts.push_back({std::string(to_view(pattern)), port}); });
        };
        raw.set_env_from_secret = [](void* c, hd_str name, hd_str secret_name) noexcept {
            if (name.size == 0 || secret_name.size == 0) return HD_STATUS_INVALID_ARGUMENT;
            guard(c, [&](LaunchSpec& s) {
                s.secret_env.push_back({std::string(to_view(name)), std::string(to_view(secret_name))});
            });
            return static_cast<LaunchCollector*>(c)->failed ? HD_STATUS_FAILED : HD_STATUS_OK;
        };
        raw.add_file = [](void* c, hd_str path, hd_str contents, uint32_t mode) noexcept {
            guard(c, [&](LaunchSpec& s) {
                s.files.push_back({std::string(to_view(path)), std::string(to_view(contents)), mode & 07777u});
            });
        };
        raw.keep_account_state = [](void* c, hd_str name) noexcept {
            if (name.size == 0) return HD_STATUS_INVALID_ARGUMENT;
            guard(c, [&](LaunchSpec& s) { s.account_state_env = to_view(name); });
            return static_cast<LaunchCollector*>(c)->failed ? HD_STATUS_FAILED : HD_STATUS_OK;
        };
        raw.add_input = [](void* c, hd_str bytes) noexcept {
            guard(c, [&](LaunchSpec& s) { s.input += to_view(bytes); });
        };
        raw.keep_session_state = [](void* c, hd_str name) noexcept {
            if (name.size == 0) return HD_STATUS_INVALID_ARGUMENT;
            guard(c, [&](LaunchSpec& s) { s.session_state_env = to_view(name); });
            return static_cast<LaunchCollector*>(c)->failed ? HD_STATUS_FAILED : HD_STATUS_OK;
        };
        return raw;
    }
};

struct RecipeCollector {
    ImageRecipe recipe;
    bool failed = false;

    hd_recipe_builder builder() {
        hd_recipe_builder raw{};
        raw.struct_size = sizeof raw;
        raw.context = this;
        raw.add_run = [](void* c, hd_str command) noexcept {
            auto* self = static_cast<RecipeCollector*>(c);
            try {
                self->recipe.run_steps.emplace_back(to_view(command));
            } catch (...) {
                self->failed = true;
            }
        };
        raw.set_env = [](void* c, hd_str name, hd_str value) noexcept {
            auto* self = static_cast<RecipeCollector*>(c);
            try {
                self->recipe.env.push_back({std::string(to_view(name)), std::string(to_view(value))});
            } catch (...) {
                self->failed = true;
            }
        };
        return raw;
    }
};

struct EventCollector {
    ParsedEvents parsed;
    bool failed = false;
    bool input_too_large = false;
    std::size_t unknown_kinds = 0;
    // What one call may write to the harness's stdin: replies to control requests are
    // small, so a plugin writing more is broken, and handlerd must not buffer it all.
    static constexpr std::size_t kMaxInputBytes = std::size_t{16} << 20;

    hd_event_sink sink() {
        hd_event_sink raw{};
        raw.struct_size = sizeof raw;
        raw.context = this;
        raw.emit = [](void* c, hd_event_kind kind, hd_str json) noexcept {
            auto* self = static_cast<EventCollector*>(c);
            const int number = static_cast<int>(kind);
            if (number < static_cast<int>(EventKind::user_prompt) ||
                number > static_cast<int>(EventKind::usage)) {
                ++self->unknown_kinds;
                return;
            }
            try {
                self->parsed.events.push_back({static_cast<EventKind>(number), std::string(to_view(json))});
            } catch (...) {
                self->failed = true;
            }
        };
        raw.write_input = [](void* c, hd_str bytes) noexcept {
            auto* self = static_cast<EventCollector*>(c);
            if (self->parsed.input.size() + bytes.size > kMaxInputBytes) {
                self->input_too_large = true;
                return;
            }
            try {
                self->parsed.input += to_view(bytes);
            } catch (...) {
                self->failed = true;
            }
        };
        raw.close_input = [](void* c) noexcept { static_cast<EventCollector*>(c)->parsed.close_input = true; };
        return raw;
    }

    Result<ParsedEvents> take(const std::string& id, const char* call) {
        if (failed) return out_of_memory(id, call);
        if (input_too_large)
            return make_error(ErrorCode::too_large, "plugin '" + id + "': " + call + " wrote more than " +
                                                        std::to_string(kMaxInputBytes) +
                                                        " bytes for the harness's stdin at once");
        if (unknown_kinds > 0)
            spdlog::warn("[plugin {}] emitted {} event(s) of a kind this handlerd does not know; dropped",
                         id, unknown_kinds);
        return std::move(parsed);
    }
};

hd_launch_request to_raw(const LaunchRequest& request, std::vector<hd_str>& extra_args) {
    extra_args.clear();
    for (const std::string& arg : request.extra_args) extra_args.push_back(to_str(arg));
    hd_launch_request raw{};
    raw.struct_size = sizeof raw;
    raw.mode = static_cast<hd_launch_mode>(request.mode);
    raw.start_mode = static_cast<hd_start_mode>(request.start_mode);
    raw.session_id = to_str(request.session_id);
    raw.project_path = to_str(request.project_path);
    raw.prompt = to_str(request.prompt);
    raw.model = to_str(request.model);
    raw.account_kind = to_str(request.account_kind);
    raw.extra_args = extra_args.data();
    raw.extra_arg_count = extra_args.size();
    raw.account_base_url = to_str(request.account_base_url);
    raw.thinking_level = to_str(request.thinking_level);
    raw.conversation = request.conversation ? 1 : 0;
    raw.resume = to_str(request.resume);
    raw.mcp_servers = to_str(request.mcp_servers);
    return raw;
}

} // namespace

PluginInstance::PluginInstance() = default;
PluginInstance::PluginInstance(PluginInstance&&) noexcept = default;
PluginInstance& PluginInstance::operator=(PluginInstance&&) noexcept = default;
PluginInstance::~PluginInstance() = default;

LoadedPlugin::LoadedPlugin(PluginInstance parts) : parts_(std::move(parts)) {
    if (parts_.kind == "harness") {
        describe_fn_ = parts_.harness.describe;
        recipe_fn_ = parts_.harness.image_recipe;
    } else {
        describe_fn_ = parts_.addon.describe;
        recipe_fn_ = parts_.addon.image_recipe;
    }
}

LoadedPlugin::~LoadedPlugin() {
    const std::lock_guard lock(mutex_);
    if (parts_.destroy != nullptr) parts_.destroy(parts_.instance);
}

Result<std::string> LoadedPlugin::describe() {
    // A NULL describe is allowed (rule 4): a plugin with nothing to say.
    if (describe_fn_ == nullptr) return std::string("{}");
    StringSink json(kMaxDescribeBytes);
    StringSink error(kMaxErrorBytes);
    hd_status status;
    {
        const std::lock_guard lock(mutex_);
        status = describe_fn_(parts_.instance, json.sink(), error.sink());
    }
    if (status != HD_STATUS_OK) return call_failed(id(), "describe", status, error);
    if (json.failed()) return out_of_memory(id(), "describe");
    if (json.truncated())
        return make_error(ErrorCode::too_large, "plugin '" + id() + "': describe returned more than 1 MiB");
    boost::system::error_code parse_error;
    const boost::json::value value = boost::json::parse(json.text(), parse_error);
    if (parse_error || !value.is_object())
        return make_error(ErrorCode::internal,
                          "plugin '" + id() + "': describe did not return a JSON object (" +
                              (parse_error ? parse_error.message() : std::string("another JSON value")) +
                              "); this is a bug in the plugin, tell its author");
    return json.take();
}

Result<ImageRecipe> LoadedPlugin::image_recipe() {
    if (recipe_fn_ == nullptr) return ImageRecipe{};
    RecipeCollector collector;
    const hd_recipe_builder builder = collector.builder();
    StringSink error(kMaxErrorBytes);
    hd_status status;
    {
        const std::lock_guard lock(mutex_);
        status = recipe_fn_(parts_.instance, &builder, error.sink());
    }
    if (status != HD_STATUS_OK) return call_failed(id(), "image_recipe", status, error);
    if (collector.failed) return out_of_memory(id(), "image_recipe");
    return std::move(collector.recipe);
}

Result<LaunchSpec> LoadedPlugin::call_launch(LaunchFn function, const char* call,
                                             const LaunchRequest& request) {
    if (function == nullptr)
        return make_error(ErrorCode::unavailable, "plugin '" + id() + "' has no " + call + " function");
    std::vector<hd_str> extra_args;
    const hd_launch_request raw_request = to_raw(request, extra_args);
    LaunchCollector collector;
    const hd_launch_builder builder = collector.builder();
    StringSink error(kMaxErrorBytes);
    hd_status status;
    {
        const std::lock_guard lock(mutex_);
        status = function(parts_.instance, &raw_request, &builder, error.sink());
    }
    if (status != HD_STATUS_OK) return call_failed(id(), call, status, error);
    if (collector.failed) return out_of_memory(id(), call);
    return std::move(collector.spec);
}

LoadedHarness::LoadedHarness(PluginInstance parts) : LoadedPlugin(std::move(parts)) {}

Result<LaunchSpec> LoadedHarness::launch(const LaunchRequest& request) {
    return call_launch(parts_.harness.launch, "launch", request);
}

Result<std::unique_ptr<EventStream>> LoadedHarness::open_events(std::string_view session_id,
                                                               std::optional<std::string_view> harness_session) {
    if (parts_.harness.events_open == nullptr || parts_.harness.events_feed == nullptr)
        return make_error(ErrorCode::unavailable,
                          "plugin '" + id() + "' has no structured output parser");
    StringSink error(kMaxErrorBytes);
    void* parser = nullptr;
    hd_status status;
    const bool reopen = harness_session && parts_.harness.events_reopen != nullptr;
    {
        const std::lock_guard lock(mutex_);
        status = reopen ? parts_.harness.events_reopen(parts_.instance, to_str(session_id), to_str(*harness_session),
                                                       &parser, error.sink())
                        : parts_.harness.events_open(parts_.instance, to_str(session_id), &parser, error.sink());
    }
    if (status != HD_STATUS_OK) return call_failed(id(), reopen ? "events_reopen" : "events_open", status, error);
    return std::unique_ptr<EventStream>(new EventStream(shared_from_this(), parser));
}

LoadedAddon::LoadedAddon(PluginInstance parts) : LoadedPlugin(std::move(parts)) {}

Result<LaunchSpec> LoadedAddon::contribute(const LaunchRequest& request) {
    return call_launch(parts_.addon.contribute, "contribute", request);
}

EventStream::EventStream(std::shared_ptr<LoadedHarness> harness, void* parser)
    : harness_(std::move(harness)), parser_(parser) {}

EventStream::~EventStream() {
    const std::lock_guard lock(harness_->mutex_);
    if (harness_->parts_.harness.events_close != nullptr) harness_->parts_.harness.events_close(parser_);
}

// One call into the plugin's parser, on the harness's lock: its events, and what it wrote
// for the harness's stdin.
template <class Call>
Result<ParsedEvents> EventStream::call_parser(const char* name, Call&& call) {
    EventCollector collector;
    const hd_event_sink sink = collector.sink();
    StringSink error(LoadedPlugin::kMaxErrorBytes);
    hd_status status;
    {
        const std::lock_guard lock(harness_->mutex_);
        status = call(&sink, error.sink());
    }
    if (status != HD_STATUS_OK) return call_failed(harness_->id(), name, status, error);
    return collector.take(harness_->id(), name);
}

Result<ParsedEvents> EventStream::feed(std::string_view bytes) {
    return call_parser("events_feed", [&](const hd_event_sink* sink, hd_sink error) {
        return harness_->parts_.harness.events_feed(parser_, to_str(bytes), sink, error);
    });
}

Result<ParsedEvents> EventStream::answer(std::string_view request, std::string_view answer) {
    if (harness_->parts_.harness.events_answer == nullptr)
        return make_error(ErrorCode::unavailable,
                          "plugin '" + harness_->id() + "' takes no answers to permission requests");
    return call_parser("events_answer", [&](const hd_event_sink* sink, hd_sink error) {
        return harness_->parts_.harness.events_answer(parser_, to_str(request), to_str(answer), sink, error);
    });
}

Result<ParsedEvents> EventStream::prompt(std::string_view prompt) {
    if (harness_->parts_.harness.events_prompt == nullptr) return ParsedEvents{};
    return call_parser("events_prompt", [&](const hd_event_sink* sink, hd_sink error) {
        return harness_->parts_.harness.events_prompt(parser_, to_str(prompt), sink, error);
    });
}

Result<ParsedEvents> EventStream::cancel() {
    if (harness_->parts_.harness.events_cancel == nullptr)
        return make_error(ErrorCode::unavailable, "plugin '" + harness_->id() + "' cannot interrupt a turn");
    return call_parser("events_cancel", [&](const hd_event_sink* sink, hd_sink error) {
        return harness_->parts_.harness.events_cancel(parser_, sink, error);
    });
}

Result<ParsedEvents> EventStream::set(std::string_view name, std::string_view value) {
    if (harness_->parts_.harness.events_set == nullptr)
        return make_error(ErrorCode::unavailable, "plugin '" + harness_->id() + "' cannot change its " +
                                                      std::string(name) + " while it runs");
    return call_parser("events_set", [&](const hd_event_sink* sink, hd_sink error) {
        return harness_->parts_.harness.events_set(parser_, to_str(name), to_str(value), sink, error);
    });
}

} // namespace handler::plugins
