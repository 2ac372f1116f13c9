#!/usr/bin/env bash
# Makes the machine's devices usable by rootless podman the way distributions ship them.
# Run by scripts/install.sh and scripts/test.sh after the packages; safe to run again.
# Needs root (or sudo), except with --dry-run, which only says what it would do.
#
# /dev/net/tun: slirp4netns opens it as the user, for podman build's RUN steps (every
# harness image: `handler run claude` builds one the first time) and for agents with
# network `open`. Some VMs create it 0600 (root only). Distributions ship 0666: the
# kernel still checks the opener's rights in its own network namespace, so the mode
# grants nothing by itself. It is set now, and a udev rule keeps it after a reboot.
#
# Environment (for tests of this script): HANDLER_TUN_DEVICE (default /dev/net/tun),
# HANDLER_TUN_RULE (default /etc/udev/rules.d/60-handler-tun.rules).
set -euo pipefail

tun=${HANDLER_TUN_DEVICE:-/dev/net/tun}
rule_file=${HANDLER_TUN_RULE:-/etc/udev/rules.d/60-handler-tun.rules}
rule='KERNEL=="tun", MODE="0666"'

dry_run=0
[ "${1:-}" = --dry-run ] && dry_run=1
if [ $dry_run = 0 ] && [ "$(id -u)" -ne 0 ]; then
  # sudo resets the environment; the test settings below must reach the root run.
  exec sudo --preserve-env=HANDLER_TUN_DEVICE,HANDLER_TUN_RULE "$0" "$@"
fi
say() { echo "prepare-machine: $*"; }
run() { if [ $dry_run = 1 ]; then say "would run: $*"; else "$@"; fi; }

if [ ! -e "$tun" ]; then
  say "$tun does not exist; loading the tun module"
  run modprobe tun || say "could not load tun: harness images and open-mode sessions need it" >&2
fi
if [ -e "$tun" ]; then
  mode=$(stat -c %a "$tun")
  if [ "$mode" = 666 ]; then
    say "$tun is 0666 already"
  else
    say "$tun is 0$mode; making it 0666 as distributions ship it (podman build's RUN steps" \
        "and open-mode sessions need it)"
    run chmod 0666 "$tun"
  fi
fi

if [ -f "$rule_file" ] && grep -qxF "$rule" "$rule_file"; then
  say "$rule_file keeps it 0666 after a reboot already"
else
  say "writing $rule_file so udev keeps $tun 0666 after a reboot"
  if [ $dry_run = 1 ]; then
    say "would write: $rule"
  else
    mkdir -p "$(dirname "$rule_file")"
    printf '# Written by Handler (scripts/prepare-machine.sh): rootless podman needs tun.\n%s\n' \
      "$rule" > "$rule_file"
  fi
fi

# The rule is read by udev when it creates the device at boot. Where no udev runs (some
# VMs and containers), nothing reads it, and the mode goes back after a reboot.
if ! pgrep -x systemd-udevd >/dev/null 2>&1 && ! pgrep -x udevd >/dev/null 2>&1; then
  say "no udev runs on this machine, so nothing applies that rule at boot: after a reboot," \
      "run scripts/prepare-machine.sh again (handler setup says when tun is unusable)"
fi
