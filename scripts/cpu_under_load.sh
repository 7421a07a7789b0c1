#!/usr/bin/env bash
# The CPU backend on a machine another process also uses (issue 33: libgomp's spinning threads made
# `transcribe` of jfk.wav take 5.1 s instead of 0.2 s on a busy 2-core machine). For each voxrt
# binary given, with the default threads: `transcribe` of jfk.wav (median of RUNS wall times) and a
# live `stream --realtime --stats` of it (step p50/p99 against the 80 ms budget), first on the idle
# machine, then beside a competing load: one busy process per usable core but one (LOAD, default
# cores - 1, at least 1), each a plain spin loop. Compare two builds in one call:
#   scripts/cpu_under_load.sh OLD/voxrt NEW/voxrt         (RUNS=5 LOAD=N MODEL=dir AUDIO=file)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
model=${MODEL:-tests/data/tiny/mistral}
audio=${AUDIO:-tests/data/audio/jfk.wav}
cores=$(nproc)
load=${LOAD:-$((cores > 1 ? cores - 1 : 1))}
spinners=()
start_load() { for _ in $(seq "$load"); do (while :; do :; done) & spinners+=($!); done; }
stop_load() { [ ${#spinners[@]} -eq 0 ] || kill "${spinners[@]}" 2>/dev/null || true; wait "${spinners[@]}" 2>/dev/null || true; spinners=(); }
trap stop_load EXIT

# median_transcribe BIN: the median wall seconds of RUNS transcriptions.
median_transcribe() {
  local times=() t0 t1
  for _ in $(seq "$runs"); do
    t0=$(date +%s.%N)
    "$1" transcribe -q --model "$model" -f json -o /dev/null "$audio" >/dev/null
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{printf "%.3f", a[int((NR+1)/2)]}'
}

# stream_steps BIN: the live session's step percentiles line from --stats.
stream_steps() {
  "$1" stream --realtime --stats -q -f json --model "$model" "$audio" 2>&1 >/dev/null | grep -o 'step time p50 [^;]*' || echo "no stats"
}

echo "cpu_under_load: $cores cores (nproc), competing load: $load spinning process(es); $runs runs a figure; $(date -u +%FT%TZ)"
printf '%-34s %-8s %14s  %s\n' binary machine "transcribe s" "stream --realtime"
for bin in "$@"; do
  for state in idle loaded; do
    [ "$state" = loaded ] && start_load
    printf '%-34s %-8s %14s  %s\n' "$bin" "$state" "$(median_transcribe "$bin")" "$(stream_steps "$bin")"
    stop_load
  done
done
