#!/usr/bin/env bash
# Real harnesses in real containers, as a new user meets them: `handler setup` builds the
# base image (mmdebstrap from the Debian mirror), the first session of a harness builds
# its image from the plugin's recipe (npm, apt), and `handler run AGENT -p "..."` runs the
# real Claude Code, Codex and pi from npm, through the real proxy, against a fake model
# provider (the only fake: tests/support/fake_model_server.py, HTTPS with a test CA,
# reached as api.anthropic.com and api.openai.com through [network] resolve).
#
# Checked for each harness: the answer is printed and the exit status is the harness's;
# the file the model's tool call writes appears in the project, owned by the user; --json
# streams the events, which hold the tool call, its result and the answer; the provider
# saw the REAL key on every request while the container only ever held a stand-in (its
# processes' environments and files searched in the middle of a turn); the network log
# shows the key injected. And the start modes reach the harness: Codex in a session
# without network (locked down) asks before the model's command, and the answer decides.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
probe=$(realpath "${HANDLER_RUNTIME_PROBE:-$here/runtime_probe}")
test_name=podman-harnesses
use_base_image=1
shared_images=1
extra_config='[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:ANTHROPIC_PORT", "api.openai.com:443" = "127.0.0.1:OPENAI_PORT", "api.mistral.ai:443" = "127.0.0.1:MISTRAL_PORT", "allowed.test" = "127.0.0.1", "blocked.test" = "127.0.0.1" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

pki="$work/pki"
make_pki "$pki" api.anthropic.com api.openai.com api.mistral.ai
project="$work/projects/app"
mkdir -p "$project"
# One fake provider per API host, each with its log (session_env.sh).
start_model_server api.anthropic.com ANTHROPIC_PORT
start_model_server api.openai.com OPENAI_PORT
start_model_server api.mistral.ai MISTRAL_PORT

# handlerd verifies upstreams against the system store; for this test that is the test CA.
SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start"
started=$(date +%s)
handler setup > "$work/setup.out" 2>&1 || { cat "$work/setup.out" >&2; fail "handler setup failed"; }
echo "handler setup: base image ready after $(( $(date +%s) - started )) s"

anthropic_key="sk-ant-api03-$(openssl rand -hex 32)-REALKEY"
printf '%s\n' "$anthropic_key" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
openai_key="sk-proj-$(openssl rand -hex 40)-REALKEY"
printf '%s\n' "$openai_key" | handler account add openai --kind openai-api-key --api-key-stdin >/dev/null
handler project add "$project" >/dev/null
cd "$project"
handler agent add claude --harness claude-code --account anthropic >/dev/null
handler agent add codex --harness codex --account openai >/dev/null
handler agent add pi --harness pi --account anthropic >/dev/null
last_session() { handler session list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }

