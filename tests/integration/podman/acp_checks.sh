# Sourced by harnesses.sh, which has set up handlerd, the fake model providers, the
# accounts, the project and its agents, and built the harnesses' images (so this costs
# no second image build): editors on real conversations. The official ACP client SDK
# (tests/acp/conversation.test.mjs, node's test runner) drives the real `handler acp`
# against the real handlerd, with Claude Code, Codex and pi from npm in their containers
# and the fake model server as the only fake. For each harness: a prompt that writes a
# file through a tool call (updates in order, the file on the host), a follow-up that
# carries the history to the model, cancel mid-turn then a working prompt, handler acp
# killed then session/load replaying, handlerd killed with -9 then the conversation going
# on, a second client seeing the other's prompt and output, list and close; and for the
# harnesses that ask, a permission answered in the editor and one answered by `handler
# session answer` while the editor waits (withdrawn there). The tool's content is shaped
# like a JSON-RPC request to the editor: it must stay data.

# run_acp_client AGENT LOCKED_AGENT HOST [MODEL]
run_acp_client() {
  echo "--- $1 over ACP"
  (cd "$acp_client" && ACP_MODEL="${4:-}" HANDLER_BIN_DIR="$prefix/bin" ACP_AGENT="$1" ACP_LOCKED_AGENT="$2" \
     ACP_PROJECT="$project" ACP_CONTENT="$model_content" ACP_ANSWER="$model_answer" ACP_MODEL_LOG="$work/$3.log" \
     ACP_HOLD="$work/hold" timeout 1500 node --test --test-concurrency=1 conversation.test.mjs) ||
    fail "$1: the ACP conversation tests failed (the model server saw: $(tail -c 2000 "$work/$3.log"))"
  echo "PASS $1 over ACP"
}

# check_acp HARNESS...: of claude, codex and pi.
check_acp() {
  command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed for the ACP client"
  # The tool's content, shaped like a request to the editor; the providers play it from now on.
  model_content='{"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{"sessionId":"x","command":"sh"}}'
  restart_model_server api.anthropic.com
  restart_model_server api.openai.com
  # The tests start handlerd again after killing it, and it verifies upstreams against
  # the test CA.
  export SSL_CERT_FILE="$pki/ca.crt"
  handler agent add claude-locked --harness claude-code --account anthropic --network none >/dev/null
  handler agent add codex-locked --harness codex --account openai --network none >/dev/null
  acp_client="$work/acp-client"
  mkdir -p "$acp_client"
  cp "$here"/acp-client/package.json "$here"/acp-client/package-lock.json "$here"/acp-client/*.mjs "$acp_client"/
  (cd "$acp_client" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci of the ACP client failed"
  local harness
  for harness in "$@"; do
    case $harness in
      claude) run_acp_client claude claude-locked api.anthropic.com;;
      # A model name Codex does not know: it then offers the model the fallback tools the
      # fake model calls.
      codex) run_acp_client codex codex-locked api.openai.com gpt-handler-test;;
      pi) run_acp_client pi "" api.anthropic.com;;
    esac
  done
  echo "PASS editors over ACP"
}
