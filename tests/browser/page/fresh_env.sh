#!/usr/bin/env bash
# A handlerd for a NEW user, beside dev_env.sh's (which has an account and a project made):
# no account, no project, a home folder with one empty folder to make a project of. For
# tests/browser/page/first_session.test.mjs. Run as the podman user, after dev_env.sh up
# (it reuses its test CA and, through a storage.conf, the same podman storage, so the base
# and Claude Code images are built once for both).
#
#   fresh_env.sh up PODMAN_TESTS_DIR   # a new user every time: the previous one's data is wiped
#   fresh_env.sh down
#
# `up` writes $HANDLER_UI_DEV/fresh/env.sh: HANDLER_UI_URL, HANDLER_FRESH_HOME (the user's
# home), HANDLER_FRESH_FOLDER (the folder to make a project of, where the fake model's tool
# call writes hello.txt), HANDLER_TEST_MODEL_LOG, HANDLER_TEST_SECRET_FILE (the key the test
# pastes; the fake Anthropic API logs the key each request carried), and the XDG folders.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dev=${HANDLER_UI_DEV:-$HOME/handler-ui-dev}
fresh="$dev/fresh"
fail() { echo "fresh_env.sh: $*" >&2; exit 1; }
[ "$(id -u)" -ne 0 ] || fail "run as a non-root user with rootless podman"
user_home=$HOME

export HOME="$fresh/home" XDG_CONFIG_HOME="$fresh/home/.config" XDG_DATA_HOME="$fresh/home/.local/share"
export XDG_RUNTIME_DIR="$fresh/run"
folder="$HOME/projects/first"
pki="$dev/pki"

stop_pid() { # FILE
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  rm -f "$1"
}
stop_all() {
  stop_pid "$fresh/serve.pid"
  stop_pid "$fresh/model.pid"
  local pid
  pid=$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
}

case ${1:-} in
down) stop_all; exit 0 ;;
up) tests=${2:?usage: fresh_env.sh up PODMAN_TESTS_DIR} ;;
*) fail "usage: fresh_env.sh up PODMAN_TESTS_DIR | down" ;;
esac
tests=$(cd "$tests" && pwd)
prefix="$tests/prefix"
[ -x "$prefix/bin/handlerd" ] || fail "$prefix/bin/handlerd is missing: build the podman_test_prefix target and copy build/podman-tests"
[ -f "$pki/ca.crt" ] || fail "$pki/ca.crt is missing: run dev_env.sh up first"
export PATH="$prefix/bin:$PATH"

# A new user: the last one's sessions stopped (while its handlerd runs), its data and projects gone.
if [ -s "$XDG_RUNTIME_DIR/handler/handlerd.pid" ] && kill -0 "$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid")" 2>/dev/null; then
  for id in $(handler session list --json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin) if s["state"] in ("running","starting")))'); do
    handler session stop "$id" >/dev/null 2>&1 || true
  done
fi
stop_all
rm -rf "$XDG_DATA_HOME/handler" "$XDG_CONFIG_HOME/handler" "$HOME/projects"
mkdir -p "$folder" "$XDG_DATA_HOME" "$XDG_CONFIG_HOME/containers" && install -d -m 0700 "$XDG_RUNTIME_DIR"
# The same podman storage as dev_env.sh's, so no image is built twice.
cp "$dev/home/.config/containers/containers.conf" "$XDG_CONFIG_HOME/containers/" 2>/dev/null ||
  cp "$user_home/.config/containers/containers.conf" "$XDG_CONFIG_HOME/containers/"
# (dev_env.sh's own storage.conf when it has one that names its folders, as when it was
# pointed at the user's real storage so that the loaded base image is found.)
if grep -q '^graphroot' "$dev/home/.config/containers/storage.conf" 2>/dev/null; then
  cp "$dev/home/.config/containers/storage.conf" "$XDG_CONFIG_HOME/containers/storage.conf"
else
  cat > "$XDG_CONFIG_HOME/containers/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$dev/home/.local/share/containers/storage"
runroot = "$dev/run/containers"
CONF
fi

: > "$fresh/model.port"
: > "$fresh/model.log"
python3 "$tests/fake_model_server.py" --log "$fresh/model.log" --file "$folder/hello.txt" --content hi \
  --answer "Done: wrote hello.txt" --every-turn --tls "$pki/api.crt" "$pki/api.key" \
  >"$fresh/model.port" 2>"$fresh/model.err" &
echo $! > "$fresh/model.pid"
for _ in $(seq 1 50); do [ -s "$fresh/model.port" ] && break; sleep 0.1; done
read -r model_port < "$fresh/model.port" || fail "the fake model server did not start: $(cat "$fresh/model.err")"

mkdir -p "$XDG_CONFIG_HOME/handler"
cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[api]
tcp = true
port = 0
[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:$model_port" }
TOML
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start: $(tail -20 "$XDG_DATA_HOME/handler/handlerd.log")"
handler setup > "$fresh/setup.out" 2>&1 || { cat "$fresh/setup.out" >&2; fail "handler setup failed"; }
# The key the new user pastes: a fresh one each time.
(umask 077 && printf 'sk-ant-api03-%s-NEWUSERKEY\n' "$(openssl rand -hex 32)" > "$fresh/key")

: > "$fresh/serve.out"
node "$repo/ui/dev/serve.mjs" --port 0 --out "$fresh/dist" >"$fresh/serve.out" 2>&1 &
echo $! > "$fresh/serve.pid"
for _ in $(seq 1 100); do grep -q '#login=' "$fresh/serve.out" && break; sleep 0.1; done
url=$(grep -o 'http://127.0.0.1:[0-9]*/#login=[A-Za-z0-9_-]*' "$fresh/serve.out") || fail "the dev server did not start: $(cat "$fresh/serve.out")"

cat > "$fresh/env.sh" <<ENV
export HOME='$HOME' XDG_CONFIG_HOME='$XDG_CONFIG_HOME' XDG_DATA_HOME='$XDG_DATA_HOME' XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR'
export PATH='$prefix/bin':\$PATH
export HANDLER_UI_URL='$url'
export HANDLER_FRESH_HOME='$HOME'
export HANDLER_FRESH_FOLDER='$folder'
export HANDLER_TEST_MODEL_LOG='$fresh/model.log'
export HANDLER_TEST_SECRET_FILE='$fresh/key'
ENV
echo "$url"
echo "environment for tests: source $fresh/env.sh" >&2