# The base image's own tools under the sessions' seccomp profile (docs/security.md): bash,
# node (a worker thread, a child process), git and python (threads, subprocesses) run,
# while no namespace can be made.
confined=$(timeout 300 handler run shell -p '
  bash -c "echo bash-works"
  node -e "const { Worker } = require(\"worker_threads\"); const { execFileSync } = require(\"child_process\");
    new Worker(\"\", { eval: true }).on(\"exit\", () => console.log(\"node-works\", execFileSync(\"git\", [\"--version\"]).toString().trim()))"
  git init -q /tmp/repo && git -C /tmp/repo -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m one && echo git-works
  python3 -c "import subprocess, threading; t = threading.Thread(target=print, args=(\"python-works\",)); t.start(); t.join(); subprocess.run([\"true\"], check=True)"
  for attempt in "unshare -Urn true" "unshare -m true" "unshare -Ur true"; do $attempt 2>/dev/null && echo "ESCAPED: $attempt"; done
  true') || fail "the base image's tools did not run under the seccomp profile: $confined"
for expected in bash-works "node-works git version" git-works python-works; do
  grep -q "^$expected" <<<"$confined" || fail "'$expected' missing from what ran inside: $confined"
done
if grep -q ESCAPED <<<"$confined"; then fail "a namespace was made inside: $confined"; fi
echo "PASS the base image's bash, node, git and python under the seccomp profile; no namespace made"

# check_harness AGENT TOOL KIND HOST SECRET KEY VARIABLE PREFIX [RUN ARGS...]
#   AGENT's first run builds its image and writes hello.txt; a second run's --json events
#   hold the tool call TOOL of ACP kind KIND, its completed update and the result; HOST's
#   provider saw KEY (the account SECRET) on every model request; inside a held session
#   VARIABLE holds a stand-in starting with PREFIX and KEY is nowhere.
check_harness() {
  local agent=$1 tool=$2 kind=$3 host=$4 secret=$5 key=$6 variable=$7 prefix=$8
  shift 8
  local answer code started session stand_in container id requests
  rm -f "$project/hello.txt"
  started=$(date +%s)
  set +e
  answer=$(timeout 900 handler run "$agent" "$@" -p "create hello.txt containing hi" 2>"$work/$agent.err")
  code=$?
  set -e
  echo "$agent: first run (with the image build): $(( $(date +%s) - started )) s"
  [ $code -eq 0 ] || { cat "$work/$agent.err" >&2; fail "$agent: handler run exited $code"; }
  [ "$answer" = "Done: wrote hello.txt" ] || fail "$agent: the answer printed was '$answer' (stderr: $(cat "$work/$agent.err"))"
  [ -f "$project/hello.txt" ] || fail "$agent: hello.txt was not written in the project (its output: $(handler logs "$(last_session)" | tail -c 3000); the model server saw: $(tail -c 3000 "$work/$host.log"))"
  [ "$(cat "$project/hello.txt")" = "hi" ] || fail "$agent: hello.txt holds '$(cat "$project/hello.txt")'"
  [ "$(stat -c %u "$project/hello.txt")" = "$(id -u)" ] || fail "$agent: hello.txt is owned by uid $(stat -c %u "$project/hello.txt"), not the user"
  session=$(last_session)
  [ "$(state_of "$session" exit_code)" = 0 ] || fail "$agent: session $session recorded exit code $(state_of "$session" exit_code)"

  # The events, as JSON lines, from a second run (the image is there now).
  rm -f "$project/hello.txt"
  started=$(date +%s)
  handler run "$agent" "$@" -p "create hello.txt containing hi" --json > "$work/$agent.jsonl" 2>"$work/$agent.err2" ||
    { cat "$work/$agent.err2" >&2; fail "$agent: handler run --json failed"; }
  echo "$agent: second run: $(( $(date +%s) - started )) s"
  python3 - "$work/$agent.jsonl" "$tool" "$kind" <<'PY' || fail "$agent: the events are not what a run that wrote a file gives: $(cat "$work/$agent.jsonl")"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
tool, kind = sys.argv[2], sys.argv[3]
kinds = [event["kind"] for event in events]
assert kinds[0] == "user_prompt", kinds
assert events[0]["payload"]["content"]["text"] == "create hello.txt containing hi", events[0]
calls = [e["payload"] for e in events if e["kind"] == "tool_call"]
assert any(c.get("name") == tool and c.get("kind") == kind for c in calls), calls
call = next(c for c in calls if c.get("name") == tool)
updates = [e["payload"] for e in events if e["kind"] == "tool_call_update" and e["payload"]["toolCallId"] == call["toolCallId"]]
assert updates and updates[-1]["status"] == "completed", updates
results = [e["payload"] for e in events if e["kind"] == "result"]
assert len(results) == 1 and results[0]["result"] == "Done: wrote hello.txt" and not results[0]["isError"], results
assert [e["seq"] for e in events] == sorted(e["seq"] for e in events), "out of order"
PY
  [ "$(cat "$project/hello.txt")" = "hi" ] || fail "$agent: the second run did not write hello.txt"
  session=$(last_session)
  handler session events "$session" | grep -q "end_turn: Done: wrote hello.txt" ||
    fail "$agent: handler session events lacks the result: $(handler session events "$session")"

  # The provider saw the real key on every model request, never a stand-in.
  python3 - "$work/$host.log" "$key" <<'PY' || fail "$agent: the model server did not get the real key on every request: $(cat "$work/$host.log")"
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
model = [e for e in entries if e["method"] == "POST" and e["path"].split("?")[0].endswith(("/v1/messages", "/v1/responses"))]
assert len(model) >= 4, entries
assert all(sys.argv[2] in (e["x-api-key"], (e["authorization"] or "").removeprefix("Bearer ")) for e in model), entries
PY
  # handlerd writes the log in batches: give the last one a moment.
  for _ in $(seq 1 50); do
    handler network log "$session" --json > "$work/$agent.network"
    grep -q "\"secret\":\"$secret\"" "$work/$agent.network" && break
    sleep 0.1
  done
  grep -q "\"host\":\"$host\"" "$work/$agent.network" || fail "$agent: the network log lacks $host: $(cat "$work/$agent.network")"
  grep -q "\"secret\":\"$secret\"" "$work/$agent.network" ||
    fail "$agent: the network log does not show the key injected: $(cat "$work/$agent.network")"

  # Inside a session in the middle of a turn (the model server holds its answer
  # meanwhile): only the stand-in, anywhere.
  touch "$work/hold"
  rm -f "$project/hello.txt"
  requests=$(grep -c '"POST"' "$work/$host.log" || true)
  id=$(handler run "$agent" "$@" -d -p "create hello.txt containing hi")
  wait_state "$id" running
  for _ in $(seq 1 300); do [ "$(grep -c '"POST"' "$work/$host.log")" -gt "$requests" ] && break; sleep 0.1; done
  [ "$(grep -c '"POST"' "$work/$host.log")" -gt "$requests" ] || fail "$agent: the held session sent no model request"
  container=$(podman ps -q --filter "label=io.handler.session=$id")
  [ -n "$container" ] || fail "$agent: no container for session $id"
  stand_in=$(podman exec "$container" sh -c "printf %s \"\$$variable\"")
  case $stand_in in "$prefix"*) ;; *) fail "$agent: $variable inside is '$stand_in', not a stand-in";; esac
  [ "$stand_in" != "$key" ] || fail "$agent: the container holds the real key"
  # Every process's environment and every file a process could read its key from, dumped
  # into the project and searched out here (a search inside would hold the key itself).
  podman exec "$container" sh -c "cat /proc/[0-9]*/environ > '$project/env.dump' 2>/dev/null;
    find \$HOME /tmp /etc /opt /run/handler -xdev -type f -size -20M -exec cat {} + > '$project/files.dump' 2>/dev/null" || true
  for dump in env.dump files.dump; do
    [ -s "$project/$dump" ] || fail "$agent: $dump is empty: the search inside did not run (session $id is $(state_of "$id" state); its output: $(handler logs "$id" | tail -c 2000))"
    if grep -aqF "$key" "$project/$dump"; then fail "$agent: the real key is in the container ($dump)"; fi
  done
  grep -aqF "$stand_in" "$project/env.dump" || fail "$agent: the stand-in is not in the processes' environments (the search would not have seen the key either)"
  rm -f "$project/env.dump" "$project/files.dump"
  if grep -qF "$key" "$log"; then fail "$agent: the real key is in handlerd's log"; fi
  rm -f "$work/hold"
  wait_state_long "$id" exited
  [ "$(cat "$project/hello.txt")" = "hi" ] || fail "$agent: the held run did not finish its work"
  echo "PASS $agent"
}
# check_conversation AGENT HOST [CHAT ARGS...]: a conversation (docs/conversations.md) with AGENT, whose
#   model is at HOST: `handler chat` at one end of a pipe and `handler session prompt`
#   from a second client; each prompt is a turn, every client sees every prompt, the
#   model gets the history; a prompt during a turn waits; cancel ends the turn and the
#   next one works; a kill -9 of handlerd does not end it; stopped, it is resumed in a new
#   container that continues the harness's own conversation.
events_of() { handler session events "$1" --json; }
count_events() { # ID KIND [TEXT]: events of KIND (whose payload holds TEXT)
  events_of "$1" | python3 -c '
import json, sys
kind, text = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
print(sum(1 for line in sys.stdin if line.strip() and (e := json.loads(line))["kind"] == kind and text in json.dumps(e["payload"])))' "${@:2}"
}
wait_events() { # ID KIND COUNT [TEXT]
  for _ in $(seq 1 1200); do
    [ "$(count_events "$1" "$2" "${4:-}")" -ge "$3" ] && return 0
    sleep 0.1
  done
  fail "session $1: fewer than $3 $2 events${4:+ holding '$4'} after 120 s: $(events_of "$1" | tail -c 3000); its output: $(handler logs "$1" | tail -c 2000)"
}
model_posts() { grep -c '"POST"' "$work/$1.log" || true; }
wait_model_request() { # HOST COUNT: the model server has seen more than COUNT requests
  for _ in $(seq 1 600); do [ "$(model_posts "$1")" -gt "$2" ] && return 0; sleep 0.1; done
  fail "no model request reached $1"
}
last_user_texts() { # HOST: the user texts of the last model request (a conversation's history)
  python3 -c '
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
model = [e for e in entries if e["method"] == "POST" and "user_texts" in e]
print(json.dumps(model[-1]["user_texts"] if model else None))' "$work/$1.log"
}
check_conversation() {
  local agent=$1 host=$2 id chat requests
  shift 2
  rm -f "$project/hello.txt" "$work/chat.in"
  mkfifo "$work/chat.in"
  handler chat "$agent" "$@" --json < "$work/chat.in" > "$work/chat.jsonl" 2> "$work/chat.err" &
  chat=$!
  exec 7> "$work/chat.in"
  echo "create hello.txt containing hi" >&7
  for _ in $(seq 1 300); do grep -q '"kind":"user_prompt"' "$work/chat.jsonl" 2>/dev/null && break; sleep 0.1; done
  id=$(last_session)
  [ "$(state_of "$id" mode)" = conversation ] || fail "$agent: handler chat did not start a conversation ($(state_of "$id" mode))"
  wait_events "$id" result 1
  [ "$(cat "$project/hello.txt" 2>/dev/null)" = "hi" ] || fail "$agent: the conversation's first turn did not write hello.txt: $(events_of "$id" | tail -c 2000)"
  [ "$(state_of "$id" state)" = running ] || fail "$agent: the conversation ended after its first turn"
  [ "$(state_of "$id" title)" = "create hello.txt containing hi" ] || fail "$agent: the title is '$(state_of "$id" title)'"

  # A second client's prompt: the chat shows it, and the model gets the first turn too.
  handler session prompt "$id" "what did you just do" > "$work/prompt.out" || fail "$agent: handler session prompt failed"
  wait_events "$id" result 2
  grep -q '"text":"what did you just do"' "$work/chat.jsonl" || fail "$agent: the chat did not show the other client's prompt: $(tail -c 2000 "$work/chat.jsonl")"
  case $(last_user_texts "$host") in
    *"create hello.txt containing hi"*"what did you just do"*) ;;
    *) fail "$agent: the second turn's model request lacks the first turn: $(last_user_texts "$host")";;
  esac

  # During a held turn a prompt waits, shown to every client, and runs after it.
  touch "$work/hold"
  requests=$(model_posts "$host")
  echo "now a third" >&7
  wait_model_request "$host" "$requests"
  handler session prompt "$id" "and a fourth" | grep -q "waits for the running turn" || fail "$agent: a prompt during a turn did not wait"
  wait_events "$id" prompt_queued 1 "and a fourth"
  rm -f "$work/hold"
  wait_events "$id" result 4
  grep -q '"kind":"prompt_queued"' "$work/chat.jsonl" || fail "$agent: the chat did not show the queued prompt"

  # Cancel mid-turn (the model holds its answer): the turn says cancelled, the next works.
  touch "$work/hold"
  requests=$(model_posts "$host")
  handler session prompt "$id" "a fifth, to cancel" >/dev/null
  wait_model_request "$host" "$requests"
  handler session cancel "$id" > /dev/null || fail "$agent: handler session cancel failed"
  wait_events "$id" result 1 '"stopReason": "cancelled"'
  rm -f "$work/hold"
  handler session prompt "$id" "a sixth" >/dev/null
  wait_events "$id" result 6
  [ "$(count_events "$id" result '"stopReason": "cancelled"')" = 1 ] || fail "$agent: not exactly the one cancelled turn: $(events_of "$id" | grep result)"

  # handlerd killed with -9 and started again: the conversation goes on.
  kill_handlerd KILL
  wait "$chat" 2>/dev/null || true
  exec 7>&-
  SSL_CERT_FILE="$pki/ca.crt" handlerd --detach >/dev/null || fail "handlerd did not start again"
  [ "$(state_of "$id" state)" = running ] || fail "$agent: the conversation did not survive handlerd's kill -9"
  handler session prompt "$id" "a seventh" >/dev/null || fail "$agent: no prompt after handlerd's restart"
  wait_events "$id" result 7

  # Stopped, then resumed in a new container: the harness continues its own conversation.
  handler session stop "$id" >/dev/null
  wait_state_long "$id" exited
  handler session resume "$id" >/dev/null || fail "$agent: handler session resume failed"
  wait_state_long "$id" running
  handler session prompt "$id" "an eighth, after the resume" >/dev/null
  wait_events "$id" result 8
  case $(last_user_texts "$host") in
    *"create hello.txt containing hi"*"an eighth, after the resume"*) ;;
    *) fail "$agent: after the resume the model request lacks the earlier turns: $(last_user_texts "$host")";;
  esac
  # The harness's own conversation went on: one session id of its own, before and after.
  events_of "$id" | python3 -c '
