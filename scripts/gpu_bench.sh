#!/usr/bin/env bash
# Performance on the GPU machine, in one call: `voxrt bench` on the full-size random model (built
# when absent, as tools/reference/full_size_check.sh builds it), then the transformers reference on
# the same model, audio and GPU (bench/compare_reference.py). Results go to $OUT (default /tmp).
# Prepare as for scripts/gpu_check.sh (carry .carry.tar.xz), then:  scripts/gpu_bench.sh [REF_SECONDS...]
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d .carry ] || tar xJf .carry.tar.xz
out=${OUT:-/tmp}
full=${VOXRT_FULL_WORK:-/tmp/voxrt-full}
[ -f "$full/model_info.json" ] ||
  python3 tools/reference/voxtral_reference.py make-model --size full --out "$full" --seed 1234 --hf-dtype bf16 \
      --no-verify >/dev/null 2>&1
echo "== voxrt bench (cuda)"
.carry/run voxrt bench --device cuda --model "$full/mistral" --out "$out/bench" --steps 100 --offline-seconds 30,300 \
    --figures encoder,decoder,products,offline \
    2>&1 | tee "$out/bench.log" | tail -26
json=$(ls -t "$out"/bench/*-cuda.json | head -1)
echo "== transformers reference on the same GPU"
python3 bench/compare_reference.py --model "$full" --voxrt "$json" --seconds "${@:-30}" 2>&1 | grep -v "Loading weights" |
  tee "$out/reference.log" | tail -8
