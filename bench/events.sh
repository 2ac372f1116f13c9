#!/usr/bin/env bash
# A harness's output to the editor's session/update, through Handler and directly, side by
# side: p50/p99 latency per streamed chunk at 1 and at 50 concurrent conversations, each
# streaming at once, and handlerd's CPU per 1,000 events it stored.
# Target (issue 16): p99 <= 20 ms at 50 conversations, and p50 at most 1.2x the direct
# adapter's.
#
#   handler: N conversations of the claude-code harness in rootless podman, each driven
#            through `handler acp` by the official ACP client SDK (events/client.mjs):
#            Claude Code's stream-json -> shim -> handlerd (parser, event store) -> the
#            events WebSocket -> handler acp -> session/update.
#   direct:  the same client on @agentclientprotocol/claude-agent-acp, Claude Code's own ACP
#            adapter, on the host, one adapter process per conversation as an editor starts
#            one: Claude Code's stream-json -> the adapter -> session/update.
# By default (HARNESS=claude-code) both sides run the same Claude Code binary (2.1.328, the
# version the image pins; npm's @anthropic-ai/claude-code, which the adapter is pointed at
# with CLAUDE_CODE_EXECUTABLE in place of its Agent SDK's own 2.1.318) against the same fake
# model server, the only fake. The server answers every prompt with CHUNKS text blocks,
# CHUNK_INTERVAL_MS apart, each carrying the CLOCK_MONOTONIC time it was written
# (fake_model_server.py --timed-chunks); the client takes the same clock when the SDK hands
# it the session/update. A chunk's latency is the difference. Measured from the model
# server's send, not from Claude Code's stdout (which only Handler's side could tap), which
# is fair because both sides pass through the same Claude Code binary and its stream-json
# in between, so the difference between the sides is what each does after Claude Code.
# Handler's side also goes through its egress proxy on the way in (the container reaches
# the model only through it, TLS intercepted); the direct side talks HTTPS to the server
# itself.
# Each block is one text content block: Claude Code (without --include-partial-messages, as
# the harness runs it) prints a text block as one `assistant` line when the block ends,
# while the adapter also gets the deltas; one-delta blocks make those the same moment.
#
# HARNESS=timed measures from the harness's own output instead, with no model and no Claude
# Code: both sides run bench/timed-harness/timed_claude.py ("timed claude"), which speaks
# Claude Code's stream-json (the control requests both readers send, system/init, and per
# prompt CHUNKS `assistant` blocks CHUNK_INTERVAL_MS apart, then a result), each block
# carrying the CLOCK_MONOTONIC time of the write(2) that prints it. Handler runs it in a
# container through the bench-only harness plugin timed-claude (bench/timed-harness, the
# claude-code harness's own stream-json parser; built by `ninja -C build timed_claude_plugin`,
# never installed; this script makes it a user plugin of its private handlerd); the
# adapter runs it as its CLAUDE_CODE_EXECUTABLE, and with --include-partial-messages it
# prints each block's stream events too, in the same write, as Claude Code does. No model
# server, no egress proxy traffic, no account.
#
#   bench/events.sh
#   CONVERSATIONS="1 50" ROUNDS=5 REPEATS=2 bench/events.sh
#   HARNESS=timed CONVERSATIONS="1 50" REPEATS=2 bench/events.sh
#
# Run it as a non-root user with rootless podman (the one whose containers and images it
# uses); the first session of the claude-code harness builds its image (minutes). handlerd
# runs in a private HOME with its own config and database; podman uses the user's own
# storage, so the base and harness images are kept between runs. Only the containers this
# run started are removed.
# Environment: HARNESS (claude-code, the default: real Claude Code against the fake model
# server; or timed), PREFIX (handler, handlerd, the shim and plugins in the install layout;
# default build/podman-tests/prefix, from the podman_test_prefix target), TIMED_PLUGIN
# (HARNESS=timed: the plugin's folder, default build/bench/plugins/timed-claude), CONVERSATIONS
# (default "1 50"), ROUNDS (measured prompts per conversation, default 5), WARMUP (prompts
# before them, default 1), CHUNKS (per answer, default 20), CHUNK_INTERVAL_MS (default 50),
# REPEATS (the whole sequence again, default 1), BENCH_CACHE (the npm install, default
# ~/.cache/handler-bench/events), KEEP_WORK (1: keep the run's folder, with the model
# server's request log and the agents' logs). Needs node >= 20 (claude-agent-acp declares 22;
# it runs on 20.20), npm, python3, openssl, podman.
# Exits non-zero only when a run broke (a chunk missing, an agent dead), never for a slow one.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
prefix=${PREFIX:-$here/build/podman-tests/prefix}
harness=${HARNESS:-claude-code}
timed_plugin=${TIMED_PLUGIN:-$here/build/bench/plugins/timed-claude}
timed_claude="$here/bench/timed-harness/timed_claude.py"
counts=${CONVERSATIONS:-1 50}
rounds=${ROUNDS:-5}
warmup=${WARMUP:-1}
chunks=${CHUNKS:-20}
interval_ms=${CHUNK_INTERVAL_MS:-50}
repeats=${REPEATS:-1}
cache=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/handler-bench/events}
fail() { echo "events.sh: $*" >&2; exit 1; }

