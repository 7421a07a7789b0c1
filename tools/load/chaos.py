#!/usr/bin/env python3
"""Chaos test for `voxrt serve` (issue 32): well-behaved clients of every dialect beside hostile ones.

Starts `voxrt serve` on a free loopback port and, for --seconds, keeps running at once:
  well-behaved (each must get its complete, correct transcript: the text `voxrt transcribe` gives
  for the same audio, computed first):
    - vLLM realtime sessions (/v1/realtime), Mistral realtime sessions, OpenAI realtime
      transcription sessions (24 kHz audio), streaming a file in 80 ms chunks at --speed x real time;
    - file uploads (POST /v1/audio/transcriptions), retrying after a 503's Retry-After;
    - flooders: a few minutes of audio sent as fast as the connection takes it (the server's
      backpressure must slow them, not drop their audio), then the final commit;
  hostile:
    - killers: a realtime session dropped mid-utterance (TCP closed, no close frame);
    - non-readers: audio sent and no event ever read;
    - nested JSON: one message of --nested-mb MB of '[' on each dialect;
    - bombs: an upload of hours of silent FLAC (small on the wire);
    - slow headers: a request header trickled a byte at a time.
Then SIGTERM, with a last wave of well-behaved clients in flight: they must still get their whole
transcripts (the drain), and the process must exit within --drain-seconds plus a small bound.
Throughout, the server's resident memory is sampled (/proc/PID/status) and must stay under
--rss-limit-mb.

Python 3 standard library only (tools/load/realtime_load.py's WebSocket client), and sox for the
24 kHz and FLAC copies of the audio. Prints a JSON summary (--out FILE too); exit status 0 when
every assertion held, 1 otherwise, 2 for a setup failure.

  tools/load/chaos.py --voxrt build/cpu/voxrt --model tests/data/tiny/mistral --seconds 30
"""

import argparse
import asyncio
import base64
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from realtime_load import ConnectionClosed, OP_TEXT, WebSocket, WebSocketError  # noqa: E402

AUDIO = ["jfk.wav", "speech_short.wav", "speech_long.wav"]
CHUNK = 2560  # 80 ms of 16 kHz PCM16


def die(message):
    print(f"chaos: {message}", file=sys.stderr)
    sys.exit(2)


def pcm_of(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            die(f"{path}: expected mono PCM16")
        return w.getframerate(), w.readframes(w.getnframes())


class Results:
    """What every client saw: per kind, how many got the right transcript, and each failure."""

    def __init__(self):
        self.ok = {}
        self.failures = []
        self.notes = {}

    def good(self, kind):
        self.ok[kind] = self.ok.get(kind, 0) + 1

    def bad(self, kind, why):
        self.failures.append(f"{kind}: {why}")

    def note(self, kind):
        self.notes[kind] = self.notes.get(kind, 0) + 1


# ---------------------------------------------------------------------------------------------
# Well-behaved clients

# Each dialect as a well-behaved client speaks it: where it connects, what it says before its audio
# (and whether it waits for an answer), its audio event, its end of input, and the events that carry
# the text (the last one's field holding the transcript).
DIALECTS = {
    "vllm": {
        "path": "/v1/realtime",
        "setup": [{"type": "session.update", "model": "m"}, {"type": "input_audio_buffer.commit"}],
        "setup_answer": None,
        "append": "input_audio_buffer.append",
        "end": {"type": "input_audio_buffer.commit", "final": True},
        "final": "transcription.done", "text": "text",
        "delta": "transcription.delta", "delta_field": "delta", "skip": (),
        "chunk": CHUNK,
    },
    "mistral": {
        "path": "/v1/audio/transcriptions/realtime?model=m",
        "setup": [{"type": "session.update", "session": {"audio_format": {"encoding": "pcm_s16le", "sample_rate": 16000}}}],
        "setup_answer": "session.updated",
        "append": "input_audio.append",
        "end": {"type": "input_audio.end"},
        "final": "transcription.done", "text": "text",
        "delta": "transcription.text.delta", "delta_field": "text", "skip": ("transcription.segment",),
        "chunk": CHUNK,
    },
    "openai": {  # audio/pcm at 24 kHz: 80 ms is 3840 bytes
        "path": "/v1/realtime?intent=transcription",
        "setup": [{"type": "session.update", "session": {
            "type": "transcription", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}}}],
        "setup_answer": "session.updated",
        "append": "input_audio_buffer.append",
        "end": {"type": "input_audio_buffer.commit"},
        "final": "conversation.item.input_audio_transcription.completed", "text": "transcript",
        "delta": "conversation.item.input_audio_transcription.delta", "delta_field": "delta",
        "skip": ("input_audio_buffer.committed", "conversation.item.added", "conversation.item.done"),
        "chunk": 3840,
    },
}


