// handler/plugin.hpp: the C++ side of a Handler plugin, header-only, C++17.
//
// A plugin author derives from handler::sdk::Harness (or Addon), overrides what the
// plugin does, and names the class once:
//
//     class MyHarness : public handler::sdk::Harness {
//     public:
//         std::string describe() override { return R"({"default_hosts":[]})"; }
//         void launch(const handler::sdk::LaunchRequest& request,
//                     handler::sdk::LaunchBuilder& launch) override {
//             launch.argument("my-agent").workdir(request.project_path);
//         }
//     };
//     HD_HARNESS_PLUGIN(MyHarness, "my-harness", "0.1.0", "My harness", "What it runs")
//
// The macro defines the one exported symbol, hd_plugin_entry, and static C vtables
// whose trampolines catch every exception: a method may simply throw (PluginError for
// a precise status, any std::exception for HD_STATUS_FAILED) and the host receives a
// status and the message, never the exception (sdk.h rule 6). Build with
// handler_add_plugin() from the SDK's CMake package, which hides every other symbol.
//
// Host services (logging, storage, network rules, secrets, containers) are reached
// through host(). A service this handlerd does not offer (a NULL function pointer, or a
// field beyond the struct the host filled) returns an error value; nothing crashes.
#ifndef HANDLER_PLUGIN_HPP
#define HANDLER_PLUGIN_HPP