import json, sys
ids = {e["payload"]["harnessSessionId"] for e in map(json.loads, filter(str.strip, sys.stdin))
       if e["kind"] == "session_info" and "harnessSessionId" in e["payload"]}
assert len(ids) == 1, ids' || fail "$agent: not one harness session across the resume: $(events_of "$id" | grep session_info)"

  # An image in a prompt reaches the model whole, in the harness's own API shape.
  python3 -c 'import base64, sys; open(sys.argv[1], "wb").write(base64.b64decode(
"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))' "$work/dot.png"
  local digest
  digest=$(sha256sum "$work/dot.png" | cut -c1-16)
  handler session prompt "$id" "what is in this picture" --image "$work/dot.png" >/dev/null ||
    fail "$agent: a prompt with an image was refused"
  wait_events "$id" result 9
  python3 -c '
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
seen = [e for e in entries if e["method"] == "POST" and "image/png:" + sys.argv[2] in e.get("user_images", [])]
assert seen, [e.get("user_images") for e in entries if e["method"] == "POST"][-3:]' "$work/$host.log" "$digest" ||
    fail "$agent: the image did not reach the model: $(tail -n 2 "$work/$host.log" | cut -c1-1500)"

  handler session stop "$id" >/dev/null
  wait_state_long "$id" exited
  echo "PASS $agent conversation"
}
# check_tui AGENT TEXT [NOT]: AGENT's TUI starts in a terminal session and stays up, its
# screen showing TEXT and, five seconds on, still not NOT (it is stopped after).
screen_of() { # ID: the text a terminal session drew, without its escape sequences
  handler logs "$1" | sed 's/\x1b\[[0-9;?<>=]*[a-zA-Z]//g; s/\x1b\][^\x07\x1b]*\(\x07\|\x1b\\\)//g'
}
check_tui() {
  local agent=$1 text=$2 not=${3:-} id
  id=$(handler run "$agent" -d)
  wait_state "$id" running
  for _ in $(seq 1 300); do screen_of "$id" | grep -aqF "$text" && break; sleep 0.1; done
  screen_of "$id" | grep -aqF "$text" || fail "$agent: its TUI did not show '$text': $(screen_of "$id" | tail -c 1500)"
  sleep 5
  [ "$(state_of "$id" state)" = running ] || fail "$agent: its TUI ended: $(screen_of "$id" | tail -c 1500)"
  # Words on a screen may be drawn apart; spaces are left out to find them.
  if [ -n "$not" ] && screen_of "$id" | tr -d ' ' | grep -aqF "$not"; then
    fail "$agent: its TUI shows '$not': $(screen_of "$id" | tail -c 1500)"
  fi
  handler session stop "$id" >/dev/null
  wait_state_long "$id" exited
  echo "PASS $agent TUI"
}
wait_state_long() { # ID STATE: a harness finishing its turn may take a while
  for _ in $(seq 1 600); do
    [ "$(state_of "$1" state)" = "$2" ] && return 0
    sleep 0.1
  done
  fail "session $1 did not reach state $2 (it is $(state_of "$1" state))"
}

