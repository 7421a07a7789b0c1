#!/usr/bin/env bash
# The GPU check in two device calls: this one, the CUDA backend's op tests and tiny parity (bf16
# tolerances), then the full-size model against the reference on the chosen backends, with
# per-step timings; and scripts/gpu_sanitize.sh, the op tests again under compute-sanitizer
# (memcheck, racecheck on the attention and GEMM kernels; ~8 minutes, so a call of its own, or
# this one's with VOXRT_SANITIZE=1 where a call may run longer). Prepare on the development
# machine with
#   cmake --preset cuda && cmake --build build/cuda && scripts/carry_binaries.sh build/cuda
# and run there (device tool, carry [".carry.tar.xz"]):  scripts/gpu_check.sh; scripts/gpu_sanitize.sh
# A variant runs the same check on another carried build or with switches set (docs/cuda.md):
#   scripts/gpu_check.sh cuda80                      voxrt_cuda80 and voxrt_tests_cuda80 (carry_variant.sh)
#   scripts/gpu_check.sh main:VOXRT_CUDA_AS_GPU=L4   the main build deciding as on an L4
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
parse_variant "${1:-main}"
[ ${#variant_env[@]} -gt 0 ] && export "${variant_env[@]}"
suffix=${variant_exe#voxrt}  # "" for main, _NAME for a carried variant
tests=voxrt_tests$suffix
nvidia-smi -L 2>&1 | head -2
echo "== variant ${1:-main}: $tests ${variant_env[*]}"
echo "== CUDA op tests and tiny parity"
.carry/run "$tests" --gtest_filter='Cuda*:*QuantizedModelOnTheGpu*:*DraftRows*:*SessionRows*:*StreamsTogether*:*ContextBiasDecoding*:*PagedCache*:*ConvStems*' 2>&1 | tee "$out/gpu_tests.log" | grep -v "relative error\|mel max abs" | tail -40
grep -E "relative error|argmax" "$out/gpu_tests.log" | sort | awk '!seen[$0]++' | tail -40
if [ "${VOXRT_SANITIZE:-0}" = 1 ]; then
  echo "== the CUDA op tests under compute-sanitizer (scripts/gpu_sanitize.sh)"
  scripts/gpu_sanitize.sh
fi
echo "== many threads through one engine on the GPU (the scheduler batches their rows)"
VOXRT_CONCURRENCY_DEVICE=cuda VOXRT_CONCURRENCY_THREADS=${VOXRT_CONCURRENCY_THREADS:-16} VOXRT_CONCURRENCY_JOBS=${VOXRT_CONCURRENCY_JOBS:-10} \
  .carry/run "$tests" --gtest_filter='Concurrency*' 2>&1 | tee "$out/gpu_concurrency.log" | tail -4
VOXRT_CARRIED_SUFFIX=$suffix VOXRT_FULL_BACKENDS=${VOXRT_FULL_BACKENDS:-cuda} tools/reference/full_size_check.sh
