#!/usr/bin/env bash
# Builds the podman test image without a registry or network: a rootfs of Debian's
# static busybox (package busybox-static), the host's curl with the libraries it links
# (a real TLS client that reads the system trust store and the proxy variables, for
# the key tests), and a minimal /etc/passwd, imported with `podman import`. Idempotent: an existing image of that name is kept if it was made
# from this same recipe (the label io.handler.test-image holds the recipe's version).
#
# Usage: make_test_image.sh [IMAGE]   (default localhost/handler-test-busybox:latest)
# Runs as the unprivileged user whose rootless podman storage should hold the image.
set -euo pipefail

image=${1:-localhost/handler-test-busybox:latest}
busybox=${HANDLER_BUSYBOX:-/bin/busybox}
# Bump when the rootfs below changes, so machines with an older image rebuild it.
recipe_version=7
applets="sh ash ls id stat touch cat test mkdir rm echo sleep ps grep head tail wc pwd
         readlink true false env printf uname awk cut tr sort basename dirname stty
         wget nc seq nslookup unshare df dd"

if podman image exists "$image"; then
  present=$(podman image inspect --format '{{index .Config.Labels "io.handler.test-image"}}' "$image" 2>/dev/null || true)
  if [ "$present" = "$recipe_version" ]; then
    echo "make_test_image: $image already present"
    exit 0
  fi
  podman rmi --force "$image" >/dev/null
fi
[ -x "$busybox" ] || {
  echo "make_test_image: $busybox is missing; install Debian's busybox-static" >&2
  exit 1
}
# A dynamically linked busybox would need libc in the image, which this rootfs lacks.
if ! "$busybox" true; then
  echo "make_test_image: $busybox does not run" >&2
  exit 1
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/handler-test-rootfs-XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,home/agent,root,run}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $applets; do
  ln -s busybox "$root/bin/$applet"
done
# curl and exactly the shared objects it loads, at the same paths as on the host.
curl_bin=$(command -v curl) || { echo "make_test_image: curl is missing" >&2; exit 1; }
for file in "$curl_bin" $(ldd "$curl_bin" | awk '/=> \//{print $3} /^\t\//{print $1}'); do
  mkdir -p "$root$(dirname "$file")"
  cp -L "$file" "$root$file"
done
mkdir -p "$root/etc/ssl/certs"
# keep-id adds the user's own entry at start; root and nobody are what tools expect.
cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

tarball="$root.tar"
tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$tarball" .
trap 'rm -rf "$root" "$tarball"' EXIT
podman import --quiet --change "LABEL io.handler.test-image=$recipe_version" \
  "$tarball" "$image" >/dev/null
echo "make_test_image: imported $image"
