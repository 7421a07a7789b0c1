#!/usr/bin/env bash
# Fuzzes voxrt's parsers of untrusted input with libFuzzer (clang 14 from Debian) under
# AddressSanitizer and UndefinedBehaviorSanitizer, one target each (tests/fuzz/, the header of each
# says what counts as a bug there):
#   form         fuzz_transcription_form.cpp: multipart/form-data and OpenAI's transcription fields
#   events       fuzz_realtime_events.cpp: the three realtime dialects' events, their audio decoding
#                and resampling
#   safetensors  fuzz_safetensors_header.cpp: a safetensors file (header length, JSON header,
#                dtypes, shapes, offsets), opened by path and mapped as a checkpoint is
#   config       fuzz_model_config.cpp: params.json, config.json, model.safetensors.index.json, and
#                a checkpoint directory opened with them
#   tekken       fuzz_tekken.cpp: tekken.json loaded, then ids decoded to text
#   audio        fuzz_audio_decode.cpp: an uploaded audio file through libsndfile and the resampler
#                to 16 kHz mono, as uploads are decoded
# Each starts from its seeds, tests/fuzz/corpus/<target>/ (tests/fuzz/make_corpus.py wrote those of
# the last four), and adds what it finds to build/fuzz/<target>-corpus, never to the repository. A
# finding (crash, sanitizer report, leak, timeout, memory over the limit) fails the script: the input
# is left in build/fuzz/ (crash-*, timeout-*, oom-*), the log in build/fuzz/last-run-<binary>.log.
#
#   scripts/fuzz.sh [RUNS] [TARGETS]   RUNS: executions per target (default 100000), or a duration
#                                      (600s) to fuzz each for that long; TARGETS: a list of the
#                                      names above (default all)
# CI (scripts/test.sh) runs each target briefly. The long run, recorded in
# bench/results/2026-12-04-fuzz-long-run.txt, fuzzed each target on one core for a duration:
#   scripts/fuzz.sh 600s "safetensors config tekken audio"; scripts/fuzz.sh 300s "form events"
# Reproduce a finding: build/fuzz/<binary> build/fuzz/crash-<hash>
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
targets=${2:-form events safetensors config tekken audio}
if [[ "$runs" =~ ^([0-9]+)s$ ]]; then
  limit=(-max_total_time="${BASH_REMATCH[1]}")
elif [[ "$runs" =~ ^[0-9]+$ ]]; then
  limit=(-runs="$runs")
else
  echo "fuzz: RUNS is a number of executions or a duration such as 600s, not '$runs'" >&2
  exit 2
fi
for t in $targets; do
  case "$t" in form | events | safetensors | config | tekken | audio) ;;
    *) echo "fuzz: unknown target '$t' (form events safetensors config tekken audio)" >&2; exit 2 ;;
  esac
done
if ! command -v clang++-14 >/dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz: installing clang-14 and its libFuzzer runtime (Debian)" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
fi
out=build/fuzz
mkdir -p "$out/obj"
cxx=(clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
     -DBOOST_BEAST_USE_STD_STRING_VIEW -Isrc -Iinclude)
failed=()
json_flags="-dict=tests/fuzz/json.dict -use_value_profile=1"
mem_flags="-malloc_limit_mb=512 -rss_limit_mb=1024"

# build NAME SOURCE... [-lLIB...]: the sources compiled side by side (through ccache where there is
# one; a source another target of this run compiled already is not compiled again), then linked
# into $out/NAME. The libFuzzer targets need no other build of voxrt.
declare -A compiled=()
build() {
  local name=$1 objects=() libs=() pids=() src obj
  shift
  for src in "$@"; do
    if [[ "$src" == -l* ]]; then libs+=("$src"); continue; fi
    obj="$out/obj/${src//\//_}.o"
    objects+=("$obj")
    [ -n "${compiled[$src]:-}" ] && continue
    compiled[$src]=1
    $(command -v ccache || true) "${cxx[@]}" -c "$src" -o "$obj" & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  "${cxx[@]}" "${objects[@]}" "${libs[@]}" -o "$out/$name"
}

