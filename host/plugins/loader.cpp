#include "plugins/loader.hpp"

#include "plugins/host_services.hpp"
#include "plugins/manifest.hpp"

#include <handler/host.hpp>

#include <boost/dll/shared_library.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <variant>

namespace handler::plugins {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxInfoStringBytes = 4096;

// See loader.hpp for why nothing loaded is ever released. Leaked on purpose: a static
// vector's destructor would dlclose at exit, while other statics may still point in.
void keep_loaded_forever(boost::dll::shared_library library) {
    static std::mutex* const mutex = new std::mutex;
    static auto* const libraries = new std::vector<boost::dll::shared_library>;
    const std::lock_guard lock(*mutex);
    libraries->push_back(std::move(library));
}

bool looks_like_library(const fs::path& path) {
    const std::string name = path.filename().string();
    return path.extension() == ".so" || name.find(".so.") != std::string::npos;
}

fs::path absolute_path(const fs::path& path) {
    std::error_code error;
    fs::path result = fs::absolute(path, error);
    return error ? path : result.lexically_normal();
}

// A C string from the plugin's static data, bounded in case it is not terminated.
std::string info_string(const char* text) {
    if (text == nullptr) return {};
    return std::string(text, ::strnlen(text, kMaxInfoStringBytes));
}

std::string kind_name(hd_plugin_kind kind) {
    switch (kind) {
    case HD_PLUGIN_KIND_HARNESS: return "harness";
    case HD_PLUGIN_KIND_ADDON: return "addon";
    }
    return "kind " + std::to_string(static_cast<int>(kind));
}

// Builds the outcome of one candidate; `who` starts every message.
class Attempt {
public:
    Attempt(const Manifest& manifest, const PluginCandidate& candidate, spdlog::logger& log)
        : log_(log) {
        record_.id = manifest.id;
        record_.kind = manifest.kind;
        record_.version = manifest.version;
        record_.abi = manifest.abi;
        record_.name = manifest.name;
        record_.library = absolute_path(manifest.library).string();
        record_.manifest = absolute_path(manifest.file).string();
        record_.source = candidate.source;
        who_ = "plugin '" + record_.id + "' (" + record_.library + ")";
    }

    PluginRecord& record() { return record_; }
    const std::string& who() const { return who_; }

    LoadOutcome refuse(const std::string& why) {
        record_.state = PluginState::refused;
        record_.message = who_ + " " + why;
        log_.warn("refused {}", record_.message);
        return LoadOutcome{std::move(record_), nullptr, nullptr};
    }
    LoadOutcome disable() {
        record_.state = PluginState::disabled;
        record_.message = who_ + " is disabled in the settings ([plugins] disabled); remove it "
                                 "from that list to load it";
        log_.info("{}", record_.message);
        return LoadOutcome{std::move(record_), nullptr, nullptr};
    }
    LoadOutcome fail(const std::string& why) {
        record_.state = PluginState::failed;
        record_.message = who_ + " " + why;
        log_.warn("{}", record_.message);
        return LoadOutcome{std::move(record_), nullptr, nullptr};
    }

private:
    spdlog::logger& log_;
    PluginRecord record_;
    std::string who_;
};

LoadOutcome refuse_without_manifest(const PluginCandidate& candidate, std::string why,
                                    spdlog::logger& log) {
    PluginRecord record;
    record.id = candidate.library.stem().string();
    record.library = absolute_path(candidate.library).string();
    record.source = candidate.source;
    record.state = PluginState::refused;
    record.message = std::move(why);
    log.warn("refused plugin: {}", record.message);
    return LoadOutcome{std::move(record), nullptr, nullptr};
}

} // namespace

std::vector<PluginDir> default_search_path(const Paths& paths) {
    return {PluginDir{builtin_plugin_dir(), "builtin"}, PluginDir{paths.user_plugin_dir(), "user"}};
}

std::vector<PluginCandidate> scan_plugin_dir(const PluginDir& dir) {
    std::vector<PluginCandidate> found;
    std::error_code error;
    if (dir.path.empty() || !fs::is_directory(dir.path, error)) {
        spdlog::debug("no plugin folder at {}", dir.path.string());
        return found;
    }
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it(dir.path, error), end; !error && it != end; it.increment(error))
        entries.push_back(*it);
    if (error) spdlog::warn("cannot list plugin folder {}: {}", dir.path.string(), error.message());
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });

    for (const fs::directory_entry& entry : entries) {
        std::error_code entry_error;
        if (entry.is_directory(entry_error)) {
            const fs::path manifest = entry.path() / "plugin.toml";
            if (fs::exists(manifest, entry_error)) {
                found.push_back(PluginCandidate{manifest, {}, dir.source});
                continue;
            }
            std::vector<fs::path> libraries;
            for (fs::directory_iterator it(entry.path(), entry_error), end; !entry_error && it != end;
                 it.increment(entry_error))
                if (looks_like_library(it->path())) libraries.push_back(it->path());
            std::sort(libraries.begin(), libraries.end());
            for (const fs::path& library : libraries)
                found.push_back(PluginCandidate{{}, library, dir.source});
            if (libraries.empty()) spdlog::debug("{} holds no plugin", entry.path().string());
        } else if (looks_like_library(entry.path())) {
            found.push_back(PluginCandidate{{}, entry.path(), dir.source});
        }
    }
    return found;
}

