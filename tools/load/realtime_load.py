#!/usr/bin/env python3
"""Load driver for `voxrt serve`'s realtime WebSocket endpoint (vLLM's dialect, /v1/realtime).

Opens N concurrent sessions, each streaming a 16 kHz mono PCM16 WAV file (looped) at real time:
one 80 ms chunk (2560 bytes) every 80 ms on absolute deadlines from the session's own start,
starts staggered over --ramp-seconds. Measures what a client sees (see README.md for the
definitions) and, when the server exposes /metrics, what the engine says of its own lag.

Python 3 standard library only: one asyncio event loop, one task per session (plus its reader),
and a small RFC 6455 client written here (no extensions, no subprotocols).

Exit status: 0 only if every session got its transcription.done and no error event came (and,
with --max-final-latency, no final latency over it); 1 otherwise; 2 for bad arguments or input.
"""

import argparse
import asyncio
import base64
import hashlib
import json
import math
import os
import signal
import ssl
import struct
import sys
import time
import urllib.parse
import urllib.request
import wave

SAMPLE_RATE = 16000
CHUNK_SECONDS = 0.080
CHUNK_BYTES = int(SAMPLE_RATE * CHUNK_SECONDS) * 2  # 2560: 1280 PCM16 samples
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

# ---------------------------------------------------------------------------------------------
# A minimal RFC 6455 client over asyncio streams.

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketError(Exception):
    """The handshake failed or the peer broke the protocol."""


class ConnectionClosed(Exception):
    """The connection ended: a close frame (code, reason) or the TCP stream (code None)."""

    def __init__(self, code=None, reason=""):
        super().__init__(f"closed: code={code} reason={reason!r}")
        self.code = code
        self.reason = reason


def _mask(payload: bytes, key: bytes) -> bytes:
    # XOR with the repeated 4-byte key, done on one big integer (fast in CPython).
    n = len(payload)
    if n == 0:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def encode_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """A client frame: always masked (RFC 6455 5.3)."""
    n = len(payload)
    head = bytearray([(0x80 if fin else 0) | opcode])
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += struct.pack("!H", n)
    else:
        head.append(0x80 | 127)
        head += struct.pack("!Q", n)
    key = os.urandom(4)
    return bytes(head) + key + _mask(payload, key)