# run NAME TARGET MAX_LEN [LIBFUZZER FLAG...]: fuzzes $out/NAME from tests/fuzz/corpus/TARGET. New
# inputs go to the first corpus directory, the one under build/.
run() {
  local name=$1 target=$2 max_len=$3 log="$out/last-run-$1.log"
  shift 3
  mkdir -p "$out/$target-corpus"
  local status=0
  LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    "$out/$name" "${limit[@]}" -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$out/" "$@" \
    "$out/$target-corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  local execs done_line rss
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | sed -E 's/^#[0-9]+[[:space:]]+DONE[[:space:]]+//' || true)
  if [ "$status" -eq 0 ]; then
    echo "fuzz: $target: ${execs:-?} executions, no finding; ${done_line:-no DONE line}, peak RSS ${rss:-?} MB ($log)" >&2
  else
    grep -E "^==[0-9]+== ?ERROR|^SUMMARY|Test unit written to|^(MS|artifact_prefix)" "$log" | head -5 >&2 || true
    echo "fuzz: $target: FINDING after ${execs:-?} executions (exit $status); the input is in $out/ (see $log)" >&2
    failed+=("$target")
  fi
}

for target in $targets; do
  case "$target" in
    form)
      build fuzz_transcription_form tests/fuzz/fuzz_transcription_form.cpp src/server/multipart_form.cpp \
        src/server/request_error.cpp src/server/openai_transcriptions.cpp src/server/context_bias_fields.cpp \
        src/engine/context_bias_rules.cpp src/tokenizer/tekken.cpp src/common/base64.cpp src/formats/output_formats.cpp \
        src/formats/subtitle_cues.cpp src/engine/model_delays.cpp src/models/voxtral/protocol.cpp
      run fuzz_transcription_form form 4096
      ;;
    events)
      build fuzz_realtime_events tests/fuzz/fuzz_realtime_events.cpp src/server/live_transcription.cpp \
        src/server/mistral_realtime.cpp src/server/openai_realtime.cpp src/server/vllm_realtime.cpp \
        src/server/realtime_audio.cpp src/server/event_json.cpp src/server/websocket_connection.cpp \
        src/server/spooled_body.cpp src/audio/pcm_stream.cpp src/audio/stream_resampler.cpp src/common/base64.cpp \
        src/common/histogram_counter.cpp src/server/text_deltas.cpp src/server/turn_detection_json.cpp src/engine/turn_options.cpp src/server/context_bias_fields.cpp src/engine/context_bias_rules.cpp src/tokenizer/tekken.cpp src/engine/model_delays.cpp src/models/voxtral/protocol.cpp \
        -lsoxr -lpthread
      run fuzz_realtime_events events 4096
      ;;
    # The file loaders may allocate 512 MB at once (a length field must not make them allocate what
    # the bytes do not hold) and hold 1 GB in all (ASan keeps 256 MB of freed memory in quarantine,
    # and the corpus grows in a long run), and take 30 s an input (nothing decodes or parses for
    # long: a hang is a finding). The JSON readers' checks are comparisons of numbers against
    # limits: the dictionary offers the numbers at the edges, and the value profile rewards inputs
    # that bring a compared value closer.
    safetensors)
      build fuzz_safetensors_header tests/fuzz/fuzz_safetensors_header.cpp src/safetensors/safetensors.cpp \
        src/common/thread_team.cpp src/common/usable_cores.cpp -lpthread
      run fuzz_safetensors_header safetensors 32768 $mem_flags -timeout=30 $json_flags
      ;;
    config)
      build fuzz_model_config tests/fuzz/fuzz_model_config.cpp src/models/voxtral/checkpoint.cpp src/models/voxtral/config_json.cpp \
        src/models/voxtral/quant_plan.cpp src/quant/weight_format.cpp src/quant/quantizer.cpp src/quant/fp8_e4m3.cpp \
        src/safetensors/safetensors.cpp src/common/thread_team.cpp src/common/usable_cores.cpp -lpthread
      run fuzz_model_config config 4096 $mem_flags -timeout=30 $json_flags
      ;;
    tekken)
      build fuzz_tekken tests/fuzz/fuzz_tekken.cpp src/tokenizer/tekken.cpp src/common/base64.cpp
      run fuzz_tekken tekken 8192 $mem_flags -timeout=30 $json_flags
      ;;
    audio)
      build fuzz_audio_decode tests/fuzz/fuzz_audio_decode.cpp src/audio/audio_reader.cpp src/audio/audio_source.cpp \
        src/audio/sndfile_source.cpp src/audio/mpg123_source.cpp \
        src/audio/stream_resampler.cpp src/audio/audio_file.cpp src/audio/wav_writer.cpp -lsndfile -lmpg123 -lsoxr
      run fuzz_audio_decode audio 16384 $mem_flags -timeout=30
      ;;
  esac
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
