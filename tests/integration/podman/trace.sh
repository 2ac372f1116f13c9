#!/usr/bin/env bash
# Who made each connection (docs/network.md, "Who made a connection"), on REAL rootless
# podman with the real handlerd, shim and shell plugin: processes started in a session
# reach an upstream through the proxy, and the network log names each one's pid and
# command line (read by the shim from the container's /proc) with the shell that started
# it as its parent. A process that lies in its command line, or exits at once, changes
# no verdict, crashes nothing, and its entry still says what is known or why not.
#
# The upstream is a Python HTTP server on the host's loopback; [network] resolve maps the
# test names to it. Runs as a non-root user with rootless podman.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-trace
extra_config='[network]
resolve = { "allowed.test" = "127.0.0.1", "blocked.test" = "127.0.0.1", "learn.test" = "127.0.0.1" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

# The upstream answers every GET after 0.3 s, as a server across a network would: on the
# host's loopback a request could end before the shim had looked (the connections that
# do are the killed ones below).
start_upstream "$work/http.log" python3 "$here/http_upstream.py" --delay 0.3 --body hello-through-proxy

project="$work/projects/web"
mkdir -p "$project"
handlerd --detach >/dev/null || fail "handlerd did not start"
handler project add "$project" >/dev/null
cd "$project"
handler agent add web --harness shell --allow "allowed.test:$port" >/dev/null

echo "== a process's connection is traced to it"
# Each request from its own process: busybox wget, then curl under a name it made up
# (exec -a), asking for a refused host while its command line names the allowed one, then
# processes killed right after they connected (some before the shim could look, some
# before they connected at all), then wget again.
set +e
inside=$(handler run web -p "
  echo allowed=\$(wget -q -O- http://allowed.test:$port/hello.txt 2>&1)
  sh -c 'exec -a \"wget http://allowed.test:$port/hello.txt\" \$(command -v curl) -s -o /dev/null -o /dev/null -w lied=%{http_code}, http://blocked.test:$port/hello.txt http://allowed.test:$port/hello.txt'
  echo
  for delay in 0 0 0 0 0.005 0.005 0.01 0.02 0.05; do
    printf 'GET http://allowed.test:$port/hello.txt HTTP/1.1\r\nHost: allowed.test\r\n\r\n' | nc 127.0.0.1 3128 >/dev/null 2>&1 &
    victim=\$!
    sleep \$delay
    kill -9 \$victim 2>/dev/null
  done
  wait
  echo after=\$(wget -q -O- http://allowed.test:$port/hello.txt 2>&1)" 2>&1)
code=$?
set -e
echo "$inside"
[ $code -eq 0 ] || fail "the session exited $code"
grep -qx "allowed=hello-through-proxy" <<<"$inside" || fail "the allowed host was not reachable"
grep -qx "lied=403,lied=200," <<<"$inside" || fail "the process that lied in its command line was not refused the refused host, or not let through to the allowed one"
grep -qx "after=hello-through-proxy" <<<"$inside" || fail "the allowed host was not reachable after the killed processes"
id=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')

# The answers are recorded when the shim gives them (at most 2 s after each connection).
for _ in $(seq 1 50); do
  handler network log "$id" --json > "$work/log.jsonl"
  python3 - "$work/log.jsonl" <<'PY' && break
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
sys.exit(0 if len(entries) >= 3 and all(e["origin"] != "pending" for e in entries) else 1)
PY
  sleep 0.1
done
cat "$work/log.jsonl"
python3 - "$work/log.jsonl" "$port" <<'PY' || fail "the network log does not name the processes as it should"
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
port = sys.argv[2]
def fail(message):
    print("FAIL:", message, file=sys.stderr)
    sys.exit(1)
if len(entries) < 4:
    fail(f"{len(entries)} entries, expected at least 4")
wget, liar, liar_allowed, quick, after = entries[0], entries[1], entries[2], entries[3:-1], entries[-1]
for entry in entries:
    if entry["origin"] in ("pending", "untraced"):
        fail(f"entry {entry['id']} is {entry['origin']}")
    if entry["connection"] == 0:
        fail(f"entry {entry['id']} has no connection")
    # Known, or unknown with why: never silent.
    if entry["process"] is None and not entry["origin_note"].startswith("unknown: "):
        fail(f"entry {entry['id']} is {entry['origin']} without a reason: {entry['origin_note']!r}")
def check_wget(entry, what):
    if entry["verdict"] != "allow" or entry["host"] != "allowed.test":
        fail(f"{what}: {entry['verdict']} {entry['host']}")
    process = entry["process"]
    if process is None:
        fail(f"{what}: the process is unknown: {entry['origin_note']}")
    if process["command"] != f"wget -q -O- http://allowed.test:{port}/hello.txt":
        fail(f"{what}: the command line is {process['command']!r}")
    if not isinstance(process["pid"], int) or process["pid"] <= 1:
        fail(f"{what}: the pid is {process['pid']!r}")
    if not process["parents"] or not process["parents"][0]["command"].startswith("/bin/sh -c "):
        fail(f"{what}: the parents are {process['parents']!r}")
    if any("handler-shim" in parent["command"] for parent in process["parents"]):
        fail(f"{what}: the chain goes past the shim")
    # The shell harness runs no tool calls: nothing explains the process.
    if entry["origin"] != "no_tool_call" or entry["tool_call"] is not None or not entry["origin_note"].startswith("no tool call"):
        fail(f"{what}: the origin is {entry['origin']}: {entry['origin_note']}")
check_wget(wget, "the first wget")
check_wget(after, "the last wget")
if wget["process"]["pid"] == after["process"]["pid"] and wget["connection"] == after["connection"]:
    fail("two processes, one origin")
# The liar: its made-up name is shown (display only), and each verdict is the policy's.
# Its refusal is answered at once, so its process may be gone before the shim looks; the
# allowed request after it waits for the upstream, so the process is still there.
if liar["verdict"] != "deny" or liar["host"] != "blocked.test":
    fail(f"the liar's first entry is {liar['verdict']} {liar['host']}")
if liar_allowed["verdict"] != "allow" or liar_allowed["host"] != "allowed.test":
    fail(f"the liar's second entry is {liar_allowed['verdict']} {liar_allowed['host']}")
lie = f"wget http://allowed.test:{port}/hello.txt -s "
for entry in (liar, liar_allowed):
    if entry["process"] is not None and not entry["process"]["command"].startswith(lie):
        fail(f"the liar is named {entry['process']['command']!r}")
if liar_allowed["process"] is None:
    fail(f"the liar's process is unknown: {liar_allowed['origin_note']}")
# The killed ones: decided by the policy alone, whatever became of their process.
for entry in quick:
    if entry["verdict"] == "allow" and entry["host"] != "allowed.test":
        fail(f"a killed process's connection to {entry['host']} was allowed")
    if entry["verdict"] == "allow" and entry["process"] is not None and not entry["process"]["command"].startswith("nc "):
        fail(f"a killed process is named {entry['process']['command']!r}")
unknown = [e for e in quick if e["process"] is None]
print("traced:", wget["process"]["pid"], wget["process"]["command"], "| liar:", liar_allowed["process"]["command"],
      "| liar's refusal:", liar["origin"], liar["origin_note"],
      f"| killed: {len(quick)} logged, {len(unknown)} unknown:", sorted({e["origin_note"] for e in unknown}))
PY

echo "== the table shows them"
table=$(handler network log "$id")
echo "$table"
grep -q "PROCESS" <<<"$table" && grep -q "TOOL CALL" <<<"$table" || fail "the table has no PROCESS and TOOL CALL columns"
grep -q "wget -q -O- http://allowed.test:$port/hello.txt" <<<"$table" || fail "the table does not show wget's command line"

echo "== a running session learns at the user's word, without a restart"
# Refused in filtered mode; then `handler network learn` (the API's POST .../network) while
# it runs; the same session's next request to that host passes, recorded as learned.
rm -f "$project/go"
id=$(handler run web -d -p "
  echo first=\$(curl -s -o /dev/null -w %{http_code} http://learn.test:$port/x)
  for _ in \$(seq 1 600); do [ -e go ] && break; sleep 0.1; done
  echo second=\$(curl -s -o /dev/null -w %{http_code} http://learn.test:$port/x)")
wait_state "$id" running
container=$(podman ps -q --filter "label=io.handler.session=$id")
[ -n "$container" ] || fail "no container for session $id"
for _ in $(seq 1 100); do handler network log "$id" --json | grep -q '"host":"learn.test".*"verdict":"deny"' && break; sleep 0.1; done
handler network log "$id" --json | grep -q '"host":"learn.test".*"verdict":"deny"' || fail "learn.test was not refused first: $(handler network log "$id")"
said=$(handler network learn "$id" --minutes 5) || fail "handler network learn failed: $said"
echo "$said"
grep -q "learns until" <<<"$said" || fail "handler network learn said: $said"
[ "$(state_of "$id" network_mode)" = learn ] || fail "the session's network_mode is $(state_of "$id" network_mode)"
touch "$project/go"
wait_state "$id" exited 300
out=$(handler logs "$id")
echo "$out"
grep -qx "first=403" <<<"$out" || fail "the first request was not refused: $out"
grep -qx "second=200" <<<"$out" || fail "after learn the running session did not reach learn.test: $out"
[ "$container" = "$(state_of "$id" container | cut -c1-${#container})" ] || fail "the session's container changed"
for _ in $(seq 1 50); do handler network learned "$id" --json | grep -q '"host": *"learn.test"' && break; sleep 0.1; done
handler network learned "$id" --json | grep -q '"host": *"learn.test"' || fail "learn.test is not among the learned hosts: $(handler network learned "$id" --json)"
handler network log "$id" --json | python3 -c '
import json, sys
entries = [json.loads(l) for l in sys.stdin if "learn.test" in l]
verdicts = [e["verdict"] for e in entries]
assert verdicts == ["deny", "learned"], verdicts
assert entries[1]["rule"] == "learn mode", entries[1]' || fail "the log of learn.test is not a refusal then a learned pass: $(handler network log "$id")"
if ended=$(handler network learn "$id" 2>&1); then fail "an ended session was made to learn: $ended"; fi
grep -q "only while it runs" <<<"$ended" || fail "learn on an ended session said: $ended"
if opened=$(handler network learn "$id" --minutes 500 2>&1); then fail "500 minutes were accepted"; fi
echo "PASS learn on a running session"

echo "== handlerd is still there"
handler status >/dev/null || fail "handlerd is gone"
echo "OK ($test_name)"
