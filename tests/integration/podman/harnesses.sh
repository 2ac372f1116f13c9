#!/usr/bin/env bash
# Real harnesses in real containers, as a new user meets them: `handler setup` builds the
# base image (mmdebstrap from the Debian mirror), the first session of a harness builds
# its image from the plugin's recipe (npm), and `handler run claude -p "..."` runs the
# real Claude Code from npm, through the real proxy, against a fake model provider (the
# only fake: tests/support/fake_model_server.py, HTTPS with a test CA, reached as
# api.anthropic.com through [network] resolve).
#
# Checked: the answer is printed and the exit status is the harness's; the file the
# model's tool call writes appears in the project, owned by the user; --json streams the
# events, which hold the tool call, its result and the answer; the provider saw the REAL
# key on every request while the container only ever held a stand-in (its processes'
# environments and files searched); the network log shows the key injected.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-harnesses
use_base_image=1
extra_config='[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:TLS_PORT" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

pki="$work/pki"
make_pki "$pki" api.anthropic.com
project="$work/projects/app"
mkdir -p "$project"
python3 "$here/fake_model_server.py" --log "$work/model.log" --file "$project/hello.txt" --content "hi" \
  --answer "Done: wrote hello.txt" --hold "$work/hold" --tls "$pki/api.anthropic.com.crt" "$pki/api.anthropic.com.key" \
  >"$work/port" 2>"$work/model.err" &
model_pid=$!
trap 'status=$?; kill $model_pid 2>/dev/null; (exit $status); cleanup' EXIT
for _ in $(seq 1 50); do [ -s "$work/port" ] && break; sleep 0.1; done
read -r port < "$work/port" || fail "the model server did not start: $(cat "$work/model.err")"
sed -i "s/TLS_PORT/$port/" "$XDG_CONFIG_HOME/handler/config.toml"

# handlerd verifies upstreams against the system store; for this test that is the test CA.
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start"
started=$(date +%s)
handler setup > "$work/setup.out" 2>&1 || { cat "$work/setup.out" >&2; fail "handler setup failed"; }
echo "handler setup: base image ready after $(( $(date +%s) - started )) s"

real_key="sk-ant-api03-$(openssl rand -hex 32)-REALKEY"
printf '%s\n' "$real_key" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
handler project add "$project" >/dev/null
cd "$project"
handler agent add claude --harness claude-code --account anthropic >/dev/null

# The first session of the harness builds its image (npm install of Claude Code).
started=$(date +%s)
set +e
answer=$(timeout 900 handler run claude -p "create hello.txt containing hi" 2>"$work/run.err")
code=$?
set -e
echo "first run (with the image build): $(( $(date +%s) - started )) s"
[ $code -eq 0 ] || { cat "$work/run.err" >&2; fail "handler run exited $code"; }
[ "$answer" = "Done: wrote hello.txt" ] || fail "the answer printed was '$answer' (stderr: $(cat "$work/run.err"))"
[ -f "$project/hello.txt" ] || fail "hello.txt was not written in the project"
[ "$(cat "$project/hello.txt")" = "hi" ] || fail "hello.txt holds '$(cat "$project/hello.txt")'"
[ "$(stat -c %u "$project/hello.txt")" = "$(id -u)" ] || fail "hello.txt is owned by uid $(stat -c %u "$project/hello.txt"), not the user"
session=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
[ "$(state_of "$session" exit_code)" = 0 ] || fail "session $session recorded exit code $(state_of "$session" exit_code)"

# The events, as JSON lines, from a second run (the image is there now).
rm -f "$project/hello.txt"
started=$(date +%s)
handler run claude -p "create hello.txt containing hi" --json > "$work/events.jsonl" 2>"$work/run2.err" ||
  { cat "$work/run2.err" >&2; fail "handler run --json failed"; }
