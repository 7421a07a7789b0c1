#!/usr/bin/env bash
# Fuzzes the server's request parsers with libFuzzer (clang 14 from Debian) under AddressSanitizer
# and UndefinedBehaviorSanitizer: tests/fuzz/fuzz_transcription_form.cpp (multipart/form-data and
# OpenAI's transcription fields). CI runs it briefly; a long run's summary goes under bench/.
#   scripts/fuzz.sh [RUNS]      (default 100000 executions)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
if ! command -v clang++-14 >/dev/null || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "fuzz: installing clang-14 and its libFuzzer runtime (Debian)" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
fi
out=build/fuzz
mkdir -p "$out/corpus"
clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc -Iinclude \
  tests/fuzz/fuzz_transcription_form.cpp src/server/multipart_form.cpp src/server/request_error.cpp \
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
"$out/fuzz_transcription_form" -runs="$runs" -max_len=4096 -print_final_stats=1 "$out/corpus" 2>&1 |
  tee "$out/last-run.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY)" >&2
echo "fuzz: $runs executions of the transcription form parser, no failure ($out/last-run.log)" >&2
