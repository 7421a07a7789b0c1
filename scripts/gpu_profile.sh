#!/usr/bin/env bash
# Where the live passes' time goes, in one device call, two ways:
# 1. per kernel: Nsight Compute (clocks left alone, as the device tool's METHOD.md asks) over
#    `voxrt bench --figures decoder` and `--figures encoder`, skipping the bench's start (ceilings,
#    the eager and captured recordings) and profiling the next 250 launches, about one replayed pass.
#    ncu runs each kernel alone with cold caches and no programmatic-launch overlap, so small
#    kernels read longer than inside the pass's graph. Reports: $OUT/ncu-<figure>-pass.txt.
# 2. per kind of operation, inside the graph: the pass timed with each kind launched twice
#    (VOXRT_CUDA_REPEAT, src/runtime/cuda/op_repeat.h) less the pass timed plainly.
# Prepare as for scripts/gpu_check.sh (carry .carry.tar.xz), then:  scripts/gpu_profile.sh
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
for figure in decoder encoder; do
  report="$out/ncu-$figure-pass.txt"
  timeout 300 ncu --clock-control none --launch-skip 150 --launch-count 250 --print-summary per-kernel \
      --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      .carry/run voxrt bench --device cuda --model "$full/mistral" --passes 2 --figures "$figure" \
      --out /tmp/voxrt-profile-bench >"$report" 2>&1
  echo "== $figure pass: kernel, grid x block, launches profiled, mean GPU time"
  python3 scripts/ncu_kernel_table.py <"$report"
done

echo "== in the graph: pass time with one kind of operation launched twice, less the plain pass"
for kind in none attention norm rope product; do
  env_kind=$kind
  [ "$kind" = none ] && env_kind=
  VOXRT_CUDA_REPEAT=$env_kind .carry/run voxrt bench --device cuda --model "$full/mistral" --passes 100 \
      --figures encoder,decoder --out "$out/repeat-$kind" >/dev/null 2>&1
done
python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
def passes(kind):
    files = sorted(glob.glob(f"{out}/repeat-{kind}/*-cuda.json"))
    if not files:
        return None
    d = json.load(open(files[-1]))
    return [d[f]["p50_ms"] for f in ("encoder_pass", "decoder_pass", "decoder_pass_full_window")]
base = passes("none")
if base is None:
    sys.exit("no plain bench result")
print(f"{'kind':10s} {'encoder pass':>14s} {'decoder pass':>14s} {'decoder, 8192 keys':>20s}")
print(f"{'(plain)':10s} {base[0]:11.3f} ms {base[1]:11.3f} ms {base[2]:17.3f} ms")
for kind in ("attention", "norm", "rope", "product"):
    t = passes(kind)
    if t:
        print(f"{kind:10s} " + " ".join(f"{x - b:+11.3f} ms" if i < 2 else f"{x - b:+17.3f} ms"
                                        for i, (x, b) in enumerate(zip(t, base))))
PY
