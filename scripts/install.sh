#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install the packages, make /dev/net/tun
# usable (scripts/prepare-machine.sh), build Handler, install it under /usr/local and
# leave handlerd running, answering `handler status`.
#
#   scripts/install.sh            # as a normal user with sudo: handlerd runs as you
#   sudo scripts/install.sh       # same, for the user who ran sudo
#   scripts/install.sh  (as root) # handlerd runs as the unprivileged user `handler`,
#                                 # created if missing: agents never run as root.
#                                 # Use it with: su - handler -c 'handler status'.
#
# Environment: PREFIX (default /usr/local), BUILD_DIR (default build/release),
# HANDLER_USER (override the user handlerd runs as).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PREFIX:-/usr/local}
build_dir=${BUILD_DIR:-$here/build/release}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

"$here/scripts/install-deps.sh"
# Devices as distributions ship them (/dev/net/tun 0666, kept by a udev rule): harness
# images cannot be built without it. Says what it did.
"$here/scripts/prepare-machine.sh"

echo "install: building in $build_dir"
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DHANDLER_BUILD_TESTS=OFF -DHANDLER_WERROR=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
as_root cmake --install "$build_dir" >/dev/null
echo "install: installed handler and handlerd into $prefix"

# Who handlerd runs as.
if [ -n "${HANDLER_USER:-}" ]; then
  user=$HANDLER_USER
elif [ "$(id -u)" -ne 0 ]; then
  user=$(id -un)
elif [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
  user=$SUDO_USER
else
  user=handler
fi
if ! id "$user" >/dev/null 2>&1; then
  echo "install: creating the unprivileged user '$user' to run handlerd"
  as_root useradd --create-home --shell /bin/bash "$user"
fi

run_as_user() {
  if [ "$(id -un)" = "$user" ]; then bash -c "$1"; else as_root su - "$user" -c "$1"; fi
}

# A systemd user service comes with `handler setup`; here, and wherever there is no
# systemd, handlerd runs as a detached daemon that survives this shell.
# A handlerd from an earlier install is stopped first, so the new build serves.
run_as_user "
  if pid=\$($prefix/bin/handler status --json 2>/dev/null |
             python3 -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])' 2>/dev/null); then
    echo \"install: stopping the running handlerd (pid \$pid)\"
    kill \$pid
    for _ in \$(seq 1 50); do kill -0 \$pid 2>/dev/null || break; sleep 0.1; done
  fi
  setsid $prefix/bin/handlerd --detach"
for _ in $(seq 1 50); do
  if run_as_user "$prefix/bin/handler status" >/dev/null 2>&1; then
    # Sessions need the machine checked, the user's podman settings fixed and the base
    # image built (no registry: mmdebstrap from the Debian mirror, a minute or two the
    # first time, nothing when it exists). A problem here leaves handlerd running and
    # says what to fix; `handler setup` can be run again at any time.
    echo "install: running handler setup as '$user'"
    run_as_user "$prefix/bin/handler setup" ||
      echo "install: handler setup reported a problem (above); sessions need it fixed" >&2
    echo
    run_as_user "$prefix/bin/handler status"
    echo
    echo "install: handlerd runs as '$user'."
    [ "$(id -un)" = "$user" ] || echo "install: use it as that user, e.g. su - $user -c 'handler status'"
    exit 0
  fi
  sleep 0.2
done
echo "install: handlerd did not answer; its log:" >&2
run_as_user 'tail -n 30 "${XDG_DATA_HOME:-$HOME/.local/share}/handler/handlerd.log"' >&2 || true
exit 1
