#!/usr/bin/env bash
# Editors on real conversations: the official ACP client SDK (tests/acp/conversation.test.mjs,
# node's test runner) drives the real `handler acp` against the real handlerd, with Claude
# Code, Codex and pi from npm in their containers and the fake model server as the only
# fake (reached as api.anthropic.com and api.openai.com through [network] resolve), as
# harnesses.sh sets them up. For each harness: a prompt that writes a file through a tool
# call (updates in order, the file on the host), a follow-up that carries the history to
# the model, cancel mid-turn then a working prompt, handler acp killed then session/load
# replaying, handlerd killed with -9 then the conversation going on, a second client seeing
# the other's prompt and output, list and close; and for the harnesses that ask, a
# permission answered in the editor and one answered by `handler session answer` while
# the editor waits (withdrawn there). The tool's content is shaped like a JSON-RPC request
# to the editor: it must stay data.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-acp
use_base_image=1
extra_config='[network]
resolve = { "api.anthropic.com:443" = "127.0.0.1:ANTHROPIC_PORT", "api.openai.com:443" = "127.0.0.1:OPENAI_PORT" }'
# shellcheck source=session_env.sh
source "$here/session_env.sh"

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed for the ACP client"
pki="$work/pki"
make_pki "$pki" api.anthropic.com api.openai.com
project="$work/projects/app"
mkdir -p "$project"
# The tool's content, shaped like a request to the editor.
model_content='{"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{"sessionId":"x","command":"sh"}}'
start_model_server api.anthropic.com ANTHROPIC_PORT
start_model_server api.openai.com OPENAI_PORT

# handlerd verifies upstreams against the system store; for this test that is the test CA.
# (It is exported: the test starts handlerd again after killing it.)
export SSL_CERT_FILE="$pki/ca.crt"
handlerd --detach >/dev/null || fail "handlerd did not start"
handler setup > "$work/setup.out" 2>&1 || { cat "$work/setup.out" >&2; fail "handler setup failed"; }

printf '%s\n' "sk-ant-api03-$(openssl rand -hex 32)" | handler account add anthropic --kind anthropic-api-key --api-key-stdin >/dev/null
printf '%s\n' "sk-proj-$(openssl rand -hex 40)" | handler account add openai --kind openai-api-key --api-key-stdin >/dev/null
handler project add "$project" >/dev/null
cd "$project"
handler agent add claude --harness claude-code --account anthropic >/dev/null
handler agent add claude-locked --harness claude-code --account anthropic --network none >/dev/null
handler agent add codex --harness codex --account openai >/dev/null
handler agent add codex-locked --harness codex --account openai --network none >/dev/null
handler agent add pi --harness pi --account anthropic >/dev/null

# The client: the pinned SDK, installed where this user may write.
client="$work/acp-client"
mkdir -p "$client"
cp "$here"/acp-client/package.json "$here"/acp-client/package-lock.json "$here"/acp-client/*.mjs "$client"/
(cd "$client" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci of the ACP client failed"

# run_client AGENT LOCKED_AGENT HOST [MODEL]
run_client() {
  echo "--- $1"
  (cd "$client" && ACP_MODEL="${4:-}" HANDLER_BIN_DIR="$prefix/bin" ACP_AGENT="$1" ACP_LOCKED_AGENT="$2" ACP_PROJECT="$project" \
     ACP_CONTENT="$model_content" ACP_ANSWER="$model_answer" ACP_MODEL_LOG="$work/$3.log" ACP_HOLD="$work/hold" \
     timeout 1500 node --test --test-concurrency=1 conversation.test.mjs) ||
    fail "$1: the ACP conversation tests failed (the model server saw: $(tail -c 2000 "$work/$3.log"))"
  echo "PASS $1 over ACP"
}

# HANDLER_TEST_HARNESSES="codex pi" runs only those.
only=" ${HANDLER_TEST_HARNESSES:-claude codex pi} "
[[ $only != *" claude "* ]] || run_client claude claude-locked api.anthropic.com
# A model name Codex does not know: it then offers the model the fallback tools the fake
# model calls (harnesses.sh).
[[ $only != *" codex "* ]] || run_client codex codex-locked api.openai.com gpt-handler-test
[[ $only != *" pi "* ]] || run_client pi "" api.anthropic.com
echo "PASS ($test_name)"
