#!/usr/bin/env bash
# Sessions end to end on REAL rootless podman, through the real handlerd, handler CLI,
# handler-shim and shell plugin from this build (the relocatable prefix/ next to this
# script): isolation seen from inside a session, exit codes, two clients on one terminal,
# kill -9 of handlerd with the session surviving and re-attachable, a program that exits
# while no handlerd runs, stop and rm.
#
# Everything lives in a private HOME (podman storage included), so the account's own
# Handler data and containers are never touched. Runs as a non-root user with working
# rootless podman; FAILS, never skips, when podman cannot run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-sessions
# shellcheck source=session_env.sh
source "$here/session_env.sh"

project="$work/projects/alpha"
other="$work/projects/beta"
mkdir -p "$project" "$other" "$HOME/.ssh"
echo secret > "$other/other-project-file"
echo key > "$HOME/.ssh/id_test"

handlerd --detach >/dev/null || fail "handlerd did not start"
handler project add "$project" >/dev/null
cd "$project"

echo "== isolation, seen from inside a session"
# The project is mounted at its own path, so its parent folders exist inside, but hold
# nothing except the way to it.
inside=$(handler run shell -p "
  echo real-home-holds=\$(ls -A '$real_home' | tr '\n' ' ')
  echo work-holds=\$(ls -A '$work' | tr '\n' ' ')
  for path in '$HOME' '$HOME/.ssh' '$other' '$XDG_DATA_HOME/handler' \
              '$XDG_RUNTIME_DIR/handler/handlerd.sock' '$XDG_CONFIG_HOME/handler'; do
    if [ -e \"\$path\" ]; then echo \"VISIBLE \$path\"; fi
  done
  echo pwd=\$(pwd) uid=\$(id -u) home=\$HOME
  touch made-inside && echo made") || fail "the isolation session failed: $inside"
echo "$inside"
case "$inside" in *VISIBLE*) fail "host paths are visible inside: $inside";; esac
grep -qx "real-home-holds=$(basename "$work")" <<<"$inside" || fail "the home folder shows more than the way to the project: $inside"
grep -qx "work-holds=projects" <<<"$inside" || fail "the test folder shows more than the projects: $inside"
case "$inside" in *"pwd=$project uid=$(id -u) home=/home/agent"*) ;; *) fail "unexpected identity: $inside";; esac
[ "$(stat -c %u "$project/made-inside")" = "$(id -u)" ] || fail "a file made inside is not owned by $(id -un) on the host"

echo "== exit codes and stderr"
set +e
out=$(handler run shell -p 'echo to-out; echo to-err >&2; exit 7' 2>"$work/err")
code=$?
set -e
[ $code -eq 7 ] || fail "handler run exited $code; the command exited 7"
[ "$out" = "to-out" ] || fail "stdout was '$out'"
grep -q to-err "$work/err" || fail "stderr did not reach stderr: $(cat "$work/err")"

echo "== two clients on one terminal"
id=$(handler run shell --detach) || fail "handler run --detach failed"
case "$id" in s_*) ;; *) fail "--detach printed '$id', not a session id";; esac
[ "$(state_of "$id" state)" = running ] || fail "session $id is not running after --detach"
python3 "$here/terminal_clients.py" share "$id"

echo "== sequences that act on the user's terminal reach no client"
# A terminal attached in a pty, live and replayed; then handler logs and a headless run's
# stdout. Colours pass; the output log on disk keeps everything as printed.
python3 "$here/terminal_clients.py" sequences "$id"
handler logs "$id" > "$work/logs.out"
handler run shell -p "printf '\033[32mgreen\033[0m \033]52;c;cm0gLXJmIH4K\033\\\\\033P\$qm\033\\\\ done\n'" > "$work/run.out"
for file in "$work/logs.out" "$work/run.out"; do
  for needle in $'\e]52' $'\eP'; do
    if grep -qF "$needle" "$file"; then fail "$(basename "$file") holds ${needle#?}: $(od -c "$file" | tail -n 5)"; fi
  done
done
grep -qF $'\e[31mred\e[0m  \e[1mbold' "$work/logs.out" || fail "handler logs lost the colours: $(od -c "$work/logs.out" | tail -n 5)"
grep -qxF $'\e[32mgreen\e[0m  done' "$work/run.out" || fail "handler run -p lost the colours: $(od -c "$work/run.out")"
grep -qF $'\e]52;c;cm0gLXJmIH4K' "$XDG_DATA_HOME/handler/sessions/$id/output.log" ||
  fail "the output log on disk does not keep what the session printed"

echo "== a clean stop of handlerd leaves the session running"
kill_handlerd TERM
[ "$(podman container inspect --format '{{.State.Running}}' "handler-$id")" = true ] ||
  fail "the session's container did not survive a clean stop of handlerd"
handlerd --detach >/dev/null || fail "handlerd did not start again"
wait_state "$id" running

echo "== kill -9 handlerd: the session keeps running and is re-adopted"
kill_handlerd KILL
[ "$(podman container inspect --format '{{.State.Running}}' "handler-$id")" = true ] ||
  fail "the session's container did not survive handlerd"
handlerd --detach >/dev/null || fail "handlerd did not start again"
wait_state "$id" running
python3 "$here/terminal_clients.py" reattach "$id"
wait_state "$id" exited
[ "$(state_of "$id" exit_code)" = 5 ] || fail "exit code $(state_of "$id" exit_code), not 5"
handler logs "$id" | grep -q after-restart-64 || fail "handler logs lacks the output"

echo "== a program that ends while no handlerd runs"
id=$(handler run shell --detach -p 'sleep 2; echo finished-alone; exit 9')
kill_handlerd KILL
sleep 4
handlerd --detach >/dev/null || fail "handlerd did not start again"
wait_state "$id" exited
[ "$(state_of "$id" exit_code)" = 9 ] || fail "exit code $(state_of "$id" exit_code), not 9"
handler logs "$id" | grep -q finished-alone || fail "the output made while handlerd was down is missing"

echo "== stop and rm"
id=$(handler run shell --detach)
handler session rm "$id" 2>"$work/err" && fail "rm of a running session succeeded"
grep -q "stop it first" "$work/err" || fail "rm's refusal does not say what to do: $(cat "$work/err")"
handler session stop "$id" >/dev/null
wait_state "$id" exited
handler session rm "$id" >/dev/null
handler session list --json | grep -q "$id" && fail "session $id is still listed after rm"
for _ in $(seq 1 50); do
  [ -z "$(podman ps -aq --filter "label=io.handler.session=$id")" ] && break
  sleep 0.1
done
[ -z "$(podman ps -aq --filter "label=io.handler.session=$id")" ] || fail "its container is still there"
echo "PASS ($test_name)"