class WebSocket:
    def __init__(self, reader, writer, max_message):
        self.reader = reader
        self.writer = writer
        self.max_message = max_message
        self.close_sent = False
        self.close_received = None  # (code, reason) once the peer's close frame came
        self.broken = False  # the TCP stream ended (or we dropped it)
        self._write_lock = asyncio.Lock()

    @classmethod
    async def connect(cls, url, headers=(), max_message=64 << 20):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("ws", "wss"):
            raise WebSocketError(f"not a ws:// or wss:// URL: {url}")
        secure = u.scheme == "wss"
        host = u.hostname
        port = u.port or (443 if secure else 80)
        ctx = ssl.create_default_context() if secure else None
        reader, writer = await asyncio.open_connection(host, port, ssl=ctx, limit=1 << 20)
        try:
            target = (u.path or "/") + (("?" + u.query) if u.query else "")
            key = base64.b64encode(os.urandom(16)).decode()
            host_header = u.netloc.rsplit("@", 1)[-1]
            lines = [f"GET {target} HTTP/1.1", f"Host: {host_header}", "Upgrade: websocket",
                     "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
            lines += [f"{k}: {v}" for k, v in headers]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
            await writer.drain()
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as e:
                raise WebSocketError(f"connection closed during the handshake ({len(e.partial)} bytes)")
            except asyncio.LimitOverrunError:
                raise WebSocketError("handshake response headers too large")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            fields = {}
            for line in header_lines:
                if ":" in line:
                    name, value = line.split(":", 1)
                    fields[name.strip().lower()] = value.strip()
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or parts[1] != "101":
                body = b""
                length = int(fields.get("content-length", "0") or 0)
                if 0 < length <= 65536:
                    try:
                        body = await asyncio.wait_for(reader.readexactly(length), 5)
                    except Exception:
                        pass
                raise WebSocketError(f"handshake refused: {status_line} {body.decode('utf-8', 'replace')}".strip())
            if fields.get("upgrade", "").lower() != "websocket":
                raise WebSocketError(f"handshake: Upgrade header {fields.get('upgrade')!r}")
            if "upgrade" not in [t.strip().lower() for t in fields.get("connection", "").split(",")]:
                raise WebSocketError(f"handshake: Connection header {fields.get('connection')!r}")
            accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
            if fields.get("sec-websocket-accept") != accept:
                raise WebSocketError("handshake: wrong Sec-WebSocket-Accept")
            if fields.get("sec-websocket-extensions"):
                raise WebSocketError("handshake: the server chose an extension none was asked for")
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer, max_message)

    async def _send_frame(self, opcode, payload):
        data = encode_frame(opcode, payload)
        async with self._write_lock:  # data frames in order, each written whole
            self.writer.write(data)
            await self.writer.drain()

    async def send_text(self, text):
        if self.close_sent or self.broken:
            raise ConnectionClosed(*(self.close_received or (None, "the connection is closing")))
        await self._send_frame(OP_TEXT, text.encode() if isinstance(text, str) else text)

    async def send_close(self, code=1000, reason="", timeout=5.0):
        """Starts the closing handshake (once); the peer's close then ends recv()."""
        if self.close_sent or self.broken:
            return
        self.close_sent = True
        try:
            await asyncio.wait_for(self._send_frame(OP_CLOSE, struct.pack("!H", code) + reason.encode()[:123]), timeout)
        except (asyncio.TimeoutError, OSError):
            self.abort()

    def _write_now(self, opcode, payload):
        if not self.broken:
            try:
                self.writer.write(encode_frame(opcode, payload))
            except (OSError, RuntimeError):
                pass

    def abort(self):
        self.broken = True
        try:
            self.writer.close()
        except Exception:
            pass

    async def _read_frame(self):
        try:
            b0, b1 = await self.reader.readexactly(2)
            fin, rsv, opcode = b0 & 0x80, b0 & 0x70, b0 & 0x0F
            masked, n = b1 & 0x80, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await self.reader.readexactly(8))
                if n >> 63:
                    raise WebSocketError("64-bit payload length with its top bit set")
            if rsv:
                raise WebSocketError("RSV bits set with no extension negotiated")
            if masked:
                raise WebSocketError("a masked frame from the server")
            if opcode >= 0x8 and (not fin or n > 125):
                raise WebSocketError("a fragmented or long control frame")
            if opcode not in (OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG):
                raise WebSocketError(f"reserved opcode {opcode:#x}")
            if n > self.max_message:
                raise WebSocketError(f"a {n}-byte frame (over {self.max_message})")
            payload = await self.reader.readexactly(n) if n else b""
            return bool(fin), opcode, payload
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            self.abort()
            raise ConnectionClosed(None, f"TCP stream ended ({type(e).__name__})")

    async def recv(self):
        """The next data message: (OP_TEXT, str) or (OP_BINARY, bytes). Answers pings and the
        peer's close; raises ConnectionClosed at the end, WebSocketError on a protocol error."""
        opcode, parts, size = None, [], 0
        while True:
            try:
                fin, op, payload = await self._read_frame()
            except WebSocketError:
                await self._fail(1002)
                raise
            if op == OP_PING:
                if not self.close_sent:
                    self._write_now(OP_PONG, payload)  # whole frame, no waiting: reading goes on
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                code, reason = 1005, ""
                if len(payload) == 1:
                    await self._fail(1002)
                    raise WebSocketError("a 1-byte close payload")
                if len(payload) >= 2:
                    (code,) = struct.unpack("!H", payload[:2])
                    reason = payload[2:].decode("utf-8", "replace")
                self.close_received = (code, reason)
                if not self.close_sent:
                    self.close_sent = True
                    self._write_now(OP_CLOSE, payload[:2])  # echo the code (RFC 6455 5.5.1)
                self.abort()  # close() flushes what is buffered first
                raise ConnectionClosed(code, reason)
            if op == OP_CONT:
                if opcode is None:
                    await self._fail(1002)
                    raise WebSocketError("a continuation frame with no message started")
            else:  # text or binary
                if opcode is not None:
                    await self._fail(1002)
                    raise WebSocketError("a new message inside a fragmented one")
                opcode = op
            parts.append(payload)
            size += len(payload)
            if size > self.max_message:
                await self._fail(1009)
                raise WebSocketError(f"a message over {self.max_message} bytes")
            if fin:
                data = b"".join(parts)
                if opcode == OP_TEXT:
                    try:
                        return OP_TEXT, data.decode("utf-8")
                    except UnicodeDecodeError:
                        await self._fail(1007)
                        raise WebSocketError("a text message that is not UTF-8")
                return OP_BINARY, data

    async def _fail(self, code):
        if not self.close_sent:
            self.close_sent = True
            try:
                await asyncio.wait_for(self._send_frame(OP_CLOSE, struct.pack("!H", code)), 2)
            except Exception:
                pass
        self.abort()


