#!/usr/bin/env bash
# The soak (issue 18): DURATION seconds (default 600) at RATE requests a second (default
# 500) through one real session's egress proxy, a mix of tunnels and intercepted requests
# with the key swapped in, while the agent's allow-list is edited every second. It passes
# with 0 unexpected errors, every refusal and every admission the one the policy at that
# instant demands, the real key at the upstream for every intercepted request (and never
# in the container), and handlerd's RSS flat: at most +RSS_LIMIT_MIB (5) MiB from the end
# of the warm-up to the end of the load. Not in CI.
#
#   bench/soak.sh                              # the full run: 10 minutes
#   DURATION=60 bench/soak.sh                  # a trial
#
# What runs, all on this machine:
#   - handlerd (PREFIX: the podman_test_prefix build), in a private HOME with its own
#     config and database, on the user's rootless podman storage;
#   - two upstreams (bench/proxy/bench_upstream, HTTPS with a test CA that handlerd
#     trusts through SSL_CERT_FILE): "api.anthropic.com", the key's host, which answers
#     401 unless it gets the REAL key and quotes the key it got (GET /echo-key); and one
#     plain TLS host under two names, tunnel.test (always allowed) and toggle.test (the
#     one the editor toggles). [network] resolve maps all three to 127.0.0.1;
#   - an agent of the shell harness on an anthropic-api-key account (so the session holds
#     a stand-in in ANTHROPIC_API_KEY), allowed tunnel.test:PORT and toggle.test:PORT;
#   - soak/toggle.py: every TOGGLE_PERIOD (1) seconds `handler agent edit soak --disallow
#     toggle.test:PORT`, then `--allow`, and so on, each edit's start and acknowledgement
#     timed on CLOCK_MONOTONIC;
#   - one session (`handler run soak -p`, the busybox test image) whose container runs
#     soak/soak_load.cpp (static) against its HTTPS_PROXY (127.0.0.1:3128, the shim's
#     port leased to handlerd's proxy): intercepted requests to api.anthropic.com on
#     keep-alive connections, requests through keep-alive tunnels to tunnel.test, and to
#     toggle.test on a new connection each and on keep-alive tunnels (MIX);
#   - a sampler of handlerd's VmRSS (and RssAnon, RssFile) every RSS_INTERVAL (2) seconds;
#   - soak/analyze.py, which judges every request against the allow-list's state at that
#     instant (a WINDOW_MS, 50, of slack around each edit) and prints the summary.
#
# Build first (as the user that builds): ninja -C build podman_test_prefix soak_load bench_upstream
# Run as a non-root user with rootless podman, e.g.
#   su hsoak -c 'XDG_RUNTIME_DIR=/tmp/hsoak-runtime-1002 bench/soak.sh'
# Environment: DURATION (600), RATE (500), WARMUP (seconds of load before the RSS baseline:
# 60, or a fifth of a shorter DURATION), MIX (intercept=4,tunnel=3,toggle-new=2,toggle-kept=1),
# WORKERS (keep-alive connections per kind, 8), TOGGLE_PERIOD (1), WINDOW_MS (50),
# RSS_INTERVAL (2), RSS_LIMIT_MIB (5), PREFIX (build/podman-tests/prefix), BENCH_BIN
# (build/bench), KEEP_WORK=1 (keep the run's folder: records, edits, samples, logs).
# Exit status: 0 when it passed, 1 when it failed, 2 when it could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
prefix=${PREFIX:-$here/build/podman-tests/prefix}
bench_bin=${BENCH_BIN:-$here/build/bench}
duration=${DURATION:-600}
rate=${RATE:-500}
warmup=${WARMUP:-$(( duration >= 300 ? 60 : duration / 5 ))}
mix=${MIX:-intercept=4,tunnel=3,toggle-new=2,toggle-kept=1}
workers=${WORKERS:-8}
period=${TOGGLE_PERIOD:-1}
window_ms=${WINDOW_MS:-50}
rss_interval=${RSS_INTERVAL:-2}
rss_limit=${RSS_LIMIT_MIB:-5}
image=localhost/handler-test-busybox:latest
fail() { echo "soak.sh: $*" >&2; exit 2; }

