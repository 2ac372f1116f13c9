#!/usr/bin/env bash
# The editor stand-in tests (node's test runner, the official ACP SDK from npm), run in a
# copy of tests/acp inside the build tree so that the source tree gets no node_modules.
# `npm ci` installs exactly what package-lock.json pins.
set -euo pipefail
: "${HANDLER_BIN_DIR:?set by ctest to the bin folder of the build}"
: "${HANDLER_ACP_TEST_DIR:?set by ctest to the folder the tests run in}"
source_dir=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$HANDLER_ACP_TEST_DIR"
cp "$source_dir"/package.json "$source_dir"/package-lock.json "$source_dir"/*.mjs "$HANDLER_ACP_TEST_DIR"/
cd "$HANDLER_ACP_TEST_DIR"
npm ci --no-audit --no-fund --loglevel=error
exec node --test --test-concurrency=1 handler_acp.test.mjs