# ask_run AGENT TITLE ANSWER [RUN ARGS...]: a locked-down run (no network but the model's
#   host) of AGENT asks before it writes: the question (titled TITLE) reaches the clients
#   as an event while the run waits, the run's stderr says how to answer, and `handler
#   session answer ANSWER` from another process decides it; the events then hold the
#   answer and the tool call's end (completed when allowed, failed when rejected).
ask_run() {
  local agent=$1 title=$2 choice=$3 run id
  shift 3
  rm -f "$project/hello.txt"
  timeout 300 handler run "$agent" --network none "$@" -p "create hello.txt containing hi" --json > "$work/ask.jsonl" 2> "$work/ask.err" &
  run=$!
  # Until the question comes or the run ends: under CI's load (the sanitizer build beside
  # it) a session has taken over a minute just to start, so no shorter bound of its own.
  for _ in $(seq 1 2900); do
    grep -q '"kind":"permission_request"' "$work/ask.jsonl" && break
    kill -0 "$run" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '"kind":"permission_request"' "$work/ask.jsonl" || fail "$agent locked down asked nothing: $(cat "$work/ask.jsonl" "$work/ask.err")"
  id=$(last_session)
  sleep 1
  [ ! -e "$project/hello.txt" ] || fail "$agent locked down wrote hello.txt before it was allowed"
  [ "$(state_of "$id" state)" = running ] || fail "$agent locked down did not wait for the answer"
  grep -q "handler session answer $id allow|always|reject --tool-call" "$work/ask.err" ||
    fail "the run did not say how to answer: $(cat "$work/ask.err")"
  handler session answer "$id" "$choice" > "$work/answer.out" 2>&1 || fail "handler session answer $choice failed: $(cat "$work/answer.out")"
  if handler session answer "$id" "$choice" > "$work/again.out" 2>&1; then fail "a request was answered twice"; fi
  grep -q "no open permission request" "$work/again.out" || fail "answering again said: $(cat "$work/again.out")"
  wait "$run" || fail "$agent locked down exited $? after the answer: $(cat "$work/ask.err")"
  python3 - "$work/ask.jsonl" "$choice" "$title" <<'PY' || fail "$agent: the events of the question and its answer are wrong: $(cat "$work/ask.jsonl")"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
kinds = [e["kind"] for e in events]
asked = next(e["payload"] for e in events if e["kind"] == "permission_request")
answered = next(e["payload"] for e in events if e["kind"] == "permission_answer")
assert asked["title"].startswith(sys.argv[3]) and "hi" in json.dumps(asked["rawInput"]), asked
assert answered["toolCallId"] == asked["toolCallId"], (asked, answered)
assert answered["kind"] == {"allow": "allow_once", "reject": "reject_once"}[sys.argv[2]], answered
assert kinds.index("permission_request") < kinds.index("permission_answer") < kinds.index("result"), kinds
updates = [e["payload"] for e in events if e["kind"] == "tool_call_update" and e["payload"]["toolCallId"] == asked["toolCallId"]]
assert updates[-1]["status"] == ("completed" if sys.argv[2] == "allow" else "failed"), updates
PY
  case $choice in
    allow) [ "$(cat "$project/hello.txt")" = "hi" ] || fail "$agent locked down, allowed, did not write hello.txt";;
    reject) [ ! -e "$project/hello.txt" ] || fail "$agent locked down, rejected, wrote hello.txt";;
  esac
}