async def realtime_session(url, kind, pcm, speed, want, results, sent=None):
    """One utterance in dialect `kind`: the audio at `speed` x real time, then its end; the text
    must be `want` (`sent` is set once all the input is sent)."""
    d = DIALECTS[kind]
    ws = await WebSocket.connect(url + d["path"])
    reader = None
    try:
        await expect_type(ws, "session.created")
        for event in d["setup"]:
            await ws.send_text(json.dumps(event))
        if d["setup_answer"]:
            await expect_type(ws, d["setup_answer"])
        reader = asyncio.ensure_future(read_until(ws, d["final"], d["delta_field"], d["delta"], skip=d["skip"]))
        await send_paced(ws, pcm, speed, lambda b: json.dumps(
            {"type": d["append"], "audio": base64.b64encode(b).decode()}), chunk=d["chunk"])
        await ws.send_text(json.dumps(d["end"]))
        if sent:
            sent.set()
        done, deltas = await asyncio.wait_for(reader, 300)
        check_text(results, kind, done.get(d["text"]), deltas, want)
        await ws.send_close()
    finally:
        ws.abort()
        cancel(reader)


async def upload(host, port, name, data, want, results, kind="upload", attempts=20, sent=None):
    for _ in range(attempts):
        status, headers, body = await http_post_form(host, port, name, data, sent=sent)
        if status == 503:
            results.note("upload_retried_503")
            await asyncio.sleep(min(5, int(headers.get("retry-after", "1"))) * random.uniform(0.2, 0.6))
            continue
        if status != 200:
            return results.bad(kind, f"HTTP {status}: {body[:300]!r}")
        text = body.decode("utf-8", "replace").rstrip("\n")
        return results.good(kind) if text == want else results.bad(kind, f"text {text[:80]!r} != {want[:80]!r}")
    results.bad(kind, f"refused {attempts} times")


async def flooder(url, pcm, want, results):
    """Minutes of audio as fast as the connection takes it; the transcript must be whole."""
    ws = await WebSocket.connect(url + "/v1/realtime")
    reader = None
    try:
        await expect_type(ws, "session.created")
        await ws.send_text(json.dumps({"type": "session.update", "model": "m"}))
        await ws.send_text(json.dumps({"type": "input_audio_buffer.commit"}))
        reader = asyncio.ensure_future(read_until(ws, "transcription.done", "delta", "transcription.delta"))
        for at in range(0, len(pcm), 32000):  # a second a message, no pacing
            await ws.send_text(json.dumps({"type": "input_audio_buffer.append",
                                           "audio": base64.b64encode(pcm[at:at + 32000]).decode()}))
        await ws.send_text(json.dumps({"type": "input_audio_buffer.commit", "final": True}))
        done, deltas = await asyncio.wait_for(reader, 600)
        check_text(results, "flooder", done.get("text"), deltas, want)
    finally:
        ws.abort()
        cancel(reader)


def cancel(task):
    """A reader task cut off with its session: cancelled, its exception retrieved (not reported)."""
    if task is not None:
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


async def send_paced(ws, pcm, speed, message, chunk=CHUNK):
    t0 = time.monotonic()
    for i, at in enumerate(range(0, len(pcm), chunk)):
        due = t0 + i * 0.080 / speed
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await ws.send_text(message(pcm[at:at + chunk]))