# ---------------------------------------------------------------------------------------------
# Audio

def fail(message):
    print(f"realtime_load: {message}", file=sys.stderr)
    sys.exit(2)


def load_pcm16(path):
    try:
        with wave.open(path, "rb") as w:
            ch, width, rate, frames = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            data = w.readframes(frames)
    except OSError as e:
        fail(f"{path}: {e.strerror or e}")
    except (wave.Error, EOFError) as e:
        fail(f"{path}: not a PCM WAV file the wave module reads ({e}); "
             "give a 16 kHz mono 16-bit PCM WAV (e.g. ffmpeg -i IN -ar 16000 -ac 1 -c:a pcm_s16le OUT.wav)")
    if (ch, width, rate) != (1, 2, SAMPLE_RATE):
        fail(f"{path}: {rate} Hz, {ch} channel(s), {8 * width}-bit; "
             "the driver sends the server's native format and needs 16 kHz mono 16-bit PCM "
             "(convert it: ffmpeg -i IN -ar 16000 -ac 1 -c:a pcm_s16le OUT.wav)")
    if len(data) < CHUNK_BYTES:
        fail(f"{path}: shorter than one 80 ms chunk")
    return data


def build_chunks(pcm, seconds):
    """The append events of one session, shared by all: the file looped to fill `seconds`."""
    n = max(1, round(seconds / CHUNK_SECONDS))
    looped_len = n * CHUNK_BYTES
    stream = pcm * (looped_len // len(pcm) + 1)
    events = []
    for i in range(n):
        audio = base64.b64encode(stream[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]).decode()
        events.append(json.dumps({"type": "input_audio_buffer.append", "audio": audio}).encode())
    return events


# ---------------------------------------------------------------------------------------------
# Statistics


def pct(values, q):
    """Nearest-rank percentile (q in [0, 100]); None for no values."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


def dist(values):
    if not values:
        return {"count": 0}
    return {"count": len(values), "mean": sum(values) / len(values), "p50": pct(values, 50),
            "p90": pct(values, 90), "p99": pct(values, 99), "max": max(values)}


def ms(x):
    return "-" if x is None else f"{1000 * x:.1f}"


def fmt_dist(d):
    if not d.get("count"):
        return "n=0"
    return f"p50 {ms(d['p50'])} / p99 {ms(d['p99'])} / max {ms(d['max'])} ms (n={d['count']})"


# ---------------------------------------------------------------------------------------------
# Server metrics (Prometheus text from GET /metrics), best effort


def parse_prometheus(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
        except ValueError:
            continue
    return out


def histogram_delta(before, after, name):
    """Bucket counts of a histogram gained between two scrapes: [(le, count)], sum, count."""
    buckets = []
    prefix = name + '_bucket{le="'
    for key, value in after.items():
        if key.startswith(prefix):
            le = key[len(prefix):-2]
            buckets.append((math.inf if le == "+Inf" else float(le), value - before.get(key, 0.0)))
    buckets.sort()
    count = after.get(name + "_count", 0.0) - before.get(name + "_count", 0.0)
    total = after.get(name + "_sum", 0.0) - before.get(name + "_sum", 0.0)
    return buckets, total, count


def histogram_quantile(buckets, q):
    """As Prometheus's histogram_quantile: linear inside the bucket, the last finite bound for +Inf."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == math.inf:
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 1.0)
        prev_le, prev_c = le, c
    return prev_le


def fetch_metrics(url, headers, timeout=5.0):
    req = urllib.request.Request(url, headers=dict(headers))
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return parse_prometheus(r.read().decode("utf-8", "replace"))


# ---------------------------------------------------------------------------------------------
# One session


