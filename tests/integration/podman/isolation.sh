#!/usr/bin/env bash
# Isolation of a session container, on REAL rootless podman through the real
# PodmanRuntime (runtime_probe): only loopback; the user's home, a second project,
# handler's data folder and ~/.ssh are absent inside; a file created in the project is
# owned by the user on the host; keep-id; no capabilities; no new privileges; no new
# namespaces and no kernel extras (Handler's seccomp profile, made for real by
# confinement_probe), while processes, threads and tracing one's own child still work;
# the sizes and limits; an init as PID 1; the session label, list(), stop and remove.
#
# Runs as a non-root user whose rootless podman works (scripts/test.sh sets one up).
# It FAILS, never skips, when podman cannot run: CI requires it.
set -euo pipefail

: "${HANDLER_RUNTIME_PROBE:?set by ctest to the runtime_probe binary}"
: "${HANDLER_MAKE_TEST_IMAGE:?set by ctest to make_test_image.sh}"
# Relative in the relocatable podman-tests folder (scripts/test.sh); absolute from here on.
HANDLER_RUNTIME_PROBE=$(realpath "$HANDLER_RUNTIME_PROBE")
HANDLER_MAKE_TEST_IMAGE=$(realpath "$HANDLER_MAKE_TEST_IMAGE")
test_name=podman-isolation
image=localhost/handler-test-busybox:latest
probe() { "$HANDLER_RUNTIME_PROBE" "$@"; }
fail() { echo "FAIL ($test_name): $*" >&2; exit 1; }

diagnose() {
  echo "--- diagnostics: user $(id -un) uid $(id -u), HOME=$HOME, XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-unset}" >&2
  grep "^$(id -un):" /etc/subuid /etc/subgid >&2 || echo "no subordinate ids for $(id -un)" >&2
  podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}} cgroups {{.Host.CgroupsVersion}}' >&2 || true
}

[ "$(id -u)" -ne 0 ] || fail "run as a non-root user (podman as root fails on these machines and agents must not run as root); scripts/test.sh runs \`ctest -L podman\` as handler-ci"
command -v podman >/dev/null || fail "podman is not installed (scripts/install-deps.sh installs it)"
if ! podman info >/dev/null 2>&1; then
  podman info >&2 || true
  diagnose
  fail "rootless podman does not work for $(id -un); see docs/containers.md"
fi
"$HANDLER_MAKE_TEST_IMAGE" "$image" || { diagnose; fail "could not build the test image"; }

uid=$(id -u)
session="it-$$-$RANDOM"
data_dir=${XDG_DATA_HOME:-$HOME/.local/share}/handler
work=$(mktemp -d "$HOME/handler-it-podman-XXXXXX")
project="$work/projects/alpha"
other="$work/projects/beta"
mkdir -p "$project" "$other"
echo secret > "$other/other-project-file"
# The secrets that must stay outside: made here if this account has none, so that
# "absent inside" is tested against something that exists on the host.
created=()
for marker in "$HOME/.ssh/handler-it-marker" "$data_dir/handler-it-marker"; do
  if [ ! -e "$marker" ]; then
    mkdir -p "$(dirname "$marker")" && echo marker > "$marker" && created+=("$marker")
  fi
done

cleanup() {
  local code=$?
  podman rm --force --time 0 "handler-$session" >/dev/null 2>&1 || true
  rm -rf "$work"
  for marker in "${created[@]}"; do rm -f "$marker"; done
  [ $code -eq 0 ] || diagnose
  exit $code
}
trap cleanup EXIT

# The probe that starts the container exits at once; every later step is a new process,
# so the container outliving its starter (as it must outlive handlerd) is tested too.
id=$(probe run "$session" "$image" "$project" -- sleep 600) || fail "could not start the container"
echo "started $id for session $session"
inside() { probe exec "$id" -- "$@"; }

