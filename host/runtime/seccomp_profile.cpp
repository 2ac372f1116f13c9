#include "runtime/seccomp_profile.hpp"

#include "core/paths.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace handler::runtime {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The calls whose rules are Handler's alone: the refused ones and the filtered ones.
bool handlers_call(std::string_view name) {
    return std::find(kRefusedSyscalls.begin(), kRefusedSyscalls.end(), name) != kRefusedSyscalls.end() ||
           name == "clone" || name == "clone3" || name == "unshare" || name == "ptrace";
}

json::object argument(unsigned index, std::uint64_t value, std::uint64_t value_two, std::string_view op) {
    return {{"index", index}, {"value", value}, {"valueTwo", value_two}, {"op", op}};
}

json::object rule(std::string_view name, std::string_view action, json::array args, std::string_view comment) {
    return {{"names", json::array{name}}, {"action", action}, {"args", std::move(args)}, {"comment", comment}};
}

json::object refusal(std::string_view name, int errno_value, json::array args, std::string_view comment) {
    json::object refused = rule(name, "SCMP_ACT_ERRNO", std::move(args), comment);
    refused["errnoRet"] = errno_value;
    return refused;
}

// `name` with flags in argument `index`: refused (EPERM) when any bit of `mask` is set,
// one rule per bit since seccomp compares but cannot test "any of"; allowed when none is.
void filter_flags(json::array& rules, std::string_view name, unsigned index, std::uint64_t mask,
                  std::string_view comment, const json::object& scope) {
    const auto scoped = [&scope](json::object made) {
        for (const auto& [key, value] : scope) made[key] = value;
        return made;
    };
    for (std::uint64_t rest = mask; rest != 0; rest &= rest - 1) {
        const std::uint64_t bit = rest & (~rest + 1);
        rules.push_back(scoped(refusal(name, kErrnoPermission,
                                       json::array{argument(index, bit, bit, "SCMP_CMP_MASKED_EQ")}, comment)));
    }
    rules.push_back(scoped(rule(name, "SCMP_ACT_ALLOW", json::array{argument(index, mask, 0, "SCMP_CMP_MASKED_EQ")},
                                comment)));
}

// `name` allowed when argument `index` is from `low` to `high`: as blocks of 2^k values
// that start at a multiple of 2^k, each one masked comparison.
void allow_range(json::array& rules, std::string_view name, unsigned index, std::uint64_t low, std::uint64_t high,
                 std::string_view comment) {
    while (low <= high) {
        std::uint64_t size = low == 0 ? std::uint64_t{1} << 63 : low & (~low + 1); // low's alignment
        while (size - 1 > high - low) size >>= 1;
        rules.push_back(rule(name, "SCMP_ACT_ALLOW", json::array{argument(index, ~(size - 1), low, "SCMP_CMP_MASKED_EQ")},
                             comment));
        if (size - 1 == high - low) break;
        low += size;
    }
}

// Handler's rules, after the base's.
void add_handler_rules(json::array& rules) {
    constexpr std::string_view kNamespaces = "Handler: no new namespaces in a session (docs/security.md)";
    // s390 passes clone's flags second; every other architecture first.
    filter_flags(rules, "clone", 0, kCloneNamespaceFlags, kNamespaces,
                 json::object{{"excludes", json::object{{"arches", json::array{"s390", "s390x"}}}}});
    filter_flags(rules, "clone", 1, kCloneNamespaceFlags, kNamespaces,
                 json::object{{"includes", json::object{{"arches", json::array{"s390", "s390x"}}}}});
    filter_flags(rules, "unshare", 0, kUnshareNamespaceFlags, kNamespaces, json::object{});
    rules.push_back(refusal("clone3", kErrnoNoSystemCall, json::array{},
                            "Handler: its flags cannot be read by seccomp; ENOSYS makes callers fall back to clone"));
    json::array refused;
    for (const std::string_view name : kRefusedSyscalls) refused.emplace_back(name);
    json::object kernel_extras{{"names", std::move(refused)},
                               {"action", "SCMP_ACT_ERRNO"},
                               {"errnoRet", kErrnoPermission},
                               {"args", json::array{}},
                               {"comment", "Handler: kernel interfaces a session has no use for"}};
    rules.push_back(std::move(kernel_extras));
    // Every request but the two: below, between and above them. libseccomp does not AND
    // two comparisons of one argument in a rule (seen: "!= 16 and != 0x4206" let 16
    // through), so each rule compares once, the range between as aligned blocks.
    constexpr std::string_view kTrace = "Handler: a process traces only children that ask to be (PTRACE_TRACEME)";
    for (const std::uint64_t request : {kPtraceAttach, kPtraceSeize})
        rules.push_back(refusal("ptrace", kErrnoPermission, json::array{argument(0, request, 0, "SCMP_CMP_EQ")}, kTrace));
    rules.push_back(rule("ptrace", "SCMP_ACT_ALLOW", json::array{argument(0, kPtraceAttach, 0, "SCMP_CMP_LT")}, kTrace));
    allow_range(rules, "ptrace", 0, kPtraceAttach + 1, kPtraceSeize - 1, kTrace);
    rules.push_back(rule("ptrace", "SCMP_ACT_ALLOW", json::array{argument(0, kPtraceSeize, 0, "SCMP_CMP_GT")}, kTrace));
}

