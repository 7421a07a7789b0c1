#!/usr/bin/env python3
"""Soak test for `voxrt serve` (issue 32): one live session of hours of audio, faster than real time.

Starts `voxrt serve` (or uses --url), opens one realtime session in vLLM's dialect and streams
--hours of audio (the test files back to back, looped) at --speed x real time, one second of audio a
message. Every --window seconds it samples the server's resident memory (/proc/PID/status, when it
started the server), its rounds' mean wall time and the live lag (from /metrics: voxrt_round_seconds
and voxrt_live_lag_seconds over the window), and what the client waits for its own messages. At the
end it compares the session's transcript with `voxrt transcribe` of the same audio (the offline
reference; offline decoding stops at an end-of-sequence token, a live session goes on, so the live
text must begin with the offline one then) and judges:
  - flat memory: the last window's RSS within --rss-growth-mb of the first window after warm-up;
  - no drift: the last quarter's mean round time within --drift x the first quarter's;
  - the transcript: equal to the reference (or beginning with it, past an EOS).
Prints a table and a JSON summary (--out FILE too); exit status 0 when all hold.

  tools/load/soak.py --voxrt build/cpu/voxrt --model tests/data/tiny/mistral --hours 4 --speed 30
On the GPU machine, with --device cuda, each window also samples the server's GPU memory (nvidia-smi)
and flat memory holds for it too:
  tools/load/soak.py --voxrt .carry/bin/voxrt --device cuda --model /tmp/voxrt-full/mistral --hours 1 --speed 12
"""

import argparse
import asyncio
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos import AUDIO, Server, pcm_of  # noqa: E402
from realtime_load import OP_TEXT, WebSocket, parse_prometheus  # noqa: E402


def metric(samples, name):
    """A metric's value, summed over its labels (parse_prometheus keys are name{labels})."""
    return sum(v for key, v in samples.items() if key == name or key.startswith(name + "{"))


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return parse_prometheus(r.read().decode())