async def expect_type(ws, want, timeout=30):
    op, text = await asyncio.wait_for(ws.recv(), timeout)
    event = json.loads(text)
    if event.get("type") != want:
        raise WebSocketError(f"expected {want}, got {text[:200]}")
    return event


class Refused(Exception):
    """The server had no room for the session now (engine full or overloaded): retry later."""


def is_refusal(e):
    """A dialect's refusal of a session: vLLM's session_refused, Mistral's 503, OpenAI's failed item."""
    error = e.get("error")
    code = e.get("code") if e.get("type") == "error" and isinstance(error, str) else \
        error.get("code") if isinstance(error, dict) else None
    return code in ("session_refused", 503)


async def read_until(ws, final, delta_field, delta_type, skip=()):
    """Events until `final` (returned with the deltas' text); an error event is a failure, or a
    refusal (Refused) when the server had no room for the session."""
    deltas = ""
    while True:
        op, text = await ws.recv()
        if op != OP_TEXT:
            continue
        e = json.loads(text)
        t = e.get("type")
        if t == final:
            return e, deltas
        if t == delta_type:
            deltas += e.get(delta_field, "")
        elif is_refusal(e):
            raise Refused(text[:200])
        elif t not in skip:
            raise WebSocketError(f"unexpected event {text[:300]}")


def check_text(results, kind, text, deltas, want):
    if text != want:
        return results.bad(kind, f"done text {str(text)[:80]!r} != {want[:80]!r}")
    if deltas.strip() != want:
        return results.bad(kind, f"the deltas {deltas[:80]!r} do not add up to {want[:80]!r}")
    results.good(kind)


async def http_post_form(host, port, name, data, timeout=300, sent=None):
    boundary = "chaos" + os.urandom(8).hex()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + \
           f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\ntext\r\n--{boundary}--\r\n".encode()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write((f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: {host}:{port}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n"
                      "Connection: close\r\n\r\n").encode() + body)
        await writer.drain()
        if sent:
            sent.set()
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.1 (\d+)", lines[0] if lines else "")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return (int(m.group(1)) if m else 0), headers, rest


# ---------------------------------------------------------------------------------------------
# Hostile clients: each only must not harm the others (and gets a clear refusal where one is due).

async def killer(url, pcm, results):
    ws = await WebSocket.connect(url + "/v1/realtime")
    await expect_type(ws, "session.created")
    await ws.send_text(json.dumps({"type": "session.update", "model": "m"}))
    await ws.send_text(json.dumps({"type": "input_audio_buffer.commit"}))
    cut = random.randrange(len(pcm) // 4, len(pcm)) // 2 * 2
    await ws.send_text(json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[:cut]).decode()}))
    await asyncio.sleep(random.uniform(0, 0.5))
    ws.abort()
    results.note("killed_mid_utterance")


async def non_reader(url, pcm, seconds, results):
    """Audio in, events never read: the server must not keep what it cannot send."""
    ws = await WebSocket.connect(url + "/v1/realtime")
    try:
        await ws.send_text(json.dumps({"type": "session.update", "model": "m"}))
        await ws.send_text(json.dumps({"type": "input_audio_buffer.commit"}))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.wait_for(ws.send_text(json.dumps(
                {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[:32000]).decode()})), 10)
            await asyncio.sleep(0.05)
        results.note("non_reader_ran")
    except (ConnectionClosed, ConnectionError, asyncio.TimeoutError, OSError):
        results.note("non_reader_cut")  # the server dropped it, or stopped reading it: both fine
    finally:
        ws.abort()


async def nested_json(url, path, megabytes, results):
    ws = await WebSocket.connect(url + path, max_message=64 << 20)
    try:
        await asyncio.wait_for(ws.recv(), 30)  # session.created
        t0 = time.monotonic()
        await ws.send_text("[" * (megabytes << 20))
        op, text = await asyncio.wait_for(ws.recv(), 30)
        if '"error"' not in text:
            results.bad("nested_json", f"{path}: no error for {megabytes} MB of '[': {text[:200]}")
        elif time.monotonic() - t0 > 5:
            results.bad("nested_json", f"{path}: the error took {time.monotonic() - t0:.1f} s")
        else:
            results.note("nested_json_refused")
    except ConnectionClosed as e:
        results.note(f"nested_json_closed_{e.code}")  # over --max-message-mb: closed 1009
    finally:
        ws.abort()