Error not_a_profile(std::string_view base_name, const std::string& what) {
    return make_error(ErrorCode::invalid_argument,
                      "the seccomp profile " + std::string(base_name) + " " + what +
                          "; Handler builds its sessions' profile on podman's default (package "
                          "containers-common or golang-github-containers-common): reinstall it, or point "
                          "containers.conf's seccomp_profile at a valid profile");
}

} // namespace

Result<std::string> derive_session_profile(std::string_view base_json, std::string_view base_name) {
    boost::system::error_code error;
    json::value parsed = json::parse(base_json, error);
    if (error) return not_a_profile(base_name, "is not JSON (" + error.message() + ")");
    json::object* profile = parsed.if_object();
    if (profile == nullptr) return not_a_profile(base_name, "is not a JSON object");
    const json::value* default_action = profile->if_contains("defaultAction");
    if (default_action == nullptr || !default_action->is_string())
        return not_a_profile(base_name, "has no defaultAction");
    const std::string_view action = default_action->get_string();
    // Only a default that stops a call keeps what no rule names out.
    if (action != "SCMP_ACT_ERRNO" && !action.starts_with("SCMP_ACT_KILL") && action != "SCMP_ACT_TRAP")
        return not_a_profile(base_name, "lets every call it does not list through (defaultAction " +
                                            std::string(action) + ")");
    json::value* syscalls = profile->if_contains("syscalls");
    if (syscalls == nullptr || !syscalls->is_array()) return not_a_profile(base_name, "has no syscalls list");

    json::array rules;
    for (json::value& entry : syscalls->get_array()) {
        json::object* base_rule = entry.if_object();
        if (base_rule == nullptr) return not_a_profile(base_name, "has a syscalls entry that is not an object");
        // Podman reads "name" (one call, an older form) as well as "names".
        json::array names;
        if (const json::value* one = base_rule->if_contains("name"); one != nullptr && one->is_string()) {
            names.push_back(*one);
            base_rule->erase("name");
        }
        if (const json::value* many = base_rule->if_contains("names")) {
            if (!many->is_array()) return not_a_profile(base_name, "has a rule whose names is not a list");
            for (const json::value& name : many->get_array()) names.push_back(name);
        }
        json::array kept;
        for (const json::value& name : names) {
            if (!name.is_string()) return not_a_profile(base_name, "has a rule naming a call by something not a string");
            if (!handlers_call(name.get_string())) kept.push_back(name);
        }
        if (kept.empty()) continue;
        (*base_rule)["names"] = std::move(kept);
        rules.push_back(std::move(entry));
    }
    add_handler_rules(rules);
    (*profile)["syscalls"] = std::move(rules);
    return json::serialize(parsed) + "\n";
}

Result<void> write_session_profile(const fs::path& base, const fs::path& target) {
    auto text = read_file(base);
    if (!text)
        return make_error(ErrorCode::unavailable,
                          "cannot read podman's seccomp profile: " + text.error().message +
                              "; Handler confines sessions with a profile built on it (docs/security.md)");
    auto derived = derive_session_profile(*text, base.string());
    if (!derived) return derived.take_error();
    std::error_code error;
    fs::create_directories(target.parent_path(), error);
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot make " + target.parent_path().string() + " for the sessions' seccomp profile: " +
                              error.message());
    return write_file_atomic(target, *derived, 0644);
}

} // namespace handler::runtime
