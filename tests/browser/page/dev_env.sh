#!/usr/bin/env bash
# A real handlerd for working on the page and for running tests/browser/page/ by hand, until
# (and besides) the browser-test harness in tests/browser/: run as the podman user, with a
# prefix of handler, handlerd and the plugins (build/podman-tests/prefix, copied where that
# user can read it) and the podman tests' folder (for fake_model_server.py).
#
#   dev_env.sh up PODMAN_TESTS_DIR   # start (or find running) handlerd, the fake model server, ui/dev/serve.mjs
#   dev_env.sh up PODMAN_TESTS_DIR --served   # the same without the dev server: the page
#                                    # handlerd serves (prefix/share/handler/ui), as CI runs it
#   dev_env.sh up PODMAN_TESTS_DIR [--served] --fresh   # a NEW user's handlerd beside it
#                                    # (first_session.test.mjs): no account, no project, a
#                                    # home with one empty folder; wiped at every `up`
#   dev_env.sh down [--fresh]        # stop what `up` started
#
# HANDLER_UI_DEV_CONTAINERS: the podman settings folder to copy (default the user's
# ~/.config/containers); tests/browser/browser.sh passes one whose storage.conf names the
# storage podman.harnesses built the images in, so CI builds them once.
#
# Everything lives in $HANDLER_UI_DEV (default ~/handler-ui-dev) and is kept between runs, so the
# base and Claude Code images are built once. `up` writes $HANDLER_UI_DEV/env.sh, which sets what
# the tests read: HANDLER_UI_URL (the login URL), HANDLER_TEST_PROJECT (a project whose agents
# `claude` and `claude-locked` (network none: it asks before acting) run the real Claude Code
# against the fake Anthropic API, whose tool call writes hello.txt there; `sh` a shell),
# HANDLER_TEST_MODEL_LOG, HANDLER_TEST_MODEL_HOLD (while that file exists, the model's answers
# wait), HANDLER_TEST_SECRET_FILE (the account's real key), HANDLER_TEST_UPSTREAM_PORT (a plain
# HTTP server reached as learn.test and refused.test; agent `claude-net` allows neither), and
# the XDG folders and PATH. A prompt "$ CMD" makes the model's tool call a Bash CMD.
# For a ChatGPT login: HANDLER_TEST_CA (the test CA), HANDLER_TEST_SIGNIN_PORT and
# HANDLER_TEST_SIGNIN_LOG (the fake OpenAI sign-in, auth.openai.com to sessions) and
# HANDLER_TEST_CHATGPT_LOG (the fake ChatGPT backend, chatgpt.com, writing chatgpt.txt).
# With --fresh it all lives in $HANDLER_UI_DEV/fresh instead, sharing the test CA and the
# podman storage (so no image is built twice), and its env.sh sets HANDLER_FRESH_HOME (the
# user's home) and HANDLER_FRESH_FOLDER (the folder to make a project of, where the fake
# model's tool call writes hello.txt) instead of a project; its key is new every time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dev=${HANDLER_UI_DEV:-$HOME/handler-ui-dev}
fail() { echo "dev_env.sh: $*" >&2; exit 1; }
[ "$(id -u)" -ne 0 ] || fail "run as a non-root user with rootless podman"

fresh=0
for argument in "$@"; do [ "$argument" != --fresh ] || fresh=1; done
pki="$dev/pki"
containers_of_dev="$dev/home/.config/containers"
root=$dev
[ $fresh = 0 ] || root="$dev/fresh"
export HOME="$root/home" XDG_CONFIG_HOME="$root/home/.config" XDG_DATA_HOME="$root/home/.local/share"
export XDG_RUNTIME_DIR="$root/run"
project="$dev/projects/app"
[ $fresh = 0 ] || project="$HOME/projects/first"

stop_pid() { # FILE
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  rm -f "$1"
}

stop_handlerd() {
  local pid
  pid=$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

served=
case ${1:-} in
down)
  stop_pid "$root/serve.pid"
  stop_pid "$root/model.pid"
  stop_pid "$root/upstream.pid"
  stop_pid "$root/signin.pid"
  stop_pid "$root/chatgpt.pid"
  stop_handlerd
  exit 0 ;;
up) tests=${2:?usage: dev_env.sh up PODMAN_TESTS_DIR [--served] [--fresh]}
    for argument in "${@:3}"; do
      case $argument in --served) served=--served ;; --fresh) ;; *) fail "unknown option $argument" ;; esac
    done ;;
*) fail "usage: dev_env.sh up PODMAN_TESTS_DIR [--served] [--fresh] | down [--fresh]" ;;
esac

