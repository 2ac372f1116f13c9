#include "daemon/daemon.hpp"

#include "api/routes.hpp"
#include "api/server.hpp"
#include "api/token.hpp"
#include "core/clock.hpp"
#include "core/paths.hpp"
#include "daemon/process.hpp"
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "runtime/image_builder.hpp"
#include "runtime/podman_runtime.hpp"
#include "runtime/process.hpp"
#include "network/egress_proxy.hpp"
#include "network/policy.hpp"
#include "secrets/secret_store.hpp"
#include "tls/ca.hpp"
#include "sessions/session_manager.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"

#include <handler/sdk.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <unistd.h>

namespace handler::daemon {

namespace {

// A harness plugin's parser of one session's output, as the session service sees it.
class PluginEvents final : public sessions::EventParser {
public:
    explicit PluginEvents(std::unique_ptr<plugins::EventStream> stream) : stream_(std::move(stream)) {}
    Result<plugins::ParsedEvents> feed(std::string_view bytes) override { return stream_->feed(bytes); }
    Result<plugins::ParsedEvents> answer(std::string_view request, std::string_view answer) override {
        return stream_->answer(request, answer);
    }
    Result<plugins::ParsedEvents> prompt(std::string_view prompt) override { return stream_->prompt(prompt); }

private:
    std::unique_ptr<plugins::EventStream> stream_;
};

} // namespace
namespace {

bool logging_ready = false;

spdlog::level::level_enum to_spdlog(settings::LogLevel level, int verbosity) {
    int value = static_cast<int>(level) - 1; // trace = 0 ... error = 4, as spdlog counts
    value = std::max(0, value - verbosity);
    return static_cast<spdlog::level::level_enum>(value);
}

// Foreground: the terminal. Detached: the log file, since stderr is /dev/null then.
void set_up_logging(const Paths& paths, const settings::Settings& settings,
                    const DaemonOptions& options) {
    std::shared_ptr<spdlog::logger> logger;
    if (options.detach)
        logger = std::make_shared<spdlog::logger>(
            "handlerd", std::make_shared<spdlog::sinks::basic_file_sink_mt>(
                            paths.log_file().string()));
    else
        logger = std::make_shared<spdlog::logger>(
            "handlerd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    logger->set_level(to_spdlog(settings.daemon.log_level, options.verbosity));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
    logging_ready = true;
}

// A failure goes to the log once there is one, to the terminal in the foreground, and to
// the parent that waits for a detached daemon.
int refuse(Readiness& readiness, const std::string& message) {
    if (logging_ready) spdlog::error("{}", message);
    std::fprintf(stderr, "handlerd: %s\n", message.c_str());
    readiness.failed("handlerd: " + message);
    return 1;
}

} // namespace

int run_daemon(const DaemonOptions& options) {
    Readiness no_parent;
    auto paths = Paths::from_process_environment();
    if (!paths) return refuse(no_parent, paths.error().message);

    for (const auto& dir : {paths->config_dir, paths->data_dir, paths->runtime_dir})
        if (auto made = ensure_private_dir(dir); !made) return refuse(no_parent, made.error().message);

    // Settings first: a broken file must stop us before anything is started or written.
    auto loaded = settings::load(paths->config_file());
    if (!loaded) return refuse(no_parent, loaded.error().message);
    const settings::Settings& config = loaded->settings;

    Readiness readiness = options.detach ? detach() : Readiness();
    set_up_logging(*paths, config, options);
    spdlog::info("handlerd {} starting (pid {}, plugin ABI {}.{})", HANDLER_VERSION, ::getpid(),
                 HD_ABI_MAJOR, HD_ABI_MINOR);
    for (const auto& note : loaded->notes) spdlog::info("{}", note);

    // After detaching: flock belongs to the open file, which the daemon process keeps. A
    // daemon still stopping is waited for; declared first, the lock goes last.
    InstanceWait instance_wait;
    instance_wait.report = [](const std::string& line) { spdlog::info("{}", line); };
    auto locked = take_instance_lock(
        {paths->runtime_dir / "handlerd.lock", paths->pid_file(), paths->socket_file()},
        instance_wait);
    if (!locked) return refuse(readiness, locked.error().message);
    const InstanceLock instance_lock = std::move(*locked);

    SystemClock clock;
    auto store = store::Store::open(paths->database_file(), clock);
    if (!store) return refuse(readiness, store.error().message);
    spdlog::info("database {} at schema version {}", paths->database_file().string(),
                 (*store)->schema_version());

    plugins::HostServices services(**store, spdlog::default_logger());
    plugins::PluginRegistry registry(services);
    registry.load(plugins::default_search_path(*paths), config.plugins.disabled);
    std::string token;
    if (config.api.tcp) {
        auto made = api::load_or_create_token(paths->token_file());
        if (!made) return refuse(readiness, made.error().message);
        token = std::move(*made);
    }

    boost::asio::io_context io;
    api::EventHub events;
    api::Server* server_ptr = nullptr;
    const std::int64_t started_at = clock.now_ms();

    std::string session_image; // set below, before the API answers
    api::DaemonInfo info;
    info.home_dir = [] {
        const char* home = std::getenv("HOME");
        return home != nullptr ? std::filesystem::path(home) : std::filesystem::path();
    }();
    info.plugins = [&registry] { return registry.list(); };
    info.status = [&] {
        std::size_t loaded_count = 0, refused_count = 0, failed_count = 0, disabled_count = 0;
        for (const auto& record : registry.list()) {
            switch (record.state) {
            case plugins::PluginState::loaded: ++loaded_count; break;
            case plugins::PluginState::refused: ++refused_count; break;
            case plugins::PluginState::failed: ++failed_count; break;
            case plugins::PluginState::disabled: ++disabled_count; break;
            }
        }
        boost::json::object status{
            {"version", HANDLER_VERSION},
            {"abi", std::to_string(HD_ABI_MAJOR) + "." + std::to_string(HD_ABI_MINOR)},
            {"pid", ::getpid()},
            {"started_at", started_at},
            {"socket", paths->socket_file().string()},
            {"sessions", {{"image", session_image}}},
            {"settings_format", settings::kCurrentFormat},
            {"plugins",
             {{"loaded", loaded_count},
              {"refused", refused_count},
              {"failed", failed_count},
              {"disabled", disabled_count}}}};
        if (server_ptr != nullptr && config.api.tcp)
            status["tcp"] = {{"address", config.api.address}, {"port", server_ptr->tcp_port()}};
        else
            status["tcp"] = nullptr;
        return status;
    };
    // Sessions: podman through the CLI, one container per session (docs/containers.md).
    runtime::SystemCommandRunner command_runner;
    runtime::PodmanRuntime container_runtime(
        command_runner, runtime::PodmanOptions::for_user(info.home_dir, *paths, ::getuid()));
    // Keys: their files, the CA whose leaves the proxy shows for the hosts they go to,
    // and the TLS contexts built from it (docs/network.md, "Keys").
    secrets::SecretStore secret_store(paths->data_dir / "secrets");
    auto authority = tls::CertificateAuthority::load_or_create(paths->data_dir / "tls", clock);
    if (!authority) return refuse(readiness, authority.error().message);
    auto tls_contexts = network::TlsContexts::create(**authority);
    if (!tls_contexts) return refuse(readiness, tls_contexts.error().message);
    sessions::SessionManagerOptions session_options;
    session_options.secret_store = &secret_store;
    session_options.tls = tls_contexts->get();
    session_options.ca_certificate_pem = (*authority)->certificate_pem();
    session_options.control_root = paths->runtime_dir / "sessions";
    session_options.output_root = paths->data_dir / "sessions";
    session_options.helper_dir = builtin_helper_dir();
    session_options.log_limit_bytes = config.sessions.log_limit_bytes;
    session_options.headless_timeout = std::chrono::minutes(config.sessions.headless_timeout_minutes);
    session_options.proxy_port = config.network.proxy_port;
    for (const auto& [name, address] : config.network.resolve) {
        if (name.find(':') == std::string::npos)
            session_options.resolve[name] = {*network::parse_address(address)};
        else
            session_options.resolve_endpoints[name] = *network::parse_endpoint(address, false);
    }
    session_options.default_image = config.sessions.image;
    if (session_options.default_image.empty()) {
        auto reference = runtime::base_image_ref(runtime::default_base_recipe());
        if (reference) session_options.default_image = *reference;
        else spdlog::warn("no base image reference: {}", reference.error().message);
    }
    if (::geteuid() == 0)
        session_options.refuse_sessions =
            "handlerd runs as root, and sessions never do (rootless podman is the isolation, "
            "and it does not work as root here); run handlerd as a normal user, e.g. the one "
            "scripts/install.sh creates: su - handler -c 'handler run'";
    session_image = session_options.default_image;
    for (const auto& dir : {session_options.control_root, session_options.output_root})
        if (auto made = ensure_private_dir(dir); !made) return refuse(readiness, made.error().message);
    sessions::Launcher launcher = [&registry](std::string_view harness,
                                              const plugins::LaunchRequest& request)
        -> Result<plugins::LaunchSpec> {
        auto found = registry.harness(harness);
        if (!found) return found.take_error();
        return (*found)->launch(request);
    };
    sessions::HarnessCheck harness_exists = [&registry](std::string_view harness) {
        return registry.harness(harness).ok();
    };
    session_options.contribute_addon = [&registry](std::string_view addon,
                                                   const plugins::LaunchRequest& request)
        -> Result<plugins::LaunchSpec> {
        auto found = registry.addon(addon);
        if (!found) return found.take_error();
        return (*found)->contribute(request);
    };
    session_options.open_events = [&registry](std::string_view harness, std::string_view session_id)
        -> Result<sessions::OpenedEvents> {
        auto found = registry.harness(harness);
        if (!found) return found.take_error();
        auto stream = (*found)->open_events(session_id);
        if (!stream) return stream.take_error();
        sessions::OpenedEvents opened;
        opened.parser = std::make_unique<PluginEvents>(std::move(*stream));
        // The plugin says in describe() whether its stdout is JSON for machines, and
        // whether its stdin is a protocol of its own.
        if (auto described = (*found)->describe()) {
            boost::system::error_code error;
            auto value = boost::json::parse(*described, error);
            if (!error && value.is_object()) {
                if (const auto* kind = value.as_object().if_contains("events"); kind && kind->is_string())
                    opened.mode = std::string(kind->as_string());
                if (const auto* input = value.as_object().if_contains("stdin"); input && input->is_string())
                    opened.owns_input = input->as_string() == "protocol";
            }
        }
        return opened;
    };
    session_options.harness_recipe = [&registry](std::string_view harness)
        -> Result<std::optional<runtime::LayerRecipe>> {
        auto found = registry.harness(harness);
        if (!found) return found.take_error();
        auto recipe = (*found)->image_recipe();
        if (!recipe) return recipe.take_error();
        if (recipe->run_steps.empty() && recipe->env.empty()) return std::optional<runtime::LayerRecipe>();
        runtime::LayerRecipe layer;
        layer.name = (*found)->id();
        layer.version = (*found)->version();
        for (const auto& variable : recipe->env) layer.env.emplace_back(variable.name, variable.value);
        layer.run_steps = recipe->run_steps;
        return std::optional<runtime::LayerRecipe>(std::move(layer));
    };
    session_options.image_build_dir = runtime::default_build_dir([](const char* name) { return std::getenv(name); });
    session_options.account_state_root = paths->data_dir / runtime::kAccountStateFolder;
    sessions::SessionManager session_manager(io, **store, container_runtime, launcher,
                                             harness_exists, events, clock, session_options);
    info.sessions = &session_manager;
    info.secrets = &secret_store;
    // Plugins' network and secret services act on the sessions that use them. Taken back
    // before the manager goes: plugins' own threads may still call until they are unloaded.
    services.set_sessions(&session_manager);
    struct SessionsUnset {
        plugins::HostServices& services;
        ~SessionsUnset() { services.set_sessions(nullptr); }
    } const sessions_unset{services};
    api::Routes routes(**store, events, clock, info);

    api::ServerOptions server_options;
    server_options.socket_path = paths->socket_file();
    server_options.pid_file = paths->pid_file();
    server_options.tcp_enabled = config.api.tcp;
    server_options.tcp_address = config.api.address;
    server_options.tcp_port = config.api.port;
    server_options.token = token;
    server_options.body_limit_bytes = config.api.body_limit_bytes;
    server_options.read_timeout_ms = config.api.read_timeout_ms;
    api::Server server(io, server_options, routes, events, &session_manager);
    if (auto started = server.start(); !started) return refuse(readiness, started.error().message);
    server_ptr = &server;

    if (auto written = write_file_atomic(paths->pid_file(), std::to_string(::getpid()) + "\n", 0644);
        !written)
        spdlog::warn("{}", written.error().message);

    boost::asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code& error, int signal_number) {
        if (error) return;
        spdlog::info("signal {}: stopping (session containers keep running)", signal_number);
        server.stop();
        session_manager.shut_down();
        // A podman ps or inspect under way is not waited for: nobody reads its answer now.
        command_runner.abandon_reads();
    });

    std::string ready = "handlerd " HANDLER_VERSION " ready on " + paths->socket_file().string();
    if (config.api.tcp)
        ready += " and http://" + config.api.address + ":" + std::to_string(server.tcp_port()) + "/";
    spdlog::info("{}", ready);
    readiness.ready(ready);
    spdlog::info("sessions use image {} and helpers from {}", session_options.default_image,
                 session_options.helper_dir.string());
    if (session_options.refuse_sessions.empty()) session_manager.reconcile();

    io.run();

    std::error_code ignored;
    std::filesystem::remove(paths->pid_file(), ignored);
    spdlog::info("handlerd stopped");
    return 0;
}

} // namespace handler::daemon