# A plugin's new version is a new image; once it is built the older ones go, except one a
# running session's container uses (real podman, through the real PodmanRuntime).
check_image_pruning() {
  local base one two three container
  base=$(podman images --format '{{.Repository}}:{{.Tag}}' localhost/handler-base | head -n 1)
  [ -n "$base" ] || fail "no base image to build on"
  one=$("$probe" ensure-layer prunetest 1 "$base" 2>"$work/prune.err") || fail "image build: $(cat "$work/prune.err")"
  two=$("$probe" ensure-layer prunetest 2 "$base" 2>"$work/prune.err") || fail "image build: $(cat "$work/prune.err")"
  if podman image exists "$one"; then fail "the older image $one was left behind"; fi
  container=$("$probe" run s_prune "$two" "$project" -- sleep 600) || fail "could not start a container of $two"
  three=$("$probe" ensure-layer prunetest 3 "$base" 2>"$work/prune.err") || fail "image build: $(cat "$work/prune.err")"
  podman image exists "$three" || fail "the new image $three is missing"
  podman image exists "$two" || fail "the image of a running container was removed"
  grep -q "kept the older image $two" "$work/prune.err" || fail "keeping $two was not said: $(cat "$work/prune.err")"
  [ "$("$probe" inspect "$container" | sed -n 's/^state=//p')" = running ] || fail "the running container was disturbed"
  "$probe" remove "$container"
  podman rmi "$two" "$three" >/dev/null
  echo "PASS older plugin images pruned, a running session's kept"
}

