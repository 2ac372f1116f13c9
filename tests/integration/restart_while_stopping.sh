#!/usr/bin/env bash
# A handlerd started while the previous one is still stopping (its socket and pid file
# gone, its lock still held) waits for it and then serves, instead of refusing with
# "already running (pid unknown)" and leaving nothing running (issue 15, defect 7).
# The slow-stop fixture plugin keeps the first daemon stopping for 2 s.
source "$(dirname "$0")/lib.sh"
: "${HANDLER_INTEGRATION_PLUGIN_DIR:?set by ctest}"

mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$HANDLER_INTEGRATION_PLUGIN_DIR/slow-stop" "$XDG_DATA_HOME/handler/plugins/"
write_config
log="$XDG_DATA_HOME/handler/handlerd.log"
lock="$XDG_RUNTIME_DIR/handler/handlerd.lock"
sock="$XDG_RUNTIME_DIR/handler/handlerd.sock"
# lib.sh prints daemon.log when a test fails; the detached daemons write their own.
trap 'code=$?; cp "$log" "$work/daemon.log" 2>/dev/null; (exit $code); cleanup' EXIT

# Detached, as scripts/install.sh and handler setup start it.
"$HANDLER_BIN_DIR/handlerd" --detach >/dev/null || fail "first start"
first=$(json_get "$(handler status --json)" "d['pid']")
expect_contains "$(handler plugins list)" slow-stop "the fixture is loaded"

kill -TERM "$first"
# Once it no longer serves it is stopping; start the next one right then.
for _ in $(seq 1 500); do [ -S "$sock" ] || break; sleep 0.01; done
[ -S "$sock" ] && fail "the first handlerd still serves after SIGTERM"
set +e; out=$("$HANDLER_BIN_DIR/handlerd" --detach 2>&1); code=$?; set -e
expect_eq "$code" 0 "second start while the first stops ($out)"

status=$(handler status --json) || fail "nothing serves after the restart"
second=$(json_get "$status" "d['pid']")
[ "$second" != "$first" ] || fail "status still names the first daemon"
expect_contains "$(cat "$log")" "does not serve: it is stopping" "the wait is logged"
expect_contains "$(cat "$log")" "let go of" "the end of the wait is logged"

# Stopped here, not by lib.sh: its cleanup only knows a daemon it started itself.
kill -TERM "$second"
flock -w 20 "$lock" true || fail "the second handlerd did not stop"
pass
