#!/usr/bin/env bash
# Issue 15's scaling figures: the same work on one GPU and over several, one piece a device call
# (a call runs at most 10 minutes). Prepare as for gpu_check.sh (scripts/carry_binaries.sh build/cuda,
# carry [".carry.tar.xz"]), then on the GPU machine:
#   scripts/gpu_scaling.sh streams GPUS COUNT [bf16|fp8]
#       COUNT five-minute live streams (caches filled to 295 s, 5 s paced and measured) placed over
#       --gpus GPUS; within real time when no stream's chunk waited past 80 ms. One GPU holds 200
#       (bf16): N GPUs should hold N x 200.
#   scripts/gpu_scaling.sh offline GPUS FILES
#       bench --offline-batch 64xG --offline-seconds 30 over --gpus GPUS (G GPUs: 64 transcriptions
#       at once on each, what one H200's caches hold with room; RTFx against the compute floor of
#       those GPUs), then `voxrt transcribe --gpus GPUS --batch 64xG` of FILES generated 30 s WAV
#       files, timed from the command's start, with and without its load (its load message).
#   scripts/gpu_scaling.sh compare GPUS_A GPUS_B FILES
#       both transcribe runs of `offline` in one call, and their transcripts compared file by file
#       (a file's transcript does not depend on the device it was placed on).
# GPUS is what --gpus takes: 1 (device 0), all, or a list such as 0,1.
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
nvidia-smi -L 2>&1 | head -8
what=${1:?streams, offline or compare}
model="$full/mistral"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)

# FILES 30 s WAV files in $1: jfk.wav looped, each from a different place (as bench's inputs).
make_files() {
  local dir=$1 count=$2
  mkdir -p "$dir"
  python3 - "$dir" "$count" <<'EOF'
import sys, wave
dir, count = sys.argv[1], int(sys.argv[2])
with wave.open("tests/data/audio/jfk.wav") as w:
    assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
    pcm = w.readframes(w.getnframes())
samples = len(pcm) // 2
want = 30 * 16000
for i in range(count):
    start = i * 7919 * 16 % samples
    out = bytearray()
    at = start
    while len(out) < 2 * want:
        take = min(samples - at, want - len(out) // 2)
        out += pcm[2 * at:2 * (at + take)]
        at = (at + take) % samples
    with wave.open(f"{dir}/file{i:04d}.wav", "wb") as o:
        o.setnchannels(1); o.setsampwidth(2); o.setframerate(16000); o.writeframes(bytes(out))
EOF
}

# How many devices --gpus $1 names.
gpu_count() {
  case "$1" in
  all) nvidia-smi -L | grep -c '^GPU' ;;
  *,*) tr ',' '\n' <<<"$1" | grep -c . ;;
  *) echo "$1" ;;
  esac
}

# transcribe --gpus $1 of the files in $2, timed; transcripts in /tmp/transcripts-<label>.
timed_transcribe() {
  local gpus=$1 dir=$2 label
  label=$(printf '%s' "$gpus" | tr -c 'A-Za-z0-9' '_')
  rm -rf "/tmp/transcripts-$label"
  mkdir -p "/tmp/transcripts-$label"
  local t0 t1
  t0=$(date +%s.%N)
  .carry/run voxrt transcribe --device cuda --model "$model" --gpus "$gpus" --batch $((64 * $(gpu_count "$gpus"))) -f json \
    --output-dir "/tmp/transcripts-$label" "$dir" 2>"$out/transcribe-$label.log"
  local rc=$?
  t1=$(date +%s.%N)
  local n
  n=$(ls "$dir" | wc -l)
  grep -a "error" "$out/transcribe-$label.log" | head -5
  local load
  load=$(grep -ao "loaded .* in [0-9.]* s" "$out/transcribe-$label.log" | grep -o "[0-9.]* s$" | tr -d ' s')
  python3 -c "import sys; w=float(sys.argv[2])-float(sys.argv[1]); n=int(sys.argv[3]); l=float(sys.argv[6] or 0); print(f'transcribe --gpus {sys.argv[4]}: exit {sys.argv[5]}, {n} files of 30 s in {w:.2f} s wall: RTFx {n*30/w:.1f} load included, {n*30/(w-l):.1f} after the {l:.2f} s load')" \
    "$t0" "$t1" "$n" "$gpus" "$rc" "$load" | tee -a "$out/$stamp-scaling.txt"
}

case "$what" in
streams)
  gpus=${2:?GPUS} count=${3:?COUNT} kv=${4:-bf16}
  .carry/run voxrt bench --device cuda --model "$model" -q --gpus "$gpus" --streams "$count" --stream-seconds 300 \
    --measure-seconds 5 --max-memory 132GB --kv "$kv" --out "$out" | tee -a "$out/$stamp-scaling.txt"
  ;;
offline)
  gpus=${2:?GPUS} files=${3:?FILES}
  .carry/run voxrt bench --device cuda --model "$model" -q --gpus "$gpus" --offline-batch $((64 * $(gpu_count "$gpus"))) --offline-seconds 30 \
    --out "$out" | tee -a "$out/$stamp-scaling.txt"
  make_files /tmp/scaling-files "$files"
  timed_transcribe "$gpus" /tmp/scaling-files
  ;;
compare)
  a=${2:?GPUS_A} b=${3:?GPUS_B} files=${4:?FILES}
  make_files /tmp/scaling-files "$files"
  timed_transcribe "$a" /tmp/scaling-files
  timed_transcribe "$b" /tmp/scaling-files
  la=$(printf '%s' "$a" | tr -c 'A-Za-z0-9' '_') lb=$(printf '%s' "$b" | tr -c 'A-Za-z0-9' '_')
  if diff -rq "/tmp/transcripts-$la" "/tmp/transcripts-$lb" >/dev/null; then
    echo "transcripts over --gpus $a and --gpus $b: identical, $files files" | tee -a "$out/$stamp-scaling.txt"
  else
    echo "transcripts over --gpus $a and --gpus $b: DIFFER:" | tee -a "$out/$stamp-scaling.txt"
    diff -rq "/tmp/transcripts-$la" "/tmp/transcripts-$lb" | head -20 | tee -a "$out/$stamp-scaling.txt"
  fi
  ;;
*)
  echo "usage: scripts/gpu_scaling.sh streams GPUS COUNT [bf16|fp8] | offline GPUS FILES | compare GPUS_A GPUS_B FILES" >&2
  exit 2
  ;;
esac