# check_bash_trace: the real Claude Code's Bash tool call runs curl to an allowed host and a
#   refused one (the fake model's tool call is that command: fake_model_server.py --command);
#   each connection's network log entry names the curl process and that tool call, by the
#   toolCallId of the session's tool_call event, while the harness's own model requests say
#   no_tool_call (docs/network.md, "Who made a connection").
check_bash_trace() {
  local upstream_port run id
  start_upstream "$work/upstream.log" python3 "$here/http_upstream.py" --body upstream
  upstream_port=$port
  handler agent add claude-net --harness claude-code --account anthropic --allow "allowed.test:$upstream_port" >/dev/null
  # No quotes in the command: Claude Code quotes it again for its shell (docs/network.md).
  model_command="curl -s -o /dev/null -w allowed=%{http_code}, http://allowed.test:$upstream_port/a; curl -s -o /dev/null -w blocked=%{http_code}, http://blocked.test:$upstream_port/b"
  restart_model_server api.anthropic.com
  timeout 600 handler run claude-net -p "fetch them" --json > "$work/trace.jsonl" 2> "$work/trace.err" &
  run=$!
  # Guarded, Claude Code asks before a command: allowed from here, as a user would.
  for _ in $(seq 1 3000); do
    grep -q '"kind":"permission_request"' "$work/trace.jsonl" 2>/dev/null && break
    kill -0 "$run" 2>/dev/null || break
    sleep 0.1
  done
  id=$(last_session)
  if grep -q '"kind":"permission_request"' "$work/trace.jsonl"; then
    handler session answer "$id" allow >/dev/null || fail "claude-net: the answer to its question was refused"
  fi
  wait "$run" || fail "claude-net: handler run exited $?: $(cat "$work/trace.err") $(tail -c 2000 "$work/trace.jsonl")"
  model_command=""
  restart_model_server api.anthropic.com
  python3 - "$work/api.anthropic.com.log" <<'PY' || fail "claude-net: the curls did not give 200 and 403: $(tail -c 2000 "$work/api.anthropic.com.log")"
import json, sys
outputs = [e["tool_output"] for e in map(json.loads, open(sys.argv[1])) if e.get("tool_output")]
assert outputs and "allowed=200,blocked=403," in outputs[-1], outputs[-1:]
PY
  for _ in $(seq 1 50); do
    handler network log "$id" --json > "$work/trace.network"
    python3 -c '
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if sum(e["host"].endswith(".test") for e in entries) >= 2 and all(e["origin"] != "pending" for e in entries) else 1)' "$work/trace.network" && break
    sleep 0.1
  done
  cat "$work/trace.network"
  python3 - "$work/trace.jsonl" "$work/trace.network" "$upstream_port" <<'PY' || fail "claude-net: the network log does not trace the curls to their tool call"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
entries = [json.loads(l) for l in open(sys.argv[2])]
port = int(sys.argv[3])
calls = [e["payload"] for e in events if e["kind"] == "tool_call" and e["payload"].get("name") == "Bash"]
assert len(calls) == 1, calls
call = calls[0]
assert "curl" in call["rawInput"]["command"], call
def entry_of(host):
    found = [e for e in entries if e["host"] == host and e["port"] == port]
    assert len(found) == 1, (host, entries)
    return found[0]
for host, verdict in (("allowed.test", "allow"), ("blocked.test", "deny")):
    e = entry_of(host)
    assert e["verdict"] == verdict, e
    assert e["origin"] == "tool_call", e
    assert e["tool_call"]["id"] == call["toolCallId"], (e["tool_call"], call["toolCallId"])
    assert e["process"]["command"].startswith("curl -s -o /dev/null -w "), e["process"]
    assert f"http://{host}:{port}/" in e["process"]["command"], e["process"]
