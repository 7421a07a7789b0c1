#!/usr/bin/env bash
# The live-caption page (GET /, src/server/web/captions.html) in Debian's chromium, driven headless
# by playwright-core (npm) with a fake microphone playing a WAV (tests/clients/caption_page.cjs): the
# captions it shows must be `voxrt transcribe`'s transcript of the audio the page sent, for two
# delays, with the microphone at 16 and 48 kHz (the page sends its AudioContext's rate), and with
# --api-key (the page asks for the key and sends it as a WebSocket subprotocol, a wrong one
# refused). Then its failure paths: an error in start(), no navigator.mediaDevices (plain http from
# another machine), the server stopped (SIGTERM) and killed (SIGKILL) mid-session: each time the
# page must let the microphone go and say why. Keeps the last screenshot (docs/caption-page.png
# with --screenshot).
# Not in Firefox, where the page's former 16 kHz AudioContext failed: playwright-core drives Firefox
# only through its own patched build (not downloadable here) or, through WebDriver BiDi, a Firefox
# newer than Debian's firefox-esr 153 (playwright-core 1.65 asks it for
# emulation.setMediaFeaturesOverride, which 153 lacks); and past that, firefox-esr headless here has
# no audio output, so its AudioContext never leaves "suspended". The rate the page negotiates is
# checked in chromium instead, whose context runs at its output's rate (44.1 kHz here) whatever the
# microphone's (16 or 48 kHz).
#   scripts/test_caption_page.sh [BUILD_DIR] [--screenshot]      (default build/cpu; built already)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/cpu}
voxrt=${VOXRT:-$build/voxrt}
model=tests/data/tiny/mistral
fail() { echo "test_caption_page: FAILED: $*" >&2; exit 1; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v sox >/dev/null || missing+=(sox)
if ((${#missing[@]})); then
  echo "test_caption_page: installing Debian's ${missing[*]}" >&2
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
clients=$build/clients
mkdir -p "$clients"
clients=$(cd "$clients" && pwd)
[ -f "$clients/package.json" ] || echo '{"private": true}' > "$clients/package.json"
if [ ! -d "$clients/node_modules/playwright-core" ]; then
  echo "test_caption_page: installing playwright-core from the npm registry" >&2
  (cd "$clients" && npm install --no-audit --no-fund --loglevel=error playwright-core@1.65.1 >/dev/null)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/voxrt-page-XXXXXX")
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
start_server() {  # start_server [SERVE_FLAGS...]: a server on a free port ($port, its log $tmp/serve.log)
  # Emptied here, before the server starts: its shell truncates the log only once it runs, and the
  # wait below must not find the previous server's "ready" (then no port was read: CI saw it).
  : > "$tmp/serve.log"
  "$voxrt" serve --model "$model" --device cpu --threads 1 --port 0 "$@" 2> "$tmp/serve.log" &
  server=$!
  for _ in $(seq 100); do grep -q "voxrt: ready" "$tmp/serve.log" && break; sleep 0.1; done
  grep -q "voxrt: ready" "$tmp/serve.log" || fail "the server did not start: $(cat "$tmp/serve.log")"
  port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/serve.log")
  [ -n "$port" ] || fail "no port in the server's log: $(cat "$tmp/serve.log")"
}
stop_server() {
  kill -TERM "$server"
  wait "$server" || fail "the server did not exit 0 on SIGTERM"
  server=
}
page() {  # page NAME AUDIO CHECK [ARGS...]: one check of tests/clients/caption_page.cjs
  local out=$tmp/page-$1 audio=$2
  shift 2
  mkdir -p "$out"
  node tests/clients/caption_page.cjs "$clients" "http://127.0.0.1:$port/" "$audio" "$out" "$@" ||
    fail "the page, $* (server log: $(tail -5 "$tmp/serve.log"))"
}
check_captions() {  # check_captions NAME AUDIO DELAY: the page's captions against voxrt transcribe of what it sent
  local out=$tmp/page-$1
  page "$1" "$2" captions 6 "$3"
  "$voxrt" transcribe -q --model "$model" --device cpu --threads 1 --delay-ms "$3" -f json --output-dir "$out" "$out/sent.wav"
  # Compared in node: the tiny random model's text may hold a NUL, which bash drops.
  node -e 'const fs = require("fs");
    const [want, got] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f)).text);
    if (got !== want) { console.error(`the page showed ${JSON.stringify(got)}, voxrt transcribe of what it sent gives ${JSON.stringify(want)}`); process.exit(1); }' \
    "$out/sent.json" "$out/captions.json" || fail "$1, delay $3: the captions differ"
  echo "caption page (chromium, fake microphone), $1 at $3 ms: the captions are voxrt transcribe's of the audio sent" >&2
}
check_turns() {  # check_turns NAME AUDIO: with turns ticked, the page's turns against voxrt stream --turns of what it sent
  local out=$tmp/page-$1
  page "$1" "$2" turns 14
  "$voxrt" stream -q --model "$model" --device cpu --threads 1 --turns -f jsonl "$out/sent.wav" > "$out/stream.jsonl"
  node -e 'const fs = require("fs");
    const [stream, page] = process.argv.slice(1);
    const want = fs.readFileSync(stream, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l))
      .filter((e) => e.type === "turn").map((e) => e.text);
    const got = JSON.parse(fs.readFileSync(page));
    if (JSON.stringify(got) !== JSON.stringify(want)) { console.error(`the page showed the turns ${JSON.stringify(got)}, voxrt stream --turns of what it sent gives ${JSON.stringify(want)}`); process.exit(1); }' \
    "$out/stream.jsonl" "$out/turns.json" || fail "$1: the turns differ"
  echo "caption page (chromium, fake microphone), $1: a paragraph per turn, the turns of voxrt stream --turns on the audio sent" >&2
}
jfk=tests/data/audio/jfk.wav
jfk48k=$tmp/jfk-48k.wav
sox "$jfk" -r 48000 "$jfk48k"
start_server
check_captions open-480 "$jfk" 480
check_captions open-960-48k "$jfk48k" 960
meeting=$tmp/meeting.wav
sox tests/data/turns/meeting.flac -b 16 "$meeting"
check_turns turns "$meeting"
page start-fails "$jfk" start-fails
page no-mediadevices "$jfk" no-mediadevices
page server-term "$jfk" server-stops "$server" SIGTERM
wait "$server" || fail "the server did not exit 0 on SIGTERM with the page's session"
server=
start_server
disown "$server"  # killed on purpose: no "Killed" from bash
page server-kill "$jfk" server-stops "$server" SIGKILL
server=
# With --api-key the page asks for the key and passes it as a WebSocket subprotocol.
start_server --api-key page-test-key
PAGE_API_KEY=page-test-key check_captions key-480 "$jfk" 480
stop_server
if [ "${2:-}" = "--screenshot" ]; then cp "$tmp/page-open-960-48k/screenshot.png" docs/caption-page.png; fi
