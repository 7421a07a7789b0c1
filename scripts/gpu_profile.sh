#!/usr/bin/env bash
# Per-kernel GPU time of the live steps, in one device call: Nsight Compute (clocks left alone, as
# the device tool's METHOD.md asks) over `voxrt bench --figures decoder` and `--figures encoder`,
# skipping the bench's start (ceilings, the eager and captured steps) and profiling the next 250
# launches, about one replayed step. ncu runs each kernel alone with cold caches and no
# programmatic-launch overlap, so small kernels read longer here than inside the step's graph;
# the sum over a step is an upper bound on the step. Full per-kernel reports go to $OUT
# (default /tmp) as ncu-<figure>-step.txt, a table of them to the terminal. Prepare as for
# scripts/gpu_check.sh (carry .carry.tar.xz), then:  scripts/gpu_profile.sh
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
for figure in decoder encoder; do
  report="$out/ncu-$figure-step.txt"
  timeout 300 ncu --clock-control none --launch-skip 150 --launch-count 250 --print-summary per-kernel \
      --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      .carry/run voxrt bench --device cuda --model "$full/mistral" --steps 2 --figures "$figure" \
      --out /tmp/voxrt-profile-bench >"$report" 2>&1
  echo "== $figure step: kernel, grid x block, launches profiled, mean GPU time"
  python3 scripts/ncu_kernel_table.py <"$report"
done
