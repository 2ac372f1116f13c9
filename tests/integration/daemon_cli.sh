#!/usr/bin/env bash
# The CLI against the real handlerd on its real unix socket: the first-day flow.
source "$(dirname "$0")/lib.sh"

# Before the daemon runs, the CLI says so with exit code 3.
set +e; out=$(handler status 2>&1); code=$?; set -e
expect_eq "$code" 3 "status without daemon"
expect_contains "$out" "not running"

start_daemon

status=$(handler status --json)
expect_eq "$(json_get "$status" "d['abi']")" "1.1" "ABI in status"
expect_eq "$(json_get "$status" "d['pid']")" "$daemon_pid" "pid in status"

# The socket and its folder are private.
sock="$XDG_RUNTIME_DIR/handler/handlerd.sock"
expect_eq "$(stat -c %a "$sock")" 600 "socket mode"
expect_eq "$(stat -c %a "$XDG_RUNTIME_DIR/handler")" 700 "runtime folder mode"
expect_eq "$(stat -c %a "$XDG_DATA_HOME/handler/api-token")" 600 "token mode"

# A second daemon refuses to start and names the first one; the first keeps serving.
set +e; out=$(timeout 10 "$HANDLER_BIN_DIR/handler" daemon 2>&1); code=$?; set -e
expect_eq "$code" 1 "second daemon exit code"
expect_contains "$out" "already running (pid $daemon_pid"
handler status >/dev/null || fail "first daemon stopped answering"

# Built-in plugins are loaded.
plugins=$(handler plugins list --json)
expect_eq "$(json_get "$plugins" "[p['state'] for p in d if p['id']=='shell'][0]")" loaded "shell harness"
expect_eq "$(json_get "$plugins" "[p['kind'] for p in d if p['id']=='shell'][0]")" harness

# Contexts, projects, agents.
handler context add Work >/dev/null
handler context add Personal >/dev/null
set +e; out=$(handler context add work 2>&1); code=$?; set -e
expect_eq "$code" 1 "duplicate context (case-insensitive)"

mkdir -p "$HOME/code/app/src" "$HOME/code/other"
handler project add "$HOME/code/app" --context Work >/dev/null
handler project add "$HOME/code/other" --context Personal --allow PyPI.org >/dev/null
cd "$HOME/code/app/src"
# A project's own allow-list: add, then edit from inside the project (found by folder).
expect_eq "$(json_get "$(handler project list --json)" "[p['allowed_hosts'] for p in d]")" \
  "[[], ['pypi.org']]" "project hosts at add"
handler project edit --allow git.example.com --allow '*.npmjs.org' >/dev/null
handler project edit "$HOME/code/other" --disallow pypi.org >/dev/null
expect_eq "$(json_get "$(handler project list --json)" "[p['allowed_hosts'] for p in d]")" \
  "[['git.example.com', '*.npmjs.org'], []]" "project hosts after edit"
set +e; out=$(handler project edit --allow 'bad host!' 2>&1); code=$?; set -e
expect_eq "$code" 1 "bad project host pattern"
case "$out" in *"allowed_hosts["*"is not a host pattern"*) ;; *) fail "bad project host: $out";; esac
handler agent add reviewer --harness shell --goal "review" --allow github.com --allow '*.npmjs.org:443' >/dev/null
agent=$(handler agent show reviewer --json)
expect_eq "$(json_get "$agent" "d['allowed_hosts']")" "['github.com', '*.npmjs.org:443']"
expect_eq "$(json_get "$agent" "d['network_mode']")" filtered "default network mode"

handler agent edit reviewer --network none --disallow github.com >/dev/null
agent=$(handler agent show reviewer --json)
expect_eq "$(json_get "$agent" "d['network_mode']")" none
expect_eq "$(json_get "$agent" "d['allowed_hosts']")" "['*.npmjs.org:443']"

