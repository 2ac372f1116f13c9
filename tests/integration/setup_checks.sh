#!/usr/bin/env bash
# `handler setup` for real: root is refused before anything is looked at or written;
# a normal user (uid nobody, so CI needs no extra account) on a PATH without podman is
# told podman is missing and how to install it; --check writes nothing; a full run
# writes only the user's storage.conf and starts handlerd; a second run changes nothing.
source "$(dirname "$0")/lib.sh"

empty_path="$work/empty-path"   # no podman, no runc, no newuidmap: nothing at all
mkdir -p "$empty_path"

# --- root ---------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
  code=0; out=$(PATH="$empty_path" handler setup 2>&1) || code=$?
  expect_eq "$code" 1 "exit code of setup as root"
  expect_contains "$out" "✗ user"
  expect_contains "$out" "agents never run as root"
  expect_contains "$out" "setrlimit"
  expect_contains "$out" "useradd -m"
  [ ! -e "$XDG_CONFIG_HOME/containers" ] || fail "setup as root wrote $XDG_CONFIG_HOME/containers"
  [ ! -e "$XDG_RUNTIME_DIR/handler" ] || fail "setup as root started something"
  code=0; out=$(PATH="$empty_path" handler setup --check --json) || code=$?
  expect_eq "$code" 1 "exit code of setup --check --json as root"
  expect_eq "$(json_get "$out" "d['checks'][0]['id'] + ' ' + d['checks'][0]['status']")" "user problem"

  command -v setpriv >/dev/null || fail "setpriv (util-linux) is needed to run setup as a normal user"
  user_home="$work/nobody-home"
  mkdir -p "$user_home/run" && chmod 700 "$user_home/run" && chown -R nobody: "$user_home"
  chmod 755 "$work"
  as_user() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
      env -i HOME="$user_home" XDG_RUNTIME_DIR="$user_home/run" PATH="$empty_path" "$@"
  }
  user_config="$user_home/.config"
else
  as_user() { env -i HOME="$HOME" XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" PATH="$empty_path" "$@"; }
  user_home="$HOME"
  user_config="$HOME/.config"
fi
bin="$HANDLER_BIN_DIR/handler"
if [ "$(id -u)" -eq 0 ]; then
  # The build tree may sit where nobody cannot enter (a clone under /root): run a copy
  # laid out like an install (bin/ and lib/handler/plugins/ beside each other).
  mkdir -p "$work/prefix/bin" "$work/prefix/lib/handler"
  cp "$HANDLER_BIN_DIR/handler" "$HANDLER_BIN_DIR/handlerd" "$work/prefix/bin/"
  cp -r "$HANDLER_BIN_DIR/../lib/handler/plugins" "$work/prefix/lib/handler/"
  chmod -R a+rX "$work/prefix"
  bin="$work/prefix/bin/handler"
fi

# --- a normal user without podman, --check ------------------------------------------
code=0; out=$(as_user "$bin" setup --check 2>&1) || code=$?
expect_eq "$code" 1 "exit code of setup --check without podman"
expect_contains "$out" "✗ podman   podman is not installed (not found on PATH)"
expect_contains "$out" "fix: sudo apt-get install podman"
expect_contains "$out" "--check: nothing was changed or started"
[ ! -e "$user_config/containers" ] || fail "--check wrote $user_config/containers"
[ ! -e "$user_home/run/handler/handlerd.pid" ] || fail "--check started handlerd"

code=0; out=$(as_user "$bin" setup --check --json) || code=$?
expect_eq "$code" 1 "exit code of setup --check --json"
expect_eq "$(json_get "$out" "[c['status'] for c in d['checks'] if c['id']=='podman'][0]")" problem
expect_eq "$(json_get "$out" "d['ok']")" False

# --- the full run: storage.conf chosen ahead of podman's first use; handlerd started -
mkdir -p "$user_config/handler"
printf 'format = 2\n[api]\ntcp = true\nport = 0\n' > "$user_config/handler/config.toml"
[ "$(id -u)" -ne 0 ] || chown -R nobody: "$user_config"
code=0; out=$(as_user "$bin" setup 2>&1) || code=$?
pid_file="$user_home/run/handler/handlerd.pid"
[ -f "$pid_file" ] && daemon_pid=$(cat "$pid_file")   # lib.sh's cleanup stops it
expect_eq "$code" 1 "exit code of setup while podman is missing"
expect_contains "$out" "changed: $user_config/containers/storage.conf"
expect_eq "$(cat "$user_config/containers/storage.conf")" $'[storage]\ndriver = "overlay"'
expect_contains "$out" "handlerd started"
[ -n "$daemon_pid" ] || fail "no pid file at $pid_file after setup: $out"
as_user "$bin" status >/dev/null || fail "handlerd started by setup does not answer"

code=0; again=$(as_user "$bin" setup 2>&1) || code=$?
expect_eq "$code" 1 "exit code of the second setup"
case "$again" in *"changed:"*) fail "the second setup changed something: $again" ;; esac
expect_contains "$again" "handlerd is running"
[ "$(cat "$pid_file")" = "$daemon_pid" ] || fail "the second setup started another handlerd"
pass
