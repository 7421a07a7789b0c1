#!/usr/bin/env python3
"""Self-test of realtime_load.py against a scripted stand-in server (standard library only):
the WebSocket client's framing (masking, 7/16/64-bit lengths, fragmentation, ping, close) and
the driver's accounting (done, errors, disconnects, exit status). No voxrt needed:

    python3 tools/load/test_realtime_load.py
"""

import asyncio
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import unittest
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realtime_load as rl  # noqa: E402

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def server_frame(opcode, payload, fin=True):
    """An unmasked server frame."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


async def read_client_frame(reader):
    b0, b1 = await reader.readexactly(2)
    assert b1 & 0x80, "client frame not masked"
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    key = await reader.readexactly(4)
    data = await reader.readexactly(n)
    return bool(b0 & 0x80), b0 & 0x0F, bytes(b ^ key[i % 4] for i, b in enumerate(data))


class FakeServer:
    """vLLM's dialect, scripted. mode: ok | refuse | close | drop | badaccept."""

    def __init__(self, mode="ok"):
        self.mode = mode
        self.pongs = []
        self.closes = []
        self.appended = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _client(self, reader, writer):
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            key = [line.split(":", 1)[1].strip() for line in head.split("\r\n")
                   if line.lower().startswith("sec-websocket-key:")][0]
            accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
            if self.mode == "badaccept":
                accept = base64.b64encode(b"x" * 20).decode()
            writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
            # session.created in three fragments, a ping between them (64-bit length on the second).
            created = json.dumps({"type": "session.created", "id": "sess-x", "pad": "p" * 70000}).encode()
            writer.write(server_frame(0x1, created[:10], fin=False))
            writer.write(server_frame(0x9, b"hi"))
            writer.write(server_frame(0x0, created[10:-5], fin=False))
            writer.write(server_frame(0x0, created[-5:], fin=True))
            await writer.drain()
            deltas, chunks, text = [], 0, []
            while True:
                fin, op, data = await read_client_frame(reader)
                if op == 0xA:
                    self.pongs.append(data)
                    continue
                if op == 0x8:
                    self.closes.append(data)
                    writer.write(server_frame(0x8, data[:2]))
                    await writer.drain()
                    break
                ev = json.loads(data)
                t = ev["type"]
                if t == "input_audio_buffer.append":
                    pcm = base64.b64decode(ev["audio"])
                    self.appended.append(len(pcm))
                    chunks += 1
                    if self.mode == "refuse" and chunks == 2:
                        writer.write(server_frame(0x1, json.dumps(
                            {"type": "error", "error": "engine overloaded", "code": "session_refused"}).encode()))
                    if self.mode == "close" and chunks == 3:
                        writer.write(server_frame(0x8, struct.pack("!H", 1011) + b"boom"))
                        await writer.drain()
                        await reader.read()  # the client's echo, then EOF
                        break
                    if self.mode == "drop" and chunks == 3:
                        break
                    if chunks % 4 == 0:
                        d = f" w{chunks}" + ("x" * 300 if chunks == 4 else "")  # a 16-bit length
                        text.append(d)
                        ev = {"type": "transcription.delta", "delta": d}
                        writer.write(server_frame(0x1, json.dumps(ev).encode()))
                elif t == "input_audio_buffer.commit" and ev.get("final"):
                    ev = {"type": "transcription.delta", "delta": " end"}
                    writer.write(server_frame(0x1, json.dumps(ev).encode()))
                    text.append(" end")
                    writer.write(server_frame(0x1, json.dumps(
                        {"type": "transcription.done", "text": "".join(text).strip(),
                         "usage": {"completion_tokens": chunks}}).encode()))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def make_wav(path, rate=16000, channels=1, seconds=0.5):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(os.urandom(int(rate * seconds) * 2 * channels))


