#!/usr/bin/env bash
# Adds another build's voxrt and voxrt_tests to the carried binaries as .carry/bin/voxrt_NAME and
# voxrt_tests_NAME and repacks .carry.tar.xz, so one device call can test and time several
# variants side by side on the same machine (`.carry/run voxrt_tests_NAME --gtest_filter='Cuda*'`,
# scripts/gpu_ab.sh). Run scripts/carry_binaries.sh first (it packs the libraries); the variants
# must link the same libraries (the same Debian packages and CUDA).
#   git worktree add /tmp/v wip/branch && cmake --preset cuda -S /tmp/v -B /tmp/v/build/cuda && cmake --build /tmp/v/build/cuda
#   scripts/carry_variant.sh branch /tmp/v/build/cuda
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/carry_variant.sh NAME [BUILD_DIR]}
build=${2:-build/cuda}
[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "carry_variant: NAME may hold letters, digits, _ . - only" >&2; exit 2; }
[ -d .carry/bin ] || { echo "carry_variant: no .carry/ here: run scripts/carry_binaries.sh first" >&2; exit 2; }
strip -o ".carry/bin/voxrt_$name" "$build/voxrt"
strip -o ".carry/bin/voxrt_tests_$name" "$build/voxrt_tests"
tar cf - .carry | xz -T0 -9e > .carry.tar.xz
ls .carry/bin
