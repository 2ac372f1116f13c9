#!/usr/bin/env bash
# The web page in a real browser against a real handlerd on loopback (issue 17's
# benchmarks): the time to an interactive sessions page; the bytes of the first load,
# gzipped (target <= 500 KiB); the time a conversation of 10,000 events takes to open and to
# scroll to its top, beside the page before it paged (PEER); and the delay from a harness's
# event to its paint, p99, while 50 conversations stream (target <= 50 ms).
#
# What is real: handlerd (this prefix's), its page (share/handler/ui, as handlerd serves it),
# rootless podman with one container per conversation, the shim, the claude-code harness's
# stream-json parser, the event store, the events WebSocket, and Debian's chromium headless
# (playwright-core drives it; nothing else is in between).
# What is not: the agent. Each container runs bench/timed-harness/timed_claude.py (the
# bench-only harness plugin timed-claude) in place of Claude Code: it prints Claude Code's
# stream-json for each prompt, CHUNKS text blocks CHUNK_INTERVAL_MS apart, each carrying the
# wall-clock time of the write(2) that prints it, so a chunk's delay starts at the harness's
# output, exactly where the events take handlerd's real path. No model, no egress traffic.
# The conversation of 10,000 events is made the same way, turns until there are EVENTS
# events, each turn LONG_TOOLS Bash tool calls (a tool_use and its tool_result each: a
# tool_call and a tool_call_update event) and then LONG_CHUNKS text blocks, with no pause:
# prompts, tool calls, streamed answers and turn ends, as a working session has them.
# The peer: the page of PEER (a commit; default the one before paging, which loaded every
# event from seq 0 and drew the last 300 items) and this page, each built from source and
# served by ui/dev/serve.mjs, which forwards the API to the same handlerd: the same way in
# for both, so their ratio is the page's own. The figures against the targets are from
# handlerd's own serving.
# How each is taken (bench/ui/measure.mjs):
#   sessions page: a fresh browser context (no cache) opens the login URL; from navigation
#     start until the list shows every session and a task queued then has run. Median of
#     REPEATS. Bytes: every HTTP response of that load as it came over the wire (CDP's
#     encodedDataLength: headers and gzipped bodies), the API's JSON included.
#   open: from setting the hash to the conversation until its last event's item is drawn and
#     the frame after it painted. To the top: scrollTop = 0 every frame until the first
#     event is drawn at the top (for the peer, its "Show earlier" button is clicked whenever
#     a scroll brought nothing new, as a reader would). Median of REPEATS.
#   event to paint: one tab shows the first of the CONVERSATIONS streaming ones while all
#     are prompted at once, ROUNDS times; each chunk's delay is from the write in its text
#     to the paint of the frame that first shows it (a message posted from the DOM change,
#     which the page makes in an animation frame, runs after that frame's paint; the page's
#     wall clock and the container's are the host's). It is split at the `at` handlerd stored the event with
#     (its wall-clock millisecond) and at the moment the page's events WebSocket got it (a
#     listener of the bench's, added before the page's own by an init script).
#
#   bench/ui.sh
#   EVENTS=10000 CONVERSATIONS=50 ROUNDS=5 CHUNKS=40 REPEATS=3 bench/ui.sh
#
# Run it as a non-root user with rootless podman; handlerd runs in a private HOME (its own
# config and database) on the user's podman storage, so the base and timed-claude images are
# kept between runs. Environment: PREFIX (default build/podman-tests/prefix, the
# podman_test_prefix target), TIMED_PLUGIN (default build/bench/plugins/timed-claude, the
# timed_claude_plugin target), EVENTS (10000), LONG_TOOLS (20) and LONG_CHUNKS (20): a
# turn of the long conversation, CONVERSATIONS (50), ROUNDS (5), CHUNKS (40), CHUNK_INTERVAL_MS (50),
# REPEATS (3), PEER (a commit, or "none"), HANDLER_CHROMIUM (/usr/bin/chromium), BENCH_CACHE
# (~/.cache/handler-bench/ui), KEEP_WORK=1. Needs node >= 20, npm, podman, chromium, git.
# Exits non-zero only when a run broke, never for a figure that misses its target.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
prefix=${PREFIX:-$here/build/podman-tests/prefix}
timed_plugin=${TIMED_PLUGIN:-$here/build/bench/plugins/timed-claude}
events=${EVENTS:-10000}
long_chunks=${LONG_CHUNKS:-20}
long_tools=${LONG_TOOLS:-20}
conversations=${CONVERSATIONS:-50}
rounds=${ROUNDS:-5}
chunks=${CHUNKS:-40}
interval_ms=${CHUNK_INTERVAL_MS:-50}
repeats=${REPEATS:-3}
peer=${PEER:-1afcf5d}
chromium=${HANDLER_CHROMIUM:-/usr/bin/chromium}
cache=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/handler-bench/ui}
fail() { echo "ui.sh: $*" >&2; exit 1; }

