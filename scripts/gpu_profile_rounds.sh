#!/usr/bin/env bash
# Where the scheduler's rounds spend their time, in one device call: the batched benches plainly
# (each round's encoder, prompt and decoder parts), then Nsight Compute over a window of their
# measured part (the backend opens it: KernelSwitches::profile_window, so the load and the caches' fill
# are not profiled), one line per kernel with its launches and total time (ncu runs each kernel
# alone with cold caches: small kernels read longer than inside the graphs).
# Prepare as for scripts/gpu_check.sh (carry .carry.tar.xz), then:
#   scripts/gpu_profile_rounds.sh [STREAMS] [OFFLINE_BATCH]      (default 80 and 64)
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
streams=${1:-80}
batch=${2:-64}
bench=(.carry/run voxrt bench --device cuda --model "$full/mistral" -q)
offline=(--offline-batch "$batch" --offline-seconds 30)
live=(--streams "$streams" --stream-seconds 60 --measure-seconds 4 --max-memory 100GB)

echo "== offline $batch x 30 s, plainly"
"${bench[@]}" "${offline[@]}" --out "$out/rounds-offline" 2>&1 | tail -3
echo "== $streams live streams, plainly"
"${bench[@]}" "${live[@]}" --out "$out/rounds-live" 2>&1 | tail -4
profile() {  # profile NAME SKIP COUNT BENCH_ARGS...: ncu over launches SKIP.. of the measured part
  local name=$1 skip=$2 count=$3
  shift 3
  timeout 240 ncu --profile-from-start off --clock-control none --launch-skip "$skip" --launch-count "$count" \
      --print-summary per-kernel --metrics gpu__time_duration.sum \
      "${bench[@]}" "$@" --out /tmp/voxrt-profile-rounds >"$out/ncu-rounds-$name.txt" 2>&1
  echo "== $name: launches $skip..$((skip + count)) of the measured part, by total GPU time"
  python3 scripts/ncu_kernel_table.py --totals <"$out/ncu-rounds-$name.txt" | head -40
}
profile offline 20000 1500 "${offline[@]}"
profile live 3000 1500 "${live[@]}"
