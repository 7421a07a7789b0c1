#!/usr/bin/env bash
# The clients people already use (the openai package, its transcriptions and its realtime
# transcription sessions; a vLLM realtime client on the ws package; Mistral's realtime client in
# @mistralai/mistralai; curl on the transcriptions route), against `voxrt serve` on the loopback
# with the tiny model: installs them from the npm registry (into BUILD_DIR/clients, never into the
# repository), starts the server with an API key, and checks each client's results against `voxrt
# transcribe` on the same files, for two delays (OpenAI's realtime sessions take 24 kHz audio: sox
# makes a 24 kHz copy of each file, and both sides transcribe that). curl's answers in every
# response format and its stream of Server-Sent Events are checked by tests/clients/check_response.cjs.
# README's vLLM example (examples/vllm_realtime_client.cjs) runs once, its printed transcript checked
# the same way. Then stops the server with SIGTERM and expects exit 0.
#   scripts/test_clients.sh [BUILD_DIR]      (default build/cpu; built already)
#   VOXRT=path/to/voxrt scripts/test_clients.sh   (another binary than BUILD_DIR/voxrt)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
clients=$build/clients
voxrt=${VOXRT:-$build/voxrt}
model=tests/data/tiny/mistral
fail() { echo "test_clients: FAILED: $*" >&2; exit 1; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test_clients: installing Debian's nodejs and npm" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
for tool in sox curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "test_clients: installing Debian's $tool" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$tool" >/dev/null
  fi
done

mkdir -p "$clients"
clients=$(cd "$clients" && pwd)  # absolute: the node scripts run from the repository root
[ -f "$clients/package.json" ] || echo '{"private": true}' > "$clients/package.json"
if [ ! -d "$clients/node_modules/openai" ] || [ ! -d "$clients/node_modules/ws" ] ||
   [ ! -d "$clients/node_modules/@mistralai/mistralai" ]; then
  echo "test_clients: installing openai, ws and @mistralai/mistralai from the npm registry" >&2
  (cd "$clients" && npm install --no-audit --no-fund --loglevel=error openai@7.59.0 ws@8.23.1 @mistralai/mistralai@2.7.0 >/dev/null)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/voxrt-clients-XXXXXX")
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
key=sk-voxrt-test-$RANDOM$RANDOM
"$voxrt" serve --model "$model" --device cpu --threads 1 --port 0 --api-key "$key" 2> "$tmp/serve.log" &
server=$!
for _ in $(seq 100); do grep -q "voxrt: ready" "$tmp/serve.log" && break; sleep 0.1; done
grep -q "voxrt: ready" "$tmp/serve.log" || fail "the server did not start: $(cat "$tmp/serve.log")"
port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/serve.log")
mkdir "$tmp/24k"
# curl_case FORMAT AUDIO DELAY EXPECTED_DIR [CURL_ARGS...]: POSTs AUDIO to the transcriptions route
# with curl and checks the answer as FORMAT (tests/clients/check_response.cjs) against EXPECTED_DIR.
curl_case() {
  local format=$1 audio=$2 delay=$3 expected=$4
  shift 4
  local name="curl ($format) on $audio at $delay ms" out=$tmp/curl-answer rc=0
  curl -sS --fail-with-body -H "Authorization: Bearer $key" -F "file=@$audio" -F model=voxtral \
      -F "delay_ms=$delay" "$@" "http://127.0.0.1:$port/v1/audio/transcriptions" > "$out" || rc=$?
  [ "$rc" = 0 ] || fail "$name: curl exited $rc: $(head -c 300 "$out")"
  node tests/clients/check_response.cjs "$format" "$out" "$audio" "$expected" ||
    fail "$name: the answer differs from voxrt transcribe's (above)"
}
for audio in tests/data/audio/jfk.wav tests/data/audio/speech_short.wav; do
  sox -D "$audio" -r 24000 -c 1 -b 16 -e signed-integer "$tmp/24k/$(basename "$audio")"
done

for delay in 480 960; do
  for audio in tests/data/audio/jfk.wav tests/data/audio/speech_short.wav; do
    expected=$tmp/expected-$delay
    "$voxrt" transcribe -q --model "$model" --device cpu --threads 1 --delay-ms "$delay" -f json,srt,vtt \
        --output-dir "$expected" "$audio"
    node tests/clients/openai_transcriptions.cjs "$clients" "http://127.0.0.1:$port/v1" "$key" "$audio" \
        "$expected" "$delay" || fail "the openai client on $audio at $delay ms (server log, last lines: $(tail -5 "$tmp/serve.log"))"
    node tests/clients/vllm_realtime.cjs "$clients" "ws://127.0.0.1:$port/v1/realtime" "$key" "$audio" \
        "$expected" "$delay" || fail "the vLLM realtime client on $audio at $delay ms (server log, last lines: $(tail -5 "$tmp/serve.log"))"
    node tests/clients/mistral_realtime.mjs "$clients" "http://127.0.0.1:$port" "$key" "$audio" \
        "$expected" "$delay" || fail "the Mistral realtime client on $audio at $delay ms (server log, last lines: $(tail -5 "$tmp/serve.log"))"
    for format in json text srt vtt; do
      curl_case "$format" "$audio" "$delay" "$expected" -F "response_format=$format"
    done
    curl_case verbose_json "$audio" "$delay" "$expected" -F response_format=verbose_json \
        -F 'timestamp_granularities[]=word' -F 'timestamp_granularities[]=segment'
    curl_case sse "$audio" "$delay" "$expected" -N -F response_format=json -F stream=true
    echo "curl: $(basename "$audio") at $delay ms: json, text, srt, vtt, verbose_json (segments, words), stream=true as voxrt transcribe"
    audio24k=$tmp/24k/$(basename "$audio")
    expected24k=$tmp/expected-24k-$delay
    "$voxrt" transcribe -q --model "$model" --device cpu --threads 1 --delay-ms "$delay" -f json \
        --output-dir "$expected24k" "$audio24k"
    node tests/clients/openai_realtime.cjs "$clients" "http://127.0.0.1:$port/v1" "$key" "$audio24k" \
        "$expected24k" "$delay" || fail "the openai realtime client on $audio24k at $delay ms (server log, last lines: $(tail -5 "$tmp/serve.log"))"
  done
done

# Turn detection through each dialect's client, on the labelled set's meeting (six turns), against
# `voxrt stream --turns` on the same audio (tests/clients/realtime_turns.mjs).
mkdir "$tmp/turns"
sox -D tests/data/turns/meeting.flac -b 16 -e signed-integer "$tmp/turns/meeting16k.wav"
sox -D tests/data/turns/meeting.flac -r 24000 -b 16 -e signed-integer "$tmp/turns/meeting24k.wav"
sox -D "$tmp/turns/meeting24k.wav" "$tmp/turns/meeting24k-first3s.wav" trim 0 3
for wav in meeting16k meeting24k meeting24k-first3s; do
  "$voxrt" stream -q --model "$model" --device cpu --threads 1 --turns -f jsonl "$tmp/turns/$wav.wav" > "$tmp/turns/$wav.jsonl"
done
node tests/clients/realtime_turns.mjs "$clients" "http://127.0.0.1:$port" "$key" "$tmp/turns/meeting16k.wav" \
    "$tmp/turns/meeting24k.wav" "$tmp/turns/meeting24k-first3s.wav" "$tmp/turns" ||
  fail "turn detection through the realtime clients (server log, last lines: $(tail -5 "$tmp/serve.log"))"

# README's vLLM example, once (16 kHz input, a delay other than the server's default).
VOXRT_API_KEY=$key NODE_PATH=$clients/node_modules node examples/vllm_realtime_client.cjs tests/data/audio/jfk.wav \
    "ws://127.0.0.1:$port/v1/realtime" 960 > "$tmp/example.out" 2> "$tmp/example.err" ||
  fail "examples/vllm_realtime_client.cjs: $(cat "$tmp/example.err")"
node tests/clients/check_response.cjs printed "$tmp/example.out" tests/data/audio/jfk.wav "$tmp/expected-960" ||
  fail "examples/vllm_realtime_client.cjs on jfk.wav at 960 ms: its transcript differs from voxrt transcribe's (above)"
echo "examples/vllm_realtime_client.cjs: jfk.wav at 960 ms: the transcript it printed as voxrt transcribe"

kill -TERM "$server"
status=0
wait "$server" || status=$?
server=
[ "$status" = 0 ] || fail "voxrt serve exited $status on SIGTERM: $(cat "$tmp/serve.log")"
echo "test_clients: the openai package's transcriptions (every format, streaming, errors) and realtime transcription" \
  "sessions (24 kHz), a vLLM realtime client (ws, and README's example), @mistralai/mistralai's realtime client" \
  "and curl (every format, streaming) equal voxrt transcribe; their turn detection equals voxrt stream --turns" >&2
