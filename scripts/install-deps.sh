#!/usr/bin/env bash
# Installs the Debian 12 packages Handler builds and runs with. Safe to run again.
# Needs root (or sudo); everything comes from Debian's own mirror.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev libsqlite3-dev sqlite3 libtomlplusplus-dev libspdlog-dev libcli11-dev
  libcpp-httplib-dev libsodium-dev libidn2-dev libgtest-dev libgmock-dev
  python3
  podman runc slirp4netns uidmap fuse-overlayfs catatonit busybox-static mmdebstrap
)

if [ "$(id -u)" -ne 0 ]; then
  exec sudo "$0" "$@"
fi

# The web page is built with node and npm (ui/CMakeLists.txt). Debian's npm package
# conflicts with a node from elsewhere (NodeSource's, which these machines have), so
# Debian's nodejs and npm are added only when there is no npm at all.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
