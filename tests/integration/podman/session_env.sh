# Sourced by the podman tests that run the real handlerd (sessions.sh, network.sh): a
# private HOME with its own podman storage, the test image, a config.toml, and helpers.
# Set test_name and, optionally, extra_config (more TOML) before sourcing, and
# use_base_image=1 for sessions on the real base image (`handler setup` builds it) rather
# than the busybox test image, and shared_images=1 to keep images in the account's own
# podman storage when HANDLER_TEST_SHARED_IMAGES=1 (scripts/test.sh sets it for its fresh
# CI user, so podman.harnesses builds the base and harness images as a new user would and
# podman.browser's page tests start sessions on them without building them again).
here=$(cd "$(dirname "$0")" && pwd)
prefix="$here/prefix"
image=localhost/handler-test-busybox:latest
fail() { echo "FAIL ($test_name): $*" >&2; exit 1; }
[ "$(id -u)" -ne 0 ] || fail "run as a non-root user (scripts/test.sh runs the podman tests as handler-ci)"
[ -x "$prefix/bin/handlerd" ] && [ -x "$prefix/libexec/handler/handler-shim" ] ||
  fail "$prefix lacks handlerd or handler-shim; build the podman_test_prefix target"

real_home=$HOME
real_runtime=${XDG_RUNTIME_DIR:-}
work=$(mktemp -d "$real_home/handler-it-sessions-XXXXXX")
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share"
export XDG_RUNTIME_DIR="$work/run" PATH="$prefix/bin:$PATH"
mkdir -p "$HOME/.config" "$XDG_DATA_HOME" && install -d -m 0700 "$XDG_RUNTIME_DIR"
# The account's podman settings (runc, storage driver) apply here too; the storage itself
# is private to this test.
[ -d "$real_home/.config/containers" ] && cp -r "$real_home/.config/containers" "$HOME/.config/"
if [ "${shared_images:-0}" = 1 ] && [ "${HANDLER_TEST_SHARED_IMAGES:-0}" = 1 ]; then
  [ -n "$real_runtime" ] || fail "HANDLER_TEST_SHARED_IMAGES=1 needs the account's XDG_RUNTIME_DIR"
  mkdir -p "$HOME/.config/containers"
  # The graph and run roots would otherwise follow the XDG folders into the private HOME.
  printf '[storage]\ndriver = "%s"\ngraphroot = "%s"\nrunroot = "%s"\n' \
    "$(sed -n 's/^driver *= *"\(.*\)"/\1/p' "$real_home/.config/containers/storage.conf" 2>/dev/null | head -n 1 | grep . || echo overlay)" \
    "$real_home/.local/share/containers/storage" "$real_runtime/containers" > "$HOME/.config/containers/storage.conf"
fi

