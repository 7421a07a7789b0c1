#!/usr/bin/env python3
"""Builds the labelled turn set under tests/data/turns/: conversations of espeak-ng speech whose
turns are separated by silences of known length, with their true turn boundaries as JSON, and the
noises they are heard in at several SNRs. The voice-activity test (tests/unit/test_voice_activity.cpp)
and the measurement recorded in bench/results/ read them.

Usage: tools/turns/make_turn_set.py [OUT_DIR]      (default: tests/data/turns under the repo root)
Needs python3 (standard library only), espeak-ng and sox (apt-get install espeak-ng sox).

Written, for each conversation C and noise N:
  C.flac    the clean conversation, 16 kHz mono s16
  C.json    its true turns and utterances (start_ms / end_ms) and its speech power
  noise_N.flac  30 s of sox's N noise (white, pink, brown), stored quiet (about -60 dBFS RMS)
  set.json  the recordings of the set: each a conversation, a noise and an SNR
A recording is its conversation plus its noise scaled to the SNR, summed when the set is read
(tests/turns/turn_set.h): a multiply-add a sample. The noisy mixes themselves are not stored because
noise does not compress: two conversations in five conditions were 5.5 MB of FLAC, while the parts
of all 30 recordings are 1.8 MB, and another SNR costs nothing more. The set is committed rather than made at test time so that CI
needs neither espeak-ng nor sox and every test reads the very audio the bench record was measured on
(another espeak-ng version speaks slightly differently).

Deterministic: espeak-ng has no randomness, every sox call runs in repeatable mode (-R: its noise
generators start from a fixed seed) with dither off (-D), and the arithmetic here is exact.

What is true here, exactly:
  * Every utterance is synthesised alone, resampled to 16 kHz and trimmed at both ends where its
    amplitude first/last exceeds TRIM_LEVEL for 5 ms (sox silence). Its first and last samples
    after trimming are where that speech starts and stops.
  * Every conversation but one starts with 600-1000 ms without speech (noise alone, once mixed);
    "dictation" speaks from its first sample.
  * A turn is one speaker (one voice and rate) saying one to three utterances with short pauses
    (150-300 ms) between them, which must NOT end the turn; turns are separated by gaps of
    700-2000 ms, longer than the detector's default silence (500 ms).
  * start_ms / end_ms of a turn are its first utterance's first sample and its last utterance's
    last sample, in ms from the file's start (sample / 16).
  * SNR is the mean power of the speech samples (inside utterances) over the mean power of the
    noise, both over the full band; the noise runs through the whole recording, lead included.
"""

import array
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import wave

RATE = 16000
TRIM_LEVEL = "0.3%"  # about -50 dBFS: espeak-ng's own silence is digital zero or close to it
SOX = ["sox", "-R", "-D", "-V1"]
MONO16 = ["-r", str(RATE), "-c", "1", "-b", "16", "-e", "signed-integer"]

# Conversations: lead silence, then turns (speaker voice, rate, speech level in dBFS RMS,
# utterances, pauses between them), gaps between turns, tail silence. Levels differ by turn, as
# speakers' do.
CONVERSATIONS = {
    "meeting": {
        "lead_ms": 1000,
        "tail_ms": 1200,
        "turns": [
            ("en-us", 175, -22, ["Good morning and welcome to the weekly planning meeting",
                                 "Let us start with the budget"], [250]),
            ("en+f3", 150, -26, ["The numbers for the third quarter came in last night"], []),
            ("en+m7", 195, -24, ["So what does that mean for the hiring plan",
                                 "Do we still open two positions",
                                 "Or only one"], [200, 150]),
            ("en", 130, -20, ["We keep both positions open for now"], []),
            ("en-us", 160, -27, ["Fine"], []),
            ("en+f3", 185, -23, ["Then the next item is the office move in March",
                                 "Facilities sent a new floor plan"], [300]),
        ],
        "gaps_ms": [800, 1500, 700, 2000, 1100],
    },
    "support_call": {
        "lead_ms": 600,
        "tail_ms": 900,
        "turns": [
            ("en+m7", 165, -21, ["Thank you for calling technical support",
                                 "How can I help you today"], [200]),
            ("en-us", 140, -25, ["My laptop will not connect to the wireless network",
                                 "It worked yesterday"], [300]),
            ("en+m7", 200, -23, ["Have you tried turning the router off and on again"], []),
            ("en+f3", 170, -27, ["Yes"], []),
            ("en", 185, -22, ["I did that twice this morning",
                              "The light on the router is blinking orange"], [150]),
            ("en+m7", 150, -24, ["Orange means the line is down in your street",
                                 "I will open a ticket for you"], [250]),
        ],
        "gaps_ms": [1000, 750, 1800, 900, 1300],
    },
    # Speech from the very first sample (push to talk): the detector has heard no noise before it.
    "dictation": {
        "lead_ms": 0,
        "tail_ms": 1000,
        "turns": [
            ("en+f2", 180, -21, ["Dear Anna thank you for your letter",
                                 "I will be in town next week"], [250]),
            ("en+f2", 165, -23, ["Let us meet for lunch on Tuesday"], []),
            ("en+f2", 190, -22, ["Best wishes from all of us"], []),
        ],
        "gaps_ms": [900, 1200],
    },
}