model = [e for e in entries if e["host"] == "api.anthropic.com"]
assert model, entries
# The harness's own requests are never put on a tool call. A connection that ends before
# the shim looks at /proc (a few ms, as a model request on a kept-alive tunnel may) is
# "unknown", which says so; the rest name the harness's process.
assert all(e["tool_call"] is None and e["origin"] in ("no_tool_call", "unknown") for e in model), [(e["origin"], e["origin_note"]) for e in model]
named = [e for e in model if e["origin"] == "no_tool_call"]
assert named and all(e["process"]["command"].startswith("claude ") for e in named), [(e["origin"], e["process"]) for e in model]
print("traced:", {e["host"]: (e["verdict"], e["origin"], e["tool_call"]["id"], e["process"]["pid"]) for e in entries if e["host"].endswith(".test")},
      "| model requests:", len(model), "of which", len(named), "no_tool_call")
PY
  # Read whole first: grep -q would end the pipe early, and pipefail would take that as a failure.
  local table
  table=$(handler network log "$id")
  grep -q "toolu_fake Bash: curl" <<<"$table" || fail "claude-net: the table does not show the tool call: $table"
  echo "PASS claude Bash curl traced to its tool call"
}

# shellcheck source=acp_checks.sh
source "$here/acp_checks.sh"

# HANDLER_TEST_HARNESSES="codex pi" runs only those (for working on one harness); "acp"
# runs the editors' tests for the harnesses named (all three when none is).
only=" ${HANDLER_TEST_HARNESSES:-claude codex pi local images vibe acp} "
if [[ $only == *" claude "* ]]; then
  check_harness claude Write edit api.anthropic.com anthropic-api-key "$anthropic_key" ANTHROPIC_API_KEY sk-ant-api03-

  ask_run claude "Write hello.txt" allow
  ask_run claude "Write hello.txt" reject --thinking high
  python3 - "$work/api.anthropic.com.log" <<'PY' || fail "the model was not told of the rejection: $(tail -c 2000 "$work/api.anthropic.com.log")"
import json, sys
outputs = [e["tool_output"] for e in map(json.loads, open(sys.argv[1])) if e.get("tool_output")]
assert outputs and "rejected" in outputs[-1], outputs[-1:]
PY
  echo "PASS claude locked down asks, and the answer decides"
  # Its first-run screens answered beforehand: at its prompt, in the guarded mode.
  check_tui claude "accept edits on"
  check_conversation claude api.anthropic.com
fi
if [[ $only == *" claude "* || $only == *" claude-trace "* ]]; then
  check_bash_trace
fi
if [[ $only == *" codex "* ]]; then
  # A model name Codex does not know: it then offers the model its fallback tools, among
  # them exec_command, which the fake model calls.
  check_harness codex commandExecution execute api.openai.com openai-api-key "$openai_key" CODEX_API_KEY sk-proj- \
    --model gpt-handler-test
  # Codex's notes (the fallback from WebSockets here) reach the user's stderr as events.
  grep -q "Falling back from WebSockets" "$work/codex.err" || fail "codex: its error events were not printed: $(cat "$work/codex.err")"

  # Locked down, Codex asks before every command that changes something.
  ask_run codex "Run: printf" allow --model gpt-handler-test --thinking low
  # Its reasoning effort is the thinking level asked for, and the events say so.
  python3 - "$work/ask.jsonl" <<'PY' || fail "codex: the thinking level is not in the events: $(head -c 2000 "$work/ask.jsonl")"
