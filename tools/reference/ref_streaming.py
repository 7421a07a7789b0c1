"""The transformers reference in STREAMING mode: golden fixtures of `generate()` fed chunk by chunk.

transformers runs Voxtral Realtime as a stream when `model.generate(input_features=...)` gets a Python
generator of per-chunk log-mel features: `_prepare_model_inputs` pulls the first chunk (prefilled
together with the prompt), `_update_model_kwargs_for_generation` pulls one more chunk after every
generated token, and generation ends when the generator is exhausted (`_stream_exhausted`). The
encoder keeps its conv "padding cache" and KV cache between chunks.

The chunking below is the one of transformers' own streaming example (docs/source/en/model_doc/
voxtral_realtime.md) with `VoxtralRealtimeProcessor(is_streaming=True)`, rebuilt without
mistral-common (the processor needs it only for the prompt and the left pad, docs/model.md §9):

- first chunk: `audio[:F]` with F = `num_samples_first_audio_chunk`
  = ((n_delay + 1) * 8 - 1) * 160 + 400 // 2 samples, left-padded with 32 * 1280 zeros
  (mistral-common's get_padding_audio) and featurised with center=True -> prompt_len * 8 mel frames
  (torch.stft gives 1 + len // 160 frames, the extractor drops the last one);
- chunk k >= 1: `audio[s : s + 1680]` with s = ((n_delay + 1) * 8 + 8 * (k - 1)) * 160 - 200
  (`num_samples_per_audio_chunk` = 8 * 160 + 400), featurised with center=False -> 9 STFT frames,
  8 kept; consecutive chunks start 1280 samples apart and overlap by 400 samples;
- chunks are taken while s + 1680 < len(audio) (strict, as in the example).

In the left-padded stream, chunk k >= 1 covers decoder position p = prompt_len - 1 + k and needs the
samples [1280 p - 200, 1280 (p + 1) + 200): mel frame 8p + j is centred on sample 160 (8p + j) exactly
as offline, so the streamed features are the offline ones (docs/model.md §2, §10).

Flush: the stream is the audio followed by the offline right pad (zeros to a multiple of 1280, then
(n_delay + 1 + 10) * 1280). With the strict rule the last offline position (n_positions - 1, the
one whose mel frames need centre reflect padding offline, and whose adapter vector offline
generate() never uses) is not streamed, so the flushed stream decodes exactly the offline number of
steps, n_positions - prompt_len. Without the flush ("tokens_no_flush", what the transformers example
does as written: its padded `xaudio` is never used) the last words are lost.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import torch

from ref_golden import (
    HOP,
    LEFT_PAD_TOKENS,
    MEL_FRAMES_PER_TOKEN,
    OFFLINE_BUFFER_TOKENS,
    SAMPLE_RATE,
    SAMPLES_PER_TOKEN,
    build_prompt,
    compute_mel,
    delay_tokens,
    free_running_tokens,
    generated_after_prompt,
    pad_offline,
    read_wav_mono16k,
    transformers_version,
)
from ref_presets import EOS_ID

WIN = 400                                                 # STFT window = n_fft
SAMPLES_PER_CHUNK = MEL_FRAMES_PER_TOKEN * HOP + WIN      # num_samples_per_audio_chunk = 1680


def first_chunk_samples(n_delay: int) -> int:
    """VoxtralRealtimeProcessor.num_samples_first_audio_chunk (samples of real audio, before the left pad)."""
    return ((n_delay + 1) * MEL_FRAMES_PER_TOKEN - 1) * HOP + WIN // 2


def right_pad(n_samples: int, n_delay: int) -> np.ndarray:
    """The offline right pad (docs/model.md §9): zeros to a multiple of 1280, then
    (n_delay + 1 + 10) * 1280."""
    align = (-n_samples) % SAMPLES_PER_TOKEN
    return np.zeros(align + (n_delay + 1 + OFFLINE_BUFFER_TOKENS) * SAMPLES_PER_TOKEN, dtype=np.float32)


def feature_extractor():
    from transformers.models.voxtral_realtime.feature_extraction_voxtral_realtime import (
        VoxtralRealtimeFeatureExtractor,
    )

    return VoxtralRealtimeFeatureExtractor()


# How the chunks were featurised: "feature_extractor" (VoxtralRealtimeFeatureExtractor(center=...), as
# the processor does) unless its frame count came out wrong, then "replica" (its code, written out).
FEATURISER = {"used": set()}


def expected_frames(n_samples: int, center: bool) -> int:
    """torch.stft frames minus the dropped last one."""
    return n_samples // HOP if center else (n_samples - WIN) // HOP


def featurise(fe, samples: np.ndarray, center: bool) -> torch.Tensor:
    """What VoxtralRealtimeProcessor.__call__ does with one chunk: the feature extractor on a batch of
    one, with the processor's audio defaults (padding=True, truncation=False). [1, 128, frames]."""
    out = fe([samples], sampling_rate=SAMPLE_RATE, padding=True, truncation=False, center=center,
             return_tensors="pt")
    feats = out.input_features.to(torch.float32)
    if feats.dim() == 3 and feats.shape[1] == 128 and feats.shape[-1] == expected_frames(samples.size, center):
        FEATURISER["used"].add("feature_extractor")
        return feats
    print(f"warning: the feature extractor gave {tuple(feats.shape)} for {samples.size} samples "
          f"(center={center}); using the replica of its code")
    FEATURISER["used"].add("replica")
    return featurise_replica(fe, samples, center)


