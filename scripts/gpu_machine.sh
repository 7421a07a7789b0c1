# Sourced by the scripts that run on the GPU machine (gpu_bench.sh, gpu_profile.sh): unpacks the
# carried binaries (.carry.tar.xz, from scripts/carry_binaries.sh) when needed, sets $out (results:
# $OUT, default /tmp) and $full (the full-size random model: VOXRT_FULL_WORK, default
# /tmp/voxrt-full), and builds that model when it is absent, as tools/reference/full_size_check.sh
# builds it.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -d .carry ] || tar xJf .carry.tar.xz
out=${OUT:-/tmp}
full=${VOXRT_FULL_WORK:-/tmp/voxrt-full}
[ -f "$full/model_info.json" ] ||
  python3 tools/reference/voxtral_reference.py make-model --size full --out "$full" --seed 1234 --hf-dtype bf16 \
      --no-verify >/dev/null 2>&1