# Only loopback: /proc/net/dev lists the interfaces after two header lines.
interfaces=$(inside cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')
[ "$interfaces" = "lo " ] || fail "interfaces inside: [$interfaces], expected only lo"

# Nothing of the home but the path down to the project.
for absent in "$HOME/.ssh" "$data_dir" "$HOME/.config" "$HOME/.local" "$other" \
              "${XDG_RUNTIME_DIR:-/run/user/$uid}" "/run/user/$uid/podman/podman.sock"; do
  # Asked as an answer, not an exit status: a failing `podman exec` must not read as "absent".
  seen=$(inside sh -c 'if test -e "$1"; then echo present; else echo absent; fi' sh "$absent") ||
    fail "could not look for $absent inside"
  [ "$seen" = absent ] || fail "$absent is visible inside the container"
done
[ "$(inside sh -c 'test -d "$1" && echo present' sh "$project")" = present ] ||
  fail "the project is not visible inside (so the checks above prove nothing)"
listing=$(inside ls -A "$HOME" | tr '\n' ' ')
[ "$listing" = "$(basename "$work") " ] || fail "home inside shows [$listing], expected only $(basename "$work")"
listing=$(inside ls -A "$work/projects" | tr '\n' ' ')
[ "$listing" = "alpha " ] || fail "projects folder inside shows [$listing], expected only alpha"

# The project is read-write at the same path; what the agent makes belongs to the user.
[ "$(inside pwd)" = "$project" ] || fail "working folder inside is $(inside pwd), expected $project"
inside touch "$project/made-inside" || fail "could not create a file in the project"
owner=$(stat -c %u "$project/made-inside")
[ "$owner" = "$uid" ] || fail "file made inside is owned by uid $owner on the host, expected $uid"
[ "$(inside id -u)" = "$uid" ] || fail "id -u inside is $(inside id -u), expected $uid (keep-id)"

# HOME inside is a private, writable tmpfs, not the user's home.
[ "$(inside sh -c 'echo $HOME')" = /home/agent ] || fail "HOME inside is not /home/agent"
inside touch /home/agent/.probe || fail "HOME inside is not writable"
inside touch /tmp/probe || fail "/tmp inside is not writable"

status=$(inside cat /proc/self/status)
cap_eff=$(printf '%s\n' "$status" | awk '/^CapEff:/ {print $2}')
[ "$cap_eff" = 0000000000000000 ] || fail "CapEff inside is $cap_eff, expected none"
no_new_privs=$(printf '%s\n' "$status" | awk '/^NoNewPrivs:/ {print $2}')
[ "$no_new_privs" = 1 ] || fail "NoNewPrivs inside is $no_new_privs, expected 1"

# No new namespaces, no kernel extras (docs/security.md, "Confinement"): each call made
# for real inside, by a static program copied into the project.
confinement_probe="$(dirname "$HANDLER_RUNTIME_PROBE")/confinement_probe"
cp "$confinement_probe" "$project/.confinement_probe"
outcomes=$(inside "$project/.confinement_probe") || fail "the confinement probe did not run: $outcomes"
rm -f "$project/.confinement_probe"
expected="unshare-user EPERM
unshare-user-net EPERM
unshare-mount EPERM
unshare-pid EPERM
unshare-net EPERM
unshare-uts EPERM
unshare-ipc EPERM
unshare-cgroup EPERM
unshare-time EPERM
clone-user EPERM
clone-user-pid EPERM
clone3-user ENOSYS
setns EPERM
keyctl EPERM
add_key EPERM
request_key EPERM
bpf EPERM
userfaultfd EPERM
perf_event_open EPERM
io_uring_setup EPERM
mount EPERM
ptrace-attach EPERM
ptrace-seize EPERM
process_vm_readv EPERM
pidfd_getfd EPERM
fork ok
thread ok
spawn ok
ptrace-own-child ok"
[ "$outcomes" = "$expected" ] || fail "system calls inside did not end as the profile says: $(diff <(echo "$expected") <(echo "$outcomes") | grep '^[<>]' | tr '\n' ';')"
echo "confinement: $(echo "$outcomes" | grep -vc ' ok$') calls refused, $(echo "$outcomes" | grep -c ' ok$') needed ones work"
# The same through the tools an agent would reach for.
for attempt in "unshare -Urn true" "unshare -m true" "unshare -U true" "unshare -p -f true"; do
  if inside $attempt 2>/dev/null; then fail "'$attempt' worked inside a session"; fi
done
[ "$(inside sh -c 'echo $(( 6 * 7 ))' )" = 42 ] || fail "a shell no longer runs inside"

# Sizes and limits (runtime/confinement.hpp defaults): every tmpfs has a size, processes
# and data are held by rlimits, and the OOM killer takes the session's processes first.
tmp_kib=$(inside df -k /tmp | awk 'NR == 2 {print $2}')
[ "$tmp_kib" = $((1024 * 1024)) ] || fail "/tmp inside is $tmp_kib KiB, expected 1 GiB"
home_kib=$(inside df -k /home/agent | awk 'NR == 2 {print $2}')
[ "$home_kib" = $((2048 * 1024)) ] || fail "HOME inside is $home_kib KiB, expected 2 GiB"
limits=$(inside cat /proc/self/limits)
printf '%s\n' "$limits" | grep -Eq '^Max processes +4096 +4096 ' || fail "RLIMIT_NPROC inside: $(printf '%s\n' "$limits" | grep processes)"
[ "$(inside cat /proc/self/oom_score_adj)" = 1000 ] || fail "oom_score_adj inside is not 1000"
case " $(podman info --format '{{.Host.CgroupControllers}}' | tr -d '[]') " in
  *" memory "*) ;;
  *) printf '%s\n' "$limits" | grep -Eq '^Max data size +8589934592 +8589934592 ' ||
       fail "no memory controller here, and no per-process data limit inside: $(printf '%s\n' "$limits" | grep data)";;
esac

init=$(inside cat /proc/1/cmdline | tr '\0' ' ' | cut -d' ' -f1)
case "$init" in
  */podman-init|*catatonit*|*tini*) ;;
  *) fail "PID 1 inside is [$init], expected podman's init (catatonit)" ;;
esac
# An orphan is re-parented to PID 1, which must reap it: no zombie may remain.
inside sh -c '(sleep 0.2 &) ; true'
sleep 1
zombies=$(inside ps -o stat,comm | awk '$1 ~ /^Z/' | wc -l)
[ "$zombies" -eq 0 ] || fail "$zombies zombie process(es) inside: PID 1 does not reap"

# Labels, and list() finds it as re-adoption will.
details=$(probe inspect "$id")
printf '%s\n' "$details" | grep -qx "state=running" || fail "not running: $details"
printf '%s\n' "$details" | grep -qx "session=$session" || fail "no session label: $details"
probe list "io.handler.session=$session" | grep -q "^$id $session running$" ||
  fail "list() does not find the session's container"
probe list io.handler.managed=1 | grep -q "^$id " || fail "list() of managed containers misses it"

probe stop "$id" 2000 || fail "stop failed"
details=$(probe inspect "$id")
printf '%s\n' "$details" | grep -qx "state=exited" || fail "not exited after stop: $details"
probe remove "$id" || fail "remove failed"
if probe inspect "$id" 2>/dev/null; then fail "container still exists after remove"; fi
status=0; probe inspect "$id" 2>/dev/null || status=$?
[ $status -eq 2 ] || fail "inspect after remove exited $status, expected 2 (not found)"

echo "PASS ($test_name)"