[ "$(id -u)" -ne 0 ] || fail "run as a non-root user with rootless podman"
for program in python3 openssl podman; do command -v "$program" >/dev/null || fail "$program is not on PATH"; done
[ -x "$prefix/bin/handlerd" ] && [ -x "$prefix/libexec/handler/handler-shim" ] ||
  fail "$prefix lacks handlerd or handler-shim; build the podman_test_prefix target (ninja -C build podman_test_prefix)"
for program in soak_load bench_upstream; do
  [ -x "$bench_bin/$program" ] || fail "$bench_bin/$program is missing; build it (ninja -C build soak_load bench_upstream)"
done
[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || fail "DURATION is whole seconds, not '$duration'"
podman info >/dev/null 2>&1 || fail "rootless podman does not work for $(id -un)"
remember_podman_folders
# The session's image: busybox and nothing else is needed, soak_load being static.
bash "$here/tests/integration/podman/make_test_image.sh" "$image" >/dev/null || fail "could not build the test image $image"

containers_before=$(podman ps -aq --filter label=io.handler.managed=1 | sort)
work=$(mktemp -d "$HOME/handler-bench-soak-XXXXXX")
pids=()
cleanup() {
  local code=$?
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  if [ -s "$work/run/handler/handlerd.pid" ]; then kill "$(cat "$work/run/handler/handlerd.pid")" 2>/dev/null || true; fi
  end_private_podman "$work" "$containers_before"
  if [ $code -ne 0 ] || [ "${KEEP_WORK:-0}" = 1 ]; then
    [ $code -eq 0 ] || { echo "--- handlerd.log (last lines)" >&2; tail -n 20 "$work/home/.local/share/handler/handlerd.log" >&2 2>/dev/null || true; }
    echo "(the run's folder is kept: $work)" >&2
  else
    rm -rf "$work"
  fi
  exit $code
}
trap cleanup EXIT

use_private_handler_home "$work" "$prefix"

# The test CA the upstreams' certificates come from ("public": handlerd verifies them).
pki="$work/pki"
mkdir -p "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Soak CA" -keyout ca.key -out ca.crt
  for leaf in "key api.anthropic.com" "tunnel tunnel.test toggle.test"; do
    read -r name first others <<<"$leaf"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$first" -keyout "$name.key" -out "$name.csr"
    san="DNS:$first"
    for other in $others; do san="$san,DNS:$other"; done
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$name.ext" -out "$name.crt"
  done
) >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; fail "could not make the test certificates"; }

# Four free loopback ports (each upstream wants a plain one too, unused here).
read -r key_http key_https tunnel_http tunnel_https < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(4)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in sockets])')
# Same shape as an Anthropic key.
real_key="sk-ant-api03-$(openssl rand -base64 120 | tr -dc 'A-Za-z0-9' | head -c 93)AA"

"$bench_bin/bench_upstream" --http-port "$key_http" --https-port "$key_https" --cert "$pki/key.crt" \
  --key "$pki/key.key" --expect-key "$real_key" --report "$work/key.report" >"$work/key-upstream.log" 2>&1 &
key_upstream=$!
"$bench_bin/bench_upstream" --http-port "$tunnel_http" --https-port "$tunnel_https" --cert "$pki/tunnel.crt" \
  --key "$pki/tunnel.key" --report "$work/tunnel.report" >"$work/tunnel-upstream.log" 2>&1 &
tunnel_upstream=$!
pids+=("$key_upstream" "$tunnel_upstream")
for port in "$key_https" "$tunnel_https"; do
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "an upstream did not listen on $port: $(cat "$work"/*-upstream.log)"
done

cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[api]
tcp = false
[sessions]
image = "$image"
[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:$key_https", "tunnel.test" = "127.0.0.1", "toggle.test" = "127.0.0.1" }
TOML
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start"
handlerd_pid=$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid")
log="$XDG_DATA_HOME/handler/handlerd.log"

printf '%s\n' "$real_key" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
project="$work/project"
mkdir -p "$project"
handler project add "$project" >/dev/null
cd "$project"
toggled="toggle.test:$tunnel_https"
handler agent add soak --harness shell --account anthropic --allow "tunnel.test:$tunnel_https" --allow "$toggled" >/dev/null
cp "$bench_bin/soak_load" "$pki/ca.crt" "$project/"

mono_us() { python3 -c 'import time; print(time.monotonic_ns() // 1000)'; }
ticks() { awk '{ print $14 + $15 }' "/proc/$handlerd_pid/stat"; }
python3 -c '
import sys, time
pid, interval, out = sys.argv[1], float(sys.argv[2]), open(sys.argv[3], "w", buffering=1)
while True:
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split()[:2] for line in status if line.startswith(("VmRSS:", "RssAnon:", "RssFile:")))
        kib = [fields["VmRSS:"], fields["RssAnon:"], fields["RssFile:"]]
    except (OSError, KeyError):
        break
    out.write(" ".join([str(time.monotonic_ns() // 1000)] + kib) + "\n")
    time.sleep(interval)' "$handlerd_pid" "$rss_interval" "$work/rss" &
pids+=($!)
# A sampler that died would only show after the whole run.
for _ in $(seq 1 100); do [ -s "$work/rss" ] && break; sleep 0.1; done
[ -s "$work/rss" ] || fail "the RSS sampler wrote nothing"
python3 "$here/bench/soak/toggle.py" soak "$toggled" "$work/changes" "$period" 2>"$work/toggle.err" &
toggler=$!
pids+=("$toggler")

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "soak: ${duration}s at ${rate}/s (mix $mix), $toggled toggled every ${period}s; handlerd pid $handlerd_pid;" \
  "load average before: $load_before" >&2
ticks_before=$(ticks)
started=$(mono_us)
set +e
handler run soak -p "./soak_load --records records --rate $rate --duration-s $duration --mix $mix --workers $workers \
  --key-host api.anthropic.com:443 --tunnel-host tunnel.test:$tunnel_https --toggle-host $toggled --upstream-ca ca.crt" \
  >"$work/session.out" 2>&1
session_status=$?
set -e
ended=$(mono_us)
ticks_after=$(ticks)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill -TERM "$toggler" && wait "$toggler" || true
kill -TERM "$key_upstream" "$tunnel_upstream" && wait "$key_upstream" "$tunnel_upstream" || true
cat "$work/session.out"
[ -s "$project/records" ] || fail "the session wrote no records (it exited $session_status)"

echo
echo "Soak of the egress proxy, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); load average before $load_before, after $load_after"
echo "handlerd CPU over the session: $(( (ticks_after - ticks_before) * 10 )) ms in $(( (ended - started) / 1000 )) ms" \
  "($(awk -v t=$(( ticks_after - ticks_before )) -v ms=$(( (ended - started) / 1000 )) 'BEGIN { printf "%.2f", t * 10 / ms }') cores)"
status=0
python3 "$here/bench/soak/analyze.py" --records "$project/records" --changes "$work/changes" --rss "$work/rss" \
  --key-report "$work/key.report" --tunnel-report "$work/tunnel.report" --rate "$rate" --duration-s "$duration" \
  --window-ms "$window_ms" --warmup-s "$warmup" --rss-limit-mib "$rss_limit" \
  --host-interval "$started" "$ended" || status=1
[ "$session_status" -eq 0 ] || { echo "the session exited $session_status"; status=1; }
if grep -rqF "$real_key" "$project" "$log"; then echo "the real key is in the container's folder or handlerd's log"; status=1; fi
[ ! -s "$work/toggle.err" ] || { echo "allow-list edits failed:"; head -n 5 "$work/toggle.err"; }
exit $status