class Framing(unittest.TestCase):
    def test_client_frames_masked_all_lengths(self):
        for n in (0, 1, 125, 126, 65535, 65536, 100000):
            payload = os.urandom(n)
            f = rl.encode_frame(rl.OP_BINARY, payload)
            self.assertEqual(f[0], 0x80 | rl.OP_BINARY)
            self.assertTrue(f[1] & 0x80)
            ln = f[1] & 0x7F
            off = 2
            if ln == 126:
                (ln,) = struct.unpack("!H", f[2:4])
                off = 4
            elif ln == 127:
                (ln,) = struct.unpack("!Q", f[2:10])
                off = 10
            self.assertEqual(ln, n)
            key = f[off:off + 4]
            body = f[off + 4:]
            self.assertEqual(bytes(b ^ key[i % 4] for i, b in enumerate(body)), payload)

    def test_histogram_quantile(self):
        b = [(0.01, 50.0), (0.02, 100.0), (float("inf"), 100.0)]
        self.assertAlmostEqual(rl.histogram_quantile(b, 0.5), 0.01)
        self.assertAlmostEqual(rl.histogram_quantile(b, 0.75), 0.015)


class Driver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.wav = os.path.join(cls.tmp, "a.wav")
        make_wav(cls.wav)

    def drive(self, server, *extra, audio=None):
        out = os.path.join(self.tmp, "out.json")
        cmd = [sys.executable, os.path.join(HERE, "realtime_load.py"), "--url", f"ws://127.0.0.1:{server.port}",
               "--audio", audio or self.wav, "--sessions", "3", "--seconds", "1", "--ramp-seconds", "0.2",
               "--no-metrics", "--progress", "0", "--done-timeout", "5", "--out", out, *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        doc = None
        if os.path.exists(out):
            with open(out) as f:
                doc = json.load(f)
            os.remove(out)
        return p, doc

    def test_ok(self):
        s = FakeServer("ok")
        try:
            p, doc = self.drive(s)
        finally:
            s.stop()
        self.assertEqual(p.returncode, 0, p.stderr)
        sm = doc["summary"]
        self.assertEqual(sm["sessions_completed"], 3)
        self.assertEqual(sm["errors"], 0)
        self.assertEqual(sm["done_text_mismatches_deltas"], [])
        self.assertEqual(doc["sessions"][0]["chunks_sent"], 12)  # 1 s / 80 ms, rounded
        self.assertTrue(all(n == rl.CHUNK_BYTES for n in s.appended))
        self.assertEqual(len(s.appended), 36)  # the 0.5 s file looped
        self.assertEqual(s.pongs, [b"hi"] * 3)
        self.assertEqual([c[:2] for c in s.closes], [struct.pack("!H", 1000)] * 3)
        self.assertEqual(sm["final_latency_s"]["count"], 3)

    def test_refused(self):
        s = FakeServer("refuse")
        try:
            p, doc = self.drive(s)
        finally:
            s.stop()
        self.assertEqual(p.returncode, 1)
        self.assertEqual(doc["summary"]["errors_by_code"], {"session_refused": 3})
        self.assertEqual(doc["summary"]["sessions_completed"], 0)
        self.assertLess(doc["duration_s"], 4)  # did not wait for a done that cannot come

    def test_server_close_and_drop(self):
        for mode, code in (("close", 1011), ("drop", None)):
            s = FakeServer(mode)
            try:
                p, doc = self.drive(s)
            finally:
                s.stop()
            self.assertEqual(p.returncode, 1, mode)
            self.assertEqual(doc["summary"]["disconnects"], 3, mode)
            self.assertEqual(doc["sessions"][0]["disconnect"]["code"], code, mode)

    def test_bad_accept(self):
        s = FakeServer("badaccept")
        try:
            p, doc = self.drive(s)
        finally:
            s.stop()
        self.assertEqual(p.returncode, 1)
        self.assertIn("Sec-WebSocket-Accept", doc["sessions"][0]["failure"])

    def test_wrong_format(self):
        bad = os.path.join(self.tmp, "stereo.wav")
        make_wav(bad, rate=44100, channels=2)
        p = subprocess.run([sys.executable, os.path.join(HERE, "realtime_load.py"), "--audio", bad],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("16 kHz mono 16-bit", p.stderr)


if __name__ == "__main__":
    unittest.main()
