#!/usr/bin/env bash
# The soak on the full-size model (issue 32), on the GPU machine: one live session of HOURS of audio
# streamed at SPEED x real time to `voxrt serve --device cuda`, the server's RSS, GPU memory, round
# time and lag sampled every 30 s, the transcript compared with `voxrt transcribe --device cuda` of
# the same audio (tools/load/soak.py says what it judges). Prepared as scripts/gpu_check.sh is
# (carry .carry.tar.xz); the random full model is built when absent (scripts/gpu_machine.sh).
#   scripts/gpu_soak.sh [HOURS] [SPEED]        (default 0.5 h at 10x: 3 minutes, then the reference)
# Its JSON summary goes to $OUT/gpu_soak.json, the log to $OUT/gpu_soak.log.
set -uo pipefail
source "$(dirname "$0")/gpu_machine.sh"
hours=${1:-0.5}
speed=${2:-10}
# soak.py takes one executable: the carried one starts through its own loader (.carry/run), which
# execs, so the server's PID is the one it samples.
printf '#!/usr/bin/env bash\nexec "%s/.carry/run" voxrt "$@"\n' "$PWD" > .carry/voxrt-cmd
chmod +x .carry/voxrt-cmd
nvidia-smi -L | head -1
PYTHONUNBUFFERED=1 python3 tools/load/soak.py --voxrt .carry/voxrt-cmd --device cuda --model "$full/mistral" \
  --hours "$hours" --speed "$speed" --out "$out/gpu_soak.json" 2>&1 >/dev/null | tee "$out/gpu_soak.log"