tests=$(cd "$tests" && pwd)
prefix="$tests/prefix"
[ -x "$prefix/bin/handlerd" ] || fail "$prefix/bin/handlerd is missing: build the podman_test_prefix target and copy build/podman-tests"
export PATH="$prefix/bin:$PATH"
if [ $fresh = 1 ]; then
  # A new user: the last one's sessions stopped (while its handlerd runs), its data and
  # projects gone.
  if [ -s "$XDG_RUNTIME_DIR/handler/handlerd.pid" ] && kill -0 "$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid")" 2>/dev/null; then
    for id in $(handler session list --json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin) if s["state"] in ("running","starting")))'); do
      handler session stop "$id" >/dev/null 2>&1 || true
    done
  fi
  stop_pid "$root/serve.pid"
  stop_handlerd
  rm -rf "$XDG_DATA_HOME/handler" "$XDG_CONFIG_HOME/handler" "$HOME/projects" "$root/key"
  [ -f "$pki/ca.crt" ] || fail "$pki/ca.crt is missing: run dev_env.sh up without --fresh first"
fi
mkdir -p "$HOME/.config" "$XDG_DATA_HOME" "$project" && install -d -m 0700 "$XDG_RUNTIME_DIR"
if [ $fresh = 1 ]; then
  # The dev handlerd's podman settings; when its storage.conf does not name its folders
  # (podman's default storage in its home), one that does, so the images are shared.
  mkdir -p "$HOME/.config/containers"
  cp "$containers_of_dev/containers.conf" "$HOME/.config/containers/"
  if grep -q '^graphroot' "$containers_of_dev/storage.conf" 2>/dev/null; then
    cp "$containers_of_dev/storage.conf" "$HOME/.config/containers/storage.conf"
  else
    printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
      "$dev/home/.local/share/containers/storage" "$dev/run/containers" > "$HOME/.config/containers/storage.conf"
  fi
else
  [ -d "$HOME/.config/containers" ] || cp -r "${HANDLER_UI_DEV_CONTAINERS:-/home/$(id -un)/.config/containers}" "$HOME/.config/containers"
fi

if [ ! -f "$pki/ca.crt" ]; then
  mkdir -p "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=Test Public CA" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.anthropic.com" \
    -keyout "$pki/api.key" -out "$pki/api.csr" 2>/dev/null
  printf 'subjectAltName=DNS:api.anthropic.com\nextendedKeyUsage=serverAuth\n' > "$pki/api.ext"
  openssl x509 -req -in "$pki/api.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile "$pki/api.ext" -out "$pki/api.crt" 2>/dev/null
fi
# OpenAI's sign-in and ChatGPT's backend, for a ChatGPT login (chatgpt_login.test.mjs). Codex
# reaches them through a tunnel, so it checks their certificates itself: sessions trust the
# test CA because handlerd does (SSL_CERT_FILE below).
for host in auth.openai.com chatgpt.com; do
  [ -f "$pki/$host.crt" ] && continue
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
    -keyout "$pki/$host.key" -out "$pki/$host.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$host" > "$pki/$host.ext"
  openssl x509 -req -in "$pki/$host.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile "$pki/$host.ext" -out "$pki/$host.crt" 2>/dev/null
done

# The fake Anthropic API: every prompt gets a tool call that writes hello.txt, then the answer;
# while $dev/hold exists its answers wait (a test holds a turn running).
stop_pid "$root/model.pid"
: > "$root/model.port"
# A prompt "$ CMD" gets a Bash tool call of CMD instead (network.test.mjs).
python3 "$tests/fake_model_server.py" --log "$root/model.log" --file "$project/hello.txt" --content hi \
  --answer "Done: wrote hello.txt" --every-turn --hold "$root/hold" --tls "$pki/api.crt" "$pki/api.key" --command-prompts \
  >"$root/model.port" 2>"$root/model.err" &
echo $! > "$root/model.pid"
for _ in $(seq 1 50); do [ -s "$root/model.port" ] && break; sleep 0.1; done
read -r model_port < "$root/model.port" || fail "the fake model server did not start: $(cat "$root/model.err")"

# A plain-HTTP upstream on the host's loopback, reached as learn.test and refused.test
# (network.test.mjs): it answers every GET with "upstream <path>".
stop_pid "$root/upstream.pid"
: > "$root/upstream.port"
python3 "$tests/http_upstream.py" --body 'upstream {path}' >"$root/upstream.port" 2>"$root/upstream.err" &
echo $! > "$root/upstream.pid"
for _ in $(seq 1 50); do [ -s "$root/upstream.port" ] && break; sleep 0.1; done
upstream_port=$(sed -n 's/^port //p' "$root/upstream.port")
[ -n "$upstream_port" ] || fail "the upstream did not start: $(cat "$root/upstream.err")"

# A ChatGPT login's two hosts: OpenAI's sign-in (the device code Codex asks for, entered by
# the test as a user would in a browser) and ChatGPT's backend, the fake model for the
# signed-in Codex, whose tool call writes chatgpt.txt. The first token it sees has expired
# (401), so Codex refreshes its login.
start_server() { # NAME COMMAND...: its port, once it prints it
  stop_pid "$root/$1.pid"
  : > "$root/$1.port"
  "${@:2}" >"$root/$1.port" 2>"$root/$1.err" &
  echo $! > "$root/$1.pid"
  for _ in $(seq 1 50); do [ -s "$root/$1.port" ] && break; sleep 0.1; done
  read -r "${1}_port" < "$root/$1.port" || fail "the $1 server did not start: $(cat "$root/$1.err")"
}
start_server signin python3 "$tests/fake_openai_signin.py" --log "$root/signin.log" \
  --tls "$pki/auth.openai.com.crt" "$pki/auth.openai.com.key"
