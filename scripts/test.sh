#!/usr/bin/env bash
# Sets up (scripts/setup.sh), checks that the CUDA backend compiles (its GPU tests run on a GPU
# machine: scripts/gpu_check.sh; without one they are compiled and reported skipped), runs the CPU suite under
# AddressSanitizer + UndefinedBehaviorSanitizer (the asan preset: any report fails its test) and the
# concurrency test under ThreadSanitizer (the tsan preset), then
# the whole suite on the CPU build, and last installs that build into a temporary prefix and builds
# and runs README's C++ example against it (scripts/test_install.sh), and runs the real clients of
# `voxrt serve` against it (scripts/test_clients.sh, installed from the npm registry), and last
# runs the chaos test (tools/load/chaos.py) for 30 s, and fuzzes the parsers of untrusted input for
# a moment (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "test: compiling the CUDA preset" >&2
  cmake --preset cuda >/dev/null
  if nvidia-smi -L >/dev/null 2>&1; then
    cmake --build build/cuda -j"$(nproc)"
    ctest --test-dir build/cuda --output-on-failure -j1 -R 'Cuda'
  else
    # Without a GPU the build proves what CUDA changes: the kernels and the CUDA backend, the engine
    # linked with them into the shared library (--no-undefined) and the command, the kernel driver
    # (voxrt_kernel), and the test
    # sources that differ under VOXRT_WITH_CUDA. The other tests are the same code as the CPU
    # build's (the macro only declares make_cuda_backend in the headers they share); compiling them
    # again took ~4 of CI's minutes.
    cuda_tests=$(grep -l VOXRT_WITH_CUDA tests/unit/*.cpp tests/parity/*.cpp | sed 's|^|CMakeFiles/voxrt_tests.dir/|; s|$|.o|')
    # shellcheck disable=SC2086
    cmake --build build/cuda -j"$(nproc)" --target voxrt_library voxrt_mma_numerics voxrt_mma_fp8_numerics voxrt_kernel $cuda_tests
    # The kernels for Ampere too, through ptxas (the cuda preset is sm_90a alone): an instruction
    # only Hopper has, outside its guards, fails here rather than on an A100 (docs/cuda.md).
    echo "test: compiling the CUDA kernels for sm_80 (Ampere)" >&2
    cmake --preset cuda -B build/cuda-sm80 -DCMAKE_CUDA_ARCHITECTURES=80-real >/dev/null
    cmake --build build/cuda-sm80 -j"$(nproc)" --target voxrt_cuda_kernels
    echo "test: no GPU here: the CUDA build's GPU tests are SKIPPED (compiled, not run: they run on the GPU machine, scripts/gpu_check.sh)" >&2
  fi
else
  echo "test: nvcc not found; CUDA preset not compiled" >&2
fi
echo "test: the CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build/asan)" >&2
cmake --preset asan >/dev/null
cmake --build build/asan -j"$(nproc)"
ctest --preset asan -j"$(nproc)"
echo "test: many threads through one engine under ThreadSanitizer (build/tsan, the Concurrency test)" >&2
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j"$(nproc)"
ctest --preset tsan
echo "test: the CPU test suite (the Cuda* tests run in the CUDA build above)" >&2
ctest --test-dir build/cpu --output-on-failure -j"$(nproc)" -E '^Cuda'
scripts/test_install.sh build/cpu
echo "test: the clients of voxrt serve (openai, @mistralai/mistralai, a vLLM client on ws, curl) against it" >&2
scripts/test_clients.sh build/cpu
echo "test: the live-caption page in chromium with a fake microphone (playwright-core)" >&2
scripts/test_caption_page.sh build/cpu
echo "test: the realtime load driver's own tests (tools/load)" >&2
command -v python3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 >/dev/null; }
python3 tools/load/test_realtime_load.py
echo "test: the chaos test: every dialect's clients beside hostile ones, then SIGTERM (tools/load/chaos.py, 30 s)" >&2
command -v sox >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sox >/dev/null; }
python3 tools/load/chaos.py --voxrt build/cpu/voxrt --model tests/data/tiny/mistral --seconds 30 --out build/cpu/chaos.json
echo "test: the parsers of untrusted input under libFuzzer, briefly (scripts/fuzz.sh)" >&2
# The request parsers, the realtime events, and the loaders of checkpoint files, tekken.json and
# uploaded audio; one call per number of runs, so that a source two targets share compiles once.
scripts/fuzz.sh 100000 form
scripts/fuzz.sh 20000 "events safetensors config tekken"
scripts/fuzz.sh 5000 audio

