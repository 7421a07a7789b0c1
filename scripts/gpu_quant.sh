#!/usr/bin/env bash
# Quantized weights on the GPU machine, in one call (prepare as for scripts/gpu_check.sh): the CUDA
# backend's quantized tests (each product and lookup bit for bit the bf16 one over the dequantized
# values, at every row count; the tiny model against the CPU backend), memcheck over them, then on
# the full-size random model `voxrt quantize` for each scheme (timed, with the error it reports)
# and `voxrt bench` for bf16 and each scheme, side by side on the same GPU; then what each scheme
# costs against bf16 weights, stage by stage and in teacher-forced argmax
# (tests/parity/test_full_size_quantized.cpp).
#   scripts/gpu_quant.sh [SCHEME...]     SCHEME: 4w (4w linears, 8w embedding), 8w or fp8 (fp8
#                                        linears, 8w embedding); default all three
# VOXRT_QUANT_METHOD=rtn quantizes faster (the schemes' speed does not depend on the method).
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
nvidia-smi -L 2>&1 | head -1
echo "== CUDA quantized tests"
.carry/run voxrt_tests --gtest_filter='*CudaQuantized*:*QuantizedModelOnTheGpu*' 2>&1 | tee "$out/quant_tests.log" |
  grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |relative error|agrees|Failure" | head -40
echo "== memcheck over them"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$sanitizer" --target-processes all --print-limit 20 --tool memcheck .carry/run voxrt_tests --gtest_filter='*CudaQuantized*' \
  >"$out/quant_memcheck.log" 2>&1
grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/quant_memcheck.log" | tail -3
declare -A options=([4w]="--qlinear 4w --qlinear-encoder 4w --qembedding 8w" [8w]="--qlinear 8w --qlinear-encoder 8w --qembedding 8w"
                   [fp8]="--qlinear fp8 --qlinear-encoder fp8 --qembedding 8w")
schemes=("$@")
[ $# -eq 0 ] && schemes=(4w 8w fp8)
for s in "${schemes[@]}"; do
  [ -n "${options[$s]:-}" ] || { echo "unknown scheme '$s' (4w, 8w or fp8)" >&2; exit 2; }
done
bench=(--device cuda --passes 50 --offline-seconds 30 --figures encoder,decoder,offline,products --out "$out/bench")
echo "== voxrt bench, bf16 weights"
.carry/run voxrt bench "${bench[@]}" --model "$full/mistral" 2>&1 | tee "$out/bench-bf16.log" | tail -14
for s in "${schemes[@]}"; do
  echo "== voxrt quantize $s (${options[$s]})"
  rm -rf "/tmp/voxrt-full-$s"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 400 .carry/run voxrt quantize "$full/mistral" "/tmp/voxrt-full-$s" ${options[$s]} \
    --quantize-method "${VOXRT_QUANT_METHOD:-search}" 2>&1 | tee "$out/quantize-$s.log"
  echo "quantize $s: $(( $(date +%s) - start )) s; files: $(du -sh /tmp/voxrt-full-$s | cut -f1)"
  echo "== voxrt bench, $s weights"
  .carry/run voxrt bench "${bench[@]}" --model "/tmp/voxrt-full-$s" 2>&1 | tee "$out/bench-$s.log" | tail -14
done
echo "== what each scheme costs against bf16 weights on the full-size model (tests/parity/test_full_size_quantized.cpp)"
VOXRT_FULL_DIR="$full" VOXRT_FULL_QUANT=1 VOXRT_FULL_DEVICE=cuda VOXRT_QUANT_METHOD="${VOXRT_QUANT_METHOD:-search}" \
  VOXRT_FULL_QUANT_SCHEMES="$(IFS=,; echo "${schemes[*]}")" \
  .carry/run voxrt_tests --gtest_filter='FullSize.QuantizedWeightsAgainstBf16Weights' 2>&1 | tee "$out/quant_accuracy.log" |
  grep -E "^\[full/quantized|^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" | head -20
