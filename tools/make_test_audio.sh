#!/usr/bin/env bash
# Makes the test audio clips under tests/data/audio/ with espeak-ng and sox.
#
# Deterministic and idempotent: every file is rebuilt from scratch on each run, sox runs in
# repeatable mode (-R) with dither off (-D) so the same tools give the same bytes, and
# espeak-ng has no randomness. (Different espeak-ng / sox versions may still differ by a few
# samples; the clips are inputs, the golden fixtures are computed from whatever is committed.)
#
# Clips (16 kHz mono s16 unless said otherwise):
#   speech_short.wav   ~2.7 s English sentence, leading silence trimmed (speech starts at t=0)
#   speech_long.wav    ~17.5 s, longer than the encoder's 15 s attention window (750 frames)
#   odd_length.wav     1.37 s = 21920 samples, NOT a multiple of 1280 (one decoder step)
#   speech_to_end.wav  speech runs to the last sample: trailing silence trimmed, then cut mid-word
#   stereo_44k.wav     speech_short resampled to 44.1 kHz, 2 identical channels, s16
#                      (the C++ test decodes + resamples it and compares against speech_short)
#   jfk.wav            copy of /work/shared/audio/jfk.wav (11 s, 16 kHz mono)
#
# Usage: tools/make_test_audio.sh [OUT_DIR]   (default: tests/data/audio under the repo root)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${1:-$repo_root/tests/data/audio}"
jfk_src="${JFK_WAV:-/work/shared/audio/jfk.wav}"

for tool in espeak-ng sox soxi; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (apt-get install espeak-ng sox)" >&2; exit 1; }
done
[[ -f "$jfk_src" ]] || { echo "error: $jfk_src not found (set JFK_WAV=path)" >&2; exit 1; }

mkdir -p "$out_dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Repeatable, no dither, quiet. Every sox call goes through this.
SOX=(sox -R -D -V1)
# Target format of every mono clip.
MONO16=(-r 16000 -c 1 -b 16 -e signed-integer)
VOICE=en-us

# speak TEXT SPEED OUT: espeak-ng at its native 22050 Hz, then resample to 16 kHz mono s16.
speak() {
  local text="$1" speed="$2" out="$3"
  espeak-ng -v "$VOICE" -s "$speed" -w "$tmp/raw.wav" "$text"
  "${SOX[@]}" "$tmp/raw.wav" "${MONO16[@]}" "$out"
}

# trim_leading IN OUT: drop leading silence so speech starts at sample 0.
trim_leading() {
  "${SOX[@]}" "$1" "$2" silence 1 0.005 0.5%
}

# trim_both IN OUT: drop leading and trailing silence (trailing via reverse / trim / reverse).
trim_both() {
  "${SOX[@]}" "$1" "$2" silence 1 0.005 0.5% reverse silence 1 0.005 0.5% reverse
}

# 1. speech_short: one sentence, about 2.7 s.
speak "The quick brown fox jumps over the lazy dog." 190 "$tmp/short_raw.wav"
trim_leading "$tmp/short_raw.wav" "$out_dir/speech_short.wav"

# 2. speech_long: a paragraph, about 17-18 s (> 15 s encoder window). Fixed to 17.5 s exactly
#    (280000 samples): about 17.4 s of speech, then zeros, so its length does not drift.
speak "Speech recognition turns sound into text. The engine listens to the audio in small steps \
of eighty milliseconds, and it writes words a little later, after it has heard enough. \
Long recordings are harder, because the encoder only looks back fifteen seconds. \
This paragraph is long on purpose, so that the window is exceeded before the end. \
Thank you for listening to this test." 210 "$tmp/long_raw.wav"
trim_leading "$tmp/long_raw.wav" "$tmp/long_trim.wav"
"${SOX[@]}" "$tmp/long_trim.wav" "$out_dir/speech_long.wav" pad 0 20 trim 0 280000s

# 3. odd_length: 1.37 s = 21920 samples (21920 / 1280 = 17.125 steps).
speak "Hello world, this is an odd length clip." 170 "$tmp/odd_raw.wav"
trim_leading "$tmp/odd_raw.wav" "$tmp/odd_trim.wav"
"${SOX[@]}" "$tmp/odd_trim.wav" "$out_dir/odd_length.wav" pad 0 2 trim 0 21920s

# 4. speech_to_end: trim both ends, then cut 0.2 s before the end so the last word is cut off
#    mid-word and the final sample is inside speech.
speak "Please transcribe everything until the very last syllable." 160 "$tmp/end_raw.wav"
trim_both "$tmp/end_raw.wav" "$tmp/end_trim.wav"
end_len=$(soxi -s "$tmp/end_trim.wav")
cut_len=$(( end_len - 3200 ))
"${SOX[@]}" "$tmp/end_trim.wav" "$out_dir/speech_to_end.wav" trim 0 "${cut_len}s"

# 5. stereo_44k: speech_short at 44.1 kHz, two identical channels.
"${SOX[@]}" "$out_dir/speech_short.wav" -r 44100 -c 2 -b 16 -e signed-integer "$out_dir/stereo_44k.wav"

# 6. jfk: copied as is.
cp -f "$jfk_src" "$out_dir/jfk.wav"
chmod 644 "$out_dir"/*.wav

# Report what was made; fail if any clip is not what the tests expect.
check() {  # check FILE RATE CHANNELS
  local f="$out_dir/$1" rate channels
  rate=$(soxi -r "$f"); channels=$(soxi -c "$f")
  if [[ "$rate" != "$2" || "$channels" != "$3" || "$(soxi -b "$f")" != 16 ]]; then
    echo "error: $1 is ${rate} Hz x ${channels} ch, expected $2 Hz x $3 ch s16" >&2; exit 1
  fi
  printf '%-18s %6s Hz  %s ch  %8s samples  %7.3f s\n' "$1" "$rate" "$channels" \
    "$(soxi -s "$f")" "$(soxi -D "$f")"
}
check speech_short.wav 16000 1
check speech_long.wav 16000 1
check odd_length.wav 16000 1
check speech_to_end.wav 16000 1
check stereo_44k.wav 44100 2
check jfk.wav 16000 1
odd=$(soxi -s "$out_dir/odd_length.wav")
(( odd % 1280 != 0 )) || { echo "error: odd_length.wav is a multiple of 1280 samples" >&2; exit 1; }
du -ch "$out_dir"/*.wav | tail -n 1
