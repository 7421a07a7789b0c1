"""A synthetic tekken.json in the real file format (docs/model.md §7, §8), for random-weight models.

Layout of the ids (as in the real tokenizer): ids 0..999 are special tokens (control), regular
id = rank + 1000, ranks 0..255 are the single raw bytes 0x00..0xFF. The merged tokens after the
bytes are English words and, on purpose, UTF-8 characters split across two tokens, so that
decoders must join bytes across tokens before decoding UTF-8.

Like the real file, the vocab list holds a few more ranks than the model uses
(num_vocab_tokens > default_vocab_size - default_num_special_tokens): a loader must keep only
the first default_vocab_size - default_num_special_tokens ranks.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from ref_presets import NUM_SPECIAL_TOKENS

# A plausible tekken pre-tokenizer pattern (only stored; decoding does not use it).
PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Named special tokens by rank; every other rank below 1000 is "<SPECIAL_N>".
NAMED_SPECIALS = {
    0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]", 5: "[AVAILABLE_TOOLS]",
    6: "[/AVAILABLE_TOOLS]", 7: "[TOOL_RESULTS]", 8: "[/TOOL_RESULTS]", 9: "[TOOL_CALLS]",
    10: "[IMG]", 11: "<pad>", 12: "[IMG_BREAK]", 13: "[IMG_END]", 14: "[PREFIX]",
    15: "[MIDDLE]", 16: "[SUFFIX]", 17: "[SYSTEM_PROMPT]", 18: "[/SYSTEM_PROMPT]",
    19: "[TOOL_CONTENT]", 24: "[AUDIO]", 25: "[BEGIN_AUDIO]", 26: "[TRANSCRIBE]",
    32: "[STREAMING_PAD]", 33: "[STREAMING_WORD]",
}

WORDS = (
    "the quick brown fox jumps over lazy dog hello world this is an odd length clip speech "
    "recognition turns sound into text engine listens to audio in small steps of eighty "
    "milliseconds and it writes words little later after has heard enough long recordings are "
    "harder because encoder only looks back fifteen seconds paragraph on purpose so that window "
    "exceeded before end thank you for listening test please transcribe everything until very "
    "last syllable and so my fellow americans ask not what your country can do for"
).split()

# Whole multi-byte characters and deliberate splits of one character over two tokens.
MULTIBYTE_TOKENS = [
    "é".encode(), " café".encode(), "ü".encode(), " über".encode(), "—".encode(),
    "日本".encode(), "語".encode(), "🎤".encode(),
    b" caf\xc3", b"\xa9s",              # "é" (c3 a9) split 1+1 inside words: " café" + "s"
    b"\xe8\xaa", b"\x9e ",              # "語" (e8 aa 9e) split 2+1
    b"\xe6\x97", b"\xa5\xe6\x9c\xac",   # "日" (e6 97 a5) split 2+1, then "本" whole in the same token
    b"\xf0\x9f", b"\x8e\xa4",           # "🎤" (f0 9f 8e a4) split 2+2
    b"\xe2\x80",                        # first two bytes of "—"; its last byte 0x94 is a raw-byte rank
]

EXTRA_UNUSED_RANKS = 16  # present in the file beyond the model vocab, as in the real tekken.json


def byte_token_str(b: int) -> str | None:
    """Printable ASCII bytes show as the character; others have no string form."""
    return chr(b) if 32 <= b < 127 else None


def token_str(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None  # a token holding part of a character


def merged_tokens(count: int) -> list[bytes]:
    """`count` distinct multi-byte tokens: words, UTF-8 pieces, then deterministic fillers."""
    candidates: list[bytes] = []
    for word in WORDS:
        candidates += [(" " + word).encode(), word.encode(), (" " + word.capitalize()).encode()]
    candidates += MULTIBYTE_TOKENS
    candidates += [b", ", b". ", b"'s", b" -", b"ing", b"ed", b"er", b"th", b" a", b" I"]
    seen: set[bytes] = set()
    out: list[bytes] = []
    for tok in candidates:
        if len(tok) >= 2 and tok not in seen:
            seen.add(tok)
            out.append(tok)
    n = 0
    while len(out) < count:
        tok = f" w{n}".encode()
        n += 1
        if tok not in seen:
            seen.add(tok)
            out.append(tok)
    return out[:count]


def build_tekken(vocab_size: int) -> dict:
    n_regular = vocab_size - NUM_SPECIAL_TOKENS
    if n_regular < 256 + len(MULTIBYTE_TOKENS):
        raise SystemExit(f"error: vocab {vocab_size} too small for a tekken vocab")
    all_bytes = [bytes([b]) for b in range(256)] + merged_tokens(n_regular + EXTRA_UNUSED_RANKS - 256)
    vocab = []
    for rank, raw in enumerate(all_bytes):
        text = byte_token_str(raw[0]) if rank < 256 else token_str(raw)
        vocab.append({"rank": rank, "token_bytes": base64.b64encode(raw).decode("ascii"), "token_str": text})
    specials = [
        {"rank": r, "token_str": NAMED_SPECIALS.get(r, f"<SPECIAL_{r}>"), "is_control": True}
        for r in range(NUM_SPECIAL_TOKENS)
    ]
    return {
        "config": {
            "pattern": PATTERN,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": vocab_size,
            "default_num_special_tokens": NUM_SPECIAL_TOKENS,
            "version": "v13",
        },
        "vocab": vocab,
        "special_tokens": specials,
        "audio": {
            "sampling_rate": 16000,
            "frame_rate": 12.5,
            "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400},
            "chunk_length_s": None,
            "transcription_format": "streaming",
            "transcription_delay_ms": 480,
            "streaming_look_ahead_ms": 2.5,
            "streaming_look_back_ms": 52.5,
            "streaming_n_left_pad_tokens": 32,
        },
    }


def write_tekken(path: Path, vocab_size: int) -> None:
    data = build_tekken(vocab_size)
    check_tekken(data, vocab_size)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


def check_tekken(data: dict, vocab_size: int) -> None:
    """Sanity checks a C++ loader would also rely on."""
    vocab = data["vocab"]
    used = vocab[: vocab_size - NUM_SPECIAL_TOKENS]
    raws = [base64.b64decode(v["token_bytes"]) for v in vocab]
    assert [v["rank"] for v in vocab] == list(range(len(vocab))), "ranks must be 0..n-1"
    assert len(set(raws)) == len(raws), "token bytes must be unique"
    assert all(raws[b] == bytes([b]) for b in range(256)), "ranks 0..255 must be the raw bytes"
    assert len(used) == vocab_size - NUM_SPECIAL_TOKENS
    names = {s["token_str"]: s["rank"] for s in data["special_tokens"]}
    assert names["<s>"] == 1 and names["</s>"] == 2
    assert names["[STREAMING_PAD]"] == 32 and names["[STREAMING_WORD]"] == 33
