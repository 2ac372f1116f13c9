#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian 12 machine: installs the packages, builds
# with tests (warnings are errors) and runs ctest, which prints its summary line.
#
# The tests labelled `podman` need rootless podman, which only works for a NON-root user
# with subordinate ids (docs/containers.md). Run as root (CI), this script runs every
# other test as root, then creates that user (handler-ci, or HANDLER_PODMAN_USER), sets
# up its podman (runc, overlay storage, a private XDG_RUNTIME_DIR) and runs
# `ctest -L podman` as it. Run as a normal user, it runs everything as that user.
#
# A second pass builds with AddressSanitizer and UndefinedBehaviorSanitizer (Debug, so
# assertions in Boost and our code are on too) and runs every test but the podman ones
# (skip it with HANDLER_SANITIZER_PASS=0).
#
# A third builds the libFuzzer targets with clang and runs each from its seed corpus for
# HANDLER_FUZZ_SECONDS (scripts/fuzz.sh, docs/fuzzing.md; skip it with HANDLER_FUZZ_PASS=0).
#
# Run as root, the sanitizer and fuzz builds happen at the lowest CPU priority while the
# podman tests run: those mostly wait on the Debian mirror, npm and the fake model
# server, and at nice 19 a build takes only what they leave idle. Each section's header
# says how long the run has taken so far.
#
# Environment: BUILD_DIR (default build/test), HANDLER_PODMAN_USER (default handler-ci),
# HANDLER_SANITIZER_PASS (default 1), HANDLER_FUZZ_PASS (default 1), HANDLER_FUZZ_SECONDS
# (default 10).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build/test}
podman_user=${HANDLER_PODMAN_USER:-handler-ci}

