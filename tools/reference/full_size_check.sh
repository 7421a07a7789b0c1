#!/usr/bin/env bash
# On the GPU machine, in one call: build the full-size (4.4 B) random model in both layouts, run the
# transformers reference on it (CUDA, fp32, TF32 off), then check voxrt against it stage by stage in
# both layouts, and time a live session. voxrt comes prebuilt from the development machine:
# scripts/carry_binaries.sh packs it into .carry/ (carry .carry.tar.xz in the device call).
#   tools/reference/full_size_check.sh [AUDIO.wav] [DELAY_MS]
# Environment: VOXRT_FULL_BACKENDS="cpu cuda" (which backends to check; default cpu),
#              VOXRT_FULL_WORK (model directory, default /tmp/voxrt-full; reused when present),
#              VOXRT_CARRIED_SUFFIX (_NAME: run the carried variant voxrt_NAME, voxrt_tests_NAME).
set -euo pipefail
cd "$(dirname "$0")/../.."
audio=${1:-tests/data/audio/speech_short.wav}
delay=${2:-480}
full=${VOXRT_FULL_WORK:-/tmp/voxrt-full}
backends=${VOXRT_FULL_BACKENDS:-cpu}
suffix=${VOXRT_CARRIED_SUFFIX:-}
log=${OUT:-/tmp}/full_size_check.log
export PYTHONUNBUFFERED=1
{
  if [ -f "$full/model_info.json" ]; then
    echo "== reusing the full model in $full"
  else
    echo "== make-model full (seed 1234)"
    time python3 tools/reference/voxtral_reference.py make-model --size full --out "$full" --seed 1234 \
        --hf-dtype bf16 --no-verify
  fi
  mkdir -p "$full/golden"
  name=$(basename "$audio" .wav)_$delay
  echo "== reference golden $name"
  [ -f "$full/golden/$name.safetensors" ] || time python3 tools/reference/voxtral_reference.py golden --model "$full" \
      --audio "$audio" --delay-ms "$delay" --out "$full/golden/$name.safetensors" --device cuda --logit-steps 4
  for backend in $backends; do
    echo "== voxrt $backend backend vs reference"
    time VOXRT_FULL_DIR="$full" VOXRT_FULL_DEVICE="$backend" .carry/run "voxrt_tests$suffix" --gtest_filter='FullSize*' || true
    echo "== live session on the $backend backend: per-step compute time (jfk.wav, 11 s)"
    .carry/run "voxrt$suffix" stream --device "$backend" --stats -q -f json --model "$full/mistral" tests/data/audio/jfk.wav \
        >/dev/null || true
  done
} 2>&1 | tee "$log"
