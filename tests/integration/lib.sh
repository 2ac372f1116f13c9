# Shared by the integration tests: a private HOME per test, the real handlerd started
# from the build tree, and small assertions. Every test sources this, then calls
# start_daemon / handler / expect_* and finally `pass`.
set -euo pipefail

: "${HANDLER_BIN_DIR:?set by ctest to the bin folder of the build}"
test_name=$(basename "$0" .sh)
work=$(mktemp -d "/tmp/handler-it-$test_name-XXXXXX")
export HOME="$work/home"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share"
export XDG_RUNTIME_DIR="$work/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
daemon_pid=""

cleanup() {
  local code=$?
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  if [ $code -ne 0 ] && [ -f "$work/daemon.log" ]; then
    echo "--- handlerd output ---" >&2
    tail -n 40 "$work/daemon.log" >&2
  fi
  rm -rf "$work"
  exit $code
}
trap cleanup EXIT

fail() { echo "FAIL ($test_name): $*" >&2; exit 1; }
pass() { echo "PASS ($test_name)"; }

handler() { "$HANDLER_BIN_DIR/handler" "$@"; }

# Settings for a test daemon: an ephemeral TCP port so tests can run in parallel.
write_config() {
  mkdir -p "$XDG_CONFIG_HOME/handler"
  cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[daemon]
log_level = "debug"
[api]
tcp = true
port = 0
TOML
}

start_daemon() {
  [ -f "$XDG_CONFIG_HOME/handler/config.toml" ] || write_config
  "$HANDLER_BIN_DIR/handler" daemon >>"$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 1 100); do
    if handler status >/dev/null 2>&1; then return 0; fi
    kill -0 "$daemon_pid" 2>/dev/null || fail "handlerd exited during start"
    sleep 0.05
  done
  fail "handlerd did not answer within 5 s"
}

# json_get JSON PYTHON-EXPRESSION: evaluates the expression with `d` bound to the JSON.
# The JSON goes through stdin: a big listing would not fit in an argument.
json_get() { printf '%s' "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }

expect_eq() {
  local what=${3:-values differ}
  [ "$1" = "$2" ] || fail "$what: expected [$2], got [$1]"
}
expect_contains() {
  local what=${3:-text lacks [$2]}
  case "$1" in *"$2"*) ;; *) fail "$what: got: $1" ;; esac
}

tcp_port() { json_get "$(handler status --json)" "d['tcp']['port']"; }
api_token() { cat "$XDG_DATA_HOME/handler/api-token"; }
