// Handler's seccomp profile for session containers (docs/security.md, "Confinement"):
// the profile podman itself would apply on this machine (`podman info` names it:
// containers-common's seccomp.json) with Handler's refusals on top. Derived when handlerd
// first starts a container rather than committed, so that sessions keep whatever the
// distribution's profile allows and fixes (new system calls of a newer glibc or kernel)
// while Handler's own part stays these few rules, reviewed and tested here.
//
// Podman's default lets a container create user namespaces (`unshare -Urn` gives root
// inside), which reopens the kernel surface behind most container escapes; capabilities
// do not help, since a new user namespace brings its own. So the profile refuses, with
// EPERM and whatever capabilities a container has:
//   - clone and unshare with any namespace flag, and setns;
//   - clone3 altogether, with ENOSYS: its flags sit in a struct that seccomp cannot
//     read, and on ENOSYS glibc and the other runtimes fall back to clone, which is
//     filtered on its flags;
//   - the kernel extras: keyctl, add_key, request_key, bpf, userfaultfd,
//     perf_event_open, io_uring_setup/enter/register, and the mount calls;
//   - ptrace's PTRACE_ATTACH and PTRACE_SEIZE, so that a process traces only children
//     that asked to be traced (PTRACE_TRACEME, as `strace CMD` and `gdb CMD` do);
//     seccomp cannot see whose child a process is, so this is as close to "own
//     children only" as a filter gets. process_vm_readv/writev and pidfd_getfd, which
//     reach another process's memory or files without tracing it, are refused too.
#pragma once

#include "core/result.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace handler::runtime {

// Refused with EPERM whatever the arguments and the container's capabilities.
inline constexpr std::array<std::string_view, 23> kRefusedSyscalls = {
    "keyctl", "add_key", "request_key",
    "bpf", "userfaultfd", "perf_event_open",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "setns",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "mount_setattr",
    "fsopen", "fsconfig", "fsmount", "fspick",
    "process_vm_readv", "process_vm_writev", "pidfd_getfd",
};

// The namespace flags of <sched.h> that clone may not carry: NEWNS, NEWCGROUP, NEWUTS,
// NEWIPC, NEWUSER, NEWPID, NEWNET. (CLONE_NEWTIME shares its bit with clone's exit
// signal, so only unshare and clone3 can take it.)
inline constexpr std::uint64_t kCloneNamespaceFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
                                                      0x10000000 | 0x20000000 | 0x40000000;
inline constexpr std::uint64_t kUnshareNamespaceFlags = kCloneNamespaceFlags | 0x00000080; // and NEWTIME
inline constexpr std::uint64_t kPtraceAttach = 16;
inline constexpr std::uint64_t kPtraceSeize = 0x4206;
inline constexpr int kErrnoPermission = 1; // EPERM
inline constexpr int kErrnoNoSystemCall = 38; // ENOSYS

// The profile for sessions, as JSON text, from the text of the base profile. `base_name`
// (its file) is only for messages. Every rule of the base that names one of the calls
// above loses that name, then Handler's rules follow. Refused: a base that is not a
// profile, or whose default action lets an unlisted call through (nothing would then
// refuse what the rules here leave out).
Result<std::string> derive_session_profile(std::string_view base_json, std::string_view base_name);

// Reads `base`, derives the profile and writes it to `target` (atomically, 0644; its
// folder is made if missing).
Result<void> write_session_profile(const std::filesystem::path& base, const std::filesystem::path& target);

} // namespace handler::runtime