# sox noise type -> amplitude it is made at (each about -60 dBFS RMS: quiet noise compresses well;
# its quantisation stays ~40 dB below it, and it is scaled up to the SNR when mixed).
NOISES = {"white": 0.0016, "pink": 0.004, "brown": 0.0016}
NOISE_SECONDS = 30  # longer than every conversation
# The recordings of the set: (conversation, noise or None for clean, SNR in dB), every
# conversation in each condition.
CONDITIONS = [(None, None),
              ("white", 20), ("white", 10), ("white", 5), ("white", 0),
              ("pink", 10), ("pink", 5), ("pink", 0),
              ("brown", 5), ("brown", 0)]


def run(cmd):
    subprocess.run(cmd, check=True)


def read_s16(path):
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == RATE, path
        samples = array.array("h")
        samples.frombytes(w.readframes(w.getnframes()))
    if sys.byteorder != "little":
        samples.byteswap()
    return samples


def write_s16(path, samples):
    data = array.array("h", samples)
    if sys.byteorder != "little":
        data.byteswap()
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(data.tobytes())


def power(samples):
    return sum(float(s) * s for s in samples) / max(1, len(samples))


def utterance(tmp, index, voice, rate, level_db, text):
    """One utterance, 16 kHz mono, trimmed to where speech starts and stops, at level_db RMS."""
    raw, trimmed = os.path.join(tmp, f"u{index}_raw.wav"), os.path.join(tmp, f"u{index}.wav")
    run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", raw, text])
    run(SOX + [raw] + MONO16 + [trimmed, "silence", "1", "0.005", TRIM_LEVEL,
                                "reverse", "silence", "1", "0.005", TRIM_LEVEL, "reverse"])
    samples = read_s16(trimmed)
    gain = 32768.0 * 10 ** (level_db / 20) / math.sqrt(power(samples))
    return [int(round(s * gain)) for s in samples]


def compose(tmp, conversation):
    """The clean conversation's samples and its turns (sample ranges), utterances and pauses."""
    out = [0] * (conversation["lead_ms"] * RATE // 1000)
    turns, speech = [], []
    index = 0
    for t, (voice, rate, level_db, texts, pauses) in enumerate(conversation["turns"]):
        if t > 0:
            out += [0] * (conversation["gaps_ms"][t - 1] * RATE // 1000)
        start = len(out)
        for u, text in enumerate(texts):
            if u > 0:
                out += [0] * (pauses[u - 1] * RATE // 1000)
            samples = utterance(tmp, index, voice, rate, level_db, text)
            index += 1
            speech.append((len(out), len(out) + len(samples)))
            out += samples
        turns.append({"start": start, "end": len(out), "voice": voice, "rate": rate,
                      "level_dbfs": level_db, "pauses_ms": pauses, "text": " / ".join(texts)})
    out += [0] * (conversation["tail_ms"] * RATE // 1000)
    return out, turns, speech


def to_ms(sample):
    return sample * 1000 / RATE


def write_flac(tmp, samples, path):
    wav = os.path.join(tmp, "out.wav")
    write_s16(wav, samples)
    run(SOX + [wav, path])


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "tests", "data", "turns")
    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} not found (apt-get install espeak-ng sox)")
    os.makedirs(out_dir, exist_ok=True)
    recordings = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, amplitude in NOISES.items():
            path = os.path.join(out_dir, f"noise_{kind}.flac")
            run(SOX + ["-r", str(RATE), "-n"] + MONO16 +
                [path, "synth", str(NOISE_SECONDS), kind + "noise", "vol", str(amplitude)])
        for name, conversation in CONVERSATIONS.items():
            clean, turns, speech = compose(tmp, conversation)
            assert len(clean) <= NOISE_SECONDS * RATE, name
            write_flac(tmp, clean, os.path.join(out_dir, name + ".flac"))
            speech_power = power([s for a, b in speech for s in clean[a:b]]) / 32768.0 ** 2
            label = {
                "audio": name + ".flac",
                "sample_rate": RATE,
                "samples": len(clean),
                "speech_rms_dbfs": round(10 * math.log10(speech_power), 3),
                "turns": [{"start_ms": to_ms(t["start"]), "end_ms": to_ms(t["end"]),
                           "voice": t["voice"], "rate": t["rate"], "level_dbfs": t["level_dbfs"],
                           "pauses_ms": t["pauses_ms"], "text": t["text"]} for t in turns],
                "utterances": [{"start_ms": to_ms(a), "end_ms": to_ms(b)} for a, b in speech],
            }
            with open(os.path.join(out_dir, name + ".json"), "w") as f:
                json.dump(label, f, indent=1)
                f.write("\n")
            print(f"{name}.flac  {len(clean) / RATE:6.2f} s  {len(turns)} turns  "
                  f"speech {label['speech_rms_dbfs']:.1f} dBFS RMS")
            recordings += [{"conversation": name, "noise": kind, "snr_db": snr}
                           for kind, snr in CONDITIONS]
    with open(os.path.join(out_dir, "set.json"), "w") as f:
        json.dump({"sample_rate": RATE,
                   "noises": {kind: f"noise_{kind}.flac" for kind in NOISES},
                   "recordings": recordings}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
