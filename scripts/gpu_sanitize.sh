#!/usr/bin/env bash
# The CUDA op tests under NVIDIA's compute-sanitizer, on the GPU machine (scripts/gpu_check.sh runs
# it; or alone, prepared the same way): memcheck over every CUDA backend test (out-of-bounds and
# misaligned accesses, uninitialised device memory read by the kernels' loads is not in its scope),
# then racecheck (shared-memory hazards) over the attention and GEMM kernels' tests. Every error
# fails it, but one: AllocationFailureThrowsAndTheBackendStillWorks asks for more memory than the
# device has on purpose, so it runs on its own and its only report must be that out-of-memory.
#   scripts/gpu_sanitize.sh            (after scripts/carry_binaries.sh build/cuda, as gpu_check.sh)
# Logs go to $OUT (or /tmp): sanitize-memcheck.log, sanitize-oom.log, sanitize-racecheck.log.
# It takes ~8 minutes on an H200 (memcheck ~3, racecheck ~5): a device call of its own.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d .carry ] || tar xJf .carry.tar.xz
out=${OUT:-/tmp}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "gpu_sanitize: compute-sanitizer not found (CUDA toolkit's bin/)"; exit 1; }
# .carry/run starts the test binary through the carried loader: the sanitizer must follow it.
sanitize=("$sanitizer" --target-processes all --print-limit 50 --error-exitcode 86)
oom=CudaBackendTest.AllocationFailureThrowsAndTheBackendStillWorks
failed=0

# run TOOL LOG FILTER: the tests under the tool; reports its error summary line.
run() {
  local tool=$1 log=$2 filter=$3
  "${sanitize[@]}" --tool "$tool" .carry/run voxrt_tests --gtest_filter="$filter" >"$out/$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$log" | tail -1)
  local tests
  tests=$(grep -E "^\[  (PASSED|FAILED)  \]" "$out/$log" | tr '\n' ' ')
  echo "gpu_sanitize: $tool over '$filter': ${summary:-no summary} ${tests}(exit $rc)"
  return $rc
}

echo "== compute-sanitizer: memcheck over the CUDA backend's tests ($("$sanitizer" --version | tail -1))"
run memcheck sanitize-memcheck.log "Cuda*:-$oom" || failed=1

echo "== memcheck over the deliberate out-of-memory test: its own allocation failure is the only report"
run memcheck sanitize-oom.log "$oom"
others=$(grep -E "^========= (Invalid|Program hit|Uninitialized|Leaked|Race|Error)" "$out/sanitize-oom.log" |
         grep -v -c "cudaErrorMemoryAllocation")
hits=$(grep -c "cudaErrorMemoryAllocation" "$out/sanitize-oom.log")
grep -q "^\[  PASSED  \] 1 test" "$out/sanitize-oom.log" || { echo "gpu_sanitize: the out-of-memory test did not pass"; failed=1; }
if [ "$others" -ne 0 ]; then
  echo "gpu_sanitize: $others reports besides the deliberate out-of-memory ($out/sanitize-oom.log)"
  failed=1
else
  echo "gpu_sanitize: the out-of-memory test's only reports are its cudaErrorMemoryAllocation ($hits)"
fi

echo "== racecheck over the attention and GEMM kernels' tests"
# The GEMM tests' sweep of full-size products takes over 5 minutes each under racecheck: their
# small shapes take the same paths (VOXRT_TEST_SMALL_GEMM_CASES, test_cuda_backend.cpp).
VOXRT_TEST_SMALL_GEMM_CASES=1 run racecheck sanitize-racecheck.log \
  "CudaBackendTest.Attention*:CudaBackendTest.*Gemm*:CudaBackendTest.Linear*:CudaBackendTest.SplitK*:CudaAttentionPlan*" ||
  failed=1

if [ "$failed" -ne 0 ]; then
  echo "gpu_sanitize: FAILED (logs in $out)"
  exit 1
fi
echo "gpu_sanitize: zero errors beyond the deliberate out-of-memory"
