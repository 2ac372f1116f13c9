// The sessions' seccomp profile: what a call gets under it, worked out from the JSON the
// way libseccomp applies it (a rule whose arguments all match decides; none: the default),
// for a base shaped like containers-common's seccomp.json, on amd64 and s390x, in a
// container with no capabilities. tests/integration/podman/isolation.sh makes the same
// calls in a real container under the real profile.
#include "runtime/seccomp_profile.hpp"

#include "core/paths.hpp"
#include "support/fakes.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/ptrace.h>

#include <csignal>

#include <algorithm>
#include <optional>
#include <set>

namespace handler::runtime {
namespace {

namespace json = boost::json;
using handler::testing::contains;
using handler::testing::TempDir;

// The shape of podman's default: an ENOSYS default, a big allow list, capability-bound
// rules, architecture-bound ones, and an older single-"name" rule.
constexpr std::string_view kBase = R"({
  "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
  "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
  "syscalls": [
    {"names": ["userfaultfd", "vmsplice"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
    {"names": ["read", "write", "clone", "clone3", "unshare", "keyctl", "ptrace", "setns", "mount",
               "process_vm_readv", "pidfd_getfd", "io_uring_setup"], "action": "SCMP_ACT_ALLOW"},
    {"names": ["bpf", "perf_event_open"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["bpf", "perf_event_open"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
     "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
    {"name": "add_key", "action": "SCMP_ACT_ALLOW"},
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}}
  ]})";

struct Outcome {
    std::string action;
    std::int64_t errno_value = 0;
    friend bool operator==(const Outcome&, const Outcome&) = default;
};
std::ostream& operator<<(std::ostream& out, const Outcome& outcome) {
    return out << outcome.action << "(" << outcome.errno_value << ")";
}
const Outcome kAllowed{"SCMP_ACT_ALLOW", 0};
const Outcome kRefused{"SCMP_ACT_ERRNO", 1};
const Outcome kNoSuchCall{"SCMP_ACT_ERRNO", 38};

bool listed(const json::object& rule, std::string_view field, std::string_view key, std::string_view value) {
    const auto* condition = rule.if_contains(field);
    if (condition == nullptr || !condition->is_object()) return false;
    const auto* values = condition->as_object().if_contains(key);
    if (values == nullptr) return false;
    const auto& list = values->as_array();
    return std::find(list.begin(), list.end(), json::value(value)) != list.end();
}

bool has_condition(const json::object& rule, std::string_view field, std::string_view key) {
    const auto* condition = rule.if_contains(field);
    return condition != nullptr && condition->is_object() && condition->as_object().contains(key);
}

// What `name(args...)` gets on `arch` with no capabilities. Every matching rule must
// agree: rules that could both match with different actions would leave the outcome to
// libseccomp's ordering.
Outcome evaluate(const json::object& profile, std::string_view name, std::vector<std::uint64_t> args,
                 std::string_view arch = "amd64") {
    args.resize(6, 0);
    std::optional<Outcome> decided;
    for (const auto& entry : profile.at("syscalls").as_array()) {
        const auto& rule = entry.as_object();
        const auto& names = rule.at("names").as_array();
        if (std::find(names.begin(), names.end(), json::value(name)) == names.end()) continue;
        if (has_condition(rule, "includes", "caps")) continue; // no capabilities
        if (has_condition(rule, "includes", "arches") && !listed(rule, "includes", "arches", arch)) continue;
        if (listed(rule, "excludes", "arches", arch)) continue;
        bool matches = true;
        std::set<std::size_t> compared;
        if (const auto* conditions = rule.if_contains("args"); conditions != nullptr && conditions->is_array())
            for (const auto& item : conditions->as_array()) {
                const auto& condition = item.as_object();
                const auto index = condition.at("index").to_number<std::size_t>();
                // libseccomp does not AND two comparisons of one argument in a rule.
                if (!compared.insert(index).second) ADD_FAILURE() << name << ": a rule compares argument " << index << " twice";
                const std::uint64_t value = args.at(index);
                const auto expected = condition.at("value").to_number<std::uint64_t>();
                const std::string_view op = condition.at("op").as_string();
                if (op == "SCMP_CMP_EQ") matches &= value == expected;
                else if (op == "SCMP_CMP_NE") matches &= value != expected;
                else if (op == "SCMP_CMP_LT") matches &= value < expected;
                else if (op == "SCMP_CMP_GT") matches &= value > expected;
                else if (op == "SCMP_CMP_MASKED_EQ")
                    matches &= (value & expected) == condition.at("valueTwo").to_number<std::uint64_t>();
                else ADD_FAILURE() << "unexpected operator " << op;
            }
        if (!matches) continue;
        Outcome outcome{std::string(rule.at("action").as_string()),
                        rule.contains("errnoRet") ? rule.at("errnoRet").to_number<std::int64_t>() : 0};
        if (decided && !(*decided == outcome))
            ADD_FAILURE() << name << ": two rules decide differently: " << *decided << " and " << outcome;
        decided = outcome;
    }
    if (decided) return *decided;
    return {std::string(profile.at("defaultAction").as_string()),
            profile.contains("defaultErrnoRet") ? profile.at("defaultErrnoRet").to_number<std::int64_t>() : 0};
}

json::object derived(std::string_view base = kBase) {
    auto text = derive_session_profile(base, "/usr/share/containers/seccomp.json");
    EXPECT_TRUE(text) << text.error().message;
    return text ? json::parse(*text).as_object() : json::object{};
}

TEST(SeccompProfile, NoCallMakesANamespace) {
    const auto profile = derived();
    for (const std::uint64_t flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS,
                                     CLONE_NEWIPC, CLONE_NEWCGROUP}) {
        EXPECT_EQ(evaluate(profile, "clone", {flag | SIGCHLD}), kRefused) << std::hex << flag;
        EXPECT_EQ(evaluate(profile, "unshare", {flag}), kRefused) << std::hex << flag;
    }
    EXPECT_EQ(evaluate(profile, "unshare", {CLONE_NEWUSER | CLONE_NEWNET}), kRefused); // unshare -Urn
    EXPECT_EQ(evaluate(profile, "unshare", {0x80}), kRefused);                          // CLONE_NEWTIME
    EXPECT_EQ(evaluate(profile, "setns", {3, 0}), kRefused);
    // clone3's flags are in memory seccomp cannot read: ENOSYS, so that callers use clone.
    EXPECT_EQ(evaluate(profile, "clone3", {0x1000, 88}), kNoSuchCall);
}

TEST(SeccompProfile, ProcessesAndThreadsAreStillMade) {
    const auto profile = derived();
    EXPECT_EQ(evaluate(profile, "clone", {SIGCHLD}), kAllowed); // fork
    const std::uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                                 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    EXPECT_EQ(evaluate(profile, "clone", {thread}), kAllowed); // pthread_create
    EXPECT_EQ(evaluate(profile, "clone", {CLONE_VM | CLONE_VFORK | SIGCHLD}), kAllowed); // posix_spawn
    EXPECT_EQ(evaluate(profile, "unshare", {CLONE_FILES}), kAllowed);
    EXPECT_EQ(evaluate(profile, "read", {0}), kAllowed);
    EXPECT_EQ(evaluate(profile, "write", {1}), kAllowed);
    EXPECT_EQ(evaluate(profile, "arch_prctl", {}), kAllowed);
}

// s390 passes clone's flags second.
TEST(SeccompProfile, ClonesFlagsAreReadWhereEachArchitecturePutsThem) {
    const auto profile = derived();
    EXPECT_EQ(evaluate(profile, "clone", {0, CLONE_NEWUSER}, "s390x"), kRefused);
    EXPECT_EQ(evaluate(profile, "clone", {CLONE_NEWUSER, 0}, "s390x"), kAllowed);
    EXPECT_EQ(evaluate(profile, "clone", {0, CLONE_NEWUSER}, "amd64"), kAllowed);
}

TEST(SeccompProfile, KernelExtrasAreRefusedWithEperm) {
    const auto profile = derived();
    for (const std::string_view name : {"keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
                                        "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "fsopen",
                                        "process_vm_readv", "process_vm_writev", "pidfd_getfd"})
        EXPECT_EQ(evaluate(profile, name, {}), kRefused) << name;
}

// Seccomp cannot tell a child from any other process: attaching is refused, so the only
// tracees are children that asked (PTRACE_TRACEME), and what a tracer does to them works.
TEST(SeccompProfile, AProcessTracesOnlyChildrenThatAskedToBe) {
    const auto profile = derived();
    EXPECT_EQ(evaluate(profile, "ptrace", {PTRACE_ATTACH, 1}), kRefused);
    EXPECT_EQ(evaluate(profile, "ptrace", {PTRACE_SEIZE, 1}), kRefused);
    for (const std::uint64_t request : {PTRACE_TRACEME, PTRACE_PEEKDATA, PTRACE_CONT, PTRACE_GETREGS, PTRACE_SYSCALL,
                                        PTRACE_SETOPTIONS, PTRACE_DETACH})
        EXPECT_EQ(evaluate(profile, "ptrace", {request, 42}), kAllowed) << request;
    // Every request number but those two, architecture-specific ones included.
    for (std::uint64_t request = 0; request < 0x4400; ++request) {
        if (request == PTRACE_ATTACH || request == PTRACE_SEIZE) continue;
        ASSERT_EQ(evaluate(profile, "ptrace", {request}), kAllowed) << request;
    }
    EXPECT_EQ(evaluate(profile, "ptrace", {0x5000}), kAllowed); // s390's PTRACE_PEEKUSR_AREA
    EXPECT_EQ(evaluate(profile, "ptrace", {~std::uint64_t{0}}), kAllowed);
}

// Capabilities do not bring any of it back: the base's rules for these calls are gone.
TEST(SeccompProfile, TheBasesRulesForHandlersCallsAreGoneAndTheRestKept) {
    const auto profile = derived();
    const auto base = json::parse(kBase).as_object();
    for (const auto& entry : profile.at("syscalls").as_array()) {
        const auto& rule = entry.as_object();
        const bool handlers = rule.contains("comment") && contains(std::string(rule.at("comment").as_string()), "Handler");
        if (handlers) continue;
        for (const auto& name : rule.at("names").as_array())
            for (const std::string_view own : {"clone", "clone3", "unshare", "ptrace", "keyctl", "add_key", "bpf",
                                               "setns", "mount", "userfaultfd", "io_uring_setup"})
                EXPECT_NE(name.as_string(), own) << "a base rule still names " << own;
    }
    EXPECT_EQ(profile.at("defaultErrnoRet"), base.at("defaultErrnoRet"));
    EXPECT_EQ(profile.at("archMap"), base.at("archMap"));
    EXPECT_EQ(evaluate(profile, "vmsplice", {}), kRefused) << "the base's own refusals stay";
    EXPECT_EQ(evaluate(profile, "nonexistent_call", {}), kNoSuchCall);
}

TEST(SeccompProfile, ABaseThatIsNoProfileOrLetsEverythingThroughIsRefused) {
    const auto refused = [](std::string_view text) {
        auto result = derive_session_profile(text, "/etc/containers/seccomp.json");
        EXPECT_FALSE(result);
        return result ? std::string() : result.error().message;
    };
    EXPECT_TRUE(contains(refused("{not json"), "/etc/containers/seccomp.json is not JSON"));
    EXPECT_TRUE(contains(refused("[]"), "is not a JSON object"));
    EXPECT_TRUE(contains(refused(R"({"syscalls":[]})"), "has no defaultAction"));
    const std::string allowing = refused(R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]})");
    EXPECT_TRUE(contains(allowing, "lets every call it does not list through (defaultAction SCMP_ACT_ALLOW)"))
        << allowing;
    EXPECT_TRUE(contains(allowing, "containers-common")) << allowing;
    EXPECT_TRUE(contains(refused(R"({"defaultAction":"SCMP_ACT_LOG","syscalls":[]})"), "SCMP_ACT_LOG"));
    EXPECT_TRUE(contains(refused(R"({"defaultAction":"SCMP_ACT_ERRNO"})"), "has no syscalls list"));
    EXPECT_TRUE(contains(refused(R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":"read"}]})"),
                         "names is not a list"));
}

