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

# A carried variant NAME[:VAR=VALUE...] (scripts/gpu_ab.sh, gpu_streams_ab.sh): sets $variant_label
# (a folder name: letters, digits, _ . - only, as the device tool returns no other names),
# $variant_exe (voxrt for "main", else the voxrt_NAME that scripts/carry_variant.sh carried) and
# the array variant_env (its VAR=VALUE settings, for `env`).
parse_variant() {
  variant_label=$(printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_')
  local name=${1%%:*}
  variant_env=()
  [ "$1" != "$name" ] && IFS=':' read -ra variant_env <<<"${1#*:}"
  variant_exe=voxrt_$name
  [ "$name" = main ] && variant_exe=voxrt
  return 0
}