[ "$(id -u)" -ne 0 ] || fail "run as a non-root user with rootless podman"
for program in node npm python3 openssl podman; do command -v "$program" >/dev/null || fail "$program is not on PATH"; done
[ -x "$prefix/bin/handlerd" ] && [ -x "$prefix/libexec/handler/handler-shim" ] ||
  fail "$prefix lacks handlerd or handler-shim; build the podman_test_prefix target (ninja -C build podman_test_prefix)"
podman info >/dev/null 2>&1 || fail "rootless podman does not work for $(id -un)"
case "$harness" in
  claude-code) ;;
  timed)
    [ -f "$timed_plugin/plugin.toml" ] ||
      fail "$timed_plugin lacks the timed-claude plugin; build it (ninja -C build timed_claude_plugin) or set TIMED_PLUGIN"
    [ -x "$timed_claude" ] || fail "$timed_claude is not an executable file" ;;
  *) fail "HARNESS is claude-code (the default: real Claude Code against the fake model) or timed, not '$harness'" ;;
esac
timed() { [ "$harness" = timed ]; }

# The client and the direct side's packages, pinned by events/package-lock.json, installed
# outside the repository; npm ci again only when the lock changed.
mkdir -p "$cache"
if ! cmp -s "$here/bench/events/package-lock.json" "$cache/package-lock.json" || [ ! -d "$cache/node_modules" ]; then
  cp "$here/bench/events/package.json" "$here/bench/events/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) >&2 || fail "npm ci in $cache failed"
fi
cp "$here/bench/events/client.mjs" "$cache/" # beside its node_modules
adapter="$cache/node_modules/.bin/claude-agent-acp"
if timed; then
  claude=$timed_claude
  harness_title="timed-claude (Claude Code's stream-json, no model; bench/timed-harness)"
else
  claude="$cache/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
  harness_title="Claude Code $("$claude" --version | cut -d' ' -f1)"
fi

remember_podman_folders
containers_before=$(podman ps -aq --filter label=io.handler.managed=1 | sort)
work=$(mktemp -d "$HOME/handler-bench-events-XXXXXX")
model_pid=""
cleanup() {
  local code=$?
  [ -z "$model_pid" ] || kill "$model_pid" 2>/dev/null || true
  end_private_handler "$work" "$containers_before" "$code"
  exit $code
}
trap cleanup EXIT

use_private_handler_home "$work" "$prefix"