namespace {

// A stage of loading either hands on what the next stage needs, or ends the attempt
// with its outcome (a refusal or a failure).
template <class T>
using Staged = std::variant<T, LoadOutcome>;

LoadOutcome refuse_manifest(const PluginCandidate& candidate, const Error& error, spdlog::logger& log) {
    PluginRecord record;
    record.id = candidate.manifest.parent_path().filename().string();
    record.manifest = absolute_path(candidate.manifest).string();
    record.source = candidate.source;
    record.state = PluginState::refused;
    record.message = "plugin '" + record.id + "' has an unusable manifest: " + error.message;
    log.warn("refused {}", record.message);
    return LoadOutcome{std::move(record), nullptr, nullptr};
}

// Stages 2 and 3, and the library the manifest names: all before any code.
std::optional<LoadOutcome> check_manifest(const Manifest& manifest, Attempt& attempt,
                                          const ClaimedBy& claimed_by) {
    if (auto problem = sdk::abi_incompatibility(manifest.abi_major, manifest.abi_minor))
        return attempt.refuse("was " + *problem + " (abi in " + attempt.record().manifest + ")");
    if (const PluginRecord* first = claimed_by(manifest.id))
        return attempt.refuse("has the same id as " + first->library + " (" + first->source +
                              "), which came first on the plugin search path; remove one of them "
                              "or give this one another id");
    std::error_code exists_error;
    if (!fs::is_regular_file(manifest.library, exists_error))
        return attempt.refuse("is missing: " + attempt.record().manifest + " names library '" +
                              manifest.library.filename().string() +
                              "', which is not in its folder; reinstall the plugin");
    return std::nullopt;
}

// Stage 4: the code, and what its entry point says about itself.
Staged<const hd_plugin_info*> load_code(const Manifest& manifest, Attempt& attempt) {
    // dlerror() still holds the reason right after the failed dlopen (and it is per
    // thread), which is more useful than Boost's generic error code.
    std::error_code load_error;
    boost::dll::shared_library library(
        manifest.library, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, load_error);
    if (load_error || !library.is_loaded()) {
        const char* reason = ::dlerror();
        return attempt.refuse("could not be loaded: " +
                              (reason != nullptr ? std::string(reason) : load_error.message()) +
                              "; rebuild it against the libraries this machine has");
    }
    const bool has_entry = library.has(HD_ENTRY_SYMBOL);
    const hd_plugin_entry_fn entry = has_entry ? library.get<const hd_plugin_info*(uint16_t, uint16_t)>(HD_ENTRY_SYMBOL)
                                               : nullptr;
    keep_loaded_forever(std::move(library));
    if (entry == nullptr)
        return attempt.refuse(std::string("does not export ") + HD_ENTRY_SYMBOL +
                              ": define it with HD_HARNESS_PLUGIN or HD_ADDON_PLUGIN "
                              "(handler/plugin.hpp) and build with handler_add_plugin");

    const hd_plugin_info* raw_info = nullptr;
    try {
        raw_info = entry(HD_ABI_MAJOR, HD_ABI_MINOR);
    } catch (...) {
        // Only a hand-written entry point can get here; the SDK's never throws.
        return attempt.refuse(std::string(HD_ENTRY_SYMBOL) + " threw an exception; it must not (sdk.h rule 6)");
    }
    if (raw_info == nullptr)
        return attempt.refuse(std::string(HD_ENTRY_SYMBOL) + " returned NULL: the plugin says it "
                              "cannot work with plugin ABI " +
                              sdk::abi_string(HD_ABI_MAJOR, HD_ABI_MINOR));
    return raw_info;
}

// Stage 5: what the code says about itself (read as sdk.h rule 3 says) agrees with the
// manifest; its vtable is copied into the instance's parts.
Staged<PluginInstance> check_info(const hd_plugin_info& info, const Manifest& manifest, Attempt& attempt,
                                  spdlog::logger& log) {
    if (info.struct_size < offsetof(hd_plugin_info, kind))
        return attempt.refuse("returned an hd_plugin_info of " + std::to_string(info.struct_size) +
                              " bytes, too small to hold its ABI version; rebuild it with the SDK");
    if (info.abi_major != manifest.abi_major || info.abi_minor != manifest.abi_minor) {
        const std::string code_abi = sdk::abi_string(info.abi_major, info.abi_minor);
        if (auto problem = sdk::abi_incompatibility(info.abi_major, info.abi_minor))
            return attempt.refuse("was " + *problem + " (its code says " + code_abi + ", though " +
                                  attempt.record().manifest + " says " + manifest.abi + ")");
        return attempt.refuse("says ABI " + manifest.abi + " in " + attempt.record().manifest +
                              " but its code was built for " + code_abi +
                              "; rebuild it so the two agree");
    }
    attempt.record().abi = sdk::abi_string(info.abi_major, info.abi_minor);
    const std::string code_id = info_string(info.id);
    if (code_id != manifest.id)
        return attempt.refuse("is called '" + code_id + "' by its code but '" + manifest.id + "' by " +
                              attempt.record().manifest + "; make the manifest's id and the id in "
                              "HD_HARNESS_PLUGIN/HD_ADDON_PLUGIN the same");
    if (kind_name(info.kind) != manifest.kind)
        return attempt.refuse("is a " + kind_name(info.kind) + " by its code but a " + manifest.kind +
                              " by " + attempt.record().manifest + "; make them agree");
    const std::string code_version = info_string(info.version);
    if (code_version != manifest.version) {
        log.warn("{}: plugin.toml says version {} but the code says {}; listing the code's",
                 attempt.who(), manifest.version, code_version);
        attempt.record().version = code_version;
    }
    if (const std::string name = info_string(info.name); !name.empty()) attempt.record().name = name;

    // "Set iff kind" (sdk.h). Also how a host that ignored struct_size would show
    // itself: it would read whatever lies past an older plugin's shorter struct.
    if ((info.kind == HD_PLUGIN_KIND_HARNESS && info.addon != nullptr) ||
        (info.kind == HD_PLUGIN_KIND_ADDON && info.harness != nullptr))
        return attempt.refuse("sets both a harness and an addon table in its hd_plugin_info; a "
                              "plugin is one kind, rebuild it with the SDK");

    PluginInstance parts;
    parts.id = manifest.id;
    parts.kind = manifest.kind;
    parts.version = attempt.record().version;
    parts.destroy = info.destroy;
    if (info.kind == HD_PLUGIN_KIND_HARNESS) {
        parts.harness = sdk::read_struct(info.harness);
        if (info.harness == nullptr || parts.harness.launch == nullptr)
            return attempt.refuse("is a harness without a launch function (hd_harness_vtable); "
                                  "rebuild it with the SDK");
    } else {
        if (info.addon == nullptr)
            return attempt.refuse("is an addon without its hd_addon_vtable; rebuild it with the SDK");
        parts.addon = sdk::read_struct(info.addon);
    }
    if (info.create == nullptr)
        return attempt.refuse("has no create function in its hd_plugin_info; rebuild it with the SDK");
    return parts;
}

// Stage 6: the instance, made with the plugin's host services.
LoadOutcome create_instance(const hd_plugin_info& info, PluginInstance parts, Attempt& attempt,
                            HostServices& services, spdlog::logger& log) {
    parts.host_api = services.make_api(parts.id);
    sdk::StringSink error(LoadedPlugin::kMaxErrorBytes);
    void* instance = nullptr;
    hd_status status = HD_STATUS_FAILED;
    try {
        status = info.create(parts.host_api->api(), &instance, error.sink());
    } catch (...) {
        return attempt.fail("threw an exception out of create(); it must not (sdk.h rule 6)");
    }
    if (status != HD_STATUS_OK)
        return attempt.fail(std::string("failed to start: create() returned ") + sdk::status_name(status) +
                            ": " + (error.text().empty() ? std::string("it gave no reason") : error.text()));
    parts.instance = instance;

    LoadOutcome outcome;
    if (info.kind == HD_PLUGIN_KIND_HARNESS)
        outcome.harness = std::make_shared<LoadedHarness>(std::move(parts));
    else
        outcome.addon = std::make_shared<LoadedAddon>(std::move(parts));
    attempt.record().state = PluginState::loaded;
    outcome.record = std::move(attempt.record());
    log.info("loaded {} plugin '{}' {} from {}", outcome.record.kind, outcome.record.id,
             outcome.record.version, outcome.record.library);
    return outcome;
}

} // namespace