import json, sys
modes = [json.loads(l)["payload"] for l in open(sys.argv[1]) if '"mode_changed"' in l]
assert modes and modes[0].get("thinkingLevel") == "low", modes
PY
  ask_run codex "Run: printf" reject --model gpt-handler-test
  echo "PASS codex locked down asks, and the answer decides"

  # A ChatGPT login (`handler terminal AGENT -- login`) is Codex's own, kept in the
  # account's folder as its CODEX_HOME: what Codex writes there in one session is there
  # in the next, on the host under the account's id (private to the user), and another
  # account's sessions have their own. (`features enable` stands in for the login, which
  # needs OpenAI's sign-in; both write to CODEX_HOME.)
  handler account add chatgpt --kind chatgpt-login >/dev/null
  handler account add chatgpt2 --kind chatgpt-login >/dev/null
  handler agent add gpt --harness codex --account chatgpt >/dev/null
  handler agent add gpt2 --harness codex --account chatgpt2 >/dev/null
  run_codex_command() { # AGENT ARGS...: its output once it has exited
    local agent=$1 id
    shift
    id=$(handler terminal "$agent" -d -- "$@")
    wait_state_long "$id" exited
    handler logs "$id"
  }
  run_codex_command gpt features enable memories | grep -q "Enabled feature" || fail "codex features enable did not run"
  account_id=$(handler account list --json | python3 -c '
import json, sys
listing = json.load(sys.stdin)
accounts = listing["accounts"] if isinstance(listing, dict) else listing
print(next(a["id"] for a in accounts if a["name"] == "chatgpt"))')
  folder="$XDG_DATA_HOME/handler/account-state/$account_id"
  grep -q "memories = true" "$folder/config.toml" || fail "the account's folder lacks what Codex wrote: $(ls -la "$folder")"
  [ "$(stat -c %a "$folder")" = 700 ] || fail "the account's folder is mode $(stat -c %a "$folder")"
  [ "$(stat -c %u "$folder/config.toml")" = "$(id -u)" ] || fail "Codex's file in the account's folder is not the user's"
  run_codex_command gpt features list | grep -Eq "^memories +[a-z ]+ +true" || fail "the next session of the account does not see it"
  run_codex_command gpt2 features list | grep -Eq "^memories +[a-z ]+ +false" || fail "another account's session sees it"
  echo "PASS codex account folder"
  # Started logged in with the key's stand-in: its prompt, not its sign-in screen.
  check_tui codex "Ask Codex to do anything" "SigninwithChatGPT"
  check_conversation codex api.openai.com --model gpt-handler-test
fi
if [[ $only == *" pi "* ]]; then
  check_harness pi write edit api.anthropic.com anthropic-api-key "$anthropic_key" ANTHROPIC_API_KEY sk-ant-api03-
  check_tui pi "pi v0.73.1"
  check_conversation pi api.anthropic.com
fi
if [[ $only == *" local "* ]]; then
  # A local model server (an llama-cpp account; the fake provider on plain HTTP on the
  # host's loopback, as llama.cpp and Ollama listen): every harness with a base-URL
  # setting reaches it through the session's proxy, by the API it speaks there.
  python3 "$here/fake_model_server.py" --log "$work/local.log" --file "$project/hello.txt" --content "hi" \
    --answer "Done: wrote hello.txt" >"$work/local.port" 2>"$work/local.err" &
  model_pids+=($!)
  for _ in $(seq 1 50); do [ -s "$work/local.port" ] && break; sleep 0.1; done
  read -r local_port < "$work/local.port" || fail "the local model server did not start: $(cat "$work/local.err")"
  handler account add box --kind llama-cpp --base-url "http://127.0.0.1:$local_port" >/dev/null
  for harness in claude-code codex pi; do
    handler agent add "$harness-local" --harness "$harness" --account box >/dev/null
    rm -f "$project/hello.txt"
    : > "$work/local.log"
    # An unknown model name, so that Codex offers the model its fallback tools.
    answer=$(timeout 600 handler run "$harness-local" --model gpt-handler-test -p "create hello.txt containing hi" 2>"$work/local-$harness.err") ||
      fail "$harness with a local server failed: $(cat "$work/local-$harness.err"); the server saw: $(tail -c 2000 "$work/local.log")"
    [ "$answer" = "Done: wrote hello.txt" ] || fail "$harness with a local server answered '$answer'"
    [ "$(cat "$project/hello.txt")" = "hi" ] || fail "$harness with a local server did not write hello.txt"
    python3 - "$work/local.log" "$harness" <<'PY' || fail "$harness did not use the local server's API: $(cat "$work/local.log")"
import json, sys
paths = {e["path"].split("?")[0] for e in map(json.loads, open(sys.argv[1])) if e["method"] == "POST"}
expected = {"claude-code": "/v1/messages", "codex": "/v1/responses", "pi": "/v1/chat/completions"}[sys.argv[2]]
assert expected in paths, paths
PY
    echo "PASS $harness with a local server"
  done
fi
if [[ $only == *" images "* ]]; then
  check_image_pruning
fi
if [[ $only == *" vibe "* ]]; then
  # Mistral Vibe is published only on PyPI; where the image build cannot reach it, there
  # is nothing to run (its plugin is covered by tests/unit/harnesses/vibe_test.cpp).
  if ! curl -fsS --max-time 20 -o /dev/null https://pypi.org/simple/mistral-vibe/ 2>"$work/pypi.err"; then
    echo "SKIP vibe: pypi.org cannot be reached from this machine ($(tr -d '\n' < "$work/pypi.err")), and Mistral Vibe is published only there"
  else
    mistral_key="$(openssl rand -hex 16)REALKEY"
    printf '%s\n' "$mistral_key" | handler account add mistral --kind mistral-api-key --api-key-stdin >/dev/null
    handler agent add vibe --harness vibe --account mistral >/dev/null
    check_harness vibe write_file edit api.mistral.ai mistral-api-key "$mistral_key" MISTRAL_API_KEY ""
  fi
fi
if [[ $only == *" acp "* ]]; then
  acp_harnesses=()
  for harness in claude codex pi; do [[ $only == *" $harness "* ]] && acp_harnesses+=("$harness"); done
  [ ${#acp_harnesses[@]} -gt 0 ] || acp_harnesses=(claude codex pi)
  # Last: its tests kill handlerd, and its providers' tool calls write another content.
  check_acp "${acp_harnesses[@]}"
fi
echo "PASS harnesses"
