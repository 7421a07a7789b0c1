#!/usr/bin/env bash
# Proves that an x86-64 CPU build runs on a CPU without AVX: runs the CPU backend's and the front
# end's tests and `voxrt transcribe` on the tiny model under qemu-x86_64-static emulating an old
# CPU (core2duo by default: SSE2 to SSSE3, no SSE4, no AVX, an Intel CPU so that OpenBLAS picks a
# kernel it has; QEMU's own qemu64 passes for an AMD and OpenBLAS then runs 3DNow! code, which QEMU
# does not emulate). A build compiled for AVX2 dies here of SIGILL; a baseline build takes the
# baseline clones of the dispatched loops (src/common/cpu_dispatch.h) and passes. First it checks
# that libvoxrt.so exports none of the clones' resolvers.
# Usage: scripts/test_baseline_cpu.sh [BUILD_DIR]   (default build/cpu, built already; about 3 minutes)
#        VOXRT_QEMU_CPU=Nehalem scripts/test_baseline_cpu.sh   another CPU model (qemu-x86_64-static -cpu help)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
cpu=${VOXRT_QEMU_CPU:-core2duo}
[ "$(uname -m)" = x86_64 ] || { echo "test_baseline_cpu: for x86-64 builds on x86-64 only" >&2; exit 2; }
for exe in voxrt voxrt_tests; do
  [ -x "$build/$exe" ] || { echo "test_baseline_cpu: $build/$exe not built (cmake --build $build)" >&2; exit 2; }
done
if ! command -v qemu-x86_64-static >/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "test_baseline_cpu: installing qemu-user-static" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
fi
emulate=(qemu-x86_64-static -cpu "$cpu")

# The clones' resolvers stay inside the library: GCC exports that of a clone with external linkage
# whatever its visibility (src/common/cpu_dispatch.h).
library=$(ls "$build"/libvoxrt.so.*.*.* 2>/dev/null | head -n1)
[ -n "$library" ] || { echo "test_baseline_cpu: $build/libvoxrt.so not built (cmake --build $build)" >&2; exit 2; }
if nm -D --defined-only "$library" | grep -E ' i |clone\.resolver'; then
  echo "test_baseline_cpu: $library exports the resolvers above (give the cloned functions internal linkage)" >&2
  exit 1
fi

# The front end (log-mel), every stage of the tiny model against the reference's outputs, the
# backend's attention over several streams at once, and the thread team's spin loop.
suites='LogMel.*:Golden/TinyParity.*:Backends/StreamsTogether.*:ThreadTeam.*'
echo "test_baseline_cpu: voxrt_tests --gtest_filter=$suites on a $cpu" >&2
"${emulate[@]}" "$build/voxrt_tests" --gtest_filter="$suites" --gtest_brief=1
echo "test_baseline_cpu: voxrt transcribe on a $cpu" >&2
"${emulate[@]}" "$build/voxrt" transcribe -q --device cpu --model tests/data/tiny/mistral -f json \
  tests/data/audio/jfk.wav >/dev/null
echo "test_baseline_cpu: $build runs on a $cpu (no AVX)" >&2