def featurise_replica(fe, samples: np.ndarray, center: bool) -> torch.Tensor:
    """VoxtralRealtimeFeatureExtractor._torch_extract_fbank_features (5.x), written out: the fallback."""
    wave = torch.tensor(np.asarray(samples, dtype=np.float32))[None]
    stft = torch.stft(wave, WIN, HOP, window=torch.hann_window(WIN), return_complex=True, center=center)
    magnitudes = stft[..., :-1].abs() ** 2
    mel = torch.from_numpy(np.asarray(fe.mel_filters)).to(torch.float32).T @ magnitudes
    log_spec = torch.clamp(mel, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, torch.tensor(1.5 - 8.0))
    return ((log_spec + 4.0) / 4.0).to(torch.float32)


def stream_chunks(audio: np.ndarray, n_delay: int, fe):
    """Splits `audio` (no left pad; right pad already appended if flushing) as transformers' streaming
    example does. Returns (features per chunk [1,128,f], bounds [(start, end)] in samples of the
    LEFT-PADDED stream). Raises ValueError when the audio is shorter than the first chunk."""
    left = np.zeros(LEFT_PAD_TOKENS * SAMPLES_PER_TOKEN, dtype=np.float32)
    n_left = left.size
    first_n = first_chunk_samples(n_delay)
    if audio.size < first_n:
        raise ValueError(f"{audio.size} samples, fewer than the first chunk ({first_n})")
    prompt_len = len(build_prompt(n_delay))
    feats = [featurise(fe, np.concatenate([left, audio[:first_n]]), center=True)]
    bounds = [(0, n_left + first_n)]
    if feats[0].shape[-1] != prompt_len * MEL_FRAMES_PER_TOKEN:
        raise RuntimeError(f"first chunk gave {feats[0].shape[-1]} mel frames, expected "
                           f"{prompt_len * MEL_FRAMES_PER_TOKEN} (prompt_len * 8)")
    mel_frame_idx = (n_delay + 1) * MEL_FRAMES_PER_TOKEN     # num_mel_frames_first_audio_chunk
    start = mel_frame_idx * HOP - WIN // 2
    while start + SAMPLES_PER_CHUNK < audio.size:
        f = featurise(fe, audio[start:start + SAMPLES_PER_CHUNK], center=False)
        if f.shape[-1] != MEL_FRAMES_PER_TOKEN:
            raise RuntimeError(f"a later chunk gave {f.shape[-1]} mel frames, expected {MEL_FRAMES_PER_TOKEN}")
        feats.append(f)
        bounds.append((n_left + start, n_left + start + SAMPLES_PER_CHUNK))
        mel_frame_idx += MEL_FRAMES_PER_TOKEN
        start = mel_frame_idx * HOP - WIN // 2
    return feats, bounds


