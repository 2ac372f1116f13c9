#!/usr/bin/env bash
# A broken config.toml makes handlerd exit non-zero naming file:line:column; a wrong
# type names the key. Nothing is started and nothing is overwritten.
source "$(dirname "$0")/lib.sh"
config="$XDG_CONFIG_HOME/handler/config.toml"
mkdir -p "$(dirname "$config")"

printf 'format = 2\n[api]\nport = = 7\n' > "$config"
set +e; out=$(timeout 10 "$HANDLER_BIN_DIR/handler" daemon 2>&1); code=$?; set -e
[ "$code" -ne 0 ] || fail "handlerd started with a syntax error"
[ "$code" -ne 124 ] || fail "handlerd kept running with a syntax error"
expect_contains "$out" "$config:3:" "syntax error names file and line"
[ ! -e "$XDG_RUNTIME_DIR/handler/handlerd.sock" ] || fail "socket created despite bad config"

printf 'format = 2\n[api]\nport = "abc"\n' > "$config"
set +e; out=$(timeout 10 "$HANDLER_BIN_DIR/handler" daemon 2>&1); code=$?; set -e
[ "$code" -ne 0 ] || fail "handlerd started with a wrong type"
expect_contains "$out" "$config:3:8" "type error names file:line:column"
expect_contains "$out" "port" "type error names the key"
expect_eq "$(cat "$config")" "$(printf 'format = 2\n[api]\nport = "abc"')" "config left untouched"

# handlerd --detach reports the same failure to the terminal and exits non-zero.
set +e; out=$(timeout 10 "$HANDLER_BIN_DIR/handlerd" --detach 2>&1); code=$?; set -e
[ "$code" -eq 1 ] || fail "handlerd --detach exit code $code with a bad config"
expect_contains "$out" "$config:3:8"
pass
