#!/usr/bin/env bash
# Fuzzes the server's parsers with libFuzzer (clang 14 from Debian) under AddressSanitizer and
# UndefinedBehaviorSanitizer: tests/fuzz/fuzz_transcription_form.cpp (multipart/form-data and
# OpenAI's transcription fields) and tests/fuzz/fuzz_realtime_events.cpp (the three realtime
# dialects' events, their audio decoding and resampling). CI runs them briefly; a long run's
# summary goes under bench/.
#   scripts/fuzz.sh [RUNS] [TARGETS]   (default 100000 executions each; targets: form events)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
targets=${2:-form events}
if ! command -v clang++-14 >/dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz: installing clang-14 and its libFuzzer runtime (Debian)" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
fi
out=build/fuzz
cxx=(clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
     -DBOOST_BEAST_USE_STD_STRING_VIEW -Isrc -Iinclude)
run() {  # run NAME CORPUS: RUNS executions from the seeds in CORPUS
  "$out/$1" -runs="$runs" -max_len=4096 -print_final_stats=1 -artifact_prefix="$out/" "$2" 2>&1 |
    tee "$out/last-run-$1.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY)" >&2
  echo "fuzz: $runs executions of $1, no failure ($out/last-run-$1.log)" >&2
}

if [[ " $targets " == *" form "* ]]; then
  mkdir -p "$out/corpus"
  "${cxx[@]}" tests/fuzz/fuzz_transcription_form.cpp src/server/multipart_form.cpp src/server/request_error.cpp \
    src/server/openai_transcriptions.cpp src/formats/output_formats.cpp src/formats/subtitle_cues.cpp \
    src/voxtral/protocol.cpp -o "$out/fuzz_transcription_form"
  # Seeds: a well-formed form, and one with the fields the parser treats specially.
  crlf() { printf '%s\r\n' "$@"; }
  { echo 'multipart/form-data; boundary=b'; crlf '--b' 'Content-Disposition: form-data; name="file"; filename="a.wav"' \
      'Content-Type: audio/wav' '' 'RIFF....WAVE' '--b' 'Content-Disposition: form-data; name="model"' '' 'whisper-1' '--b--'; } \
    > "$out/corpus/seed-file"
  { echo 'multipart/form-data; boundary="x y"'; crlf 'preamble' '--x y' 'Content-Disposition: form-data; name=file' '' 'a' \
      '--x y' 'Content-Disposition: form-data; name="response_format"' '' 'verbose_json' \
      '--x y' 'content-disposition: form-data; name="timestamp_granularities[]"' '' 'word' \
      '--x y' 'Content-Disposition: form-data; name="delay_ms"' '' '960' \
      '--x y' 'Content-Disposition: form-data; name="temperature"' '' '0.0' '--x y--'; } > "$out/corpus/seed-fields"
  run fuzz_transcription_form "$out/corpus"
fi

if [[ " $targets " == *" events "* ]]; then
  mkdir -p "$out/events"
  "${cxx[@]}" tests/fuzz/fuzz_realtime_events.cpp src/server/live_transcription.cpp src/server/mistral_realtime.cpp \
    src/server/openai_realtime.cpp src/server/vllm_realtime.cpp src/server/realtime_audio.cpp \
    src/server/websocket_connection.cpp src/audio/pcm_stream.cpp src/audio/stream_resampler.cpp src/common/base64.cpp src/common/histogram_counter.cpp \
    src/voxtral/protocol.cpp -lsoxr -lpthread -o "$out/fuzz_realtime_events"
  # Seeds: a session of each dialect (first byte), messages split at 0x1E, 'B' a binary frame.
  printf '\x00{"type":"session.update","model":"x","delay_ms":80}\x1e{"type":"input_audio_buffer.commit"}\x1eBabcd\x1e{"type":"input_audio_buffer.commit","final":true}' \
    > "$out/events/seed-vllm"
  printf '\x01{"type":"session.update","session":{"audio_format":{"encoding":"pcm_s16le","sample_rate":24000},"target_streaming_delay_ms":960}}\x1e{"type":"input_audio.append","audio":"AAAAAAAAAAAAAAAA"}\x1e{"type":"input_audio.end"}' \
    > "$out/events/seed-mistral"
  printf '\x02{"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcmu"},"transcription":{"delay":"high"}}}}}\x1eBabcdefgh\x1e{"type":"input_audio_buffer.commit","event_id":"e1"}\x1e{"type":"input_audio_buffer.clear"}' \
    > "$out/events/seed-openai"
  run fuzz_realtime_events "$out/events"
fi
