#!/usr/bin/env bash
# A/B of carried variants on one layer's attention for many streams, in one device call: `voxrt
# bench --figures attention --attention-streams LIST --kv KV` for each variant, in ABAB order (two
# rounds, so drift between runs shows), on the full-size random model; then a table of the
# tensor-core kernel's median time for each shape against its floor (K and V at the copy rate).
# A variant is NAME[:VAR=VALUE...] as for scripts/gpu_ab.sh: main:VOXRT_CUDA_ATTN_COMBINE=fused,
# main:VOXRT_CUDA_ATTN_BLOCKS_PER_SM=2 (docs/cuda.md lists the switches).
# Device call with carry [".carry.tar.xz"]:
#   scripts/gpu_attention_ab.sh 64,256 fp8|bf16 VARIANT [VARIANT...]
# Results: $OUT/attention-<kv>-<variant>-<round>/*.json and the table.
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
[ $# -ge 3 ] || { echo "usage: scripts/gpu_attention_ab.sh STREAMS fp8|bf16 VARIANT [VARIANT...]" >&2; exit 2; }
streams=$1 kv=$2
shift 2
labels=()
for spec in "$@"; do
  parse_variant "$spec"
  labels+=("$variant_label")
  rm -rf "$out/attention-$kv-$variant_label-1" "$out/attention-$kv-$variant_label-2"
done
for round in 1 2; do
  for i in "${!labels[@]}"; do
    spec=${@:i+1:1}
    parse_variant "$spec"
    env "${variant_env[@]}" .carry/run "$variant_exe" bench --device cuda --model "$full/mistral" -q --figures attention \
        --attention-streams "$streams" --kv "$kv" --out "$out/attention-$kv-${labels[i]}-$round" >/dev/null 2>&1 ||
      echo "$spec round $round: bench failed" >&2
  done
done
python3 - "$out" "$kv" "${labels[@]}" <<'PY'
import glob, json, sys
out, kv, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = {}  # variant -> [attention list per round]
for v in variants:
    runs[v] = [json.load(open(p))["attention"] for p in sorted(glob.glob(f"{out}/attention-{kv}-{v}-*/*-cuda.json"))]
shapes = next((r[0] for r in runs.values() if r), [])
print(f"{kv} attention, one layer, tensor cores: median us [second round]")
print(f"{'shape':28s} {'floor':>8s} " + " ".join(f"{v[:26]:>26s}" for v in variants))
for i, s in enumerate(shapes):
    cells = []
    for v in variants:
        t = [r[i]["kernels"]["tensor_cores"]["p50_us"] for r in runs[v] if i < len(r)]
        cells.append(f"{t[0]:9.1f} [{t[1]:9.1f}]" if len(t) > 1 else (f"{t[0]:9.1f}" if t else "-"))
    print(f"{s['name'] + ' ' + str(s['streams']) + 'x' + str(s['keys']):28s} {s['floor_us']:8.1f} " + " ".join(f"{c:>26s}" for c in cells))
PY
