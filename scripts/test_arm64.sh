#!/usr/bin/env bash
# Cross-builds the CPU backend for arm64 (aarch64) on an x86-64 Debian machine and runs its test
# suite under qemu-aarch64-static on the tiny model.
# Installs what it needs from Debian: the arm64 architecture (dpkg --add-architecture), the cross
# compiler, the :arm64 development packages of the CPU build's libraries, and qemu-user-static.
# Builds with cmake/toolchains/aarch64-linux-gnu.cmake into build/arm64 (VOXRT_CUDA off), whose
# CMAKE_CROSSCOMPILING_EMULATOR makes CTest run every test under qemu. The tests that run the voxrt
# command start it through a wrapper that runs it under qemu too (no binfmt_misc needed).
# Usage: scripts/test_arm64.sh [CTEST ARGS...]      e.g. scripts/test_arm64.sh -R 'LogMel|TinyParity'
# (as root, or with sudo available). Not run by CI (scripts/test.sh): on the shared 2-core development
# machine the cross build of voxrt and voxrt_tests took 15 minutes (no ccache hits: a first build)
# and the front end's, the tiny model's parity and the thread team's 41 tests 1.5 minutes under
# qemu; the whole suite (587 tests) took 54 minutes of ctest -j2, and two of its tests take over
# 10 minutes each emulated (hence VOXRT_TEST_TIMEOUT=3600 below), so it is far beyond CI's budget
# (bench/results/2026-12-05-cpu-baseline-dispatch.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/arm64

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# The libraries the CPU build links, for arm64; header-only ones (nlohmann-json, CLI11, Boost's
# headers) are the host's, installed by scripts/setup.sh.
PACKAGES=(g++-aarch64-linux-gnu qemu-user-static
          libsndfile1-dev:arm64 libmpg123-dev:arm64 libsoxr-dev:arm64 libopenblas-dev:arm64
          libcurl4-openssl-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test_arm64: installing ${missing[*]}" >&2
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DVOXRT_CUDA=OFF -DVOXRT_TEST_TIMEOUT=3600 >/dev/null
cmake --build "$build" -j"$(nproc)" --target voxrt voxrt_tests
file "$build/voxrt" | grep -q 'ARM aarch64' || { echo "test_arm64: $build/voxrt is not an arm64 program" >&2; exit 1; }

# The tests start the voxrt command themselves (tests/test_paths.h: VOXRT_BINARY); an arm64 program
# started from the emulated tests would need binfmt_misc, so they start it through qemu.
wrapper="$PWD/$build/voxrt-under-qemu"
printf '#!/bin/sh\nexec qemu-aarch64-static "%s" "$@"\n' "$PWD/$build/voxrt" >"$wrapper"
chmod +x "$wrapper"

echo "test_arm64: the CPU test suite on arm64 under qemu-aarch64-static" >&2
VOXRT_BINARY="$wrapper" ctest --test-dir "$build" -j"$(nproc)" -E '^Cuda' --output-on-failure "$@"
