#!/usr/bin/env bash
# The real base image (docs/images.md), opt-in (-DHANDLER_IMAGE_TESTS=ON, label `image`):
# builds it with mmdebstrap + podman import unless the current recipe's tag exists, then
# checks, with no network, that the tools run and that the host's CA bundle is trusted.
# Run as a non-root user with podman set up (scripts/test.sh sets up handler-ci).
set -euo pipefail
probe=${HANDLER_RUNTIME_PROBE:?set HANDLER_RUNTIME_PROBE to the runtime_probe binary}
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" != 0 ] || fail "run as a non-root user with podman set up, not as root"
command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing: sudo apt-get install mmdebstrap"

started=$(date +%s)
image=$("$probe" ensure-base-image) || fail "ensure-base-image failed"
echo "image $image ready after $(( $(date +%s) - started )) s"
case $image in localhost/handler-base:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]*) ;; *) fail "bad reference '$image'";; esac

run() { podman run --rm --network=none "$image" "$@"; }
node_major=$(run node -p 'process.versions.node.split(".")[0]') || fail "node does not run"
[ "$node_major" -ge 20 ] || fail "node $node_major is older than 20"
run git --version >/dev/null || fail "git does not run"
run rg --version >/dev/null || fail "rg does not run"
run curl --version >/dev/null || fail "curl does not run"
run python3 --version >/dev/null || fail "python3 does not run"
run test -f /usr/local/share/ca-certificates/handler-host-ca.crt || fail "the host CA was not added"
run test -L /etc/ssl/certs/handler-host-ca.pem || fail "update-ca-certificates did not link the host CA"
# Every certificate of the host's bundle is in the image's bundle.
host_bundle=/etc/ssl/certs/ca-certificates.crt
if [ -f "$host_bundle" ]; then
  last=$(grep -v -- '-----' "$host_bundle" | tail -n 1)
  run grep -qF -- "$last" /etc/ssl/certs/ca-certificates.crt || fail "the image's bundle lacks the host's certificates"
fi

# Unchanged recipe: no rebuild, the same reference at once.
again=$("$probe" ensure-base-image 2>&1 >/dev/null)
case $again in *"is up to date"*) ;; *) fail "second ensure did not find the image: $again";; esac
echo "PASS base_image"
