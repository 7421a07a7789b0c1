#!/usr/bin/env bash
# On the GPU machine, in one call: build the full-size (4.4 B) random model in both layouts, run the
# transformers reference on it (CUDA, fp32, TF32 off), then check voxrt's CPU backend against it,
# stage by stage, in both layouts. voxrt comes prebuilt from this machine: scripts/carry_binaries.sh
# packs it into .carry/ (name .carry in the device call's carry list).
#   tools/reference/full_size_check.sh [AUDIO.wav] [DELAY_MS]
set -euo pipefail
cd "$(dirname "$0")/../.."
audio=${1:-tests/data/audio/speech_short.wav}
delay=${2:-480}
full=${VOXRT_FULL_WORK:-/tmp/voxrt-full}
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
  [ -f "$full/golden/$name.safetensors" ] || time python3 tools/reference/voxtral_reference.py golden --model "$full" --audio "$audio" --delay-ms "$delay" \
      --out "$full/golden/$name.safetensors" --device cuda --logit-steps 4
  echo "== voxrt CPU backend vs reference ($(nproc) cores)"
  time VOXRT_FULL_DIR="$full" .carry/run voxrt_tests --gtest_filter="${VOXRT_FULL_FILTER:-FullSize*}"
  echo "== live session on the CPU backend: per-step compute time"
  .carry/run voxrt stream --stats -q -f json --model "$full/mistral" tests/data/audio/jfk.wav >/dev/null
} 2>&1 | tee "$log"