TEST(SeccompProfile, IsWrittenFromTheBaseFile) {
    TempDir dir;
    const auto base = dir.write("seccomp.json", std::string(kBase));
    const auto target = dir.path() / "data" / "handler" / "session-seccomp.json";
    ASSERT_TRUE(write_session_profile(base, target));
    auto text = read_file(target);
    ASSERT_TRUE(text);
    EXPECT_EQ(evaluate(json::parse(*text).as_object(), "unshare", {CLONE_NEWUSER}), kRefused);
    auto missing = write_session_profile(dir.path() / "absent.json", target);
    ASSERT_FALSE(missing);
    EXPECT_TRUE(contains(missing.error().message, "cannot read podman's seccomp profile")) << missing.error().message;
}

// The machine's own default, where there is one (the integration tests run under it).
TEST(SeccompProfile, BuildsOnThisMachinesPodmanDefault) {
    auto text = read_file("/usr/share/containers/seccomp.json");
    if (!text) GTEST_SKIP() << "no /usr/share/containers/seccomp.json here";
    const auto profile = derived(*text);
    EXPECT_EQ(evaluate(profile, "unshare", {CLONE_NEWUSER | CLONE_NEWNET}), kRefused);
    EXPECT_EQ(evaluate(profile, "clone", {SIGCHLD}), kAllowed);
    EXPECT_EQ(evaluate(profile, "clone3", {}), kNoSuchCall);
    EXPECT_EQ(evaluate(profile, "keyctl", {}), kRefused);
    EXPECT_EQ(evaluate(profile, "ptrace", {PTRACE_ATTACH}), kRefused);
    EXPECT_EQ(evaluate(profile, "openat", {}), kAllowed);
}

} // namespace
} // namespace handler::runtime