async def bomb(host, port, flac, results):
    status, _, body = await http_post_form(host, port, "bomb.flac", flac, timeout=30)
    if status in (400, 413):
        results.note(f"bomb_refused_{status}")
    else:
        results.bad("bomb", f"HTTP {status}: {body[:200]!r}")


async def slow_header(host, port, seconds, results):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for c in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
            writer.write(bytes([c]))
            await writer.drain()
            await asyncio.sleep(seconds / 1000)
        results.note("slow_header_done")
    except (ConnectionError, OSError):
        results.note("slow_header_cut")
    finally:
        writer.close()


# ---------------------------------------------------------------------------------------------
# The run

async def until_healthy(host, port, timeout=60):
    """Waits until /health says ok (not saturated): the engine has room again."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            if answer.startswith(b"HTTP/1.1 200"):
                return
        except (OSError, asyncio.TimeoutError):
            pass
        await asyncio.sleep(0.2)


class RssSampler:
    def __init__(self, pid):
        self.pid = pid
        self.samples = []

    def sample(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        self.samples.append(int(line.split()[1]) / 1024)
        except OSError:
            pass

    async def run(self, stop):
        while not stop.is_set():
            self.sample()
            await asyncio.sleep(0.1)


async def forever(make, stop, results, kind, pause=0.0):
    """Runs make() again and again until stop; an exception is the kind's failure."""
    while not stop.is_set():
        try:
            await make()
        except Exception as e:  # noqa: BLE001 - any exception is a finding to report
            results.bad(kind, f"{type(e).__name__}: {e}")
        if pause:
            await asyncio.sleep(pause)