@torch.no_grad()
def stream_generate(model, feats, prompt: list[int], n_delay: int) -> tuple[list[int], int]:
    """transformers' streaming decode: generate() with a generator of chunk features.
    Returns (tokens after the prompt, number of chunks the generator handed out)."""
    device = next(model.parameters()).device
    pulled = [0]

    def gen():
        for f in feats:
            pulled[0] += 1
            yield f.to(device)

    model._stream_exhausted = False  # the flag lives on the model; never let a previous run leak into this one
    input_ids = torch.tensor([prompt], dtype=torch.long, device=device)
    out = model.generate(
        input_ids=input_ids,
        input_features=gen(),
        num_delay_tokens=n_delay,
        do_sample=False,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
        return_dict_in_generate=True,
    )
    return generated_after_prompt(out, prompt, "streaming generate()"), pulled[0]


@torch.no_grad()
def stream_manual(model, feats, prompt: list[int], n_delay: int) -> list[int]:
    """The same stream with plain forwards and explicit caches (decoder KV, encoder KV, conv padding
    cache): a cross-check of generate()'s streaming path, and its fallback."""
    device = next(model.parameters()).device
    out = model(input_ids=torch.tensor([prompt], device=device), input_features=feats[0].to(device),
                num_delay_tokens=n_delay, use_cache=True)
    tokens = [int(out.logits[0, -1].argmax())]
    for f in feats[1:]:
        if tokens[-1] == EOS_ID:
            break
        out = model(input_ids=torch.tensor([[tokens[-1]]], device=device), input_features=f.to(device),
                    past_key_values=out.past_key_values, encoder_past_key_values=out.encoder_past_key_values,
                    padding_cache=out.padding_cache, num_delay_tokens=n_delay, use_cache=True)
        tokens.append(int(out.logits[0, -1].argmax()))
    return tokens


def run_stream(model, feats, prompt, n_delay) -> dict:
    """generate()-based stream, cross-checked against the manual loop. Falls back to the manual loop
    (loudly, recorded) when generate() fails."""
    result = {"decoder": "generate", "manual_agrees": "n/a", "generate_error": ""}
    manual = None
    try:
        manual = stream_manual(model, feats, prompt, n_delay)
    except Exception as exc:  # noqa: BLE001 - API drift: record, carry on with generate()
        print(f"warning: manual streaming loop failed ({type(exc).__name__}: {exc})")
        result["manual_agrees"] = f"failed: {type(exc).__name__}"
    try:
        tokens, pulled = stream_generate(model, feats, prompt, n_delay)
    except Exception as exc:  # noqa: BLE001
        print(f"warning: streaming generate() failed ({type(exc).__name__}: {exc}); using the manual loop")
        if manual is None:
            raise
        result.update(decoder="manual", generate_error=f"{type(exc).__name__}: {exc}"[:300])
        tokens, pulled = manual, len(feats)
    if manual is not None and result["decoder"] == "generate":
        result["manual_agrees"] = "yes" if manual == tokens else f"NO (first diff at step {first_diff(manual, tokens)})"
    result.update(tokens=tokens, pulled=pulled)
    return result


