#!/usr/bin/env bash
# A wrong-major plugin dropped into the user's plugin folder is listed as refused, with
# a message that names the file and both ABI versions; handlerd keeps serving.
source "$(dirname "$0")/lib.sh"
: "${HANDLER_FIXTURE_PLUGIN_DIR:?set by ctest}"

mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$HANDLER_FIXTURE_PLUGIN_DIR/wrong-major" "$XDG_DATA_HOME/handler/plugins/"
start_daemon

plugins=$(handler plugins list --json)
state=$(json_get "$plugins" "[p['state'] for p in d if p['source']=='user'][0]")
message=$(json_get "$plugins" "[p['message'] for p in d if p['source']=='user'][0]")
expect_eq "$state" refused
expect_contains "$message" "$XDG_DATA_HOME/handler/plugins/wrong-major" "message names the file"
expect_contains "$message" "2.0" "message names the plugin's ABI"
expect_contains "$message" "1.1" "message names handlerd's ABI"

# The table shows it too, and the daemon still serves.
expect_contains "$(handler plugins list)" refused
handler context add StillServing >/dev/null
expect_contains "$(handler status)" "1 refused"
pass
