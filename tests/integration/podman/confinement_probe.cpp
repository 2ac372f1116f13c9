// Run INSIDE a session container (static: the test image has no libc).
//   confinement_probe             (isolation.sh) each system call a session must not make,
//                                 and each one it needs, made for real, its outcome printed
//                                 as "CALL OUTCOME", OUTCOME being "ok" or the errno's name.
//                                 The shell test holds them to docs/security.md
//                                 ("Confinement"); nothing is asserted here.
//   confinement_probe fork-bomb   (limits.sh) every process forks for ever, and goes on
//                                 when a fork fails: the pressure on the process limit
//                                 never lets up (a shell's bomb dies out at the limit).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

std::string errno_name(int error) {
    switch (error) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    case EFAULT: return "EFAULT";
    case ESRCH: return "ESRCH";
    case EAGAIN: return "EAGAIN";
    default: return "errno" + std::to_string(error);
    }
}

// `call` returns -1 with errno set on failure, anything else on success. Each runs in a
// child of its own, so that one that works (a new namespace, on a machine without the
// profile) changes nothing for the next.
void attempt(const char* name, const std::function<long()>& call) {
    int report[2];
    if (::pipe(report) != 0) return (void)std::printf("%s no-pipe\n", name);
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(report[0]);
        errno = 0;
        const int error = call() == -1 ? errno : 0;
        if (::write(report[1], &error, sizeof error) != sizeof error) ::_exit(1);
        ::_exit(0);
    }
    ::close(report[1]);
    int error = 0;
    const bool reported = child > 0 && ::read(report[0], &error, sizeof error) == sizeof error;
    ::close(report[0]);
    if (child > 0) ::waitpid(child, nullptr, 0);
    std::printf("%s %s\n", name, !reported ? "no-answer" : error != 0 ? errno_name(error).c_str() : "ok");
    std::fflush(stdout);
}

// A child made by `flags` exits at once; the parent reaps it.
long clone_with(unsigned long flags) {
    const long child = ::syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
    if (child == 0) ::_exit(0);
    if (child > 0) ::waitpid(static_cast<pid_t>(child), nullptr, 0);
    return child;
}

// struct clone_args of <linux/sched.h> as of its first version (64 bytes), declared here
// because that header's flags clash with glibc's.
struct CloneArgs {
    unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

long clone3_with(unsigned long long flags) {
    CloneArgs args{};
    args.flags = flags;
    args.exit_signal = SIGCHLD;
    const long child = ::syscall(SYS_clone3, &args, sizeof args);
    if (child == 0) ::_exit(0);
    if (child > 0) ::waitpid(static_cast<pid_t>(child), nullptr, 0);
    return child;
}

// Forks a child that asks to be traced and stops; traces it, lets it go, reaps it.
long trace_own_child() {
    const pid_t child = ::fork();
    if (child == 0) {
        if (::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == -1) ::_exit(2);
        ::raise(SIGSTOP);
        ::_exit(0);
    }
    if (child < 0) return -1;
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFSTOPPED(status)) return errno = ECHILD, -1;
    errno = 0;
    ::ptrace(PTRACE_PEEKUSER, child, nullptr, nullptr);
    const int peek_error = errno;
    ::ptrace(PTRACE_CONT, child, nullptr, nullptr);
    ::waitpid(child, &status, 0);
    if (peek_error != 0) return errno = peek_error, -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : (errno = ECHILD, -1);
}

// A process of the probe's own (not its parent, not PID 1) for the calls that act on
// another process: were one to work, it would stop or read only this one.
pid_t target = 0;

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "fork-bomb") == 0)
        for (;;)
            if (::fork() < 0) ::sched_yield();
    target = ::fork();
    if (target == 0) {
        ::pause();
        ::_exit(0);
    }

    // What a session must not do (docs/security.md, "Confinement").
    attempt("unshare-user", [] { return ::unshare(CLONE_NEWUSER); });
    attempt("unshare-user-net", [] { return ::unshare(CLONE_NEWUSER | CLONE_NEWNET); });
    attempt("unshare-mount", [] { return ::unshare(CLONE_NEWNS); });
    attempt("unshare-pid", [] { return ::unshare(CLONE_NEWPID); });
    attempt("unshare-net", [] { return ::unshare(CLONE_NEWNET); });
    attempt("unshare-uts", [] { return ::unshare(CLONE_NEWUTS); });
    attempt("unshare-ipc", [] { return ::unshare(CLONE_NEWIPC); });
    attempt("unshare-cgroup", [] { return ::unshare(CLONE_NEWCGROUP); });
    attempt("unshare-time", [] { return ::unshare(CLONE_NEWTIME); });
    attempt("clone-user", [] { return clone_with(CLONE_NEWUSER); });
    attempt("clone-user-pid", [] { return clone_with(CLONE_NEWUSER | CLONE_NEWPID); });
    attempt("clone3-user", [] { return clone3_with(CLONE_NEWUSER); });
    attempt("setns", [] {
        const int fd = ::open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -1L : ::setns(fd, 0);
    });
    attempt("keyctl", [] { return ::syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 1); });
    attempt("add_key", [] { return ::syscall(SYS_add_key, "user", "handler-probe", "x", 1, -3); });
    attempt("request_key", [] { return ::syscall(SYS_request_key, "user", "handler-probe", nullptr, 0); });
    attempt("bpf", [] {
        char attr[128] = {};
        return ::syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof attr);
    });
    attempt("userfaultfd", [] { return ::syscall(SYS_userfaultfd, O_CLOEXEC); });
    attempt("perf_event_open", [] {
        char attr[128] = {};
        return ::syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
    });
    attempt("io_uring_setup", [] {
        char params[120] = {};
        return ::syscall(SYS_io_uring_setup, 4, params);
    });
    attempt("mount", [] { return static_cast<long>(::mount("none", "/tmp", "tmpfs", 0, nullptr)); });
    attempt("ptrace-attach", [] { return ::ptrace(PTRACE_ATTACH, target, nullptr, nullptr); });
    attempt("ptrace-seize", [] { return ::ptrace(PTRACE_SEIZE, target, nullptr, nullptr); });
    attempt("process_vm_readv", [] {
        char buffer[8];
        iovec local{buffer, sizeof buffer};
        iovec remote{reinterpret_cast<void*>(0x10000), sizeof buffer};
        return static_cast<long>(::process_vm_readv(target, &local, 1, &remote, 1, 0));
    });
    attempt("pidfd_getfd", [] {
        const long pidfd = ::syscall(SYS_pidfd_open, target, 0);
        return pidfd < 0 ? -1L : ::syscall(SYS_pidfd_getfd, pidfd, 0, 0);
    });

    // What every program needs.
    attempt("fork", [] { return clone_with(0); });
    attempt("thread", [] {
        bool ran = false;
        std::thread([&ran] { ran = true; }).join();
        return ran ? 0L : -1L;
    });
    attempt("spawn", [] {
        pid_t child = 0;
        char shell[] = "/bin/sh", dash_c[] = "-c", script[] = "exit 0";
        char* spawned[] = {shell, dash_c, script, nullptr};
        if (const int error = ::posix_spawn(&child, shell, nullptr, nullptr, spawned, environ); error != 0)
            return errno = error, -1L;
        int status = 0;
        ::waitpid(child, &status, 0);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0L : (errno = ECHILD, -1L);
    });
    attempt("ptrace-own-child", [] { return trace_own_child(); });
    ::kill(target, SIGKILL);
    ::waitpid(target, nullptr, 0);
    return 0;
}
