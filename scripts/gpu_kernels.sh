#!/usr/bin/env bash
# Every kernel voxrt_kernel runs (src/bench/kernels; docs/cuda.md, "Running one kernel"), on the GPU
# machine in one device call: first the small shapes of the CudaKernelDriver tests, then the model's
# shapes (decoder and encoder products, attention over a full window), each checked against the CPU
# and timed against the floor; a line per run here, its figures in $OUT/kernel-<name>.json. Exits 1
# when any run is beyond its tolerance or fails. Prepare on the development machine with
#   cmake --preset cuda && cmake --build build/cuda && scripts/carry_binaries.sh build/cuda
# and run there (device tool, carry [".carry.tar.xz"]):  scripts/gpu_kernels.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ -d .carry ] || tar xJf .carry.tar.xz
out=${OUT:-/tmp}
nvidia-smi -L 2>&1 | head -1
failed=0
run() {  # NAME ARGS...
  local name=$1
  shift
  echo "== $name: voxrt_kernel $*"
  local log rc
  log=$(.carry/run voxrt_kernel "$@" --json "$out/kernel-$name.json" 2>&1)
  rc=$?
  printf '%s\n' "$log" | grep -v '^device: '
  [ "$rc" = 0 ] || { echo "!! $name failed (exit status $rc)"; failed=1; }
}
# The CudaKernelDriver tests' shapes (cmake/bench_kernels.cmake).
run small-gemv-mma gemv --kernel mma --rows 300 --cols 520 --batch 3
run small-gemv-simt gemv --kernel simt --rows 257 --cols 264 --batch 8
run small-gemm-wgmma gemm --kernel wgmma --m 70 --n 260 --k 1000
run small-gemm-mma-gated gemm --kernel mma --m 130 --n 200 --k 512 --gated
run small-gemm-cublas-gated-odd-k gemm --kernel cublas --m 5 --n 96 --k 100 --gated
run small-attention-fp8-frames attention --kernel mma --rows 8 --keys 1000 --heads 8 --kv-heads 8 --head-dim 128 \
    --cache fp8 --layout frames --page-len 48
run small-attention-simt-fp32 attention --kernel simt --rows 4 --keys 300 --heads 4 --kv-heads 1 --head-dim 32 --cache fp32
# The decoder's products for one row (dim 3072, SwiGLU hidden 9216), on each GEMV and cuBLAS.
for k in mma simt cublas; do
  run "decoder-wo-gemv-$k" gemv --kernel $k --rows 3072 --cols 3072 --batch 1
  run "decoder-w13-gemv-$k" gemv --kernel $k --rows 9216 --cols 3072 --batch 1 --gated
  run "decoder-w2-gemv-$k" gemv --kernel $k --rows 3072 --cols 9216 --batch 1
done
# The encoder's for a live step's 4 frames (width 1280, hidden 5120).
run encoder-w13-gemv gemv --rows 5120 --cols 1280 --batch 4 --gated
# Many sessions' rows through the tiled GEMM, on each kernel, and cuBLAS.
for k in wgmma mma cublas; do
  run "decoder-wo-64-gemm-$k" gemm --kernel $k --m 64 --n 3072 --k 3072
  run "decoder-w13-256-gemm-$k" gemm --kernel $k --m 256 --n 9216 --k 3072 --gated
  run "decoder-w2-1024-gemm-$k" gemm --kernel $k --m 1024 --n 3072 --k 9216
done
# Decoder attention over a full window (8192 keys, 32 heads on 8 kv heads of 128), 1 and 64 streams.
for rows in 1 64; do
  run "decoder-attention-$rows-bf16-mma" attention --kernel mma --rows $rows --keys 8192 --cache bf16
  run "decoder-attention-$rows-bf16-simt" attention --kernel simt --rows $rows --keys 8192 --cache bf16
  run "decoder-attention-$rows-fp8-mma" attention --kernel mma --rows $rows --keys 8192 --cache fp8
done
# Encoder attention: a step's 4 frames of one stream over its 750-frame window (32 heads of 64).
for k in mma simt; do
  run "encoder-attention-$k" attention --kernel $k --rows 4 --keys 750 --heads 32 --kv-heads 32 --head-dim 64 \
      --layout frames --step-rows 4
done
[ "$failed" = 0 ] && echo "every kernel within its tolerance" || echo "SOME KERNELS FAILED (above)"
exit "$failed"