class Session:
    def __init__(self, index, start_offset, chunks_planned):
        self.index = index
        self.start_offset = start_offset  # seconds after the run's start that it connects
        self.connected = False
        self.created = False
        self.completed = False  # transcription.done received
        self.connect_s = None  # TCP + handshake
        self.created_s = None  # handshake done -> session.created
        self.chunks_sent = 0
        self.chunks_planned = chunks_planned
        self.max_lateness = 0.0  # the client's own schedule: how late a chunk left vs its deadline
        self.slipped = False  # some chunk left more than 80 ms after its deadline
        self.delta_gaps = []  # deltas while streaming: receive time - send time of the latest chunk
        self.tail_deltas = []  # deltas after the final commit: receive time - final commit sent
        self.deltas = 0
        self.delta_text = []
        self.final_latency = None  # final commit sent -> transcription.done received
        self.done_text = None
        self.completion_tokens = None
        self.errors = []  # [(code, message)]
        self.disconnect = None  # how the connection ended early, if it did
        self.failure = None  # a client-side failure (connect, handshake, timeout)
        self.stopped_early = False  # Ctrl-C / SIGTERM cut the audio short

    def summary(self):
        d = {
            "index": self.index, "start_offset_s": round(self.start_offset, 4),
            "connected": self.connected, "created": self.created, "completed": self.completed,
            "connect_s": self.connect_s, "created_s": self.created_s,
            "chunks_planned": self.chunks_planned, "chunks_sent": self.chunks_sent,
            "audio_seconds_sent": round(self.chunks_sent * CHUNK_SECONDS, 3),
            "max_lateness_s": self.max_lateness, "slipped": self.slipped,
            "deltas": self.deltas, "delta_gap_s": dist(self.delta_gaps), "tail_delta_s": dist(self.tail_deltas),
            "final_latency_s": self.final_latency, "completion_tokens": self.completion_tokens,
            "done_text_chars": None if self.done_text is None else len(self.done_text),
            "done_matches_deltas": None if self.done_text is None
            else self.done_text == "".join(self.delta_text).strip(),
            "errors": [{"code": c, "error": m} for c, m in self.errors],
            "disconnect": self.disconnect, "failure": self.failure, "stopped_early": self.stopped_early,
        }
        return d


FATAL_CODES = {"session_refused", "processing_error"}  # the utterance is over: no done will come


