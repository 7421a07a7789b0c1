#!/usr/bin/env bash
# Peak host memory of `voxrt transcribe` on a short and a long 48 kHz stereo FLAC (issue 12: the
# long one must take the memory of the short one, within 50 MB). Max RSS is wait4's ru_maxrss: the
# figure `/usr/bin/time -v` prints as "Maximum resident set size", read through Python's resource
# module where /usr/bin/time is absent (the GPU machine).
#   scripts/flat_memory.sh BUILD_DIR|.carry MODEL_DIR [SHORT_MIN LONG_MIN] [-- voxrt transcribe options]
#   e.g. scripts/flat_memory.sh build/cpu tests/data/tiny/mistral 1 180 -- -t 1
# BUILD_DIR holds voxrt and voxrt_long_flac; .carry runs the carried ones (scripts/carry_binaries.sh).
# The FLACs are written to $FLAT_MEMORY_WORK (default /tmp/voxrt-flat-memory) and kept for reruns.
set -euo pipefail
cd "$(dirname "$0")/.."
where=$1 model=$2
shift 2
short=1 long=180
if [ $# -ge 2 ] && [ "$1" != "--" ]; then short=$1 long=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
work=${FLAT_MEMORY_WORK:-/tmp/voxrt-flat-memory}
mkdir -p "$work"

exe() {  # the command line that runs PROGRAM, built or carried
  if [ "$where" = .carry ]; then echo ".carry/run $1"; else echo "$where/$1"; fi
}

# measure MINUTES OPTIONS...: prints "MINUTES MAX_RSS_MB WALL_S"; the text goes to $work/MINUTES.txt.
measure() {
  local minutes=$1 flac=$work/$1min-48k-stereo.flac
  shift
  [ -s "$flac" ] || $(exe voxrt_long_flac) "$flac" "$minutes" 48000 2
  python3 - "$minutes" "$flac" "$work/$minutes.txt" $(exe voxrt) transcribe -q --model "$model" "$@" "$flac" <<'PY'
import os, re, resource, subprocess, sys, time
minutes, flac, txt, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
timed = os.access("/usr/bin/time", os.X_OK)
start = time.monotonic()
with open(txt, "w") as out:
    run = subprocess.run((["/usr/bin/time", "-v"] if timed else []) + cmd, stdout=out, stdin=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - start
if run.returncode != 0:
    sys.exit(f"{' '.join(cmd)} exited with {run.returncode}:\n{run.stderr}")
if timed:
    kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
else:
    kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"{minutes} {kb / 1024:.1f} {wall:.1f} {'time -v' if timed else 'ru_maxrss'}")
PY
}

echo "flat_memory: $(exe voxrt) transcribe --model $model $* on ${short} and ${long} min of 48 kHz stereo FLAC" >&2
a=$(measure "$short" "$@")
b=$(measure "$long" "$@")
read -r _ rss_a wall_a how <<< "$a"
read -r _ rss_b wall_b _ <<< "$b"
printf "%8s %12s %10s\n" minutes "max RSS MB" "wall s"
printf "%8s %12s %10s\n" "$short" "$rss_a" "$wall_a" "$long" "$rss_b" "$wall_b"
python3 - "$rss_a" "$rss_b" "$how" <<'PY'
import sys
a, b, how = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
print(f"growth: {b - a:+.1f} MB ({how}); flat means within 50 MB: {'yes' if b - a <= 50 else 'NO'}")
sys.exit(0 if b - a <= 50 else 1)
PY
