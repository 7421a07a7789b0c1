#!/usr/bin/env bash
# The clients people already use (the openai package; a vLLM realtime client on the ws package),
# against `voxrt serve` on the loopback with the tiny model:
# installs them from the npm registry (into BUILD_DIR/clients, never into the repository), starts
# the server with an API key, and checks each client's results against `voxrt transcribe` on the
# same files, for two delays. Then stops the server with SIGTERM and expects exit 0.
#   scripts/test_clients.sh [BUILD_DIR]      (default build/cpu; built already)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
clients=$build/clients
voxrt=$build/voxrt
model=tests/data/tiny/mistral
fail() { echo "test_clients: FAILED: $*" >&2; exit 1; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test_clients: installing Debian's nodejs and npm" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

mkdir -p "$clients"
[ -f "$clients/package.json" ] || echo '{"private": true}' > "$clients/package.json"
if [ ! -d "$clients/node_modules/openai" ] || [ ! -d "$clients/node_modules/ws" ]; then
  echo "test_clients: installing openai and ws from the npm registry" >&2
  (cd "$clients" && npm install --no-audit --no-fund --loglevel=error openai@7.59.0 ws@8.23.1 >/dev/null)
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

for delay in 480 960; do
  for audio in tests/data/audio/jfk.wav tests/data/audio/speech_short.wav; do
    expected=$tmp/expected-$delay
    "$voxrt" transcribe -q --model "$model" --device cpu --threads 1 --delay-ms "$delay" -f json,srt,vtt \
        --output-dir "$expected" "$audio"
    node tests/clients/openai_transcriptions.cjs "$PWD/$clients" "http://127.0.0.1:$port/v1" "$key" "$audio" \
        "$expected" "$delay" || fail "the openai client on $audio at $delay ms (server log: $tmp/serve.log)"
    node tests/clients/vllm_realtime.cjs "$PWD/$clients" "ws://127.0.0.1:$port/v1/realtime" "$key" "$audio" \
        "$expected" "$delay" || fail "the vLLM realtime client on $audio at $delay ms (server log: $tmp/serve.log)"
  done
done

kill -TERM "$server"
status=0
wait "$server" || status=$?
server=
[ "$status" = 0 ] || fail "voxrt serve exited $status on SIGTERM: $(cat "$tmp/serve.log")"
echo "test_clients: the openai package's transcriptions (every format, streaming, errors) and a vLLM realtime client" \
  "(ws) equal voxrt transcribe" >&2
