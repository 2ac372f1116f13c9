#!/usr/bin/env bash
# The web page in a real browser (tests/browser/*.test.mjs, node --test): Debian's Chromium
# headless, driven by playwright-core from npm (pinned by tests/browser/package-lock.json),
# against the real handlerd, handler CLI and page from this build (prefix/ next to this
# script, like the other podman tests), with a real session on rootless podman. Then the
# page's feature tests (browser/page/*.test.mjs) against a second handlerd that
# page/dev_env.sh sets up (the fake model server, the real Claude Code), serving its own
# page; with HANDLER_TEST_SHARED_IMAGES=1 (CI) it starts sessions on the images
# podman.harnesses built, else it builds the base and Claude Code images first (minutes).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
test_name=podman-browser
shared_images=1
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
echo "PASS ($test_name): the login and guard tests"

# The feature tests, in a handlerd home of their own under $work (gone with it).
page_dev="$work/page-dev"
page_down() {
  local code=$? pause variant
  for variant in --fresh ""; do
    # shellcheck disable=SC2086 # the empty variant is no argument
    HANDLER_UI_DEV=$page_dev bash "$browser_dir/page/dev_env.sh" down $variant >/dev/null 2>&1 || true
  done
  # dev_env.sh's podman keeps a pause process for each XDG_RUNTIME_DIR of its own.
  for pause in "$page_dev/run/libpod/tmp/pause.pid" "$page_dev/fresh/run/libpod/tmp/pause.pid"; do
    pause=$(cat "$pause" 2>/dev/null || true)
    [ -z "$pause" ] || kill "$pause" 2>/dev/null || true
  done
  (exit $code)
  cleanup
}
trap page_down EXIT
HANDLER_UI_DEV=$page_dev HANDLER_UI_DEV_CONTAINERS="$HOME/.config/containers" \
  bash "$browser_dir/page/dev_env.sh" up "$here" --served > "$work/page-env.out" 2>&1 ||
  fail "page/dev_env.sh up failed: $(tail -n 40 "$work/page-env.out")"
# The feature tests; the page's logic without a browser (model, network_model, agent_form,
# routes, events_channels) runs as ctest's ui.* tests from the source tree, where its
# imports resolve. first_session runs last, against a new user's handlerd
# (dev_env.sh --fresh).
# HANDLER_PAGE_TESTS="terminal network" runs only those (for working on one).
read -r -a page_tests <<<"${HANDLER_PAGE_TESTS:-agent_settings changes chatgpt_login conversation image_build network questions queue shell terminal first_session}"
run_page_tests() { # ENV_FILE TEST...
  local env_file=$1
  shift
  (# shellcheck source=/dev/null
   source "$env_file" && cd "$browser_dir/page" &&
   HANDLER_CHROMIUM=$chromium HANDLER_UI_SCREENSHOTS="$work/screenshots" node --test --test-concurrency=1 \
     "${@/%/.test.mjs}")
}
existing=() fresh=()
for name in "${page_tests[@]}"; do
  if [ "$name" = first_session ]; then fresh+=("$name"); else existing+=("$name"); fi
done
if [ ${#existing[@]} -gt 0 ]; then
  run_page_tests "$page_dev/env.sh" "${existing[@]}" || fail "the page's feature tests failed (above)"
fi
if [ ${#fresh[@]} -gt 0 ]; then
  HANDLER_UI_DEV=$page_dev bash "$browser_dir/page/dev_env.sh" up "$here" --served --fresh > "$work/page-fresh.out" 2>&1 ||
    fail "page/dev_env.sh up --fresh failed: $(tail -n 40 "$work/page-fresh.out")"
  run_page_tests "$page_dev/fresh/env.sh" "${fresh[@]}" || fail "the new user's page test failed (above)"
fi
echo "PASS ($test_name): the page's feature tests (${page_tests[*]})"