async def chaos(args, server, expected, audio, tmp):
    host, port = "127.0.0.1", server.port
    url = f"ws://{host}:{port}"
    results = Results()
    stop = asyncio.Event()
    rss = RssSampler(server.proc.pid)
    sampler = asyncio.ensure_future(rss.run(asyncio.Event()))

    def pick():
        name = random.choice(AUDIO)
        return name, audio[name], audio[name + "@24k"], expected[name], expected[name + "@24k"]

    def good_realtime(kind, speed=args.speed, sent=None):
        async def one():
            name, pcm, pcm24k, want, want24k = pick()
            for attempt in range(20):  # a well-behaved client retries a refusal a little later
                try:
                    if kind == "openai":
                        return await realtime_session(url, kind, pcm24k, speed, want24k, results, sent)
                    return await realtime_session(url, kind, pcm, speed, want, results, sent)
                except Refused:
                    results.note("realtime_refused_retried")
                    await asyncio.sleep(random.uniform(0.5, 1.5))
            results.bad(kind, "refused 20 times")
        return one

    async def good_upload(sent=None):
        name, pcm, _, want, _ = pick()
        await upload(host, port, name, audio[name + "@wav"], want, results, sent=sent)

    tasks = []
    for i in range(args.sessions):
        tasks.append(forever(good_realtime(["vllm", "mistral", "openai"][i % 3]), stop, results, "realtime"))
    for _ in range(args.uploads):
        tasks.append(forever(good_upload, stop, results, "upload"))
    async def good_flooder():
        try:
            await flooder(url, audio["flood"], expected["flood"], results)
        except Refused:
            results.note("flooder_refused_retried")
            await asyncio.sleep(1)

    tasks.append(forever(good_flooder, stop, results, "flooder"))
    tasks.append(forever(lambda: killer(url, audio[random.choice(AUDIO)], results), stop, results, "killer", 0.2))
    tasks.append(forever(lambda: non_reader(url, audio["flood"], 5, results), stop, results, "non_reader", 0.5))
    for path in ("/v1/realtime", "/v1/audio/transcriptions/realtime", "/v1/realtime?intent=transcription"):
        tasks.append(forever(lambda p=path: nested_json(url, p, args.nested_mb, results), stop, results, "nested_json", 1))
    tasks.append(forever(lambda: bomb(host, port, audio["bomb"], results), stop, results, "bomb", 1))
    tasks.append(forever(lambda: slow_header(host, port, 2, results), stop, results, "slow_header"))
    running = [asyncio.ensure_future(t) for t in tasks]
    await asyncio.sleep(args.seconds)
    stop.set()
    for t in running:  # cut off where they are: more abrupt disconnections
        t.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    # The last wave: well-behaved clients of each kind whose input is all sent, and taken by the
    # server, but not yet all answered when SIGTERM comes: the drain must give each its whole
    # transcript. (A stop ends each open utterance with the audio the server has taken: audio
    # still in the sockets then, a client's input sent faster than the model takes it, is not in
    # its last transcript. So these clients keep to --speed, and the signal waits a moment for
    # their last messages to be read.)
    # The storm cut off, the server is let settle (its overload window is a couple of seconds):
    # the last wave checks the stop, not a refusal a client would retry.
    await until_healthy(host, port)
    ok_before = sum(results.ok.values())
    sent = [asyncio.Event() for _ in range(4)]
    last = [asyncio.ensure_future(good_realtime(k, args.speed, e)()) for k, e in zip(("vllm", "mistral", "openai"), sent)]
    # The upload: three times the flooders' audio, seconds of model work, in flight at the signal
    # (sent once the realtime clients' input is).
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in sent[:3])), 120)
    last.append(asyncio.ensure_future(upload(host, port, "last.wav", audio["last@wav"], expected["last"], results,
                                             sent=sent[3])))
    await asyncio.wait_for(sent[3].wait(), 120)
    await asyncio.sleep(0.5)
    t_term = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    exit_code = await asyncio.get_running_loop().run_in_executor(None, server.wait, args.drain_seconds + 15)
    exit_seconds = time.monotonic() - t_term
    for r in await asyncio.gather(*last, return_exceptions=True):
        if isinstance(r, Exception):
            results.bad("last_wave", f"{type(r).__name__}: {r}")
    if sum(results.ok.values()) - ok_before != len(last):
        results.bad("last_wave", f"{sum(results.ok.values()) - ok_before} of {len(last)} in flight at SIGTERM got their transcript")
    sampler.cancel()
    rss.sample()
    return results, rss.samples, exit_code, exit_seconds