log="$XDG_DATA_HOME/handler/handlerd.log"
pid_file="$XDG_RUNTIME_DIR/handler/handlerd.pid"
kill_handlerd() { # SIGNAL
  local pid
  pid=$(cat "$pid_file" 2>/dev/null) || return 0
  kill "-$1" "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}
model_pids=() # the fake model providers (start_model_server), stopped at the end
cleanup() {
  local code=$?
  [ ${#model_pids[@]} -eq 0 ] || kill "${model_pids[@]}" 2>/dev/null || true
  if [ $code -ne 0 ]; then
    echo "--- handlerd.log" >&2; tail -n 40 "$log" >&2 2>/dev/null || true
    echo "--- podman ps -a" >&2; podman ps -a >&2 2>/dev/null || true
  fi
  kill_handlerd TERM
  podman ps -aq --filter label=io.handler.managed=1 | xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
  # Rootless podman keeps a pause process for this private XDG_RUNTIME_DIR (its user
  # namespace), needed by the rm below and by nothing once the folder is gone.
  local pause
  pause=$(cat "$XDG_RUNTIME_DIR/libpod/tmp/pause.pid" 2>/dev/null || true)
  # Image layers belong to subordinate ids; only inside the user namespace can they go.
  podman unshare rm -rf "$work" 2>/dev/null || rm -rf "$work" 2>/dev/null || true
  [ -z "$pause" ] || kill "$pause" 2>/dev/null || true
  exit $code
}
trap cleanup EXIT

podman info >/dev/null 2>&1 || { podman info >&2 || true; fail "rootless podman does not work for $(id -un)"; }
if [ "${use_base_image:-0}" = 1 ]; then
  image_line=""
else
  bash "$here/make_test_image.sh" "$image" >/dev/null || fail "could not build the test image"
  image_line="image = \"$image\""
fi

mkdir -p "$XDG_CONFIG_HOME/handler"
cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[api]
tcp = true
port = 0
[sessions]
$image_line
${extra_config:-}
TOML

# start_upstream LOG COMMAND...: a loopback upstream that prints "port N" into LOG; sets
# http_pid and port, and ends it with the test.
start_upstream() {
  local log=$1
  shift
  : >"$log" # there before the loop below reads it
  "$@" >>"$log" 2>&1 &
  http_pid=$!
  trap 'status=$?; set +e; kill $http_pid 2>/dev/null; (exit $status); cleanup' EXIT
  port=""
  for _ in $(seq 1 50); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "the upstream did not start: $(cat "$log")"
}
state_of() { handler session list --json | python3 -c "import json,sys; print(next(s['$2'] for s in json.load(sys.stdin) if s['id']=='$1'))"; }
wait_state() { # ID STATE [TENTHS OF A SECOND, default 100]
  for _ in $(seq 1 "${3:-100}"); do
    [ "$(state_of "$1" state)" = "$2" ] && return 0
    sleep 0.1
  done
  fail "session $1 did not reach state $2 (it is $(state_of "$1" state))"
}

# A "public" CA and a certificate from it for each HOST, as real upstreams have: make_pki
# DIR HOST... writes DIR/ca.crt, and DIR/HOST.crt and DIR/HOST.key per host.
make_pki() {
  local dir=$1 host
  shift
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Test Public CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  for host in "$@"; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
      -keyout "$dir/$host.key" -out "$dir/$host.csr" 2>/dev/null
    printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$host" > "$dir/$host.ext"
    openssl x509 -req -in "$dir/$host.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
      -extfile "$dir/$host.ext" -out "$dir/$host.crt" 2>/dev/null
  done
}

# A fake model provider for HOST (tests/support/fake_model_server.py, HTTPS with HOST's
# certificate from make_pki in $pki; its log in $work/HOST.log; held while $work/hold
# exists): its tool call writes $model_content into $project/hello.txt, its answer is
# $model_answer (with $model_command set, a Claude Code's tool call is that Bash command
# instead). Its port replaces PLACEHOLDER in config.toml. start_model_server HOST PLACEHOLDER
model_content=hi
model_command=
model_answer="Done: wrote hello.txt"
start_model_server() { # HOST PLACEHOLDER [PORT]: PORT given, on that port (config.toml has it)
  python3 "$here/fake_model_server.py" --log "$work/$1.log" --file "$project/hello.txt" --content "$model_content" \
    --answer "$model_answer" --hold "$work/hold" --tls "$pki/$1.crt" "$pki/$1.key" ${3:+--port "$3"} \
    ${model_command:+--command "$model_command"} \
    >"$work/$1.port" 2>"$work/$1.err" &
  local server=$! port
  model_pids+=("$server")
  echo "$server" > "$work/$1.pid"
  # Up to 30 s while it lives: on a machine busy with a build (CI's sanitizer build runs
  # meanwhile) Python with its ssl module can take more than a few seconds to listen.
  for _ in $(seq 1 300); do
    [ -s "$work/$1.port" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  read -r port < "$work/$1.port" || fail "the model server for $1 did not start: $(cat "$work/$1.err")"
  [ -n "${3:-}" ] || sed -i "s/$2/$port/" "$XDG_CONFIG_HOME/handler/config.toml"
}
# restart_model_server HOST: HOST's provider again, on its port, with $model_content and
# $model_answer as they are now (its log goes on).
restart_model_server() {
  local port pid
  read -r port < "$work/$1.port"
  pid=$(cat "$work/$1.pid")
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  start_model_server "$1" "" "$port"
}
