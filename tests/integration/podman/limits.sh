#!/usr/bin/env bash
# Limits that hold, on REAL rootless podman through the real handlerd, handler CLI, shim
# and shell plugin (docs/security.md, "Limits"). One session runs, in turn, a fork bomb,
# memory hogs and a fill of its /tmp and HOME; during each, handlerd answers an API call
# within 1 s every time it is asked (a functional check of the promise, not a benchmark:
# bench/ measures), and a second session started then runs a command and prints its
# output. Each attack is seen to hit its limit: the bomb stops at the process limit, each
# hog at its data limit (cgroup v1) or the session's memory.max (cgroup v2), the fill at
# the tmpfs sizes. And `handler session show` says which limits hold on this machine.
#
# Everything lives in a private HOME (session_env.sh). Runs as a non-root user with
# working rootless podman; FAILS, never skips, when podman cannot run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-limits
# The process limit is the default (4096: the bomb is as large as a real session's
# could be); memory and tmpfs sizes are small, so that hogs and fills stay small on a
# shared machine.
extra_config='tmp_size_mib = 64
home_size_mib = 32
memory_limit_mib = 256'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

project="$work/projects/alpha"
mkdir -p "$project"
handlerd --detach >/dev/null || fail "handlerd did not start"
handler project add "$project" >/dev/null
cd "$project"
uid=$(id -u)
tasks() { ps -u "$uid" -L --no-headers | wc -l; } # every process and thread of this user

# answer_ms: how long one API call through the CLI takes, in milliseconds.
answer_ms() {
  local started ended
  started=$(date +%s%N)
  handler session list --json >/dev/null || return 1
  ended=$(date +%s%N)
  echo $(( (ended - started) / 1000000 ))
}
# still_serving WHAT: handlerd answers within 1 s, 10 times in about 5 s, and a second
# session runs a command and gets its output.
still_serving() {
  local worst=0 ms started out
  for _ in $(seq 1 10); do
    ms=$(answer_ms) || fail "$1: handlerd did not answer"
    [ "$ms" -le "$worst" ] || worst=$ms
    sleep 0.5
  done
  [ "$worst" -lt 1000 ] || fail "$1: handlerd took $worst ms to answer (1000 at most)"
  started=$(date +%s%N)
  out=$(timeout 120 handler run shell -p 'echo second-session-works') || fail "$1: a second session failed: $out"
  [ "$out" = second-session-works ] || fail "$1: a second session printed '$out'"
  echo "$1: handlerd answered within $worst ms (worst of 10); a second session ran a command in $(( ($(date +%s%N) - started) / 1000000 )) ms"
}
stop_session() { handler session stop "$1" >/dev/null; wait_state "$1" exited 600; }
# podman's view of the session's container, for what handler cannot see inside.
container_of() { podman ps -q --filter "label=io.handler.session=$1"; }

echo "== what the session says about its limits"
id=$(handler run shell --detach -p 'sleep 600')
wait_state "$id" running
handler session show "$id" > "$work/show"
controllers=" $(podman info --format '{{.Host.CgroupControllers}}' | tr -d '[]') "
grep -Eq '^  ✓ tmp +64 MiB +size of the tmpfs on /tmp$' "$work/show" || fail "session show: $(cat "$work/show")"
grep -Eq '^  ✓ home +32 MiB ' "$work/show" || fail "session show: $(cat "$work/show")"
grep -Eq '^  ✓ processes +4096 +RLIMIT_NPROC' "$work/show" || fail "session show: $(cat "$work/show")"
case $controllers in
  *" memory "*) grep -Eq '^  ✓ memory +256 MiB +the cgroup' "$work/show" || fail "session show: $(cat "$work/show")";;
  *) grep -Eq '^  ! memory +256 MiB +not for the session as a whole' "$work/show" || fail "session show: $(cat "$work/show")";;