class Server:
    def __init__(self, args, log):
        cmd = [args.voxrt, "serve", "--model", args.model, "--device", getattr(args, "device", "cpu"),
               "--threads", str(args.threads),
               "--port", "0", "--no-access-log", "--drain-seconds", str(args.drain_seconds),
               "--max-audio-minutes", "30"] + args.serve_args
        self.log = log
        self.proc = subprocess.Popen(cmd, stderr=open(log, "wb"), stdout=subprocess.DEVNULL)
        self.port = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = open(log, errors="replace").read()
            m = re.search(r"serving http://127\.0\.0\.1:(\d+)", text)
            if m and "voxrt: ready" in text:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        die(f"the server did not become ready: {open(log, errors='replace').read()[-2000:]}")

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def prepare(args, tmp):
    """The audio each client sends and what `voxrt transcribe` makes of it."""
    if not shutil.which("sox"):
        die("sox is needed (apt-get install sox)")
    audio, files = {}, {}
    for name in AUDIO:
        src = os.path.join(args.audio_dir, name)
        rate, pcm = pcm_of(src)
        if rate != 16000:
            die(f"{src}: expected 16 kHz")
        audio[name] = pcm
        with open(src, "rb") as f:
            audio[name + "@wav"] = f.read()
        files[name] = src
        copy = os.path.join(tmp, "24k-" + name)
        subprocess.run(["sox", "-D", src, "-r", "24000", "-c", "1", "-b", "16", "-e", "signed-integer", copy], check=True)
        audio[name + "@24k"] = pcm_of(copy)[1]
        files[name + "@24k"] = copy
    # The flooders' audio: the files back to back, again and again (--flood-seconds).
    flood = os.path.join(tmp, "flood.wav")
    with wave.open(flood, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        one = b"".join(audio[n] for n in AUDIO)
        reps = max(1, int(args.flood_seconds * 32000 / len(one)))
        w.writeframes(one * reps)
    audio["flood"] = pcm_of(flood)[1]
    files["flood"] = flood
    last = os.path.join(tmp, "last.wav")
    with wave.open(last, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(audio["flood"] * 3)
    with open(last, "rb") as f:
        audio["last@wav"] = f.read()
    files["last"] = last
    bomb = os.path.join(tmp, "bomb.flac")  # hours of silence in a few kB
    subprocess.run(["sox", "-n", "-r", "8000", "-c", "1", "-b", "16", bomb, "trim", "0", "4:00:00"], check=True)
    with open(bomb, "rb") as f:
        audio["bomb"] = f.read()
    expected = {}
    out = os.path.join(tmp, "expected")
    subprocess.run([args.voxrt, "transcribe", "-q", "--model", args.model, "--device", "cpu", "--threads", "1",
                    "-f", "json", "--output-dir", out] + list(files.values()), check=True)
    for key, path in files.items():
        with open(os.path.join(out, os.path.splitext(os.path.basename(path))[0] + ".json")) as f:
            expected[key] = json.load(f)["text"]
    return audio, expected


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--voxrt", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--audio-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "audio"))
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--sessions", type=int, default=6, help="well-behaved realtime clients at once (3 dialects)")
    p.add_argument("--uploads", type=int, default=2, help="well-behaved uploaders at once")
    p.add_argument("--speed", type=float, default=4, help="realtime clients' pace, x real time")
    p.add_argument("--flood-seconds", type=float, default=60, help="the flooders' audio (6 x the 10 s pause mark)")
    p.add_argument("--nested-mb", type=int, default=15)
    p.add_argument("--drain-seconds", type=float, default=10)
    p.add_argument("--exit-bound-seconds", type=float, default=5, help="past the drain")
    p.add_argument("--rss-limit-mb", type=float, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("serve_args", nargs="*", help="after --: more `voxrt serve` options")
    args = p.parse_args(argv)
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="voxrt-chaos-") as tmp:
        t0 = time.monotonic()
        audio, expected = prepare(args, tmp)
        log = os.path.join(tmp, "serve.log")
        server = Server(args, log)
        try:
            results, rss, exit_code, exit_seconds = asyncio.run(chaos(args, server, expected, audio, tmp))
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
        server_log = open(log, errors="replace").read()
    failures = list(results.failures)
    for kind in ("vllm", "mistral", "openai", "upload", "flooder"):
        if results.ok.get(kind, 0) == 0:
            failures.append(f"{kind}: no client of this kind got its transcript")
    peak = max(rss) if rss else 0
    if peak > args.rss_limit_mb:
        failures.append(f"rss: peak {peak:.0f} MB over the {args.rss_limit_mb:.0f} MB bound")
    if exit_code != 0:
        failures.append(f"exit: status {exit_code} after SIGTERM (None: still running, killed)")
    if exit_seconds > args.drain_seconds + args.exit_bound_seconds:
        failures.append(f"exit: {exit_seconds:.1f} s after SIGTERM, more than the drain {args.drain_seconds} s + "
                        f"{args.exit_bound_seconds} s")
    summary = {
        "seconds": args.seconds, "wall_s": round(time.monotonic() - t0, 1),
        "transcripts_ok": results.ok, "hostile": results.notes,
        "rss_mb": {"first": round(rss[0], 1) if rss else None, "peak": round(peak, 1),
                   "last": round(rss[-1], 1) if rss else None, "samples": len(rss)},
        "exit": {"status": exit_code, "seconds_after_sigterm": round(exit_seconds, 2),
                 "drain_seconds": args.drain_seconds},
        "server_said": [line for line in server_log.splitlines() if line.startswith("voxrt:")][-6:],
        "failures": failures,
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if failures:
        print("chaos: FAILED; the server's log ends:\n" + server_log[-3000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
