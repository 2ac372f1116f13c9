#!/usr/bin/env bash
# The out-of-tree template plugin (built by plugin_template_builds_out_of_tree_and_loads
# against the installed SDK), dropped into the user's plugin folder, is listed by the
# real handlerd as loaded.
source "$(dirname "$0")/lib.sh"
: "${HANDLER_TEMPLATE_PLUGIN_DIR:?set by ctest}"
[ -f "$HANDLER_TEMPLATE_PLUGIN_DIR/my-harness/plugin.toml" ] ||
  fail "the template build left no plugin in $HANDLER_TEMPLATE_PLUGIN_DIR"

mkdir -p "$XDG_DATA_HOME/handler/plugins"
cp -r "$HANDLER_TEMPLATE_PLUGIN_DIR/my-harness" "$XDG_DATA_HOME/handler/plugins/"
start_daemon

plugins=$(handler plugins list --json)
expect_eq "$(json_get "$plugins" "[p['state'] for p in d if p['id']=='my-harness'][0]")" loaded "template plugin state"
expect_eq "$(json_get "$plugins" "[p['source'] for p in d if p['id']=='my-harness'][0]")" user
expect_eq "$(json_get "$plugins" "[p['abi'] for p in d if p['id']=='my-harness'][0]")" "1.1"
# The built-in plugins still load beside it.
expect_eq "$(json_get "$plugins" "[p['state'] for p in d if p['id']=='shell'][0]")" loaded
pass
