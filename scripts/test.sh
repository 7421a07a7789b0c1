#!/usr/bin/env bash
# Sets up (scripts/setup.sh), checks that the CUDA backend compiles (its GPU tests run on a GPU
# machine: scripts/gpu_check.sh; here they report themselves skipped), runs the CPU suite under
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
  cmake --build build/cuda -j"$(nproc)"
  if nvidia-smi -L >/dev/null 2>&1; then
    ctest --test-dir build/cuda --output-on-failure -j1 -R 'Cuda'
  else
    echo "test: no GPU here: the CUDA build's GPU tests are SKIPPED (they run on the GPU machine: scripts/gpu_check.sh)" >&2
    ctest --test-dir build/cuda -j"$(nproc)" -R 'Cuda'
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
scripts/fuzz.sh 100000 form
scripts/fuzz.sh 20000 events
# The loaders of checkpoint files, tekken.json and uploaded audio: 144 s together, builds included,
# measured on 2 shared cores (safetensors 32 s, config 67 s, tekken 23 s, audio 21 s; ~88 s of CPU).
scripts/fuzz.sh 20000 safetensors
scripts/fuzz.sh 20000 config
scripts/fuzz.sh 20000 tekken
scripts/fuzz.sh 5000 audio