[ "$(id -u)" -ne 0 ] || fail "run as a non-root user with rootless podman"
for program in node npm podman git; do command -v "$program" >/dev/null || fail "$program is not on PATH"; done
[ -x "$chromium" ] || fail "$chromium is not there; install Debian's chromium or set HANDLER_CHROMIUM"
[ -x "$prefix/bin/handlerd" ] && [ -d "$prefix/share/handler/ui" ] ||
  fail "$prefix lacks handlerd or the page; build the podman_test_prefix target (ninja -C build podman_test_prefix)"
[ -f "$timed_plugin/plugin.toml" ] ||
  fail "$timed_plugin lacks the timed-claude plugin; build it (ninja -C build timed_claude_plugin) or set TIMED_PLUGIN"
podman info >/dev/null 2>&1 || fail "rootless podman does not work for $(id -un)"
git_here() { git -c safe.directory='*' -C "$here" "$@"; }
if [ "$peer" != none ]; then
  peer_commit=$(git_here rev-parse --short "$peer^{commit}" 2>/dev/null) || fail "PEER '$peer' is not a commit of $here"
fi

# npm ci PACKAGE_DIR INTO: the pinned packages of a lock, installed outside the repository,
# again only when the lock changed.
npm_ci() {
  local from=$1 into=$2
  mkdir -p "$into"
  if ! cmp -s "$from/package-lock.json" "$into/package-lock.json" || [ ! -d "$into/node_modules" ]; then
    cp "$from/package.json" "$from/package-lock.json" "$into/"
    (cd "$into" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 || fail "npm ci in $into failed"
  fi
}
npm_ci "$here/tests/browser" "$cache/browser"
export HANDLER_PLAYWRIGHT="$cache/browser/node_modules/playwright-core/index.mjs" HANDLER_CHROMIUM="$chromium"

remember_podman_folders
containers_before=$(podman ps -aq --filter label=io.handler.managed=1 | sort)
work=$(mktemp -d "$HOME/handler-bench-ui-XXXXXX")
serve_pids=()
cleanup() {
  local code=$? pid
  for pid in "${serve_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  end_private_handler "$work" "$containers_before" "$code"
  exit $code
}
trap cleanup EXIT

use_private_handler_home "$work" "$prefix"
printf 'format = 2\n[api]\ntcp = true\nport = 0\n' > "$XDG_CONFIG_HOME/handler/config.toml"
mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$timed_plugin" "$XDG_DATA_HOME/handler/plugins/timed-claude"
handlerd --detach >/dev/null || fail "handlerd did not start"
handler setup >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "handler setup failed"; }
# Two projects, since the stand-in reads its pace from the project's folder when it starts.
for name in long stream; do
  mkdir -p "$work/$name"
  handler project add "$work/$name" >/dev/null
  (cd "$work/$name" && handler agent add timed --harness timed-claude >/dev/null)
done
printf '{"chunks": %s, "interval_ms": 0, "tools": %s}\n' "$long_chunks" "$long_tools" > "$work/long/timed-claude.json"
printf '{"chunks": %s, "interval_ms": %s}\n' "$chunks" "$interval_ms" > "$work/stream/timed-claude.json"
echo "preparing: a first timed-claude session (builds its image the first time)" >&2
(cd "$work/long" && timeout 1800 handler run timed -p "warm up" >"$work/warmup.out" 2>&1) ||
  { tail -n 20 "$work/warmup.out" >&2; fail "the first timed-claude session failed"; }
url=$(handler ui --print-url | tail -1)
api_port=$(sed -n 's|^http://127.0.0.1:\([0-9]*\)/.*|\1|p' <<<"$url")
[ -n "$api_port" ] || fail "no port in handler ui --print-url's '$url'"

# serve_page LABEL UI_DIR: that page built and served by ui/dev/serve.mjs against this
# handlerd; its login URL goes to $work/LABEL.url.
serve_page() {
  local label=$1 ui=$2 line
  npm_ci "$ui" "$cache/ui-$(sha256sum "$ui/package-lock.json" | cut -c1-12)"
  ln -sfn "$cache/ui-$(sha256sum "$ui/package-lock.json" | cut -c1-12)/node_modules" "$ui/node_modules"
  node "$ui/dev/serve.mjs" --port 0 --api-port "$api_port" --out "$work/$label-out" >"$work/$label.serve.log" 2>&1 &
  serve_pids+=($!)
  for _ in $(seq 1 300); do
    line=$(grep -m1 '#login=' "$work/$label.serve.log" || true)
    [ -z "$line" ] || break
    sleep 0.2
  done
  [ -n "$line" ] || { cat "$work/$label.serve.log" >&2; fail "ui/dev/serve.mjs for $label printed no login URL"; }
  echo "$line" > "$work/$label.url"
}
peers=()
if [ "$peer" != none ]; then
  mkdir -p "$work/page-this" "$work/page-peer"
  cp -r "$here/ui" "$work/page-this/"
  rm -rf "$work/page-this/ui/node_modules"
  git_here archive "$peer_commit" ui | tar -x -C "$work/page-peer"
  serve_page this "$work/page-this/ui"
  serve_page peer "$work/page-peer/ui"
  peers=(--peer "this=$(cat "$work/this.url")" --peer "peer=$(cat "$work/peer.url")")
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
node "$here/bench/ui/measure.mjs" --api-port "$api_port" --token-file "$XDG_DATA_HOME/handler/api-token" \
  --long-project "$work/long" --stream-project "$work/stream" --agent timed --events "$events" \
  --conversations "$conversations" --rounds "$rounds" --chunks "$chunks" --repeats "$repeats" "${peers[@]}" \
  > "$work/result.json" || fail "the measurements broke"

