#!/usr/bin/env python3
"""Writes the seed corpora of the checkpoint, tokenizer and audio fuzz targets under
tests/fuzz/corpus/ (safetensors/, config/, tekken/, audio/). The committed files are its output; run
it again only to change the seeds: python3 tests/fuzz/make_corpus.py

The checkpoint and tokenizer seeds are the tiny model's real files (tests/data/tiny) cut down to a
few tensors and tokens, so that each stays a few KB (the fuzzers' -max_len). The audio seeds are a
fraction of a second of a tone in every container and codec the uploads may use, written by the
installed libsndfile itself (ctypes; no other tool needed): what it writes, it reads.
"""
import ctypes
import ctypes.util
import json
import math
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ROOT / "tests/data/tiny"
CORPUS = ROOT / "tests/fuzz/corpus"


def write(target, name, data):
    path = CORPUS / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"{path.relative_to(ROOT)}: {len(data)} bytes")


# ---- safetensors: u64 header length, JSON header, data section ------------------------------------

def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] -> a file, its header padded to 8 bytes as writers do."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def cut(path, names, shapes):
    """The named tensors of a real file, with their dtype, cut to small shapes (their first bytes)."""
    header, data = read_safetensors(path)
    size = {"BF16": 2, "F16": 2, "F32": 4}
    out = []
    for name, shape in zip(names, shapes):
        entry = header[name]
        begin = entry["data_offsets"][0]
        n = math.prod(shape) * size[entry["dtype"]]
        out.append((name, entry["dtype"], shape, data[begin:begin + n]))
    return out, header.get("__metadata__")


def safetensors_seeds():
    tensors, _ = cut(TINY / "mistral/consolidated.safetensors",
                     ["layers.0.attention.wq.weight", "layers.0.attention_norm.weight", "norm.weight"],
                     [[4, 8], [8], [8]])
    write("safetensors", "mistral-cut.safetensors", safetensors(tensors))
    tensors, meta = cut(TINY / "hf/model-00004-of-00004.safetensors",
                        ["multi_modal_projector.linear_2.weight"], [[4, 4]])
    write("safetensors", "hf-shard-cut.safetensors", safetensors(tensors, meta))
    # Every dtype, a scalar and an empty tensor, as the unit tests' round trip.
    every = [("t." + d, d, [2, 3], bytes(range(6 * s))) for d, s in
             [("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8), ("I64", 8), ("I32", 4), ("I16", 2),
              ("I8", 1), ("U8", 1), ("BOOL", 1)]]
    every += [("scalar", "F32", [], b"\x00\x00\x80\x3f"), ("empty", "BF16", [0, 5], b"")]
    write("safetensors", "every-dtype.safetensors", safetensors(every, {"format": "pt"}))
    write("safetensors", "no-tensors.safetensors", safetensors([]))


# ---- params.json, config.json, model.safetensors.index.json (first byte: which file) ---------------

def config_seeds():
    write("config", "params.json", b"\x00" + (TINY / "mistral/params.json").read_bytes())
    write("config", "config.json", b"\x01" + (TINY / "hf/config.json").read_bytes())
    # The full-size model's values (src/models/voxtral/config.h), in the tiny files' layout: larger numbers
    # for the fuzzer to grow toward the limits.
    params = json.loads((TINY / "mistral/params.json").read_text())
    params.update(dim=3072, n_layers=26, head_dim=128, hidden_dim=9216, n_heads=32, n_kv_heads=8,
                  vocab_size=131072, sliding_window=8192)
    params["multimodal"]["whisper_model_args"]["encoder_args"].update(
        dim=1280, n_layers=32, head_dim=64, hidden_dim=5120, n_heads=32, n_kv_heads=32, vocab_size=131072)
    write("config", "params-full-size.json", b"\x00" + json.dumps(params, indent=2).encode())
    config = json.loads((TINY / "hf/config.json").read_text())
    config["text_config"].update(hidden_size=3072, num_hidden_layers=26, head_dim=128, intermediate_size=9216,
                                 num_attention_heads=32, num_key_value_heads=8, vocab_size=131072,
                                 sliding_window=8192)
    config["audio_config"].update(hidden_size=1280, num_hidden_layers=32, head_dim=64, intermediate_size=5120,
                                  num_attention_heads=32, vocab_size=131072)
    write("config", "config-full-size.json", b"\x01" + json.dumps(config, indent=2).encode())
    index = json.loads((TINY / "hf/model.safetensors.index.json").read_text())
    names = sorted(index["weight_map"])[:4] + ["multi_modal_projector.linear_2.weight"]
    index["weight_map"] = {n: index["weight_map"][n] for n in names}
    write("config", "index.json", b"\x02" + json.dumps(index, indent=2).encode())
    write("config", "index-one-shard.json",
          b"\x02" + json.dumps({"weight_map": {"norm.weight": "model-00001-of-00001.safetensors"}}).encode())


# ---- tekken.json --------------------------------------------------------------------------------

def tekken_seeds():
    full = json.loads((TINY / "mistral/tekken.json").read_text())
    # The real layout: the config block, the first special tokens (<unk> <s> </s> ... [STREAMING_PAD]
    # [STREAMING_WORD]), the first byte tokens, the audio block.
    cut = {"config": dict(full["config"], num_vocab_tokens=32),
           "vocab": full["vocab"][:32],
           "special_tokens": full["special_tokens"][:34],
           "audio": full["audio"]}
    write("tekken", "tiny-cut.json", json.dumps(cut, separators=(",", ":")).encode())
    # Multi-byte characters split across tokens, ranks past default_vocab_size, no special list.
    pieces = ["aGk=", "IHfD", "qXQ=", "5Lg=", "rSE=", "/w==", "7aCA", "enp6"]  # "hi" " w\xC3" "\xA9t" ...
    small = {"config": {"default_vocab_size": 1006, "default_num_special_tokens": 1000},
             "vocab": [{"rank": r, "token_bytes": b, "token_str": None} for r, b in enumerate(pieces)],
             "audio": {"sampling_rate": 16000, "frame_rate": 12.5, "transcription_delay_ms": 480.0,
                       "streaming_look_ahead_ms": 2.5, "streaming_look_back_ms": None}}
    write("tekken", "split-characters.json", json.dumps(small).encode())


# ---- audio, written by libsndfile --------------------------------------------------------------

class SF_INFO(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


SF_FORMAT = {"WAV": 0x010000, "AIFF": 0x020000, "AU": 0x030000, "W64": 0x0B0000, "FLAC": 0x170000,
             "CAF": 0x180000, "OGG": 0x200000, "RF64": 0x220000, "MPEG": 0x230000}
SF_SUBTYPE = {"PCM_U8": 0x0005, "PCM_16": 0x0002, "PCM_24": 0x0003, "FLOAT": 0x0006, "ULAW": 0x0010,
              "IMA_ADPCM": 0x0012, "VORBIS": 0x0060, "OPUS": 0x0064, "MPEG_LAYER_III": 0x0082}
SFM_WRITE = 0x20


def audio_seed(name, major, subtype, rate, channels, seconds):
    sf = ctypes.CDLL(ctypes.util.find_library("sndfile"))
    sf.sf_open.restype = ctypes.c_void_p
    sf.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SF_INFO)]
    sf.sf_writef_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
    sf.sf_close.argtypes = [ctypes.c_void_p]
    frames = max(1, int(rate * seconds))
    # A 440 Hz tone, then a 3 kHz one on the second channel: the resampler's filter has work to do.
    samples = (ctypes.c_float * (frames * channels))(*[
        0.5 * math.sin(2 * math.pi * (440 if c == 0 else 3000) * i / rate)
        for i in range(frames) for c in range(channels)])
    path = CORPUS / "audio" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    info = SF_INFO(0, rate, channels, SF_FORMAT[major] | SF_SUBTYPE[subtype], 0, 0)
    handle = sf.sf_open(str(path).encode(), SFM_WRITE, ctypes.byref(info))
    if not handle:
        raise SystemExit(f"libsndfile cannot write {name} ({major} {subtype})")
    sf.sf_writef_float(handle, samples, frames)
    sf.sf_close(handle)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