def gpu_mb(pid):
    """The GPU memory the process holds (nvidia-smi), or None where there is no NVIDIA GPU."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0] == str(pid):
            return float(fields[1])
    return None


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None


async def soak(args, port, pid, pcm):
    ws = await WebSocket.connect(f"ws://127.0.0.1:{port}/v1/realtime")
    op, text = await ws.recv()
    await ws.send_text(json.dumps({"type": "session.update", "model": "m"}))
    await ws.send_text(json.dumps({"type": "input_audio_buffer.commit"}))
    done = asyncio.get_running_loop().create_future()
    deltas = []

    async def reader():
        while True:
            op, text = await ws.recv()
            e = json.loads(text)
            if e["type"] == "transcription.delta":
                deltas.append(e["delta"])
            elif e["type"] == "transcription.done":
                done.set_result(e)
                return
            else:
                done.set_exception(RuntimeError(f"unexpected event {text[:300]}"))
                return

    reading = asyncio.ensure_future(reader())
    second = 32000
    total = len(pcm) // second
    windows = []
    m0, t_window = metrics(port), time.monotonic()
    t0 = time.monotonic()
    sent_at_window = 0
    for i in range(total):
        due = t0 + i / args.speed
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await ws.send_text(json.dumps({"type": "input_audio_buffer.append",
                                       "audio": base64.b64encode(pcm[i * second:(i + 1) * second]).decode()}))
        if time.monotonic() - t_window >= args.window or i == total - 1:
            m1 = metrics(port)
            rounds = metric(m1, "voxrt_round_seconds_count") - metric(m0, "voxrt_round_seconds_count")
            round_s = metric(m1, "voxrt_round_seconds_sum") - metric(m0, "voxrt_round_seconds_sum")
            lags = metric(m1, "voxrt_live_lag_seconds_count") - metric(m0, "voxrt_live_lag_seconds_count")
            lag_s = metric(m1, "voxrt_live_lag_seconds_sum") - metric(m0, "voxrt_live_lag_seconds_sum")
            w = {"audio_h": round((i + 1) / 3600, 3), "wall_s": round(time.monotonic() - t0, 1),
                 "rss_mb": rss_mb(pid) if pid else None,
                 "gpu_mb": gpu_mb(pid) if pid and args.device != "cpu" else None, "rounds": int(rounds),
                 "round_ms": round(1000 * round_s / rounds, 3) if rounds else None,
                 "lag_ms": round(1000 * lag_s / lags, 2) if lags else None,
                 "audio_x": round((i + 1 - sent_at_window) / (time.monotonic() - t_window), 1)}
            windows.append(w)
            gpu = f", GPU {w['gpu_mb']} MB" if w["gpu_mb"] is not None else ""
            print(f"soak: {w['audio_h']:7.3f} h of audio, {w['wall_s']:8.1f} s: RSS {w['rss_mb']} MB{gpu}, round "
                  f"{w['round_ms']} ms, lag {w['lag_ms']} ms, {w['audio_x']}x real time", file=sys.stderr, flush=True)
            m0, t_window, sent_at_window = m1, time.monotonic(), i + 1
    await ws.send_text(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
    result = await asyncio.wait_for(done, 3600)
    reading.cancel()
    ws.abort()
    return windows, result, "".join(deltas)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--voxrt", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--audio-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "audio"))
    p.add_argument("--hours", type=float, default=4)
    p.add_argument("--speed", type=float, default=30, help="x real time")
    p.add_argument("--window", type=float, default=30, help="seconds between samples")
    p.add_argument("--device", default="cpu", help="the server's and the reference's device (cpu, cuda)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--drain-seconds", type=float, default=10)
    p.add_argument("--rss-growth-mb", type=float, default=50)
    p.add_argument("--drift", type=float, default=1.25)
    p.add_argument("--no-reference", action="store_true", help="skip the offline transcription of the same audio")
    p.add_argument("--out")
    p.add_argument("serve_args", nargs="*")
    args = p.parse_args(argv)
    args.exit_bound_seconds = 5
    with tempfile.TemporaryDirectory(prefix="voxrt-soak-") as tmp:
        one = b"".join(pcm_of(os.path.join(args.audio_dir, n))[1] for n in AUDIO)
        reps = max(1, int(args.hours * 3600 * 32000 / len(one)))
        pcm = (one * reps)[: len(one) * reps // 32000 * 32000]
        path = os.path.join(tmp, "soak.wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
            w.writeframes(pcm)
        server = Server(args, os.path.join(tmp, "serve.log"))
        try:
            windows, done, deltas = asyncio.run(soak(args, server.port, server.proc.pid, pcm))
        finally:
            server.proc.terminate()
            server.wait(args.drain_seconds + 15)
        reference = None
        if not args.no_reference:
            t = time.monotonic()
            out = os.path.join(tmp, "ref")
            subprocess.run([args.voxrt, "transcribe", "-q", "--model", args.model, "--device", args.device,
                            "--threads", str(args.threads), "-f", "json", "--output-dir", out, path], check=True)
            with open(os.path.join(out, "soak.json")) as f:
                reference = json.load(f)
            print(f"soak: the offline reference took {time.monotonic() - t:.0f} s", file=sys.stderr)
    failures = []
    warm = windows[1] if len(windows) > 2 else windows[0]
    growth = (windows[-1]["rss_mb"] or 0) - (warm["rss_mb"] or 0)
    if growth > args.rss_growth_mb:
        failures.append(f"memory grew {growth:.1f} MB from the second window to the last (bound {args.rss_growth_mb})")
    gpu_growth = None
    if warm.get("gpu_mb") is not None and windows[-1].get("gpu_mb") is not None:
        gpu_growth = windows[-1]["gpu_mb"] - warm["gpu_mb"]
        if gpu_growth > args.rss_growth_mb:
            failures.append(f"GPU memory grew {gpu_growth:.0f} MB from the second window to the last "
                            f"(bound {args.rss_growth_mb})")
    q = max(1, len(windows) // 4)
    timed = [w["round_ms"] for w in windows if w["round_ms"]]
    first, last = sum(timed[:q]) / q, sum(timed[-q:]) / q
    if last > args.drift * first:
        failures.append(f"rounds drifted: {first:.3f} ms in the first quarter, {last:.3f} ms in the last")
    text = done["text"]
    if deltas.strip() != text:
        failures.append("the deltas do not add up to the done event's text")
    match = None
    if reference is not None:
        match = "equal" if text == reference["text"] else "prefix (offline stopped at EOS)" \
            if reference["eos"] and text.startswith(reference["text"].rstrip()) else "DIFFERENT"
        if match == "DIFFERENT":
            failures.append("the transcript differs from voxrt transcribe's of the same audio")
    summary = {"audio_hours": round(len(pcm) / 32000 / 3600, 3), "speed": args.speed,
               "rss_mb": {"warm": warm["rss_mb"], "last": windows[-1]["rss_mb"], "growth": round(growth, 1),
                          "peak": max(w["rss_mb"] or 0 for w in windows)},
               "gpu_mb": None if gpu_growth is None else {"warm": warm["gpu_mb"], "last": windows[-1]["gpu_mb"],
                                                          "growth": gpu_growth},
               "device": args.device,
               "round_ms": {"first_quarter": round(first, 3), "last_quarter": round(last, 3)},
               "steps": done.get("usage", {}).get("completion_tokens"), "reference": match,
               "windows": windows, "failures": failures}
    text_out = json.dumps(summary, indent=1)
    print(text_out)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text_out + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