#include "handler/waist.hpp"

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace handler::sdk {

// ------------------------------------------------------------------ errors as values

// The outcome of a host call: HD_STATUS_OK, or another status and a message.
class Status {
public:
    Status() = default;
    Status(hd_status code, std::string message) : code_(code), message_(std::move(message)) {}

    bool ok() const noexcept { return code_ == HD_STATUS_OK; }
    explicit operator bool() const noexcept { return ok(); }
    hd_status code() const noexcept { return code_; }
    const std::string& message() const noexcept { return message_; }

private:
    hd_status code_ = HD_STATUS_OK;
    std::string message_;
};

// Thrown by plugin code to fail the current call with a precise status. It never leaves
// the plugin: the trampoline turns it into its status and message.
class PluginError : public std::runtime_error {
public:
    PluginError(hd_status status, const std::string& message)
        : std::runtime_error(message), status_(status == HD_STATUS_OK ? HD_STATUS_FAILED : status) {}
    explicit PluginError(const Status& status) : PluginError(status.code(), status.message()) {}
    hd_status status() const noexcept { return status_; }

private:
    hd_status status_;
};

// A value or the Status that explains its absence. value() on an error throws
// PluginError, so inside a plugin method `host().secret_stand_in(s, n).value()` is a
// fine way to say "fail this call with the host's reason".
template <class T>
class Expected {
public:
    Expected(T value) : value_(std::move(value)) {}
    Expected(Status status) : status_(std::move(status)) {
        if (status_.ok()) status_ = Status(HD_STATUS_FAILED, "no value and no reason given");
    }

    bool ok() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    const Status& status() const noexcept { return status_; }

    T& value() & {
        if (!value_) throw PluginError(status_);
        return *value_;
    }
    const T& value() const& {
        if (!value_) throw PluginError(status_);
        return *value_;
    }
    T&& value() && {
        if (!value_) throw PluginError(status_);
        return std::move(*value_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    std::optional<T> value_;
    Status status_;
};

// ------------------------------------------------------------------ host services

// What container_spawn runs (hd_container_spec, owned).
struct ContainerSpec {
    std::string session_id;
    std::string image;
    std::vector<std::string> argv; // argv[0] is the program
    std::vector<std::string> env;  // "NAME=value"
    std::string workdir;           // empty: the session's project folder
};

struct ExecResult {
    std::int32_t exit_code = 0;
    std::string output;
};

// The host's services, as given to create(). Copies the hd_host_api with read_struct,
// so a host that filled fewer fields than this header knows reads as "unsupported" for
// those, exactly like a NULL function pointer.
class Host {
public:
    Host() noexcept : api_(read_struct<hd_host_api>(nullptr)) {}
    explicit Host(const hd_host_api* api) noexcept : api_(read_struct(api)) {}

    // The ABI the host speaks (0.0 when there is no host).
    std::uint16_t abi_major() const noexcept { return api_.abi_major; }
    std::uint16_t abi_minor() const noexcept { return api_.abi_minor; }
    const hd_host_api& raw() const noexcept { return api_; }

    // Logging never fails from the caller's point of view: without a host it is dropped.
    void log(hd_log_level level, std::string_view message) const noexcept {
        if (api_.log != nullptr) api_.log(api_.context, level, to_str(message));
    }
    void trace(std::string_view message) const noexcept { log(HD_LOG_TRACE, message); }
    void debug(std::string_view message) const noexcept { log(HD_LOG_DEBUG, message); }
    void info(std::string_view message) const noexcept { log(HD_LOG_INFO, message); }
    void warn(std::string_view message) const noexcept { log(HD_LOG_WARN, message); }
    void error(std::string_view message) const noexcept { log(HD_LOG_ERROR, message); }

    // Per-plugin storage. std::nullopt when the key is not set or storage is not
    // available (the host logs why); storage_status() tells the two apart.
    std::optional<std::string> storage_get(std::string_view key) const {
        Expected<std::optional<std::string>> result = storage_lookup(key);
        if (!result) return std::nullopt;
        return std::move(result).value();
    }
    bool storage_set(std::string_view key, std::string_view value) const {
        if (api_.storage_set == nullptr) return false;
        return api_.storage_set(api_.context, to_str(key), to_str(value)) == HD_STATUS_OK;
    }
    bool storage_remove(std::string_view key) const {
        if (api_.storage_remove == nullptr) return false;
        return api_.storage_remove(api_.context, to_str(key)) == HD_STATUS_OK;
    }
    // The value (std::nullopt: not set), or why storage could not answer.
    Expected<std::optional<std::string>> storage_lookup(std::string_view key) const {
        if (api_.storage_get == nullptr) return unsupported("storage_get");
        StringSink value;
        const hd_status status = api_.storage_get(api_.context, to_str(key), value.sink());
        if (status == HD_STATUS_NOT_FOUND) return std::optional<std::string>();
        if (status != HD_STATUS_OK)
            return Status(status, std::string("storage_get failed (") + status_name(status) +
                                      "); handlerd's log says why");
        return std::optional<std::string>(value.take());
    }

    // Network rules, for live sessions that use this plugin; session_id empty means every
    // such session.
    Status allow_host(std::string_view session_id, std::string_view host_pattern,
                      std::uint16_t port, std::string_view reason) const {
        if (api_.network_allow_host == nullptr) return unsupported("network_allow_host");
        return from_code(api_.network_allow_host(api_.context, to_str(session_id),
                                                 to_str(host_pattern), port, to_str(reason)),
                         "network_allow_host");
    }
    Status bind_secret(std::string_view session_id, std::string_view secret_name,
                       std::string_view host_pattern, std::string_view header_name,
                       std::string_view value_template) const {
        if (api_.network_bind_secret == nullptr) return unsupported("network_bind_secret");
        return from_code(api_.network_bind_secret(api_.context, to_str(session_id),
                                                  to_str(secret_name), to_str(host_pattern),
                                                  to_str(header_name), to_str(value_template)),
                         "network_bind_secret");
    }

    // The stand-in the session sees for `secret_name` (never the real value).
    Expected<std::string> secret_stand_in(std::string_view session_id,
                                          std::string_view secret_name) const {
        if (api_.secret_stand_in == nullptr) return unsupported("secret_stand_in");
        StringSink out;
        StringSink error;
        const hd_status status = api_.secret_stand_in(api_.context, to_str(session_id),
                                                      to_str(secret_name), out.sink(), error.sink());
        if (status != HD_STATUS_OK) return with_message(status, error, "secret_stand_in");
        return out.take();
    }

    // Returns the container's id.
    Expected<std::string> container_spawn(const ContainerSpec& spec) const {
        if (api_.container_spawn == nullptr) return unsupported("container_spawn");
        const std::vector<hd_str> argv = to_strs(spec.argv);
        const std::vector<hd_str> env = to_strs(spec.env);
        hd_container_spec raw{};
        raw.struct_size = sizeof raw;
        raw.session_id = to_str(spec.session_id);
        raw.image = to_str(spec.image);
        raw.argv = argv.data();
        raw.argc = argv.size();
        raw.env = env.data();
        raw.env_count = env.size();
        raw.workdir = to_str(spec.workdir);
        StringSink id;
        StringSink error;
        const hd_status status = api_.container_spawn(api_.context, &raw, id.sink(), error.sink());
        if (status != HD_STATUS_OK) return with_message(status, error, "container_spawn");
        return id.take();
    }
    Expected<ExecResult> container_exec(std::string_view container_id,
                                        const std::vector<std::string>& argv) const {
        if (api_.container_exec == nullptr) return unsupported("container_exec");
        const std::vector<hd_str> raw_argv = to_strs(argv);
        StringSink output;
        StringSink error;
        ExecResult result;
        const hd_status status =
            api_.container_exec(api_.context, to_str(container_id), raw_argv.data(),
                                raw_argv.size(), output.sink(), &result.exit_code, error.sink());
        if (status != HD_STATUS_OK) return with_message(status, error, "container_exec");
        result.output = output.take();
        return result;
    }
    Status container_stop(std::string_view container_id, std::uint32_t grace_ms) const {
        if (api_.container_stop == nullptr) return unsupported("container_stop");
        StringSink error;
        const hd_status status =
            api_.container_stop(api_.context, to_str(container_id), grace_ms, error.sink());
        if (status != HD_STATUS_OK) return with_message(status, error, "container_stop");
        return Status();
    }

private:
    Status unsupported(const char* service) const {
        return Status(HD_STATUS_UNSUPPORTED,
                      std::string(service) + " is not offered by this handlerd (it speaks plugin ABI " +
                          std::to_string(api_.abi_major) + "." + std::to_string(api_.abi_minor) + ")");
    }
    static Status from_code(hd_status status, const char* service) {
        if (status == HD_STATUS_OK) return Status();
        return Status(status, std::string(service) + " failed (" + status_name(status) +
                                  "); handlerd's log says why");
    }
    static Status with_message(hd_status status, StringSink& error, const char* service) {
        if (error.text().empty()) return from_code(status, service);
        return Status(status == HD_STATUS_OK ? HD_STATUS_FAILED : status, error.take());
    }
    static std::vector<hd_str> to_strs(const std::vector<std::string>& strings) {
        std::vector<hd_str> out;
        out.reserve(strings.size());
        for (const std::string& s : strings) out.push_back(to_str(s));
        return out;
    }

    hd_host_api api_;
};

// ------------------------------------------------------------------ views of host calls

// What the host asks to start (hd_launch_request). The views are valid for the call.
struct LaunchRequest {
    hd_launch_mode mode = HD_LAUNCH_INTERACTIVE;
    hd_start_mode start_mode = HD_START_GUARDED;
    std::string_view session_id;
    std::string_view project_path;
    std::string_view prompt;
    std::string_view model;
    std::string_view account_kind;
    std::vector<std::string_view> extra_args;
    std::string_view account_base_url; // local model servers only
    std::string_view thinking_level;   // empty: the harness's default
    bool conversation = false;         // prompt after prompt (sdk.h, conversation)
    std::string_view resume;           // the harness's own session id to continue
    std::string_view mcp_servers;      // ACP McpServer[] JSON; empty: none

    bool interactive() const noexcept { return mode == HD_LAUNCH_INTERACTIVE; }
    bool headless() const noexcept { return mode == HD_LAUNCH_HEADLESS; }

    static LaunchRequest from(const hd_launch_request* raw_request) {
        const hd_launch_request raw = read_struct(raw_request);
        LaunchRequest request;
        request.mode = raw.mode;
        request.start_mode = raw.start_mode;
        request.session_id = to_view(raw.session_id);
        request.project_path = to_view(raw.project_path);
        request.prompt = to_view(raw.prompt);
        request.model = to_view(raw.model);
        request.account_kind = to_view(raw.account_kind);
        request.account_base_url = to_view(raw.account_base_url);
        request.thinking_level = to_view(raw.thinking_level);
        request.conversation = raw.conversation != 0;
        request.resume = to_view(raw.resume);
        request.mcp_servers = to_view(raw.mcp_servers);
        if (raw.extra_args != nullptr)
            for (std::size_t i = 0; i < raw.extra_arg_count; ++i)
                request.extra_args.push_back(to_view(raw.extra_args[i]));
        return request;
    }
};

namespace detail {
[[noreturn]] inline void missing(const char* what) {
    throw PluginError(HD_STATUS_UNSUPPORTED,
                      std::string("this handlerd does not provide ") + what);
}
} // namespace detail

// Describes the container to start. Methods chain. A function the host did not fill
// throws PluginError (UNSUPPORTED), which fails this launch with that message: a launch
// that silently lost its image or an argument would be worse than none.
class LaunchBuilder {
public:
    explicit LaunchBuilder(const hd_launch_builder* raw) noexcept : raw_(read_struct(raw)) {}

    LaunchBuilder& image(std::string_view image) {
        if (raw_.set_image == nullptr) detail::missing("launch_builder.set_image");
        raw_.set_image(raw_.context, to_str(image));
        return *this;
    }
    LaunchBuilder& argument(std::string_view argument) {
        if (raw_.add_argument == nullptr) detail::missing("launch_builder.add_argument");
        raw_.add_argument(raw_.context, to_str(argument));
        return *this;
    }
    template <class Range>
    LaunchBuilder& arguments(const Range& range) {
        for (const auto& a : range) argument(a);
        return *this;
    }
    LaunchBuilder& arguments(std::initializer_list<std::string_view> list) {
        for (std::string_view a : list) argument(a);
        return *this;
    }
    LaunchBuilder& env(std::string_view name, std::string_view value) {
        if (raw_.set_env == nullptr) detail::missing("launch_builder.set_env");
        raw_.set_env(raw_.context, to_str(name), to_str(value));
        return *this;
    }
    LaunchBuilder& workdir(std::string_view path) {
        if (raw_.set_workdir == nullptr) detail::missing("launch_builder.set_workdir");
        raw_.set_workdir(raw_.context, to_str(path));
        return *this;
    }
    // A host this session must reach; port 0 = any.
    LaunchBuilder& allow_host(std::string_view host_pattern, std::uint16_t port = 0) {
        if (raw_.allow_host == nullptr) detail::missing("launch_builder.allow_host");
        raw_.allow_host(raw_.context, to_str(host_pattern), port);
        return *this;
    }
    // Env `name` gets the session's stand-in for `secret_name`; fails the launch if the
    // host refuses (an unknown secret, a context mismatch).
    LaunchBuilder& env_from_secret(std::string_view name, std::string_view secret_name) {
        if (raw_.set_env_from_secret == nullptr) detail::missing("launch_builder.set_env_from_secret");
        const hd_status status =
            raw_.set_env_from_secret(raw_.context, to_str(name), to_str(secret_name));
        if (status != HD_STATUS_OK)
            throw PluginError(status, "handlerd refused secret '" + std::string(secret_name) +
                                          "' for env " + std::string(name) + " (" +
                                          status_name(status) + ")");
        return *this;
    }
    // The account's own state folder, read-write, its place inside in env `name`
    // (sdk.h, keep_account_state); fails the launch if the host refuses.
    LaunchBuilder& account_state(std::string_view env_name) {
        if (raw_.keep_account_state == nullptr) detail::missing("launch_builder.keep_account_state");
        const hd_status status = raw_.keep_account_state(raw_.context, to_str(env_name));
        if (status != HD_STATUS_OK)
            throw PluginError(status, "handlerd cannot keep this account's state for env " +
                                          std::string(env_name) + " (" + status_name(status) + ")");
        return *this;
    }
    // The session's own state folder (sdk.h, keep_session_state), its place inside in
    // env `name`; fails the launch if the host refuses.
    LaunchBuilder& session_state(std::string_view env_name) {
        if (raw_.keep_session_state == nullptr) detail::missing("launch_builder.keep_session_state");
        const hd_status status = raw_.keep_session_state(raw_.context, to_str(env_name));
        if (status != HD_STATUS_OK)
            throw PluginError(status, "handlerd cannot keep this session's state for env " +
                                          std::string(env_name) + " (" + status_name(status) + ")");
        return *this;
    }
    LaunchBuilder& file(std::string_view container_path, std::string_view contents,
                        std::uint32_t mode = 0644) {
        if (raw_.add_file == nullptr) detail::missing("launch_builder.add_file");
        raw_.add_file(raw_.context, to_str(container_path), to_str(contents), mode);
        return *this;
    }
    // Bytes on the program's stdin when it starts (sdk.h, add_input): headless only.
    LaunchBuilder& input(std::string_view bytes) {
        if (raw_.add_input == nullptr) detail::missing("launch_builder.add_input");
        raw_.add_input(raw_.context, to_str(bytes));
        return *this;
    }

private:
    hd_launch_builder raw_;
};

// Adds to the plugin's image; steps run as shell commands in a build container.
class RecipeBuilder {
public:
    explicit RecipeBuilder(const hd_recipe_builder* raw) noexcept : raw_(read_struct(raw)) {}

    RecipeBuilder& run(std::string_view shell_command) {
        if (raw_.add_run == nullptr) detail::missing("recipe_builder.add_run");
        raw_.add_run(raw_.context, to_str(shell_command));
        return *this;
    }
    RecipeBuilder& env(std::string_view name, std::string_view value) {
        if (raw_.set_env == nullptr) detail::missing("recipe_builder.set_env");
        raw_.set_env(raw_.context, to_str(name), to_str(value));
        return *this;
    }

private:
    hd_recipe_builder raw_;
};

// Where a parser puts normalised session events (docs/contracts.md: payload shapes).
class EventSink {
public:
    explicit EventSink(const hd_event_sink* raw) noexcept : raw_(read_struct(raw)) {}

    void emit(hd_event_kind kind, std::string_view json_payload) {
        if (raw_.emit == nullptr) detail::missing("event_sink.emit");
        raw_.emit(raw_.context, kind, to_str(json_payload));
    }
    // The harness's stdin, for one whose stdin is a protocol (sdk.h, write_input).
    void write_input(std::string_view bytes) {
        if (raw_.write_input == nullptr) detail::missing("event_sink.write_input");
        raw_.write_input(raw_.context, to_str(bytes));
    }
    void close_input() {
        if (raw_.close_input == nullptr) detail::missing("event_sink.close_input");
        raw_.close_input(raw_.context);
    }

private:
    hd_event_sink raw_;
};

// Turns one session's headless output into events. Fed the harness's stdout in pieces
// of any size: a piece may end in the middle of a line or of a UTF-8 sequence.
class EventParser {
public:
    virtual ~EventParser() = default;
    virtual void feed(std::string_view bytes, EventSink& sink) = 0;
    // A client's answer to a permission request this parser emitted (sdk.h,
    // events_answer): `request` is that event's payload, `answer` {"optionId":"..."}.
    virtual void answer(std::string_view request, std::string_view answer, EventSink& sink) {
        (void)request;
        (void)answer;
        (void)sink;
        throw PluginError(HD_STATUS_UNSUPPORTED, "this harness takes no answers to permission requests");
    }
    // A prompt for a harness whose stdin is its protocol (sdk.h, events_prompt), as the
    // user_prompt event's payload. By default nothing: the prompt is on the command line.
    virtual void prompt(std::string_view prompt, EventSink& sink) {
        (void)prompt;
        (void)sink;
    }
    // Interrupt the running turn (sdk.h, events_cancel); its result then says "cancelled".
    virtual void cancel(EventSink& sink) {
        (void)sink;
        throw PluginError(HD_STATUS_UNSUPPORTED, "this harness cannot interrupt a turn");
    }
    // Change "model", "mode" or "thinking_level" of the live conversation (sdk.h, events_set).
    virtual void set(std::string_view name, std::string_view value, EventSink& sink) {
        (void)value;
        (void)sink;
        throw PluginError(HD_STATUS_UNSUPPORTED,
                          "this harness cannot change its " + std::string(name) + " while it runs");
    }
};

// ------------------------------------------------------------------ plugin classes

namespace detail {
struct Access;
}

// What harnesses and addons share. The host is set before the first call; a class that
// needs it in its constructor can take `const Host&` there instead.
class PluginBase {
public:
    virtual ~PluginBase() = default;

    const Host& host() const noexcept { return host_; }

    // A JSON object (docs/contracts.md): {"default_hosts":[...], "credentials":[...],
    // "models":[...], "modes":[...]}. json_quote() helps build it.
    virtual std::string describe() { return "{}"; }
    // What the plugin adds to its image; nothing by default.
    virtual void image_recipe(RecipeBuilder& recipe) { (void)recipe; }

private:
    friend struct detail::Access;
    Host host_;
};

class Harness : public PluginBase {
public:
    // Describes the container for one session. Throw to refuse (PluginError for the
    // status, e.g. HD_STATUS_INVALID_ARGUMENT for a headless launch with no prompt).
    virtual void launch(const LaunchRequest& request, LaunchBuilder& launch) = 0;
    // A parser for one session's headless output; nullptr: this harness has none.
    virtual std::unique_ptr<EventParser> open_events(std::string_view session_id) {
        (void)session_id;
        return nullptr;
    }
    // A parser for a session whose harness already runs (sdk.h, events_reopen), told the
    // harness's own session id; by default the same as open_events.
    virtual std::unique_ptr<EventParser> reopen_events(std::string_view session_id,
                                                       std::string_view harness_session_id) {
        (void)harness_session_id;
        return open_events(session_id);
    }
};

class Addon : public PluginBase {
public:
    // Adds to a session the addon is enabled for (mounts, env, hosts); nothing by default.
    virtual void contribute(const LaunchRequest& request, LaunchBuilder& launch) {
        (void)request;
        (void)launch;
    }
};

// `text` as a JSON string literal, quotes included. Bytes that are not valid UTF-8
// become U+FFFD, so the result is always valid JSON.
inline std::string json_quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    static const char kHex[] = "0123456789abcdef";
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            switch (byte) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (byte < 0x20) {
                    out += "\\u00";
                    out += kHex[byte >> 4];
                    out += kHex[byte & 0xf];
                } else {
                    out += static_cast<char>(byte);
                }
            }
            ++i;
            continue;
        }
        // A well-formed multi-byte sequence is copied; anything else is replaced.
        std::size_t length = 0;
        std::uint32_t min_code = 0;
        if ((byte & 0xe0) == 0xc0) { length = 2; min_code = 0x80; }
        else if ((byte & 0xf0) == 0xe0) { length = 3; min_code = 0x800; }
        else if ((byte & 0xf8) == 0xf0) { length = 4; min_code = 0x10000; }
        bool valid = length != 0 && i + length <= text.size();
        std::uint32_t code = length == 0 ? 0 : (byte & (0x7fu >> length));
        for (std::size_t k = 1; valid && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            valid = (next & 0xc0) == 0x80;
            code = (code << 6) | (next & 0x3fu);
        }
        valid = valid && code >= min_code && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
        if (valid) {
            out.append(text.substr(i, length));
            i += length;
        } else {
            out += "\xef\xbf\xbd";
            ++i;
        }
    }
    out += '"';
    return out;
}

