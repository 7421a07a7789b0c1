#!/usr/bin/env bash
# Performance on the GPU machine, in one call: `voxrt bench` on the full-size random model (built
# when absent, as tools/reference/full_size_check.sh builds it), then the transformers reference on
# the same model, audio and GPU (bench/compare_reference.py). Results go to $OUT (default /tmp).
# Prepare as for scripts/gpu_check.sh (carry .carry.tar.xz), then:  scripts/gpu_bench.sh [REF_SECONDS...]
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
echo "== voxrt bench (cuda)"
.carry/run voxrt bench --device cuda --model "$full/mistral" --out "$out/bench" --passes 100 --offline-seconds 30,300 \
    --figures encoder,decoder,products,offline \
    2>&1 | tee "$out/bench.log" | tail -26
json=$(ls -t "$out"/bench/*-cuda.json | head -1)
echo "== transformers reference on the same GPU"
python3 bench/compare_reference.py --model "$full" --voxrt "$json" --seconds "${@:-30}" 2>&1 | grep -v "Loading weights" |
  tee "$out/reference.log" | tail -8