# The real harness: handlerd reaches the fake model server for api.anthropic.com.
start_with_model() {
  # A test CA and one certificate for the model server: api.anthropic.com for the container
  # (handlerd's [network] resolve sends it here), localhost for the direct side.
  pki="$work/pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Bench CA" \
      -keyout ca.key -out ca.crt
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.anthropic.com" -keyout server.key -out server.csr
    printf 'subjectAltName=DNS:api.anthropic.com,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.crt
  ) >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; fail "could not make the test certificates"; }

  python3 "$here/tests/support/fake_model_server.py" --log "$work/model.log" --file "$work/unused" \
    --timed-chunks "$chunks" --stream-delay "$(awk -v ms="$interval_ms" 'BEGIN { print ms / 1000 }')" \
    --tls "$pki/server.crt" "$pki/server.key" >"$work/model.port" 2>"$work/model.err" &
  model_pid=$!
  for _ in $(seq 1 50); do [ -s "$work/model.port" ] && break; sleep 0.1; done
  read -r model_port < "$work/model.port" || fail "the model server did not start: $(cat "$work/model.err")"

  cat > "$XDG_CONFIG_HOME/handler/config.toml" <<TOML
format = 2
[api]
tcp = false
[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:$model_port" }
TOML
  # handlerd verifies the model's certificate against the system store: here the test CA.
  SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start"
}

# The timed stand-in: no model and no network, it answers by itself. Its plugin is a user
# plugin of this handlerd only.
start_with_timed_claude() {
  printf 'format = 2\n[api]\ntcp = false\n' > "$XDG_CONFIG_HOME/handler/config.toml"
  mkdir -p "$XDG_DATA_HOME/handler/plugins"
  cp -r "$timed_plugin" "$XDG_DATA_HOME/handler/plugins/timed-claude"
  handlerd --detach >/dev/null || fail "handlerd did not start"
}

if timed; then start_with_timed_claude; else start_with_model; fi
daemon_pid=$(cat "$XDG_RUNTIME_DIR/handler/handlerd.pid")
handler setup >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "handler setup failed"; }
project="$work/project"
mkdir -p "$project"
stand_in="sk-ant-api03-$(openssl rand -hex 40)"
handler project add "$project" >/dev/null
if timed; then
  # Its pace, read from the working folder on both sides (timed_claude.py).
  printf '{"chunks": %s, "interval_ms": %s}\n' "$chunks" "$interval_ms" > "$project/timed-claude.json"
  (cd "$project" && handler agent add claude --harness timed-claude >/dev/null)
else
  printf '%s\n' "$stand_in" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
  (cd "$project" && handler agent add claude --harness claude-code --account anthropic >/dev/null)
fi
# One headless run first: the first session of the harness builds its image (minutes), and
# a broken setup shows here rather than as a timeout.
echo "preparing: a first $harness session (builds the harness image the first time)" >&2
(cd "$project" && timeout 1800 handler run claude -p "warm up" >"$work/warmup.out" 2>&1) ||
  { tail -n 20 "$work/warmup.out" >&2; fail "the first $harness session failed"; }
grep -q 't=' "$work/warmup.out" || { cat "$work/warmup.out" >&2; fail "the first session's answer lacks the timed chunks"; }

# The direct side's Claude Code gets what the harness gives it in the container: the same
# switches, a key, and a HOME of its own.
direct_home="$work/direct-home"
mkdir -p "$direct_home"
direct_env=(env HOME="$direct_home" XDG_CONFIG_HOME="$direct_home/.config" ANTHROPIC_API_KEY="$stand_in"
  CLAUDE_CODE_EXECUTABLE="$claude" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
  DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1)
timed || direct_env+=(ANTHROPIC_BASE_URL="https://localhost:$model_port" NODE_EXTRA_CA_CERTS="$pki/ca.crt"
  SSL_CERT_FILE="$pki/ca.crt")
# The stand-in is a python3 script: its processes are told apart by their command line
# (in the container /usr/local/bin/timed-claude, here timed_claude.py).
harness_processes=()
timed && harness_processes=(--harness-cmdline '^(\S*/)?python3 (\S*/)?(timed-claude|timed_claude\.py)( |$)')

