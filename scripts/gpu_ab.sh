#!/usr/bin/env bash
# A/B of carried variants on the GPU machine, in one call: the live passes (encoder, decoder at 250
# and 8192 keys) of each variant's voxrt, in ABAB order (so drift between runs shows), on the
# full-size random model. A variant is NAME[:VAR=VALUE...]: a name given to
# scripts/carry_variant.sh, or "main" for the binary scripts/carry_binaries.sh packed, run with
# those environment variables (main:VOXRT_CUDA_PDL=0, prefetch:VOXRT_CUDA_L2_PREFETCH=26).
# Prepare: carry_binaries.sh, then carry_variant.sh per build; device call with carry
# [".carry.tar.xz"]:  scripts/gpu_ab.sh main NAME[:VAR=VALUE...] ...
# Results: $OUT/ab-<variant>-<round>/*.json and a table (p50 per run).
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
[ $# -ge 1 ] || { echo "usage: scripts/gpu_ab.sh VARIANT [VARIANT...]" >&2; exit 2; }
labels=()
for spec in "$@"; do
  parse_variant "$spec"
  labels+=("$variant_label")
done
# A warm machine keeps /tmp between calls: drop an earlier call's runs so the table has this one's.
for label in "${labels[@]}"; do rm -rf "$out/ab-$label-1" "$out/ab-$label-2"; done
for round in 1 2; do
  for i in "${!labels[@]}"; do
    spec=${@:i+1:1}
    parse_variant "$spec"
    env "${variant_env[@]}" .carry/run "$variant_exe" bench --device cuda --model "$full/mistral" --passes 100 \
        --figures encoder,decoder --out "$out/ab-${labels[i]}-$round" >/dev/null 2>&1 ||
      echo "$spec round $round: bench failed" >&2
  done
done
python3 - "$out" "${labels[@]}" <<'PY'
import glob, json, sys
out, variants = sys.argv[1], sys.argv[2:]
print(f"{'variant':36s} {'encoder pass':>14s} {'decoder pass':>14s} {'decoder, 8192 keys':>20s}")
for v in variants:
    for path in sorted(glob.glob(f"{out}/ab-{v}-*/*-cuda.json")):
        d = json.load(open(path))
        t = [d[f]["p50_ms"] for f in ("encoder_pass", "decoder_pass", "decoder_pass_full_window")]
        print(f"{v:36s} {t[0]:11.3f} ms {t[1]:11.3f} ms {t[2]:17.3f} ms")
PY
