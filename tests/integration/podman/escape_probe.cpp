// The escape test's system calls (escape.sh): what busybox cannot ask the kernel for.
// Static, so it runs in any session image. `escape_probe NAME` makes one attempt and
// prints what happened; it exits 0 when the kernel refused (the attempt held), 1 when the
// call worked (it did not), 2 on a usage error.
//
// Each is a door to kernel surface that a session has no use for and that most container
// escapes of recent years went through: a new user namespace (then nf_tables, overlayfs,
// cgroup v1 as its root), keyrings, BPF, userfaultfd (which holds a kernel thread still
// while another races it), perf events, io_uring, and ptrace of a process that is not
// the caller's own child.
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

// A call that made a child: the child leaves at once; the call worked.
long reap(long pid) {
    if (pid == 0) _exit(0);
    if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    return pid;
}

long attempt(std::string_view name) {
    if (name == "unshare-user") return ::unshare(CLONE_NEWUSER);
    if (name == "clone-user") return reap(::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0));
    if (name == "clone3-user") {
        clone_args args{};
        args.flags = CLONE_NEWUSER;
        args.exit_signal = SIGCHLD;
        return reap(::syscall(SYS_clone3, &args, sizeof args));
    }
    if (name == "keyctl") return ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
    if (name == "add_key")
        return ::syscall(SYS_add_key, "user", "handler-escape", "x", 1, KEY_SPEC_PROCESS_KEYRING);
    if (name == "bpf") {
        bpf_attr attr{};
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 4;
        attr.max_entries = 1;
        return ::syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
    }
    // User-mode-only faults need no privilege on kernels since 5.11: the one left open.
    if (name == "userfaultfd") return ::syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (name == "perf_event_open") {
        perf_event_attr attr{};
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof attr;
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        return ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    }
    if (name == "io_uring_setup") {
        io_uring_params params{};
        return ::syscall(SYS_io_uring_setup, 4, &params);
    }
    // The shell that started this probe: a process of the same user, not its child.
    if (name == "ptrace-parent") {
        const pid_t parent = ::getppid();
        const long result = ::ptrace(PTRACE_ATTACH, parent, nullptr, nullptr);
        if (result == 0) {
            // The attach stops the shell: wait for the stop, then let it go on, or the
            // test would stop with it.
            ::waitpid(parent, nullptr, __WALL);
            ::ptrace(PTRACE_DETACH, parent, nullptr, nullptr);
            ::kill(parent, SIGCONT);
        }
        return result;
    }
    std::fprintf(stderr, "escape_probe: no attempt named '%.*s'\n", static_cast<int>(name.size()), name.data());
    _exit(2);
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: escape_probe NAME\n");
        return 2;
    }
    errno = 0;
    const long result = attempt(argv[1]);
    if (result < 0) {
        std::printf("refused: %s\n", std::strerror(errno));
        return 0;
    }
    std::printf("allowed (returned %ld)\n", result);
    return 1;
}