LoadOutcome load_plugin(const PluginCandidate& candidate, HostServices& services,
                        const ClaimedBy& claimed_by, const IsDisabled& is_disabled) {
    spdlog::logger& log = *services.logger();
    if (candidate.manifest.empty())
        return refuse_without_manifest(
            candidate, absolute_path(candidate.library).string() +
                           " has no plugin.toml beside it, so it was not loaded: a plugin is a "
                           "folder <plugins>/<name>/ holding plugin.toml and the .so it names "
                           "(docs/plugin-authoring.md)",
            log);

    auto manifest = read_manifest(candidate.manifest); // 1. the manifest, before any code
    if (!manifest) return refuse_manifest(candidate, manifest.error(), log);
    Attempt attempt(*manifest, candidate, log);
    if (is_disabled && is_disabled(manifest->id)) return attempt.disable();
    if (auto refused = check_manifest(*manifest, attempt, claimed_by)) return std::move(*refused);

    auto code = load_code(*manifest, attempt);
    if (auto* ended = std::get_if<LoadOutcome>(&code)) return std::move(*ended);
    const hd_plugin_info info = sdk::read_struct(std::get<const hd_plugin_info*>(code));
    auto parts = check_info(info, *manifest, attempt, log);
    if (auto* ended = std::get_if<LoadOutcome>(&parts)) return std::move(*ended);
    return create_instance(info, std::move(std::get<PluginInstance>(parts)), attempt, services, log);
}

} // namespace handler::plugins
