#include "plugins/registry.hpp"

#include "plugins/host_services.hpp"

#include <algorithm>

namespace handler::plugins {

PluginRegistry::PluginRegistry(HostServices& services) : services_(services) {}

// Instances are destroyed in reverse load order; their code stays loaded (loader.hpp).
PluginRegistry::~PluginRegistry() {
    while (!entries_.empty()) entries_.pop_back();
}

void PluginRegistry::load(const std::vector<PluginDir>& search_path,
                          const std::vector<std::string>& disabled) {
    const std::lock_guard lock(mutex_);
    const ClaimedBy claimed_by = [this](std::string_view id) -> const PluginRecord* {
        const Entry* entry = find_loaded_or_failed(id);
        return entry != nullptr ? &entry->record : nullptr;
    };
    const IsDisabled is_disabled = [&disabled](std::string_view id) {
        return std::find(disabled.begin(), disabled.end(), id) != disabled.end();
    };
    for (const PluginDir& dir : search_path) {
        for (const PluginCandidate& candidate : scan_plugin_dir(dir)) {
            LoadOutcome outcome = load_plugin(candidate, services_, claimed_by, is_disabled);
            if (outcome.harness) describe(*outcome.harness, outcome.record);
            entries_.push_back(
                Entry{std::move(outcome.record), std::move(outcome.harness), std::move(outcome.addon)});
        }
    }
}

// Parsed once, here: a plugin's description does not change while it is loaded.
void PluginRegistry::describe(LoadedHarness& harness, PluginRecord& record) {
    auto described = harness.describe();
    auto parsed = described ? parse_harness_description(record.id, *described)
                            : Result<HarnessDescription>(described.take_error());
    if (parsed) record.harness = std::move(*parsed);
    else record.description_error = parsed.error().message;
}

// A failed plugin keeps its id: its code is loaded, and a second copy of it (or an
// impostor) should not quietly take its place.
const PluginRegistry::Entry* PluginRegistry::find_loaded_or_failed(std::string_view id) const {
    for (const Entry& entry : entries_)
        if (entry.record.id == id && !entry.record.manifest.empty() &&
            entry.record.state != PluginState::refused)
            return &entry;
    return nullptr;
}

std::vector<PluginRecord> PluginRegistry::list() const {
    const std::lock_guard lock(mutex_);
    std::vector<PluginRecord> records;
    records.reserve(entries_.size());
    for (const Entry& entry : entries_) records.push_back(entry.record);
    return records;
}

std::optional<PluginRecord> PluginRegistry::record(std::string_view id) const {
    const std::lock_guard lock(mutex_);
    if (const Entry* entry = find_loaded_or_failed(id)) return entry->record;
    for (const Entry& entry : entries_)
        if (entry.record.id == id) return entry.record;
    return std::nullopt;
}

Result<const PluginRegistry::Entry*> PluginRegistry::find_usable(std::string_view id,
                                                                 std::string_view kind) const {
    const Entry* entry = find_loaded_or_failed(id);
    if (entry == nullptr)
        for (const Entry& candidate : entries_)
            if (candidate.record.id == id) entry = &candidate;
    if (entry == nullptr)
        return make_error(ErrorCode::not_found, "no plugin '" + std::string(id) +
                                                   "' is installed; `handler plugins list` shows "
                                                   "the installed ones");
    if (entry->record.state != PluginState::loaded)
        return make_error(ErrorCode::unavailable, entry->record.message);
    if (entry->record.kind != kind)
        return make_error(ErrorCode::not_found, "plugin '" + std::string(id) + "' is " +
                                                    (entry->record.kind == "addon" ? "an addon" : "a harness") +
                                                    ", not " + (kind == "addon" ? "an addon" : "a harness"));
    return entry;
}

Result<std::shared_ptr<LoadedHarness>> PluginRegistry::harness(std::string_view id) const {
    const std::lock_guard lock(mutex_);
    auto entry = find_usable(id, "harness");
    if (!entry) return entry.take_error();
    return (*entry)->harness;
}

Result<std::shared_ptr<LoadedAddon>> PluginRegistry::addon(std::string_view id) const {
    const std::lock_guard lock(mutex_);
    auto entry = find_usable(id, "addon");
    if (!entry) return entry.take_error();
    return (*entry)->addon;
}

std::vector<std::shared_ptr<LoadedHarness>> PluginRegistry::harnesses() const {
    const std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<LoadedHarness>> out;
    for (const Entry& entry : entries_)
        if (entry.harness) out.push_back(entry.harness);
    return out;
}

std::vector<std::shared_ptr<LoadedAddon>> PluginRegistry::addons() const {
    const std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<LoadedAddon>> out;
    for (const Entry& entry : entries_)
        if (entry.addon) out.push_back(entry.addon);
    return out;
}

} // namespace handler::plugins