def audio_seeds():
    audio_seed("pcm16-16k-mono.wav", "WAV", "PCM_16", 16000, 1, 0.05)
    audio_seed("float-44k-stereo.wav", "WAV", "FLOAT", 44100, 2, 0.005)
    audio_seed("u8-8k-mono.wav", "WAV", "PCM_U8", 8000, 1, 0.1)
    audio_seed("ulaw-8k-mono.wav", "WAV", "ULAW", 8000, 1, 0.1)
    audio_seed("ima-adpcm-22k-mono.wav", "WAV", "IMA_ADPCM", 22050, 1, 0.1)
    audio_seed("pcm24-48k-stereo.flac", "FLAC", "PCM_24", 48000, 2, 0.02)
    audio_seed("pcm16-16k-mono.flac", "FLAC", "PCM_16", 16000, 1, 0.1)
    audio_seed("vorbis-16k-mono.ogg", "OGG", "VORBIS", 16000, 1, 0.05)
    audio_seed("opus-48k-mono.opus", "OGG", "OPUS", 48000, 1, 0.05)
    audio_seed("layer3-16k-mono.mp3", "MPEG", "MPEG_LAYER_III", 16000, 1, 0.1)
    audio_seed("pcm16-11k-stereo.aiff", "AIFF", "PCM_16", 11025, 2, 0.02)
    audio_seed("pcm16-8k-mono.au", "AU", "PCM_16", 8000, 1, 0.05)
    audio_seed("float-16k-mono.caf", "CAF", "FLOAT", 16000, 1, 0.02)
    audio_seed("pcm16-16k-mono.w64", "W64", "PCM_16", 16000, 1, 0.02)
    audio_seed("pcm16-16k-mono.rf64", "RF64", "PCM_16", 16000, 1, 0.02)


if __name__ == "__main__":
    safetensors_seeds()
    config_seeds()
    tekken_seeds()
    audio_seeds()