esac
handler session show "$id" --json | python3 -c '
import json, sys
limits = {l["name"]: l for l in json.load(sys.stdin)["limits"]}
assert set(limits) == {"tmp", "home", "processes", "memory"}, limits
assert limits["processes"]["value"] == "4096" and limits["processes"]["holds"], limits' ||
  fail "the API's limits are wrong: $(handler session show "$id" --json)"
sed -n '/^limits:/,$p' "$work/show"
stop_session "$id"
still_serving "no attack"

echo "== a fork bomb"
before=$(tasks)
# Every process forks for ever, whether or not its fork worked: the limit is held under
# constant pressure, not once (confinement_probe fork-bomb; a shell's bomb would die out).
cp "$here/confinement_probe" "$project/.fork-bomb"
bomb=$(handler run shell --detach -p "exec $project/.fork-bomb fork-bomb")
wait_state "$bomb" running
for _ in $(seq 1 100); do [ $(( $(tasks) - before )) -ge 3900 ] && break; sleep 0.1; done
still_serving "fork bomb"
made=$(( $(tasks) - before ))
# The bomb's tasks, podman's and the second session's shim: a few beyond the limit.
[ "$made" -le 4200 ] || fail "the fork bomb made $made tasks; the limit is 4096"
[ "$made" -ge 3000 ] || fail "the fork bomb made only $made tasks: did it run?"
echo "fork bomb: $made tasks of $(id -un) beyond the $before before it (limit 4096 in the session)"
stop_session "$bomb"
rm -f "$project/.fork-bomb"

echo "== memory hogs"
# Four processes, each doubling a string for ever: each stops where its allocation
# fails, and starts again.
hog=$(handler run shell --detach -p 'for i in 1 2 3 4; do (while :; do awk "BEGIN { s = \"x\"; while (1) s = s s }" 2>/dev/null; echo hog-stopped; done) & done; wait')
wait_state "$hog" running
for _ in $(seq 1 300); do handler logs "$hog" | grep -q hog-stopped && break; sleep 0.1; done
handler logs "$hog" | grep -q hog-stopped || fail "no hog ever stopped: $(handler logs "$hog" | tail -c 500)"
still_serving "memory hogs"
# Each awk's resident memory, as the host sees it, never beyond the limit.
worst_kib=0
for _ in $(seq 1 20); do
  for rss in $(ps -u "$uid" -o rss=,comm= | awk '$2 == "awk" {print $1}'); do
    [ "$rss" -le "$worst_kib" ] || worst_kib=$rss
  done
  sleep 0.1
done
# Resident memory counts awk's own code and stack too, beyond its data: a few MiB.
[ "$worst_kib" -le $(((256 + 8) * 1024)) ] || fail "a hog held $worst_kib KiB; the limit is 256 MiB"
echo "memory hogs: the largest held $((worst_kib / 1024)) MiB (limit 256 MiB each)"
stop_session "$hog"

echo "== filling /tmp and HOME"
fill=$(handler run shell --detach -p 'dd if=/dev/zero of=/tmp/fill bs=1M; dd if=/dev/zero of=$HOME/fill bs=1M; df -k /tmp $HOME; echo filled; sleep 600')
wait_state "$fill" running
for _ in $(seq 1 300); do handler logs "$fill" | grep -q '^filled' && break; sleep 0.1; done
handler logs "$fill" > "$work/fill"
grep -q "No space left on device" "$work/fill" || fail "the fill never ran out of space: $(cat "$work/fill")"
grep -Eq '^tmpfs +65536 +65536 +0 ' "$work/fill" || fail "/tmp did not fill at 64 MiB: $(cat "$work/fill")"
grep -Eq '^tmpfs +32768 +32768 +0 ' "$work/fill" || fail "HOME did not fill at 32 MiB: $(cat "$work/fill")"
still_serving "tmpfs fill"
echo "tmpfs fill: /tmp full at 64 MiB and HOME at 32 MiB"
stop_session "$fill"
[ -z "$(container_of "$fill")" ] || fail "the filled session's container is still running"

echo "PASS ($test_name)"
