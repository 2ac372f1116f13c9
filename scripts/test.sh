#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian 12 machine: installs the packages, builds
# with tests (warnings are errors) and runs ctest, which prints its summary line.
#
# Environment: BUILD_DIR (default build/test), HANDLER_SANITIZE=ON for ASan+UBSan.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build/test}

"$here/scripts/install-deps.sh"

cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHANDLER_BUILD_TESTS=ON -DHANDLER_SANITIZE="${HANDLER_SANITIZE:-OFF}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
cd "$build_dir"
ctest --output-on-failure --timeout 300 -j "$(nproc)"
