#!/usr/bin/env bash
# A/B of carried variants on the GPU machine, in one call: the live steps (encoder, decoder at 250
# and 8192 keys) of each variant's voxrt, in ABAB order (so drift between runs shows), on the
# full-size random model. Variants: names given to scripts/carry_variant.sh, or "main" for the
# binary scripts/carry_binaries.sh packed. Prepare: carry_binaries.sh, then carry_variant.sh per
# variant; device call with carry [".carry.tar.xz"]:  scripts/gpu_ab.sh main NAME [NAME...]
# Results: $OUT/ab-<variant>-<round>/*.json and a table (p50 per run).
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
[ $# -ge 1 ] || { echo "usage: scripts/gpu_ab.sh VARIANT [VARIANT...]" >&2; exit 2; }
for round in 1 2; do
  for v in "$@"; do
    exe=voxrt_$v
    [ "$v" = main ] && exe=voxrt
    .carry/run "$exe" bench --device cuda --model "$full/mistral" --steps 100 --figures encoder,decoder \
        --out "$out/ab-$v-$round" >/dev/null 2>&1 || echo "$v round $round: bench failed" >&2
  done
done
python3 - "$out" "$@" <<'PY'
import glob, json, sys
out, variants = sys.argv[1], sys.argv[2:]
print(f"{'variant':24s} {'encoder step':>14s} {'decoder step':>14s} {'decoder, 8192 keys':>20s}")
for v in variants:
    for path in sorted(glob.glob(f"{out}/ab-{v}-*/*-cuda.json")):
        d = json.load(open(path))
        t = [d[f]["p50_ms"] for f in ("encoder_step", "decoder_step", "decoder_step_full_window")]
        print(f"{v:24s} {t[0]:11.3f} ms {t[1]:11.3f} ms {t[2]:17.3f} ms")
PY
