#!/usr/bin/env bash
# The web page in a real browser (tests/browser/*.test.mjs, node --test): Debian's Chromium
# headless, driven by playwright-core from npm (pinned by tests/browser/package-lock.json),
# against the real handlerd, handler CLI and page from this build (prefix/ next to this
# script, like the other podman tests), with a real session on rootless podman.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-browser
# shellcheck source=../integration/podman/session_env.sh
source "$here/session_env.sh"

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed for the browser tests"
chromium=${HANDLER_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || fail "no Chromium at $chromium (scripts/test.sh installs Debian's chromium)"
[ -f "$prefix/share/handler/ui/index.html" ] || fail "$prefix/share/handler/ui has no page; build with -DHANDLER_BUILD_UI=ON"

project="$work/projects/web"
mkdir -p "$project"
handlerd --detach >/dev/null || fail "handlerd did not start"
handler project add "$project" >/dev/null
cd "$project"
session_id=$(handler run shell --detach) || fail "handler run shell --detach failed"
wait_state "$session_id" running

browser_dir="$work/browser"
mkdir -p "$browser_dir"
cp "$here"/browser/package.json "$here"/browser/package-lock.json "$here"/browser/*.mjs "$browser_dir"/
[ -d "$here/browser/page" ] && cp -r "$here/browser/page" "$browser_dir/"
# npm's cache in the account's real home, so later runs need no download.
(cd "$browser_dir" && npm_config_cache="$real_home/.npm" npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) ||
  fail "npm ci of playwright-core failed"
# Chromium's profile, crash reports and caches go to the private HOME. Only the files at
# the top: page/ holds the page's feature tests, which need page/dev_env.sh's set-up.
(cd "$browser_dir" && HANDLER_SESSION_ID=$session_id HANDLER_CHROMIUM=$chromium node --test --test-concurrency=1 ./*.test.mjs) ||
  fail "the browser tests failed (above)"
handler session stop "$session_id" >/dev/null || true
echo "PASS ($test_name)"