// ------------------------------------------------------------------ the trampolines

namespace detail {

struct Access {
    static void set_host(PluginBase& plugin, const Host& host) { plugin.host_ = host; }
};

// Runs `body`, turning every exception into a status and a message (rule 6). noexcept
// so that even a bug here ends in std::terminate inside the plugin, not in unwinding
// through the host's C frames.
template <class Body>
hd_status guarded(hd_sink out_error, Body&& body) noexcept {
    try {
        body();
        return HD_STATUS_OK;
    } catch (const PluginError& error) {
        write_to(out_error, error.what());
        return error.status();
    } catch (const std::invalid_argument& error) {
        // What the plugin was given is wrong (a thinking level it does not know): the
        // caller's mistake, not the plugin's failure.
        write_to(out_error, error.what());
        return HD_STATUS_INVALID_ARGUMENT;
    } catch (const std::exception& error) {
        write_to(out_error, error.what());
        return HD_STATUS_FAILED;
    } catch (...) {
        write_to(out_error, "the plugin threw an exception that is not a std::exception");
        return HD_STATUS_FAILED;
    }
}

template <class Class>
std::unique_ptr<Class> construct(const Host& host) {
    if constexpr (std::is_constructible_v<Class, const Host&>)
        return std::make_unique<Class>(host);
    else
        return std::make_unique<Class>();
}

// The instance pointer handed to the host is the kind's base (Harness* or Addon*), so
// the vtable functions below need not be templates.
template <class Class, class Base>
hd_status create(const hd_host_api* api, void** out_instance, hd_sink out_error) noexcept {
    static_assert(std::is_base_of_v<Base, Class>, "the plugin class must derive from its kind");
    if (out_instance == nullptr) {
        write_to(out_error, "create() was called without out_instance");
        return HD_STATUS_INVALID_ARGUMENT;
    }
    *out_instance = nullptr;
    return guarded(out_error, [&] {
        const Host host(api);
        std::unique_ptr<Class> object = construct<Class>(host);
        Access::set_host(*object, host);
        Base* base = object.release(); // the host owns it now, until destroy()
        *out_instance = base;
    });
}

template <class Base>
void destroy(void* instance) noexcept {
    delete static_cast<Base*>(instance);
}

template <class Base>
Base& self(void* instance) {
    if (instance == nullptr) throw PluginError(HD_STATUS_INVALID_ARGUMENT, "called without an instance");
    return *static_cast<Base*>(instance);
}

template <class Base>
hd_status describe(void* instance, hd_sink out_json, hd_sink out_error) noexcept {
    return guarded(out_error, [&] { write_to(out_json, self<Base>(instance).describe()); });
}

template <class Base>
hd_status image_recipe(void* instance, const hd_recipe_builder* raw, hd_sink out_error) noexcept {
    return guarded(out_error, [&] {
        RecipeBuilder recipe(raw);
        self<Base>(instance).image_recipe(recipe);
    });
}

inline hd_status harness_launch(void* instance, const hd_launch_request* raw_request,
                                const hd_launch_builder* raw_builder, hd_sink out_error) noexcept {
    return guarded(out_error, [&] {
        if (raw_request == nullptr || raw_builder == nullptr)
            throw PluginError(HD_STATUS_INVALID_ARGUMENT, "launch() needs a request and a builder");
        const LaunchRequest request = LaunchRequest::from(raw_request);
        LaunchBuilder builder(raw_builder);
        self<Harness>(instance).launch(request, builder);
    });
}

template <class Open>
hd_status open_parser(const char* call, void** out_parser, hd_sink out_error, Open&& open) noexcept {
    if (out_parser == nullptr) {
        write_to(out_error, std::string(call) + "() was called without out_parser");
        return HD_STATUS_INVALID_ARGUMENT;
    }
    *out_parser = nullptr;
    return guarded(out_error, [&] {
        std::unique_ptr<EventParser> parser = open();
        if (!parser)
            throw PluginError(HD_STATUS_UNSUPPORTED, "this harness has no structured output parser");
        *out_parser = parser.release();
    });
}

inline hd_status harness_events_open(void* instance, hd_str session_id, void** out_parser,
                                     hd_sink out_error) noexcept {
    return open_parser("events_open", out_parser, out_error,
                       [&] { return self<Harness>(instance).open_events(to_view(session_id)); });
}

inline hd_status harness_events_reopen(void* instance, hd_str session_id, hd_str harness_session_id,
                                       void** out_parser, hd_sink out_error) noexcept {
    return open_parser("events_reopen", out_parser, out_error, [&] {
        return self<Harness>(instance).reopen_events(to_view(session_id), to_view(harness_session_id));
    });
}

// One call into a session's parser (`call` names it in the error when there is none).
template <class Body>
hd_status with_parser(const char* call, void* parser, const hd_event_sink* raw_sink, hd_sink out_error,
                      Body&& body) noexcept {
    return guarded(out_error, [&] {
        if (parser == nullptr)
            throw PluginError(HD_STATUS_INVALID_ARGUMENT, std::string(call) + "() was called without a parser");
        EventSink sink(raw_sink);
        body(*static_cast<EventParser*>(parser), sink);
    });
}

inline hd_status harness_events_feed(void* parser, hd_str bytes, const hd_event_sink* raw_sink,
                                     hd_sink out_error) noexcept {
    return with_parser("events_feed", parser, raw_sink, out_error,
                       [&](EventParser& events, EventSink& sink) { events.feed(to_view(bytes), sink); });
}

inline void harness_events_close(void* parser) noexcept {
    delete static_cast<EventParser*>(parser);
}

inline hd_status harness_events_answer(void* parser, hd_str request, hd_str answer,
                                       const hd_event_sink* raw_sink, hd_sink out_error) noexcept {
    return with_parser("events_answer", parser, raw_sink, out_error, [&](EventParser& events, EventSink& sink) {
        events.answer(to_view(request), to_view(answer), sink);
    });
}

inline hd_status harness_events_prompt(void* parser, hd_str prompt, const hd_event_sink* raw_sink,
                                       hd_sink out_error) noexcept {
    return with_parser("events_prompt", parser, raw_sink, out_error,
                       [&](EventParser& events, EventSink& sink) { events.prompt(to_view(prompt), sink); });
}

inline hd_status harness_events_cancel(void* parser, const hd_event_sink* raw_sink, hd_sink out_error) noexcept {
    return with_parser("events_cancel", parser, raw_sink, out_error,
                       [&](EventParser& events, EventSink& sink) { events.cancel(sink); });
}

inline hd_status harness_events_set(void* parser, hd_str name, hd_str value, const hd_event_sink* raw_sink,
                                    hd_sink out_error) noexcept {
    return with_parser("events_set", parser, raw_sink, out_error, [&](EventParser& events, EventSink& sink) {
        events.set(to_view(name), to_view(value), sink);
    });
}

inline hd_status addon_contribute(void* instance, const hd_launch_request* raw_request,
                                  const hd_launch_builder* raw_builder, hd_sink out_error) noexcept {
    return guarded(out_error, [&] {
        if (raw_request == nullptr || raw_builder == nullptr)
            throw PluginError(HD_STATUS_INVALID_ARGUMENT, "contribute() needs a request and a builder");
        const LaunchRequest request = LaunchRequest::from(raw_request);
        LaunchBuilder builder(raw_builder);
        self<Addon>(instance).contribute(request, builder);
    });
}

inline constexpr hd_harness_vtable kHarnessVtable = {
    sizeof(hd_harness_vtable), &describe<Harness>,  &image_recipe<Harness>, &harness_launch,
    &harness_events_open,      &harness_events_feed, &harness_events_close,
    &harness_events_answer,    &harness_events_prompt, &harness_events_cancel,
    &harness_events_set,       &harness_events_reopen,
};

inline constexpr hd_addon_vtable kAddonVtable = {
    sizeof(hd_addon_vtable), &describe<Addon>, &image_recipe<Addon>, &addon_contribute,
};

inline hd_plugin_info base_info(hd_plugin_kind kind, const char* id, const char* version,
                                const char* name, const char* description) noexcept {
    hd_plugin_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.abi_major = HD_ABI_MAJOR;
    info.abi_minor = HD_ABI_MINOR;
    info.kind = kind;
    info.id = id;
    info.version = version;
    info.name = name;
    info.description = description;
    return info;
}

// The info HD_HARNESS_PLUGIN returns. Exposed so a test or an unusual plugin can
// adjust a copy (e.g. the test fixtures that pose as other ABI versions).
template <class Class>
hd_plugin_info make_harness_info(const char* id, const char* version, const char* name,
                                 const char* description) noexcept {
    hd_plugin_info info = base_info(HD_PLUGIN_KIND_HARNESS, id, version, name, description);
    info.create = &create<Class, Harness>;
    info.destroy = &destroy<Harness>;
    info.harness = &kHarnessVtable;
    return info;
}

template <class Class>
hd_plugin_info make_addon_info(const char* id, const char* version, const char* name,
                               const char* description) noexcept {
    hd_plugin_info info = base_info(HD_PLUGIN_KIND_ADDON, id, version, name, description);
    info.create = &create<Class, Addon>;
    info.destroy = &destroy<Addon>;
    info.addon = &kAddonVtable;
    return info;
}

} // namespace detail
} // namespace handler::sdk

// Defines the plugin's entry point. Use once per plugin, at namespace scope, with
// string literals: the host keeps pointers to them for the process lifetime. `id` must
// equal plugin.toml's id. The host's ABI version is not checked here: the host refuses
// an incompatible plugin with a better message than a NULL return could carry.
#define HD_HARNESS_PLUGIN(Class, id, version, name, description)                              \
    extern "C" HD_EXPORT const hd_plugin_info* hd_plugin_entry(uint16_t, uint16_t) {           \
        static const hd_plugin_info info =                                                    \
            ::handler::sdk::detail::make_harness_info<Class>(id, version, name, description); \
        return &info;                                                                         \
    }

#define HD_ADDON_PLUGIN(Class, id, version, name, description)                              \
    extern "C" HD_EXPORT const hd_plugin_info* hd_plugin_entry(uint16_t, uint16_t) {         \
        static const hd_plugin_info info =                                                  \
            ::handler::sdk::detail::make_addon_info<Class>(id, version, name, description); \
        return &info;                                                                       \
    }

#endif // HANDLER_PLUGIN_HPP