def first_diff(a: list[int], b: list[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else -1


def mel_diff(stream_mel: torch.Tensor, offline_mel: torch.Tensor) -> float:
    """max |stream - offline| over the streamed frames ([1,128,Ts] against [1,128,T], Ts <= T)."""
    ts = stream_mel.shape[-1]
    if ts > offline_mel.shape[-1]:
        return float("inf")
    return float((stream_mel - offline_mel[..., :ts]).abs().max())


def streaming_case(model, wav: Path, delay_ms: int, omit: set[str], golden: Path | None = None):
    """Returns (tensors, metadata, stats) for one WAV at one delay."""
    device = next(model.parameters()).device
    n_delay = delay_tokens(delay_ms)
    prompt = build_prompt(n_delay)
    audio = read_wav_mono16k(wav)
    fe = feature_extractor()

    # Offline reference on the same audio (as `golden` does).
    padded = pad_offline(audio, n_delay)
    offline_mel = compute_mel(padded)
    n_positions = offline_mel.shape[-1] // MEL_FRAMES_PER_TOKEN
    offline_tokens, offline_decoder = free_running_tokens(model, offline_mel.to(device), prompt, n_delay, n_positions)

    # Streaming with the flush (audio + offline right pad) and without.
    feats, bounds = stream_chunks(np.concatenate([audio, right_pad(audio.size, n_delay)]), n_delay, fe)
    stream_mel = torch.cat(feats, dim=-1)
    flushed = run_stream(model, feats, prompt, n_delay)
    tokens = flushed["tokens"]
    try:
        feats_nf, bounds_nf = stream_chunks(audio, n_delay, fe)
        no_flush = run_stream(model, feats_nf, prompt, n_delay)
        tokens_nf = no_flush["tokens"]
        mel_nf = torch.cat(feats_nf, dim=-1)
        no_flush_note = ""
    except ValueError as exc:
        feats_nf, bounds_nf, no_flush, tokens_nf, mel_nf = [], [], None, [], None
        no_flush_note = str(exc)

    golden_tokens = None
    if golden is not None and golden.is_file():
        from safetensors.torch import load_file

        golden_tokens = load_file(str(golden)).get("tokens")
        golden_tokens = golden_tokens.tolist() if golden_tokens is not None else None

    eq = tokens == offline_tokens
    stats = {
        "audio": wav.name,
        "delay_ms": delay_ms,
        "n_delay": n_delay,
        "prompt_len": len(prompt),
        "n_samples": int(audio.size),
        "n_positions_offline": int(n_positions),
        "first_chunk_samples": first_chunk_samples(n_delay),
        "first_chunk_mel_frames": int(feats[0].shape[-1]),
        "n_chunks": len(feats),
        "n_positions_streamed": len(prompt) + len(feats) - 1,
        "steps": len(tokens),
        "offline_steps": len(offline_tokens),
        "tokens_equal_offline": eq,
        "first_diff_vs_offline": -1 if eq else first_diff(tokens, offline_tokens),
        "stream_mel_max_abs_diff": mel_diff(stream_mel, offline_mel),
        "stream_mel_frames": int(stream_mel.shape[-1]),
        "decoder": flushed["decoder"],
        "manual_loop_agrees": flushed["manual_agrees"],
        "generate_error": flushed["generate_error"],
        "offline_decoder": offline_decoder,
        "offline_equals_committed_golden": ("n/a" if golden_tokens is None else golden_tokens == offline_tokens),
        "no_flush_n_chunks": len(feats_nf),
        "no_flush_steps": len(tokens_nf),
        "no_flush_is_prefix_of_flushed": tokens_nf == tokens[: len(tokens_nf)],
        "no_flush_mel_max_abs_diff": (mel_diff(mel_nf, offline_mel) if mel_nf is not None else None),
        "no_flush_manual_loop_agrees": (no_flush["manual_agrees"] if no_flush else "n/a"),
        "no_flush_note": no_flush_note,
        "eos_in_stream": EOS_ID in tokens,
        "generator_chunks_pulled": flushed["pulled"],
        "featuriser": ",".join(sorted(FEATURISER["used"])),
        "omitted": sorted(omit),
    }

    tensors = {
        "audio": torch.from_numpy(audio.copy()),
        "prompt": torch.tensor(prompt),
        "tokens": torch.tensor(tokens),
        "tokens_no_flush": torch.tensor(tokens_nf, dtype=torch.int32),
        "offline_tokens": torch.tensor(offline_tokens),
        "chunk_bounds": torch.tensor(bounds),
        "chunk_bounds_no_flush": torch.tensor(bounds_nf, dtype=torch.int32).reshape(-1, 2),
        "stream_mel": stream_mel[0].transpose(0, 1),
    }
    int_names = {"prompt", "tokens", "tokens_no_flush", "offline_tokens", "chunk_bounds", "chunk_bounds_no_flush"}
    tensors = {
        name: t.detach().to("cpu", torch.int32 if name in int_names else torch.float32).contiguous()
        for name, t in tensors.items() if name not in omit
    }
    chunking = (f"first chunk: {LEFT_PAD_TOKENS}*{SAMPLES_PER_TOKEN} zeros + audio[:{first_chunk_samples(n_delay)}], "
                f"center=True, {feats[0].shape[-1]} frames; then audio[s:s+{SAMPLES_PER_CHUNK}] with "
                f"s=({(n_delay + 1) * MEL_FRAMES_PER_TOKEN}+8k)*{HOP}-{WIN // 2} (k=0,1,...), center=False, "
                f"8 frames, hop {SAMPLES_PER_TOKEN}, overlap {SAMPLES_PER_CHUNK - SAMPLES_PER_TOKEN}, "
                f"while s+{SAMPLES_PER_CHUNK} < len")
    metadata = {
        "delay_ms": delay_ms,
        "n_delay": n_delay,
        "prompt_len": len(prompt),
        "n_samples": int(audio.size),
        "n_positions_offline": int(n_positions),
        "n_chunks": len(feats),
        "n_chunks_no_flush": len(feats_nf),
        "steps": len(tokens),
        "steps_no_flush": len(tokens_nf),
        "right_pad_appended": 1,
        "right_pad_samples": int(right_pad(audio.size, n_delay).size),
        "first_chunk_samples": first_chunk_samples(n_delay),
        "chunk_samples": SAMPLES_PER_CHUNK,
        "chunk_hop_samples": SAMPLES_PER_TOKEN,
        "chunking": chunking,
        "tokens_equal_offline": int(eq),
        "stream_mel_max_abs_diff": f"{stats['stream_mel_max_abs_diff']:.6g}",
        "decoder": flushed["decoder"],
        "manual_loop_agrees": flushed["manual_agrees"],
        "featuriser": stats["featuriser"],
        "audio_file": wav.name,
        "transformers_version": transformers_version(),
        "torch_version": torch.__version__,
        "device": str(device),
    }
    return tensors, {k: str(v) for k, v in metadata.items()}, stats


def summary_line(s: dict) -> str:
    eq = "yes" if s["tokens_equal_offline"] else f"NO (first diff at step {s['first_diff_vs_offline']})"
    return (f"{s['audio']}@{s['delay_ms']}ms: chunks={s['n_chunks']} steps={s['steps']} (offline {s['offline_steps']}) "
            f"tokens==offline: {eq}; stream_mel vs offline max|d|={s['stream_mel_max_abs_diff']:.3g}; "
            f"no_flush: {s['no_flush_steps']} steps, prefix={s['no_flush_is_prefix_of_flushed']}; "
            f"manual loop agrees: {s['manual_loop_agrees']} [{s['decoder']}]"
            f"; offline==committed golden: {s['offline_equals_committed_golden']}")


def dump_reference_source(path: Path) -> None:
    """The installed transformers' streaming-related code, for the record (which version ran)."""
    from transformers import VoxtralRealtimeForConditionalGeneration as Model

    parts = [f"transformers {transformers_version()}, torch {torch.__version__}\n"]
    for name in ("_prepare_model_inputs", "_update_model_kwargs_for_generation", "_has_unfinished_sequences",
                 "_prepare_generation_config", "prepare_inputs_for_generation"):
        fn = getattr(Model, name, None)
        try:
            parts.append(f"# ---- Model.{name}\n{inspect.getsource(fn)}")
        except Exception as exc:  # noqa: BLE001
            parts.append(f"# ---- Model.{name}: {exc}\n")
    try:
        import transformers.models.voxtral_realtime.processing_voxtral_realtime as proc

        parts.append(f"# ---- {proc.__file__}\n{inspect.getsource(proc)}")
    except Exception as exc:  # noqa: BLE001
        parts.append(f"# ---- processing_voxtral_realtime: {exc}\n")
    path.write_text("\n".join(parts), encoding="utf-8")
