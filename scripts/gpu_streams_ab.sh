#!/usr/bin/env bash
# A/B of carried variants under many live streams, in one device call: `voxrt bench --streams N
# --stream-seconds S` for each variant in turn on the full-size random model, then a table of the
# batched rounds (p50/p99, the encoder's and decoder's share, the floor) and each stream's lag.
# A variant is NAME[:VAR=VALUE...] as for scripts/gpu_ab.sh ("main", or a name given to
# scripts/carry_variant.sh; main:VOXRT_CUDA_ATTN=simt runs main with the CUDA-core attention).
# Device call with carry [".carry.tar.xz"]:
#   scripts/gpu_streams_ab.sh N SECONDS VARIANT [VARIANT...]     (extra bench flags: $BENCH_FLAGS)
# Results: $OUT/streams-<variant>[_<flags>]/*.json and the table.
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
[ $# -ge 3 ] || { echo "usage: scripts/gpu_streams_ab.sh STREAMS SECONDS VARIANT [VARIANT...]" >&2; exit 2; }
streams=$1 seconds=$2
shift 2
labels=()
for spec in "$@"; do
  parse_variant "$spec"
  # The bench flags name the results too, so runs of one variant with other flags (--fill-drafts,
  # --kv fp8) in the same call keep their own folders.
  label=$variant_label$(printf '%s' "${BENCH_FLAGS:+_${BENCH_FLAGS}}" | tr -c 'A-Za-z0-9_.-' '_')
  labels+=("$label")
  rm -rf "$out/streams-$label"
  # shellcheck disable=SC2086  # BENCH_FLAGS is a list of flags
  env "${variant_env[@]}" .carry/run "$variant_exe" bench --device cuda --model "$full/mistral" --streams "$streams" \
      --stream-seconds "$seconds" --measure-seconds "${MEASURE_SECONDS:-5}" ${BENCH_FLAGS:-} \
      --out "$out/streams-$label" >"$out/streams-$label.log" 2>&1 || { echo "$spec: bench failed" >&2; tail -5 "$out/streams-$label.log" >&2; }
done
python3 - "$out" "${labels[@]}" <<'PY'
import glob, json, sys
out, variants = sys.argv[1], sys.argv[2:]
print(f"{'variant':32s} {'round p50':>10s} {'p99':>8s} {'encoder':>8s} {'decoder':>8s} {'floor':>8s} {'lag p99':>8s} {'fill RTFx':>9s}")
for v in variants:
    for path in sorted(glob.glob(f"{out}/streams-{v}/*.json")):
        d = json.load(open(path))
        r = d["rounds"]
        print(f"{v:32s} {r['ms']['p50']:7.2f} ms {r['ms']['p99']:5.2f} ms {r['encoder_ms']['p50']:5.2f} ms "
              f"{r['decoder_ms']['p50']:5.2f} ms {r['floor_ms']:5.2f} ms {d['lag_ms']['p99']:5.1f} ms {d['fill']['rtfx']:9.1f}")
PY