start_server chatgpt python3 "$tests/fake_model_server.py" --log "$root/chatgpt.log" --file "$project/chatgpt.txt" \
  --content hi --answer "Done: wrote chatgpt.txt" --expire-tokens --tls "$pki/chatgpt.com.crt" "$pki/chatgpt.com.key"

mkdir -p "$XDG_CONFIG_HOME/handler"
cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[api]
tcp = true
port = 0
[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:$model_port", "auth.openai.com:443" = "127.0.0.1:$signin_port", "chatgpt.com:443" = "127.0.0.1:$chatgpt_port", "learn.test" = "127.0.0.1", "refused.test" = "127.0.0.1" }
TOML

# A restart reads the new port of the model server.
stop_handlerd
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start: $(tail -20 "$XDG_DATA_HOME/handler/handlerd.log")"
echo "handler setup (it builds the base image the first time: a few minutes)" >&2
handler setup > "$root/setup.out" 2>&1 || { cat "$root/setup.out" >&2; fail "handler setup failed"; }
if [ $fresh = 1 ]; then
  # The key the new user pastes.
  (umask 077 && printf 'sk-ant-api03-%s-NEWUSERKEY\n' "$(openssl rand -hex 32)" > "$root/key")
else
# has FIELD VALUE: the JSON list on stdin has a record whose FIELD is VALUE.
has() { python3 -c 'import json, sys; sys.exit(0 if any(r[sys.argv[1]] == sys.argv[2] for r in json.load(sys.stdin)) else 1)' "$@"; }
# The account's key: kept in $dev/key so the tests can check it never reaches the page.
[ -s "$dev/key" ] || (umask 077 && printf 'sk-ant-api03-%s-REALKEY\n' "$(openssl rand -hex 32)" > "$dev/key")
if handler account list --json | has name anthropic; then
  handler account set-key anthropic < "$dev/key" >/dev/null
else
  handler account add anthropic --kind anthropic-api-key --api-key-stdin < "$dev/key" >/dev/null
fi
handler project list --json | has path "$project" || handler project add "$project" --name app >/dev/null
# `claude` guarded (the default), `claude-locked` locked down: it asks before acting.
(cd "$project" && { handler agent list --json | has name claude ||
  handler agent add claude --harness claude-code --account anthropic >/dev/null; })
(cd "$project" && { handler agent list --json | has name claude-locked ||
  handler agent add claude-locked --harness claude-code --account anthropic --network none >/dev/null; })
# `claude-net` guarded, for the network panel's tests (they change its allowed hosts).
(cd "$project" && { handler agent list --json | has name claude-net ||
  handler agent add claude-net --harness claude-code --account anthropic >/dev/null; })
# A shell agent: the shell harness holds no conversations, so its "New conversation" gets the API's refusal.
(cd "$project" && { handler agent list --json | has name sh || handler agent add sh --harness shell >/dev/null; })
fi

stop_pid "$root/serve.pid"
if [ "$served" = --served ]; then
  # handlerd's one-time tokens work once: the tests ask for one per browser context.
  url_line="export HANDLER_UI_URL_COMMAND='handler ui --print-url'"
  url=$(handler ui --print-url) || fail "handler ui --print-url failed"
else
  : > "$root/serve.out"
  node "$repo/ui/dev/serve.mjs" --port 0 --out "$root/dist" --watch >"$root/serve.out" 2>&1 &
  echo $! > "$root/serve.pid"
  for _ in $(seq 1 100); do grep -q '#login=' "$root/serve.out" && break; sleep 0.1; done
  url=$(grep -o 'http://127.0.0.1:[0-9]*/#login=[A-Za-z0-9_-]*' "$root/serve.out") || fail "the dev server did not start: $(cat "$root/serve.out")"
  url_line="export HANDLER_UI_URL='$url'"
fi

if [ $fresh = 1 ]; then
  project_lines="export HANDLER_FRESH_HOME='$HOME' HANDLER_FRESH_FOLDER='$project'"
else
  project_lines="export HANDLER_TEST_PROJECT='$project' HANDLER_TEST_UPSTREAM_PORT='$upstream_port'"
fi
cat > "$root/env.sh" <<ENV
export HOME='$HOME' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' XDG_DATA_HOME='$XDG_DATA_HOME' XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR'
export PATH='$prefix/bin':\$PATH
$url_line
$project_lines
export HANDLER_TEST_MODEL_LOG='$root/model.log'
export HANDLER_TEST_MODEL_HOLD='$root/hold'
export HANDLER_TEST_SECRET_FILE='$root/key'
export HANDLER_TEST_CA='$pki/ca.crt' HANDLER_TEST_SIGNIN_PORT='$signin_port' HANDLER_TEST_SIGNIN_LOG='$root/signin.log'
export HANDLER_TEST_CHATGPT_LOG='$root/chatgpt.log'
ENV
echo "$url"
echo "environment for tests: source $root/env.sh" >&2