# A bad host pattern is refused with a message; nothing changes.
set +e; out=$(handler agent edit reviewer --allow 'bad host!' 2>&1); code=$?; set -e
expect_eq "$code" 1 "bad host pattern"
expect_eq "$(json_get "$(handler agent show reviewer --json)" "d['allowed_hosts']")" "['*.npmjs.org:443']"

# The other project does not see this agent.
expect_eq "$(json_get "$(cd "$HOME/code/other" && handler agent list --json)" "len(d)")" 0
expect_eq "$(json_get "$(handler agent list --all --json)" "len(d)")" 1

handler agent rm reviewer >/dev/null
expect_eq "$(json_get "$(handler agent list --json)" "len(d)")" 0

# A key goes in through stdin only, lands in a 0600 file, and is never shown, logged or
# put in the database.
key="sk-ant-api03-IntegrationTestKey$RANDOM$RANDOM"
printf '%s\n' "$key" | handler account add anthropic --api-key-stdin >/dev/null
expect_eq "$(json_get "$(handler account list --json)" "d[0]['has_secret']")" True "has_secret"
expect_eq "$(json_get "$(handler account list --json)" "d[0]['kind']")" anthropic-api-key "kind from the name"
key_file="$XDG_DATA_HOME/handler/secrets/1.key"
expect_eq "$(stat -c %a "$key_file")" 600 "key file mode"
expect_eq "$(cat "$key_file")" "$key" "the stored key"
if grep -rqa "IntegrationTestKey" "$XDG_DATA_HOME/handler/handler.db" "$XDG_DATA_HOME/handler/handlerd.log" \
     "$XDG_CONFIG_HOME/handler" 2>/dev/null; then
  fail "the key appears outside its file"
fi
set +e; out=$(printf 'short\n' | handler account set-key anthropic 2>&1); code=$?; set -e
expect_eq "$code" 1 "a malformed key"
case "$out" in *"8 to 4096"*) ;; *) fail "set-key did not say why: $out";; esac
expect_eq "$(cat "$key_file")" "$key" "a refused key leaves the stored one alone"

# A local model server's account holds where it listens, not a key.
handler account add gpu --kind ollama --base-url 'HTTP://Model-Box.lan:11434/' >/dev/null
expect_eq "$(json_get "$(handler account list --json)" "[a['base_url'] for a in d if a['name'] == 'gpu']")" \
  "['http://model-box.lan:11434']" "ollama base_url, normalized"
expect_contains "$(handler account list)" "http://model-box.lan:11434" "account list shows base_url"
set +e; out=$(printf 'key\n' | handler account add box --kind llama-cpp --api-key-stdin 2>&1); code=$?; set -e
expect_eq "$code" 2 "a key for a local server"
expect_contains "$out" "llama-cpp accounts have no key; give --base-url"

# Sessions: unknown names and folders outside every project are refused with the fix;
# as root (CI runs this file as root) no session starts at all, and nothing is recorded.
set +e; out=$(handler run nobody -p true 2>&1); code=$?; set -e
if [ "$(id -u)" -eq 0 ]; then
  expect_eq "$code" 1 "run as root"
  case "$out" in *"runs as root"*) ;; *) fail "run as root did not say why: $out";; esac
else
  expect_eq "$code" 1 "run of an unknown agent"
  case "$out" in *"no agent named 'nobody'"*) ;; *) fail "unexpected message: $out";; esac
fi
expect_eq "$(json_get "$(handler session list --json)" "len(d)")" 0 "sessions recorded by refused runs"
set +e; out=$(handler attach s_000000 2>&1); code=$?; set -e
expect_eq "$code" 1 "attach to a missing session"
case "$out" in *"s_000000"*) ;; *) fail "attach did not name the session: $out";; esac

# A clean stop removes the socket and pid file.
kill -TERM "$daemon_pid"; wait "$daemon_pid" || fail "handlerd exited non-zero on SIGTERM"
daemon_pid=""
[ ! -e "$sock" ] || fail "socket left behind after a clean stop"
pass