# run_side SIDE N REPEAT: one client run; its result line goes to $work/results.
run_side() {
  local side=$1 n=$2 repeat=$3 line agent extra=()
  if [ "$side" = handler ]; then
    agent='["'"$prefix"'/bin/handler","acp","--agent","claude"]'
    extra=(--daemon-pid "$daemon_pid" --events-json '["'"$prefix"'/bin/handler","session","events"]')
  else
    # The adapter has Claude Code ask the model for a suggested next prompt after every
    # turn (a request with tools, which the fake model answers with another streamed
    # answer); Handler's harness asks for none, so it is off here: both sides do the same work.
    agent='["'"$adapter"'"]'
    extra=(--session-meta '{"claudeCode":{"options":{"promptSuggestions":false}}}')
  fi
  echo "measuring: $side, $n conversation(s), repeat $repeat" >&2
  local command=(node "$cache/client.mjs" --label "$side" --conversations "$n" --rounds "$rounds" --warmup "$warmup"
    --chunks "$chunks" --cwd "$project" --agent-json "$agent" --logs "$work/$side-$n-$repeat" "${extra[@]}"
    "${harness_processes[@]}")
  if [ "$side" = direct ]; then command=("${direct_env[@]}" "${command[@]}"); fi
  line=$("${command[@]}") || fail "the $side run with $n conversation(s) broke (agent logs in $work/$side-$n-$repeat.*.log)"
  echo "  $line" >&2
  echo "$side $n $repeat $line" >> "$work/results"
  if [ "$side" = handler ]; then
    # Its conversations stop, and their containers go, before the next run starts.
    handler session list --json | python3 -c 'import json,sys; print("\n".join(s["id"] for s in json.load(sys.stdin) if s.get("state") != "ended"))' |
      xargs -r -n1 handler session stop >/dev/null 2>&1 || true
    comm -13 <(printf '%s\n' "$containers_before") <(podman ps -aq --filter label=io.handler.managed=1 | sort) |
      xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
  fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for repeat in $(seq 1 "$repeats"); do
  for n in $counts; do
    run_side handler "$n" "$repeat"
    run_side direct "$n" "$repeat"
  done
done

field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
per_thousand() { awk -v ms="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", ms * 1000 / n; else print "-" }'; }
echo
echo "Harness output to the editor's session/update: $harness_title, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)," \
  "load average before: $load_before"
echo "$chunks chunks per answer, ${interval_ms} ms apart; $rounds measured prompts per conversation after $warmup warm-up;" \
  "all conversations prompted at once each round"
row() { printf '%-8s %5s %3s %8s %8s %8s %7s %7s %9s %9s %9s %6s %6s %6s %6s %8s   %s\n' "$@"; }
row side convs rep p50_ms p99_ms max_ms chunks events hd_cpu_ms hd/1000ev ad/1000up claude reaped busy other round_ms \
  "handler/direct p50 p99"
cores() { awk -v ms="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f", ms / 1000 / s; else print "-" }'; }
# The middle of a list of numbers (the rounds' durations).
middle() { tr ',' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
while read -r side n repeat line; do
  if [ "$side" = handler ]; then
    events=$(field events "$line") daemon_ms=$(field daemon_cpu_ms "$line")
    direct_line=$(awk -v n="$n" -v r="$repeat" '$1 == "direct" && $2 == n && $3 == r { $1 = $2 = $3 = ""; print }' "$work/results")
    ratios="$(ratio "$(field p50_ms "$line")" "$(field p50_ms "$direct_line")") $(ratio "$(field p99_ms "$line")" "$(field p99_ms "$direct_line")")"
    per_event=$(per_thousand "$daemon_ms" "$events")
  else
    events="-" daemon_ms="-" per_event="-" ratios=""
  fi
  row "$side" "$n" "$repeat" "$(field p50_ms "$line")" "$(field p99_ms "$line")" "$(field max_ms "$line")" \
    "$(field samples "$line")" "$events" "$daemon_ms" "$per_event" \
    "$(per_thousand "$(field agents_cpu_ms "$line")" "$(field updates "$line")")" \
    "$(cores "$(field claude_cpu_ms "$line")" "$(field window_s "$line")")" \
    "$(cores "$(field reaped_cpu_ms "$line")" "$(field window_s "$line")")" "$(field busy_cores "$line")" \
    "$(field other_cores "$line")" "$(field round_ms "$line" | middle)" "$ratios"
done < "$work/results"
echo
if timed; then
  proxy_note="no model traffic, so its egress proxy idles" harness_note="the timed-claude processes"
  to_handlerd="the harness's write, the shim and the parser"
else
  proxy_note="its egress proxy included" harness_note="the Claude Code processes"
  to_handlerd="the proxy, Claude Code, the shim and the parser"
fi
echo "chunks: timed chunks measured (every one sent arrived); events: what handlerd stored meanwhile"
echo "(GET /api/v1/sessions/ID/events); hd_cpu_ms: handlerd's CPU (utime+stime, $proxy_note)"
echo "over the measured prompts, hd/1000ev per 1,000 of those events; ad/1000up: the CPU of the processes the"
echo "editor spawned (handler acp, or claude-agent-acp without the harness it runs) per 1,000 session/updates;"
echo "claude: the cores $harness_note used meanwhile (the same program on both sides); reaped: the"
echo "cores of the short-lived programs the editor's agents and handlerd ran and waited for (claude-agent-acp"
echo "runs \`claude auth status\` and \`git worktree list\` for every prompt); busy: the"
echo "cores the whole machine kept busy (of $(nproc)); other: of those, what was not this user's processes (other"
echo "users' work, kernel threads), which on two cores comes out of the numbers; round_ms: the median time until"
echo "all conversations of a round had answered, $((chunks * interval_ms - interval_ms)) ms when nothing waits for CPU."
echo
echo "Handler's side split where handlerd stores each event (its wall-clock millisecond, so about 1 ms each way):"
echo "to handlerd = $to_handlerd; from handlerd = the store, the events WebSocket,"
echo "handler acp and the SDK"
printf '  %5s %3s %16s %16s %18s %18s\n' convs rep to_hd_p50_ms to_hd_p99_ms from_hd_p50_ms from_hd_p99_ms
while read -r side n repeat line; do
  [ "$side" = handler ] || continue
  printf '  %5s %3s %16s %16s %18s %18s\n' "$n" "$repeat" "$(field to_handlerd_p50_ms "$line")" \
    "$(field to_handlerd_p99_ms "$line")" "$(field from_handlerd_p50_ms "$line")" "$(field from_handlerd_p99_ms "$line")"
done < "$work/results"
largest=$(printf '%s\n' $counts | sort -n | tail -1)
echo
echo "Targets at $largest conversation(s), per repeat:"
while read -r side n repeat line; do
  [ "$side" = handler ] && [ "$n" = "$largest" ] || continue
  direct_line=$(awk -v n="$n" -v r="$repeat" '$1 == "direct" && $2 == n && $3 == r { $1 = $2 = $3 = ""; print }' "$work/results")
  p99=$(field p99_ms "$line") p50=$(field p50_ms "$line") direct_p50=$(field p50_ms "$direct_line")
  awk -v p99="$p99" -v p50="$p50" -v d="$direct_p50" -v r="$repeat" 'BEGIN {
    printf "  repeat %s: p99 %.2f ms (<= 20 ms: %s); p50 %.2f ms vs direct %.2f ms = %.2fx (<= 1.2x: %s)\n",
      r, p99, (p99 <= 20) ? "meets" : "MISSES", p50, d, (d > 0) ? p50 / d : 0, (d > 0 && p50 / d <= 1.2) ? "meets" : "MISSES" }'
done < "$work/results"