async def run_session(s, args, t0, chunks, stop, headers, state):
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, t0 + s.start_offset - loop.time()))
    if stop.is_set():
        s.failure = "not started: stopped"
        return
    c0 = loop.time()
    try:
        ws = await asyncio.wait_for(WebSocket.connect(args.ws_url, headers), args.connect_timeout)
    except asyncio.TimeoutError:
        s.failure = f"connect: no handshake in {args.connect_timeout} s"
        return
    except (OSError, WebSocketError) as e:
        s.failure = f"connect: {type(e).__name__}: {e}"
        return
    s.connected = True
    s.connect_s = loop.time() - c0
    state["connected"] += 1
    state["open"] += 1

    last_sent = [None]  # send time of the newest chunk
    final_sent = [None]
    created = asyncio.Event()
    done = asyncio.Event()
    dead = asyncio.Event()  # the utterance can no longer finish (fatal error, disconnect)
    closing = [False]  # we started the close: its end is no disconnect

    async def reader():
        try:
            while True:
                op, msg = await ws.recv()
                now = loop.time()
                if op != OP_TEXT:
                    continue
                try:
                    ev = json.loads(msg)
                except ValueError:
                    s.errors.append(("client_bad_json", msg[:200]))
                    continue
                t = ev.get("type") if isinstance(ev, dict) else None
                if t == "transcription.delta":
                    s.deltas += 1
                    s.delta_text.append(str(ev.get("delta", "")))
                    if final_sent[0] is not None:
                        s.tail_deltas.append(now - final_sent[0])
                    elif last_sent[0] is not None:
                        s.delta_gaps.append(now - last_sent[0])
                elif t == "transcription.done":
                    if final_sent[0] is None:  # e.g. the server stopping: the audio was cut short
                        s.errors.append(("client_done_before_final_commit", str(ev.get("text", ""))[:100]))
                        dead.set()
                        continue
                    s.final_latency = now - final_sent[0]
                    s.done_text = str(ev.get("text", ""))
                    usage = ev.get("usage")
                    if isinstance(usage, dict):
                        s.completion_tokens = usage.get("completion_tokens")
                    s.completed = True
                    done.set()
                elif t == "session.created":
                    s.created = True
                    s.created_s = now - c0 - s.connect_s
                    created.set()
                elif t == "error":
                    code = str(ev.get("code"))
                    s.errors.append((code, str(ev.get("error"))[:300]))
                    if code in FATAL_CODES:
                        dead.set()
                else:
                    s.errors.append(("client_unexpected_event", str(t)))
        except ConnectionClosed as e:
            if not closing[0]:
                s.disconnect = {"code": e.code, "reason": e.reason}
        except WebSocketError as e:
            s.disconnect = {"code": None, "reason": f"protocol error: {e}"}
        except OSError as e:
            s.disconnect = {"code": None, "reason": f"{type(e).__name__}: {e}"}
        finally:
            dead.set()

    async def wait_event(event, timeout):
        """True if `event` was set before the timeout and before the session died."""
        w = asyncio.ensure_future(event.wait())
        d = asyncio.ensure_future(dead.wait())
        try:
            await asyncio.wait({w, d}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            w.cancel()
            d.cancel()
        return event.is_set()

    rtask = asyncio.ensure_future(reader())
    try:
        if not await wait_event(created, args.connect_timeout):
            if not s.disconnect:
                s.failure = "no session.created"
            return
        await ws.send_text(json.dumps({"type": "session.update", "model": args.model, "delay_ms": args.delay_ms}))
        await ws.send_text('{"type":"input_audio_buffer.commit"}')
        state["streaming"] += 1
        start = loop.time()
        try:
            for i, chunk in enumerate(chunks):
                if dead.is_set():
                    break
                if stop.is_set():
                    s.stopped_early = True
                    break
                deadline = start + i * CHUNK_SECONDS
                delay = deadline - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                now = loop.time()
                late = now - deadline
                if late > s.max_lateness:
                    s.max_lateness = late
                    if late > CHUNK_SECONDS:
                        s.slipped = True
                await ws.send_text(chunk)
                last_sent[0] = now
                s.chunks_sent += 1
            if dead.is_set():
                return
            await ws.send_text('{"type":"input_audio_buffer.commit","final":true}')
            final_sent[0] = loop.time()
        finally:
            state["streaming"] -= 1
        if not await wait_event(done, args.done_timeout):
            if not s.disconnect and not any(c in FATAL_CODES for c, _ in s.errors):
                s.failure = f"no transcription.done within {args.done_timeout} s of the final commit"
            return
    except (ConnectionClosed, OSError) as e:  # a send failed: the reader says how it ended
        await asyncio.sleep(0)
        if not s.disconnect:
            s.disconnect = {"code": getattr(e, "code", None), "reason": f"send failed: {e}"}
    finally:
        state["open"] -= 1
        if s.completed:
            state["completed"] += 1
        closing[0] = True
        await ws.send_close(1000)
        try:  # the reader ends on the server's close (or the stream's end)
            await asyncio.wait_for(rtask, 5.0)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
            rtask.cancel()
        ws.abort()


# ---------------------------------------------------------------------------------------------
# The run


async def loop_lag_monitor(result, stop_all):
    """How late the event loop wakes up: a loaded client shows here before anywhere else."""
    loop = asyncio.get_running_loop()
    lags = []
    while not stop_all.is_set():
        t = loop.time()
        await asyncio.sleep(0.05)
        lags.append(loop.time() - t - 0.05)
    result.update(dist(lags))


async def metrics_poller(url, headers, out, stop_all, period=1.0):
    """Samples the server's gauges while the run goes on (margin, sessions, connections)."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    while not stop_all.is_set():
        try:
            m = await asyncio.to_thread(fetch_metrics, url, headers, 3.0)
            out.append({"t": round(loop.time() - t0, 2),
                        "margin_s": m.get("voxrt_realtime_margin_seconds"),
                        "sessions_active": m.get("voxrt_sessions_active"),
                        "connections": m.get("voxrt_realtime_connections")})
        except Exception:
            pass
        try:
            await asyncio.wait_for(stop_all.wait(), period)
        except asyncio.TimeoutError:
            pass


async def progress(state, n, t0, stop_all, period):
    loop = asyncio.get_running_loop()
    while not stop_all.is_set():
        try:
            await asyncio.wait_for(stop_all.wait(), period)
        except asyncio.TimeoutError:
            pass
        print(f"realtime_load: t={loop.time() - t0:6.1f}s connected {state['connected']}/{n} "
              f"open {state['open']} streaming {state['streaming']} done {state['completed']}",
              file=sys.stderr, flush=True)


async def run(args, chunks):
    loop = asyncio.get_running_loop()
    headers = [("Authorization", f"Bearer {args.api_key}")] if args.api_key else []
    stop = asyncio.Event()
    stop_all = asyncio.Event()
    interrupts = [0]
    tasks = []

    def on_signal():
        interrupts[0] += 1
        if interrupts[0] == 1:
            print("realtime_load: stopping: the sessions end their utterances now (again to abort)",
                  file=sys.stderr, flush=True)
            stop.set()
        else:
            for t in tasks:
                t.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
        except (NotImplementedError, RuntimeError):
            pass

    metrics_before = metrics_after = None
    if args.metrics_url:
        try:
            metrics_before = await asyncio.to_thread(fetch_metrics, args.metrics_url, headers)
        except Exception as e:
            print(f"realtime_load: no server metrics ({args.metrics_url}: {e})", file=sys.stderr)
            args.metrics_url = None

    n = args.sessions
    sessions = [Session(i, (i * args.ramp_seconds / n) if n > 1 else 0.0, len(chunks)) for i in range(n)]
    state = {"connected": 0, "open": 0, "streaming": 0, "completed": 0}
    t0 = loop.time()
    wall0 = time.time()
    lag = {}
    samples = []
    side = [asyncio.ensure_future(loop_lag_monitor(lag, stop_all))]
    if args.metrics_url:
        side.append(asyncio.ensure_future(metrics_poller(args.metrics_url, headers, samples, stop_all)))
    if args.progress > 0:
        side.append(asyncio.ensure_future(progress(state, n, t0, stop_all, args.progress)))
    tasks += [asyncio.ensure_future(run_session(s, args, t0, chunks, stop, headers, state)) for s in sessions]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for s, r in zip(sessions, results):
        if isinstance(r, asyncio.CancelledError):
            s.failure = s.failure or "aborted"
        elif isinstance(r, BaseException):
            s.failure = s.failure or f"client bug: {type(r).__name__}: {r}"
    duration = loop.time() - t0
    stop_all.set()
    await asyncio.gather(*side, return_exceptions=True)
    if args.metrics_url:
        try:
            metrics_after = await asyncio.to_thread(fetch_metrics, args.metrics_url, headers)
        except Exception:
            pass
    return sessions, duration, wall0, lag, samples, metrics_before, metrics_after, interrupts[0] > 0


def redacted(argv):
    """The command line with the API key's value hidden."""
    out, hide = [], False
    for a in argv:
        if hide:
            out.append("***")
        elif a.startswith("--api-key="):
            out.append("--api-key=***")
        else:
            out.append(a)
        hide = a == "--api-key"
    return out


def report(args, sessions, duration, wall0, lag, samples, mb, ma, interrupted):
    connected = [s for s in sessions if s.connected]
    completed = [s for s in sessions if s.completed]
    errors_by_code = {}
    for s in sessions:
        for code, _ in s.errors:
            errors_by_code[code] = errors_by_code.get(code, 0) + 1
    n_errors = sum(errors_by_code.values())
    gaps = [g for s in sessions for g in s.delta_gaps]
    tails = [g for s in sessions for g in s.tail_deltas]
    finals = [s.final_latency for s in sessions if s.final_latency is not None]
    slipped = [s.index for s in sessions if s.slipped]
    disconnects = [s for s in sessions if s.disconnect]
    failures = [s for s in sessions if s.failure]
    texts = {}
    for s in completed:
        texts[s.done_text] = texts.get(s.done_text, 0) + 1
    mismatched = [s.index for s in completed if s.done_text != "".join(s.delta_text).strip()]
    late = [s.index for s in sessions if args.max_final_latency is not None and s.final_latency is not None
            and s.final_latency > args.max_final_latency]
    ok = len(completed) == len(sessions) and n_errors == 0 and not interrupted and not late

    server = None
    if mb is not None and ma is not None:
        buckets, total, count = histogram_delta(mb, ma, "voxrt_live_wait_seconds")
        margins = [x["margin_s"] for x in samples if x.get("margin_s") is not None]
        rejected = {k.split('"')[1]: ma[k] - mb.get(k, 0.0) for k in ma
                    if k.startswith("voxrt_sessions_rejected_total{")}
        server = {
            "live_wait_s": {"count": int(count), "mean": total / count if count else None,
                            "p50": histogram_quantile(buckets, 0.50), "p90": histogram_quantile(buckets, 0.90),
                            "p99": histogram_quantile(buckets, 0.99),
                            "buckets": [["+Inf" if le == math.inf else le, int(c)] for le, c in buckets]},
            "realtime_margin_s_min": min(margins) if margins else None,
            "sessions_active_max": max((x["sessions_active"] or 0 for x in samples), default=None),
            "sessions_total": ma.get("voxrt_sessions_total", 0) - mb.get("voxrt_sessions_total", 0),
            "sessions_rejected": rejected,
            "rounds": ma.get("voxrt_rounds_total", 0) - mb.get("voxrt_rounds_total", 0),
            "decoder_rows": ma.get("voxrt_decoder_rows_total", 0) - mb.get("voxrt_decoder_rows_total", 0),
            "audio_seconds": ma.get("voxrt_audio_seconds_total", 0) - mb.get("voxrt_audio_seconds_total", 0),
            "samples": samples,
        }
        server["mean_rows_per_round"] = server["decoder_rows"] / server["rounds"] if server["rounds"] else None

    doc = {
        "tool": "voxrt tools/load/realtime_load.py",
        "command": [sys.executable] + redacted(sys.argv),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall0)),
        "config": {"url": args.ws_url, "audio": args.audio, "sessions": args.sessions, "seconds": args.seconds,
                   "chunks_per_session": sessions[0].chunks_planned if sessions else 0,
                   "chunk_ms": CHUNK_SECONDS * 1000, "ramp_seconds": args.ramp_seconds, "delay_ms": args.delay_ms,
                   "model": args.model, "done_timeout": args.done_timeout},
        "ok": ok,
        "interrupted": interrupted,
        "duration_s": duration,
        "summary": {
            "sessions_requested": len(sessions), "sessions_connected": len(connected),
            "sessions_completed": len(completed), "errors": n_errors, "errors_by_code": errors_by_code,
            "disconnects": len(disconnects), "client_failures": len(failures),
            "deltas": sum(s.deltas for s in sessions),
            "delta_gap_s": dist(gaps), "tail_delta_s": dist(tails), "final_latency_s": dist(finals),
            "connect_s": dist([s.connect_s for s in connected]),
            "client_schedule": {"sessions_slipped": len(slipped), "slipped_indexes": slipped,
                                "max_lateness_s": max((s.max_lateness for s in sessions), default=0.0),
                                "event_loop_lag_s": lag},
            "transcripts_distinct": len(texts), "done_text_mismatches_deltas": mismatched,
            "sessions_over_max_final_latency": late,
        },
        "server_metrics": server,
        "sessions": [s.summary() for s in sessions],
    }

    p = print
    e = sys.stderr
    sm = doc["summary"]
    p(f"realtime_load: {args.ws_url}  {args.sessions} sessions x {args.seconds:g} s of audio "
      f"(delay {args.delay_ms} ms, ramp {args.ramp_seconds:g} s), ran {duration:.1f} s"
      + ("  [interrupted]" if interrupted else ""), file=e)
    p(f"  sessions: requested {len(sessions)}, connected {len(connected)}, completed {len(completed)}, "
      f"disconnected {len(disconnects)}, client failures {len(failures)}", file=e)
    p(f"  errors: {n_errors}" + (f" {errors_by_code}" if errors_by_code else ""), file=e)
    p(f"  deltas: {sm['deltas']}; delta gap (receive - newest chunk sent, while streaming): "
      f"{fmt_dist(sm['delta_gap_s'])}", file=e)
    p(f"  after the final commit: deltas {fmt_dist(sm['tail_delta_s'])}", file=e)
    p(f"  final latency (final commit -> done): {fmt_dist(sm['final_latency_s'])}"
      + (f"; {len(late)} over --max-final-latency {args.max_final_latency:g} s" if late else ""), file=e)
    p(f"  client schedule: {len(slipped)} session(s) slipped > 80 ms; max chunk lateness "
      f"{ms(sm['client_schedule']['max_lateness_s'])} ms; event loop lag p99 {ms(lag.get('p99'))} / "
      f"max {ms(lag.get('max'))} ms", file=e)
    p(f"  transcripts: {len(texts)} distinct among {len(completed)} done"
      + (f"; done text != deltas in sessions {mismatched[:10]}" if mismatched else ""), file=e)
    if server:
        lw = server["live_wait_s"]
        p(f"  server: live wait (80 ms of audio -> its steps done) p50 {ms(lw['p50'])} / p90 {ms(lw['p90'])} / "
          f"p99 {ms(lw['p99'])} ms (n={lw['count']}, bucket estimates); min margin "
          f"{ms(server['realtime_margin_s_min'])} ms; rows/round {server['mean_rows_per_round'] or 0:.1f}; "
          f"rejected {server['sessions_rejected']}", file=e)
    shown = 0
    for s in sessions:
        if (s.failure or s.disconnect or s.errors or not s.completed) and shown < 10:
            shown += 1
            why = s.failure or (s.disconnect and f"disconnected {s.disconnect}") or \
                (s.errors and f"error {s.errors[0]}") or "no done"
            p(f"  session {s.index}: {why}", file=e)
    p(f"  result: {'OK' if ok else 'INTERRUPTED' if interrupted else 'FAILED'}", file=e)
    return doc, ok


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Real-time load on voxrt serve's realtime WebSocket (vLLM's dialect). See tools/load/README.md.")
    ap.add_argument("--url", default="ws://127.0.0.1:8000",
                    help="server URL; with no path, /v1/realtime (default ws://127.0.0.1:8000)")
    ap.add_argument("--audio", required=True, help="16 kHz mono 16-bit PCM WAV, looped to fill --seconds")
    ap.add_argument("--sessions", "-n", type=int, default=1, help="concurrent sessions (default 1)")
    ap.add_argument("--seconds", type=float, default=30.0, help="audio per session, seconds (default 30)")
    ap.add_argument("--ramp-seconds", type=float, default=5.0,
                    help="session starts spread evenly over this (default 5)")
    ap.add_argument("--delay-ms", type=int, default=480, help="the session.update delay_ms (default 480)")
    ap.add_argument("--model", default="voxtral", help="the session.update model name (any is taken)")
    ap.add_argument("--api-key", default=os.environ.get("VOXRT_API_KEY"),
                    help="sent as Authorization: Bearer KEY (default $VOXRT_API_KEY)")
    ap.add_argument("--connect-timeout", type=float, default=30.0,
                    help="handshake and session.created, seconds (default 30)")
    ap.add_argument("--done-timeout", type=float, default=120.0,
                    help="final commit -> transcription.done, seconds (default 120)")
    ap.add_argument("--max-final-latency", type=float, default=None, metavar="S",
                    help="also fail (exit 1) if a session's final latency is over S seconds")
    ap.add_argument("--metrics-url", default=None,
                    help="the server's Prometheus endpoint (default: http(s)://HOST:PORT/metrics of --url)")
    ap.add_argument("--no-metrics", action="store_true", help="do not read the server's /metrics")
    ap.add_argument("--progress", type=float, default=5.0, help="progress line period on stderr, seconds (0: none)")
    ap.add_argument("--out", help="write the JSON report to this file")
    ap.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    ap.add_argument("--dry-run", action="store_true", help="check the arguments and the audio, connect nowhere")
    args = ap.parse_args(argv)
    if args.sessions < 1:
        ap.error("--sessions must be at least 1")
    if args.seconds <= 0 or args.ramp_seconds < 0:
        ap.error("--seconds must be > 0 and --ramp-seconds >= 0")
    u = urllib.parse.urlsplit(args.url)
    scheme = {"http": "ws", "https": "wss"}.get(u.scheme, u.scheme)
    if scheme not in ("ws", "wss") or not u.hostname:
        ap.error(f"--url: want ws://HOST:PORT[/path], got {args.url}")
    path = u.path if u.path not in ("", "/") else "/v1/realtime"
    args.ws_url = urllib.parse.urlunsplit((scheme, u.netloc, path, u.query, ""))
    if args.no_metrics:
        args.metrics_url = None
    elif args.metrics_url is None:
        args.metrics_url = urllib.parse.urlunsplit(
            ("https" if scheme == "wss" else "http", u.netloc, "/metrics", "", ""))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import resource  # many sessions need many descriptors
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = args.sessions + 64
        if soft != resource.RLIM_INFINITY and soft < want:
            new_soft = want if hard == resource.RLIM_INFINITY else min(hard, want)
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
    except (ImportError, ValueError, OSError):
        pass
    pcm = load_pcm16(args.audio)
    chunks = build_chunks(pcm, args.seconds)
    if args.dry_run:
        print(f"realtime_load: {args.audio}: {len(pcm) / 2 / SAMPLE_RATE:.2f} s, 16 kHz mono 16-bit; "
              f"{args.sessions} sessions x {len(chunks)} chunks of 80 ms: arguments OK", file=sys.stderr)
        return 0
    sessions, duration, wall0, lag, samples, mb, ma, interrupted = asyncio.run(run(args, chunks))
    doc, ok = report(args, sessions, duration, wall0, lag, samples, mb, ma, interrupted)
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
