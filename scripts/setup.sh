#!/usr/bin/env bash
# Installs voxrt's build dependencies (Debian packages only) and builds the CPU preset.
# Usage: scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config
          libsndfile1-dev libmpg123-dev libsoxr-dev nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev libssl-dev
          libopenblas-dev libgtest-dev libgmock-dev libboost-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake --preset cpu >/dev/null
cmake --build build/cpu -j"$(nproc)"
echo "setup: built build/cpu/voxrt" >&2