this_commit=$(git_here rev-parse --short HEAD 2>/dev/null || echo "?")
node - "$work/result.json" "$this_commit" "${peer_commit:-none}" "$load_before" "$("$chromium" --version 2>/dev/null | head -1)" <<'NODE'
const [file, commit, peer, load, chromium] = process.argv.slice(2);
const r = JSON.parse(require('node:fs').readFileSync(file, 'utf8'));
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const ms = (value) => value == null ? '-' : `${value.toFixed(value < 100 ? 1 : 0)} ms`;
const verdict = (value, target) => value == null ? 'n/a' : value <= target ? 'pass' : 'MISS';
const row = (...cells) => console.log(cells.map((c, i) => String(c).padEnd([46, 12, 16, 6][i] ?? 0)).join(' ').trimEnd());
console.log(`The page: handlerd and its page at ${commit}, ${chromium}, ${require('node:os').cpus().length} cores, ` +
  `${new Date().toISOString().slice(0, 16)}Z, load average before: ${load}`);
console.log(`${r.events} events in ${r.turns} turns; ${r.conversations} conversations streaming`);
console.log();
row('figure', 'value', 'target', 'verdict');
const s = r.sessions_page;
row(`sessions page interactive (median, ${s.all_ms.join('/')} ms)`, ms(s.ms), '<= 1000 ms *', verdict(s.ms, 1000));
row('first load, gzipped, all HTTP', kib(s.bytes.total), '<= 500 KiB', verdict(s.bytes.total, 500 * 1024));
row(`  of it the page's files / the API (${s.bytes.requests} requests)`, `${kib(s.bytes.files)} / ${kib(s.bytes.api)}`, '', '');
const c = r.conversation.handlerd;
row(`conversation of ${r.events} events: open`, ms(c.open_ms), '<= 1000 ms *', verdict(c.open_ms, 1000));
row('  and scroll to its top', ms(c.scroll_ms), '<= 5000 ms *', verdict(c.scroll_ms, 5000));
const p = r.streaming.delays;
row(`harness event to paint, p99, ${r.conversations} streaming`, ms(p.p99), '<= 50 ms', verdict(p.p99, 50));
row(`  p50 / max, of ${p.count} chunks (${r.streaming.expected} sent)`, `${ms(p.p50)} / ${ms(p.max)}`, '', '');
for (const [name, part] of [['harness write to handlerd storing it', 'to_handlerd'], ['handlerd to the page\'s socket', 'to_page'], ['the socket to the paint', 'to_paint']]) {
  const x = r.streaming.split[part];
  row(`  of it: ${name}, p50 / p99`, `${ms(x.p50)} / ${ms(x.p99)}`, '', '');
}
console.log('* our target: the issue names none for these');
console.log();
console.log(`the conversation, page by page (median of ${c.runs.length}; DOM elements at open and at the top; frames of the scroll)`);
const line = (...cells) => console.log(cells.map((x, i) => String(x).padStart(i ? 10 : 0).padEnd(i ? 0 : 28)).join(' '));
line('page', 'open_ms', 'top_ms', 'nodes_open', 'nodes_top', 'items_top', 'frames', 'frame_max', 'clicks', 'heap_MiB');
for (const [label, v] of Object.entries(r.conversation)) {
  const last = v.runs[v.runs.length - 1];
  const name = label === 'handlerd' ? `this, served by handlerd` : label === 'this' ? `this, via serve.mjs` : `peer ${peer}, via serve.mjs`;
  line(name, Math.round(v.open_ms), Math.round(v.scroll_ms), last.open_nodes, last.scroll.nodes, last.scroll.items,
    last.scroll.frames, Math.round(last.scroll.frame_max_ms), last.scroll.clicks, last.heap_mib?.toFixed(1) ?? '-');
}
if (r.conversation.this && r.conversation.peer) {
  const t = r.conversation.this, q = r.conversation.peer;
  console.log(`this / peer: open ${(t.open_ms / q.open_ms).toFixed(2)}x, to the top ${(t.scroll_ms / q.scroll_ms).toFixed(2)}x`);
}
console.log();
console.log(`streaming: rounds took ${r.streaming.rounds_ms.join(', ')} ms (${r.streaming.expected} chunks sent to the shown tab);` +
  ` long tasks in the tab: ${r.streaming.long_tasks.count}, the longest ${ms(r.streaming.long_tasks.max_ms)}`);
const problems = [...Object.values(r.conversation).flatMap((v) => v.runs.flatMap((x) => x.problems)), ...r.streaming.problems];
if (problems.length) console.log(`page errors: ${problems.join('; ')}`);
NODE
