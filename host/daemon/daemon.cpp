#include "daemon/daemon.hpp"

#include "api/model_server_probe.hpp"
#include "api/routes.hpp"
#include "api/server.hpp"
#include "api/token.hpp"
#include "api/ui_assets.hpp"
#include "api/ui_login.hpp"
#include "core/clock.hpp"
#include "core/paths.hpp"
#include "daemon/heap.hpp"
#include "daemon/process.hpp"
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "plugins/registry_harness_catalog.hpp"
#include "runtime/image_builder.hpp"
#include "runtime/podman_runtime.hpp"
#include "runtime/process.hpp"
#include "network/egress_proxy.hpp"
#include "network/policy.hpp"
#include "secrets/secret_store.hpp"
#include "tls/ca.hpp"
#include "sessions/changes_service.hpp"
#include "sessions/launch.hpp"
#include "sessions/session_manager.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"

#include <handler/sdk.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <unistd.h>

namespace handler::daemon {

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

namespace {

// Settings and the folders they live in, read before anything is started or written: a
// broken file must stop us first.
struct Setup {
    Paths paths;
    settings::Loaded loaded;
};

Result<Setup> read_setup() {
    auto paths = Paths::from_process_environment();
    if (!paths) return paths.take_error();
    for (const auto& dir : {paths->config_dir, paths->data_dir, paths->runtime_dir})
        if (auto made = ensure_private_dir(dir); !made) return made.take_error();
    auto loaded = settings::load(paths->config_file());
    if (!loaded) return loaded.take_error();
    return Setup{std::move(*paths), std::move(*loaded)};
}

std::filesystem::path home_dir() {
    const char* home = std::getenv("HOME");
    return home != nullptr ? std::filesystem::path(home) : std::filesystem::path();
}

// The plugins, loaded once, and the session service's port to them.
struct Plugins {
    Plugins(store::Store& store, const Paths& paths, const settings::Settings& config)
        : services(store, spdlog::default_logger()), registry(services), harnesses(registry) {
        registry.load(plugins::default_search_path(paths), config.plugins.disabled);
    }
    plugins::HostServices services;
    plugins::PluginRegistry registry;
    plugins::RegistryHarnessCatalog harnesses;
};

// Keys: their files, the CA whose leaves the proxy shows for the hosts they go to, and
// the TLS contexts built from it (docs/network.md, "Keys").
struct Keys {
    secrets::SecretStore secret_store;
    std::unique_ptr<tls::CertificateAuthority> authority;
    std::unique_ptr<network::TlsContexts> tls;
};

Result<std::unique_ptr<Keys>> open_keys(const Paths& paths, const Clock& clock) {
    auto keys = std::make_unique<Keys>(Keys{secrets::SecretStore(paths.data_dir / "secrets"), nullptr, nullptr});
    auto authority = tls::CertificateAuthority::load_or_create(paths.data_dir / "tls", clock);
    if (!authority) return authority.take_error();
    keys->authority = std::move(*authority);
    auto contexts = network::TlsContexts::create(*keys->authority);
    if (!contexts) return contexts.take_error();
    keys->tls = std::move(*contexts);
    return keys;
}

Result<sessions::SessionManagerOptions> session_options(const Paths& paths, const settings::Settings& config,
                                                        Keys& keys) {
    sessions::SessionManagerOptions options;
    options.secret_store = &keys.secret_store;
    options.tls = keys.tls.get();
    options.ca_certificate_pem = keys.authority->certificate_pem();
    options.system_ca_bundle = sessions::system_trust_bundle([](const char* name) { return std::getenv(name); });
    options.control_root = paths.runtime_dir / "sessions";
    options.output_root = paths.data_dir / "sessions";
    options.helper_dir = builtin_helper_dir();
    options.home_dir = home_dir();
    options.log_limit_bytes = config.sessions.log_limit_bytes;
    options.headless_timeout = std::chrono::minutes(config.sessions.headless_timeout_minutes);
    options.proxy_port = config.network.proxy_port;
    for (const auto& [name, address] : config.network.resolve) {
        if (name.find(':') == std::string::npos)
            options.resolve[name] = {*network::parse_address(address)};
        else
            options.resolve_endpoints[name] = *network::parse_endpoint(address, false);
    }
    options.default_image = config.sessions.image;
    if (options.default_image.empty()) {
        auto reference = runtime::base_image_ref(runtime::default_base_recipe());
        if (reference) options.default_image = *reference;
        else spdlog::warn("no base image reference: {}", reference.error().message);
    }
    if (::geteuid() == 0)
        options.refuse_sessions =
            "handlerd runs as root, and sessions never do (rootless podman is the isolation, "
            "and it does not work as root here); run handlerd as a normal user, e.g. the one "
            "scripts/install.sh creates: su - handler -c 'handler run'";
    options.image_build_dir = runtime::default_build_dir([](const char* name) { return std::getenv(name); });
    options.account_state_root = paths.data_dir / runtime::kAccountStateFolder;
    for (const auto& dir : {options.control_root, options.output_root})
        if (auto made = ensure_private_dir(dir); !made) return made.take_error();
    return options;
}

// The body of GET /api/v1/status.
boost::json::object status_of(const plugins::PluginRegistry& registry, const Paths& paths,
                              const settings::Settings& config, std::int64_t started_at,
                              const std::string& session_image, const api::Server* server) {
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
        {"socket", paths.socket_file().string()},
        {"sessions", {{"image", session_image}}},
        {"settings_format", settings::kCurrentFormat},
        {"plugins",
         {{"loaded", loaded_count}, {"refused", refused_count}, {"failed", failed_count}, {"disabled", disabled_count}}}};
    if (server != nullptr && config.api.tcp)
        status["tcp"] = {{"address", config.api.address}, {"port", server->tcp_port()}};
    else
        status["tcp"] = nullptr;
    return status;
}

api::ServerOptions server_options(const Paths& paths, const settings::Settings& config, std::string token) {
    api::ServerOptions options;
    options.socket_path = paths.socket_file();
    options.pid_file = paths.pid_file();
    options.tcp_enabled = config.api.tcp;
    options.tcp_address = config.api.address;
    options.tcp_port = config.api.port;
    options.token = std::move(token);
    options.body_limit_bytes = config.api.body_limit_bytes;
    options.read_timeout_ms = config.api.read_timeout_ms;
    return options;
}

} // namespace