echo "second run: $(( $(date +%s) - started )) s"
python3 - "$work/events.jsonl" <<'PY' || fail "the events are not what a run that wrote a file gives"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
kinds = [event["kind"] for event in events]
assert kinds[0] == "user_prompt", kinds
assert events[0]["payload"]["content"]["text"] == "create hello.txt containing hi", events[0]
calls = [e["payload"] for e in events if e["kind"] == "tool_call"]
assert any(c.get("name") == "Write" and c.get("kind") == "edit" for c in calls), calls
call = next(c for c in calls if c.get("name") == "Write")
updates = [e["payload"] for e in events if e["kind"] == "tool_call_update" and e["payload"]["toolCallId"] == call["toolCallId"]]
assert updates and updates[-1]["status"] == "completed", updates
results = [e["payload"] for e in events if e["kind"] == "result"]
assert len(results) == 1 and results[0]["result"] == "Done: wrote hello.txt" and not results[0]["isError"], results
assert [e["seq"] for e in events] == sorted(e["seq"] for e in events), "out of order"
PY
[ "$(cat "$project/hello.txt")" = "hi" ] || fail "the second run did not write hello.txt"
session2=$(handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')

# The provider saw the real key on every model request, never a stand-in.
python3 - "$work/model.log" "$real_key" <<'PY' || fail "the model server did not get the real key on every request: $(cat "$work/model.log")"
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
messages = [e for e in entries if e["path"].split("?")[0].endswith("/v1/messages")]
assert len(messages) >= 4, entries
assert all(e["x-api-key"] == sys.argv[2] for e in messages), entries
PY
handler network log "$session2" > "$work/network.log"
grep -q "api.anthropic.com" "$work/network.log" || fail "the network log lacks api.anthropic.com: $(cat "$work/network.log")"
handler network log "$session2" --json | grep -q '"secret":"anthropic-api-key"' ||
  fail "the network log does not show the key injected: $(handler network log "$session2" --json)"

# Inside a Claude Code session in the middle of a turn (the model server holds its
# answer meanwhile): only the stand-in, anywhere.
touch "$work/hold"
rm -f "$project/hello.txt"
requests=$(wc -l < "$work/model.log")
id=$(handler run claude -d -p "create hello.txt containing hi")
wait_state "$id" running
for _ in $(seq 1 300); do [ "$(wc -l < "$work/model.log")" -gt "$requests" ] && break; sleep 0.1; done
[ "$(wc -l < "$work/model.log")" -gt "$requests" ] || fail "the held session sent no model request"
container=$(podman ps -q --filter "label=io.handler.session=$id")
[ -n "$container" ] || fail "no container for session $id"
stand_in=$(podman exec "$container" sh -c 'printf %s "$ANTHROPIC_API_KEY"')
case $stand_in in sk-ant-api03-*) ;; *) fail "ANTHROPIC_API_KEY inside is '$stand_in', not a stand-in";; esac
[ "$stand_in" != "$real_key" ] || fail "the container holds the real key"
# Every process's environment and every file a process could read its key from, dumped
# into the project and searched out here (a search inside would hold the key itself).
podman exec "$container" sh -c "cat /proc/[0-9]*/environ > '$project/env.dump' 2>/dev/null;
  find \$HOME /tmp /etc /opt /run/handler -xdev -type f -size -20M -exec cat {} + > '$project/files.dump' 2>/dev/null" || true
for dump in env.dump files.dump; do
  [ -s "$project/$dump" ] || fail "$dump is empty: the search inside did not run (session $id is $(state_of "$id" state); its output: $(handler logs "$id" | tail -c 2000))"
  if grep -aqF "$real_key" "$project/$dump"; then fail "the real key is in the container ($dump)"; fi
done
grep -aqF "$stand_in" "$project/env.dump" || fail "the stand-in is not in the processes' environments (the search would not have seen the key either)"
if grep -qF "$real_key" "$log"; then fail "the real key is in handlerd's log"; fi
rm -f "$work/hold"
wait_state "$id" exited
[ "$(cat "$project/hello.txt")" = "hi" ] || fail "the held run did not finish its work"
echo "PASS harnesses"