"$here/scripts/install-deps.sh"
# The machine as scripts/install.sh leaves it, by the same step: nothing more, so CI
# meets what a user meets.
"$here/scripts/prepare-machine.sh"
# Packages for the tests only: the browser the web page's tests drive (tests/browser/),
# and clang with its runtimes for the fuzz targets (docs/fuzzing.md). A user's machine
# needs neither (they open the page in their own browser), so they are not in
# install-deps.sh; adding a test's tools is not a repair of the machine the install would
# have missed.
test_tools=()
for package in chromium clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || test_tools+=("$package")
done
if [ ${#test_tools[@]} -gt 0 ]; then
  echo "test.sh: installing ${test_tools[*]} for the tests"
  if [ "$(id -u)" -eq 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq --no-install-recommends "${test_tools[@]}"
fi

run_started=$(date +%s)
section() { echo "== $* (at $(( $(date +%s) - run_started )) s)"; }

section "build ($build_dir)"
# Optimised and without debug info: the build takes about 40% less than RelWithDebInfo's
# (a backtrace with lines comes from the sanitizer pass's Debug build). -O2 rather than
# Release's -O3, at which GCC 12 reports false stringop-overflow errors inside libstdc++
# (install.sh builds without -Werror, so they stay warnings there).
# A unity build, here and in the sanitizer pass: a few files per compiler run, so the
# Boost, GoogleTest and standard headers are parsed once for all of them (half the
# compile time on two cores: docs/development.md, "Compile times"). GCC takes a class
# of a .cpp's own header with a member of a type private to that file for one of a
# header once the file is included into another (-Wsubobject-linkage): off here only.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_FLAGS=-Wno-subobject-linkage)
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" \
  "${unity[@]}" -DHANDLER_BUILD_TESTS=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)"

# Every run always happens, so every summary line is printed; the status is the worst.
status=0
asan_dir=${build_dir}-asan
fuzz_dir=${build_dir}-fuzz
sanitizer_on() { [ "${HANDLER_SANITIZER_PASS:-1}" = 1 ]; }
fuzz_on() { [ "${HANDLER_FUZZ_PASS:-1}" = 1 ]; }

# The sanitizer and fuzz builds: as root in the background, while the podman tests run.
later_builds() {
  local code=0
  if sanitizer_on; then
    { cmake -S "$here" -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${unity[@]}" \
        -DHANDLER_BUILD_TESTS=ON -DHANDLER_SANITIZE=ON >/dev/null &&
      cmake --build "$asan_dir" -j "$(nproc)"; } || { echo "test.sh: the sanitizer build failed"; code=1; }
  fi
  if fuzz_on; then
    FUZZ_BUILD_DIR=$fuzz_dir "$here/scripts/fuzz.sh" --build-only || { echo "test.sh: the fuzz build failed"; code=1; }
  fi
  return $code
}

sanitizer_pass() {
  sanitizer_on || return 0
  section "tests under AddressSanitizer + UndefinedBehaviorSanitizer (all but label podman)"
  cmake --build "$asan_dir" -j "$(nproc)" || { status=1; return; }
  (cd "$asan_dir" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure --timeout 600 -j "$(nproc)" -LE podman) || status=1
}

fuzz_pass() {
  fuzz_on || return 0
  section "fuzz targets, ${HANDLER_FUZZ_SECONDS:-10} s each"
  FUZZ_BUILD_DIR=$fuzz_dir "$here/scripts/fuzz.sh" --seconds "${HANDLER_FUZZ_SECONDS:-10}" \
    --parallel "$(nproc)" || status=1
}

if [ "$(id -u)" -ne 0 ]; then
  section "tests"
  (cd "$build_dir" && ctest --output-on-failure --timeout 300 -j "$(nproc)") || status=1
  section "sanitizer and fuzz builds"
  later_builds || status=1
  sanitizer_pass
  fuzz_pass
  section "done"
  exit $status
fi

section "tests as root (all but label podman)"
(cd "$build_dir" && ctest --output-on-failure --timeout 300 -j "$(nproc)" -LE podman) || status=1

later_log=$(mktemp /tmp/handler-later-builds-XXXXXX.log)
( renice -n 19 -p "$BASHPID" >/dev/null; later_builds ) >"$later_log" 2>&1 &
later_pid=$!

# A dedicated unprivileged user: `useradd -m` fills /etc/subuid and /etc/subgid.
section "tests labelled podman, as user $podman_user (the sanitizer and fuzz builds meanwhile, at nice 19)"
id "$podman_user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$podman_user"
user_home=$(getent passwd "$podman_user" | cut -d: -f6)
user_id=$(id -u "$podman_user")
# From the user's home: the caller's folder may be one that user cannot enter.
as_user() { su "$podman_user" -s /bin/bash -c "cd ~ && $1"; }
# On these machines crun refuses cgroup v1 hybrid mode and the default rootless storage
# is the slow vfs driver (docs/containers.md). Existing files are left as they are.
as_user "mkdir -p ~/.config/containers
  [ -e ~/.config/containers/containers.conf ] || printf '[engine]\nruntime = \"runc\"\n' > ~/.config/containers/containers.conf
  [ -e ~/.config/containers/storage.conf ] || printf '[storage]\ndriver = \"overlay\"\n' > ~/.config/containers/storage.conf"
# No login session, so no /run/user/UID: a private runtime folder instead, always the
# same path, since podman records it in its database and refuses a different one later.
runtime_dir=/tmp/handler-ci-runtime-$user_id
if [ -e "$runtime_dir" ] && [ "$(stat -c %u "$runtime_dir")" != "$user_id" ]; then
  echo "test.sh: $runtime_dir exists but is not owned by $podman_user; remove it" >&2
  exit 1
fi
install -d -m 0700 -o "$podman_user" -g "$podman_user" "$runtime_dir"
# The build tree may be unreadable to that user (a clone under /root): its podman tests
# are gathered in one relocatable folder, copied to a place the user owns.
staging=$(mktemp -d /tmp/handler-podman-tests-XXXXXX)
cp -r "$build_dir/podman-tests/." "$staging/"
chown -R "$podman_user:" "$staging"
chmod 0755 "$staging"
as_user "cd '$staging' && XDG_RUNTIME_DIR='$runtime_dir' HANDLER_TEST_SHARED_IMAGES=1 ctest --output-on-failure --timeout 300 --no-tests=error -L podman" ||
  status=1
rm -rf "$staging"

section "waiting for the sanitizer and fuzz builds"
if ! wait "$later_pid"; then
  status=1
  tail -n 60 "$later_log"
fi
grep -h "^fuzz.sh: built\|^test.sh:" "$later_log" || true
rm -f "$later_log"
sanitizer_pass
fuzz_pass
section "done"
exit $status