int run_daemon(const DaemonOptions& options) {
    Readiness no_parent;
    auto setup = read_setup();
    if (!setup) return refuse(no_parent, setup.error().message);
    const Paths& paths = setup->paths;
    const settings::Settings& config = setup->loaded.settings;

    Readiness readiness = options.detach ? detach() : Readiness();
    set_up_logging(paths, config, options);
    spdlog::info("handlerd {} starting (pid {}, plugin ABI {}.{})", HANDLER_VERSION, ::getpid(),
                 HD_ABI_MAJOR, HD_ABI_MINOR);
    for (const auto& note : setup->loaded.notes) spdlog::info("{}", note);

    // After detaching: flock belongs to the open file, which the daemon process keeps. A
    // daemon still stopping is waited for; declared first, the lock goes last.
    InstanceWait instance_wait;
    instance_wait.report = [](const std::string& line) { spdlog::info("{}", line); };
    auto locked = take_instance_lock(
        {paths.runtime_dir / "handlerd.lock", paths.pid_file(), paths.socket_file()},
        instance_wait);
    if (!locked) return refuse(readiness, locked.error().message);
    const InstanceLock instance_lock = std::move(*locked);

    SystemClock clock;
    auto store = store::Store::open(paths.database_file(), clock);
    if (!store) return refuse(readiness, store.error().message);
    spdlog::info("database {} at schema version {}", paths.database_file().string(), (*store)->schema_version());

    Plugins plugins(**store, paths, config);
    std::string token;
    if (config.api.tcp) {
        auto made = api::load_or_create_token(paths.token_file());
        if (!made) return refuse(readiness, made.error().message);
        token = std::move(*made);
    }

    // Sessions: podman through the CLI, one container per session (docs/containers.md).
    boost::asio::io_context io;
    api::EventHub events;
    runtime::SystemCommandRunner command_runner;
    runtime::PodmanOptions podman_options = runtime::PodmanOptions::for_user(home_dir(), paths, ::getuid());
    podman_options.limits = config.sessions.limits;
    runtime::PodmanRuntime container_runtime(command_runner, podman_options);
    auto keys = open_keys(paths, clock);
    if (!keys) return refuse(readiness, keys.error().message);
    auto session_settings = session_options(paths, config, **keys);
    if (!session_settings) return refuse(readiness, session_settings.error().message);
    const auto& session_options = *session_settings;
    sessions::SessionManager session_manager(io, **store, container_runtime, plugins.harnesses, events, clock,
                                             session_options);
    // Plugins' network and secret services act on the sessions that use them. Taken back
    // before the manager goes: plugins' own threads may still call until they are unloaded.
    plugins.services.set_sessions(&session_manager);
    struct SessionsUnset {
        plugins::HostServices& services;
        ~SessionsUnset() { services.set_sessions(nullptr); }
    } const sessions_unset{plugins.services};

    // A session's Changes run in a container of the base image, on a worker of their own.
    sessions::ChangesService changes_service(container_runtime, {session_options.default_image, {}, 4});

    api::Server* server_ptr = nullptr;
    api::DaemonInfo info;
    info.home_dir = home_dir();
    info.handler_dirs = {paths.data_dir, paths.config_dir, paths.runtime_dir};
    // After io, so it goes first: its worker is joined while the connections it answers
    // can still be posted to.
    const auto model_servers = api::make_http_model_server_probe();
    info.model_servers = model_servers.get();
    info.plugins = [&plugins] { return plugins.registry.list(); };
    info.status = [&, started_at = clock.now_ms()] {
        return status_of(plugins.registry, paths, config, started_at, session_options.default_image, server_ptr);
    };
    info.sessions = &session_manager;
    info.changes = &changes_service;
    info.secrets = &(*keys)->secret_store;
    // The web page: read once now, so what is served is what was installed with this
    // handlerd; without it handlerd still runs, and GET / says why there is no page.
    api::UiAssets ui_assets;
    if (auto loaded = api::UiAssets::load(builtin_ui_dir()); loaded) {
        ui_assets = std::move(*loaded);
        spdlog::info("web page: {} files from {}", ui_assets.size(), ui_assets.dir().string());
    } else {
        spdlog::warn("no web page: {}", loaded.error().message);
        info.ui_missing = loaded.error().message;
    }
    api::UiLogins ui_logins(clock);
    info.ui_assets = &ui_assets;
    info.ui_logins = &ui_logins;
    info.tcp_port = [&server_ptr, &config]() -> std::uint16_t {
        return server_ptr != nullptr && config.api.tcp ? server_ptr->tcp_port() : 0;
    };
    api::Routes routes(**store, events, clock, info);
    api::Server server(io, server_options(paths, config, token), routes, events, &session_manager,
                       &ui_logins);
    if (auto started = server.start(); !started) return refuse(readiness, started.error().message);
    server_ptr = &server;

    if (auto written = write_file_atomic(paths.pid_file(), std::to_string(::getpid()) + "\n", 0644); !written)
        spdlog::warn("{}", written.error().message);

    // Freed memory glibc keeps after a peak of proxy connections goes back (heap.hpp).
    const auto heap = make_system_heap();
    HeapKeeper heap_keeper(io, *heap, [&session_manager] {
        const auto connections = session_manager.take_proxy_connections();
        return HeapKeeper::Connections{connections.peak, connections.open};
    });
    heap_keeper.start();

    boost::asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code& error, int signal_number) {
        if (error) return;
        spdlog::info("signal {}: stopping (session containers keep running)", signal_number);
        heap_keeper.stop();
        server.stop();
        session_manager.shut_down();
        // A podman ps or inspect under way is not waited for: nobody reads its answer now.
        command_runner.abandon_reads();
    });

    std::string ready = "handlerd " HANDLER_VERSION " ready on " + paths.socket_file().string();
    if (config.api.tcp)
        ready += " and http://" + config.api.address + ":" + std::to_string(server.tcp_port()) + "/";
    spdlog::info("{}", ready);
    readiness.ready(ready);
    spdlog::info("sessions use image {} and helpers from {}", session_options.default_image,
                 session_options.helper_dir.string());
    if (session_options.refuse_sessions.empty()) session_manager.reconcile();

    io.run();

    std::error_code ignored;
    std::filesystem::remove(paths.pid_file(), ignored);
    spdlog::info("handlerd stopped");
    return 0;
}

} // namespace handler::daemon
