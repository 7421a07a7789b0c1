#!/usr/bin/env bash
# Sets up (scripts/setup.sh), runs the whole test suite on the CPU build, and checks that the CUDA
# backend compiles (its GPU tests run on a GPU machine: scripts/gpu_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build/cpu --output-on-failure -j"$(nproc)"
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "test: compiling the CUDA preset (no GPU here: its GPU tests report themselves skipped)" >&2
  cmake --preset cuda >/dev/null
  cmake --build build/cuda -j"$(nproc)"
  ctest --test-dir build/cuda --output-on-failure -j"$(nproc)" -R 'Cuda'
else
  echo "test: nvcc not found; CUDA preset not compiled" >&2
fi
