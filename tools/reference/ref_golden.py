"""Runs the transformers reference on one WAV file and records every stage (golden fixture).

The transcription protocol (docs/model.md §9) is built here by hand because mistral-common is not
installed on the GPU machine: left pad 32 x 1280 zero samples, right pad to a multiple of 1280
and then (n_delay + 1 + 10) x 1280 more zeros, prompt [BOS] + [STREAMING_PAD] x (32 + n_delay).
"""

from __future__ import annotations

import statistics
import wave
from pathlib import Path

import numpy as np
import torch

from ref_presets import BOS_ID, EOS_ID, STREAMING_PAD_ID

SAMPLE_RATE = 16000
HOP = 160                        # mel hop: 100 frames/s
SAMPLES_PER_TOKEN = 1280         # one decoder step = 80 ms = 8 mel frames = 4 encoder frames
MEL_FRAMES_PER_TOKEN = SAMPLES_PER_TOKEN // HOP
LEFT_PAD_TOKENS = 32             # tekken audio.streaming_n_left_pad_tokens
OFFLINE_BUFFER_TOKENS = 10       # mistral-common OFFLINE_STREAMING_BUFFER_TOKENS


# ---------------------------------------------------------------------------------------------
# Input and protocol
# ---------------------------------------------------------------------------------------------

def read_wav_mono16k(path: Path) -> np.ndarray:
    """16 kHz mono WAV -> float32. 16-bit PCM is scaled by 1/32768 (as soundfile and libsndfile do);
    32-bit float (what `voxrt decode-audio` writes: exactly the samples voxrt hears after decoding,
    down-mixing and resampling another format) is taken as it is."""
    try:
        with wave.open(str(path), "rb") as w:
            channels, rate, width, n = w.getnchannels(), w.getframerate(), w.getsampwidth(), w.getnframes()
            frames = w.readframes(n)
        if width == 2:
            audio = np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
        else:
            audio = None
    except (wave.Error, EOFError):
        audio, width = None, 4  # the stdlib reader refuses IEEE float WAVs: try scipy's below
        channels = rate = None
    if audio is None:
        try:
            from scipy.io import wavfile
            rate, data = wavfile.read(str(path))
        except Exception as exc:  # noqa: BLE001 - any reader failure is the same user error
            raise SystemExit(f"error: {path}: not a readable WAV file ({exc})") from exc
        channels = 1 if data.ndim == 1 else data.shape[1]
        if data.dtype != np.float32:
            raise SystemExit(f"error: {path}: {data.dtype} samples; the reference takes 16-bit PCM or 32-bit float")
        audio = data
    if channels != 1 or rate != SAMPLE_RATE:
        raise SystemExit(
            f"error: {path}: {rate} Hz, {channels} channel(s); the reference takes 16000 Hz mono only "
            f"(convert with `voxrt decode-audio IN OUT.wav`, which gives exactly what voxrt hears)")
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if audio.size == 0:
        raise SystemExit(f"error: {path}: no samples")
    return audio


def delay_tokens(delay_ms: int) -> int:
    """transcription delay in ms -> decoder steps of 80 ms (docs/model.md §9)."""
    if delay_ms % 80 != 0 or not 80 <= delay_ms <= 2400:
        raise SystemExit(f"error: --delay-ms {delay_ms}: must be a multiple of 80 in [80, 2400]")
    return delay_ms // 80


def pad_offline(audio: np.ndarray, n_delay: int) -> np.ndarray:
    left = np.zeros(LEFT_PAD_TOKENS * SAMPLES_PER_TOKEN, dtype=np.float32)
    align = (-audio.size) % SAMPLES_PER_TOKEN
    right = np.zeros(align + (n_delay + 1 + OFFLINE_BUFFER_TOKENS) * SAMPLES_PER_TOKEN, dtype=np.float32)
    return np.concatenate([left, audio.astype(np.float32), right])


def build_prompt(n_delay: int) -> list[int]:
    return [BOS_ID] + [STREAMING_PAD_ID] * (LEFT_PAD_TOKENS + n_delay)


def compute_mel(padded: np.ndarray) -> torch.Tensor:
    """[1, 128, T] log-mel from transformers' feature extractor, computed on the CPU."""
    try:
        from transformers.models.voxtral_realtime.feature_extraction_voxtral_realtime import (
            VoxtralRealtimeFeatureExtractor,
        )
    except ImportError as exc:
        raise SystemExit(f"error: cannot import VoxtralRealtimeFeatureExtractor: {exc}") from exc
    fe = VoxtralRealtimeFeatureExtractor()
    mel = fe(padded, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
    expected_frames = padded.size // HOP
    if mel.dim() != 3 or mel.shape[0] != 1 or mel.shape[1] != 128 or mel.shape[2] != expected_frames:
        raise SystemExit(f"error: feature extractor gave {tuple(mel.shape)}, expected (1, 128, {expected_frames})")
    return mel.to(torch.float32)


# ---------------------------------------------------------------------------------------------
# Reference model
# ---------------------------------------------------------------------------------------------

def set_determinism() -> None:
    """Plain fp32 everywhere: no TF32 matmuls, which would cost ~3 decimal digits on the GPU."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except Exception as exc:  # noqa: BLE001 - newer torch may prefer the fp32_precision API
        print(f"warning: could not clear allow_tf32 flags: {exc}")
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception as exc:  # noqa: BLE001
        print(f"warning: set_float32_matmul_precision failed: {exc}")


def hf_dir(model_dir: Path) -> Path:
    """Accepts the make-model output DIR or DIR/hf itself."""
    for candidate in (model_dir / "hf", model_dir):
        if (candidate / "config.json").is_file():
            return candidate
    raise SystemExit(f"error: no config.json in {model_dir}/hf or {model_dir} (run make-model first)")


def load_reference_model(model_dir: Path, device: str):
    """The float32 transformers model with eager attention (the plainest reference)."""
    from transformers import VoxtralRealtimeForConditionalGeneration as Model

    path = hf_dir(model_dir)
    try:
        model = Model.from_pretrained(str(path), dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # older keyword
        model = Model.from_pretrained(str(path), torch_dtype=torch.float32, attn_implementation="eager")
    model = model.to(device).eval()
    bad = [n for n, p in model.named_parameters() if p.dtype != torch.float32]
    if bad:
        raise SystemExit(f"error: parameters not float32 after loading: {bad[:5]}")
    audio_tower(model)  # fails loudly if the module layout is not one we know
    if not hasattr(model, "get_audio_features"):
        raise SystemExit("error: the loaded model has no get_audio_features(); transformers API changed?")
    impl = getattr(model.config, "_attn_implementation", "?")
    if impl != "eager":
        print(f"warning: attention implementation is {impl!r}, not 'eager'")
    return model


def audio_tower(model):
    """The encoder module: model.model.audio_tower in transformers 5.x (the top model wraps a
    VoxtralRealtimeModel), model.audio_tower in earlier layouts."""
    for owner in (getattr(model, "model", None), model):
        tower = getattr(owner, "audio_tower", None) if owner is not None else None
        if tower is not None:
            return tower
    raise SystemExit("error: no audio_tower in the loaded model (neither .model.audio_tower nor .audio_tower)")


@torch.no_grad()
def run_audio_stages(model, mel: torch.Tensor) -> dict[str, torch.Tensor]:
    """conv stem, encoder and adapter outputs, batch dim removed, time-major."""
    n_frames = mel.shape[-1]
    tower = audio_tower(model)
    conv = tower.embedder(mel)
    encoder = tower(input_features=mel).last_hidden_state
    adapter = model.get_audio_features(input_features=mel).pooler_output
    stages = {"conv": conv[0], "encoder": encoder[0], "adapter": adapter[0]}
    expected_rows = {"conv": n_frames // 2, "encoder": n_frames // 2, "adapter": n_frames // MEL_FRAMES_PER_TOKEN}
    for name, rows in expected_rows.items():
        if stages[name].dim() != 2 or stages[name].shape[0] != rows:
            raise SystemExit(f"error: {name} has shape {tuple(stages[name].shape)}, expected ({rows}, ...)")
    return stages


@torch.no_grad()
def forward_logits(model, ids: list[int], mel: torch.Tensor, n_delay: int) -> torch.Tensor:
    """One full (non-cached) forward over all positions: logits [n_positions, vocab].
    The model needs exactly one id per adapter vector, so ids must have n_positions entries."""
    input_ids = torch.tensor([ids], dtype=torch.long, device=mel.device)
    out = model(input_ids=input_ids, input_features=mel, num_delay_tokens=n_delay, use_cache=False)
    return out.logits[0].float()


def pad_ids(ids: list[int], n_positions: int) -> list[int]:
    """Causal model: the logits at position p only see ids[0..p], so trailing pad ids are inert."""
    if len(ids) > n_positions:
        raise SystemExit(f"error: {len(ids)} ids for {n_positions} positions")
    return ids + [STREAMING_PAD_ID] * (n_positions - len(ids))


@torch.no_grad()
def greedy_with_generate(model, mel, prompt: list[int], n_delay: int, n_positions: int) -> list[int]:
    """transformers' own decode loop (KV caches, incremental encoder). max_length is what
    VoxtralRealtime's generate() would pick by itself (one position per adapter vector); it is
    passed explicitly so that a change of that default cannot change the fixture."""
    input_ids = torch.tensor([prompt], dtype=torch.long, device=mel.device)
    out = model.generate(
        input_ids=input_ids,
        input_features=mel,
        num_delay_tokens=n_delay,
        max_length=n_positions,
        do_sample=False,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
        return_dict_in_generate=True,
    )
    return generated_after_prompt(out, prompt, "generate()")


def generated_after_prompt(out, prompt: list[int], what: str) -> list[int]:
    """The ids generate() produced after the prompt (checking that it kept the prompt)."""
    sequences = out.sequences if hasattr(out, "sequences") else out
    if sequences[0, : len(prompt)].tolist() != prompt:
        raise RuntimeError(f"{what} output does not start with the prompt")
    return sequences[0, len(prompt):].tolist()


@torch.no_grad()
def greedy_manual(model, mel, prompt: list[int], n_delay: int, n_positions: int) -> list[int]:
    """Slow but plain: one full forward per step. Equivalent to generate() up to round-off."""
    tokens: list[int] = []
    while len(prompt) + len(tokens) < n_positions:  # generate()'s max_length is n_positions
        pos = len(prompt) + len(tokens) - 1           # the position that predicts the next token
        logits = forward_logits(model, pad_ids(prompt + tokens, n_positions), mel, n_delay)
        tokens.append(int(logits[pos].argmax()))
        if tokens[-1] == EOS_ID:
            break
    return tokens


def free_running_tokens(model, mel, prompt, n_delay, n_positions) -> tuple[list[int], str]:
    """Greedy decode to the end of the audio or EOS. Returns (tokens, which decoder was used)."""
    expected = n_positions - len(prompt)
    try:
        tokens = greedy_with_generate(model, mel, prompt, n_delay, n_positions)
        stopped_early = len(tokens) < expected and tokens and tokens[-1] == EOS_ID
        if len(tokens) == expected or stopped_early:
            return tokens, "generate"
        print(f"warning: generate() returned {len(tokens)} tokens, expected {expected} "
              f"(or fewer ending in EOS); using the manual greedy loop")
    except Exception as exc:  # noqa: BLE001 - any API drift: fall back, loudly
        print(f"warning: generate() failed ({type(exc).__name__}: {exc}); using the manual greedy loop")
    return greedy_manual(model, mel, prompt, n_delay, n_positions), "manual"


def top2_margin(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """argmax and top1 - top2 per row."""
    top = torch.topk(logits, 2, dim=-1)
    return top.indices[:, 0], top.values[:, 0] - top.values[:, 1]


# ---------------------------------------------------------------------------------------------
# One golden case
# ---------------------------------------------------------------------------------------------

def golden_case(model, wav: Path, delay_ms: int, logit_steps: int, omit: set[str]):
    """Returns (tensors, metadata, stats) for one audio file at one delay."""
    device = next(model.parameters()).device
    n_delay = delay_tokens(delay_ms)
    audio = read_wav_mono16k(wav)
    padded = pad_offline(audio, n_delay)
    mel = compute_mel(padded).to(device)
    n_positions = mel.shape[-1] // MEL_FRAMES_PER_TOKEN
    prompt = build_prompt(n_delay)
    if n_positions <= len(prompt):
        raise SystemExit(f"error: {wav}: {n_positions} positions, not more than the prompt ({len(prompt)})")

    stages = run_audio_stages(model, mel)
    tokens, decoder = free_running_tokens(model, mel, prompt, n_delay, n_positions)
    if not tokens:
        raise SystemExit(f"error: {wav}: no tokens decoded")
    steps = len(tokens)
    eos_stopped = tokens[-1] == EOS_ID

    # Teacher forcing: feed the free-running tokens, read the logits that chose each of them.
    logits = forward_logits(model, pad_ids(prompt + tokens, n_positions), mel, n_delay)
    first = len(prompt) - 1
    step_logits = logits[first: first + steps]
    tf_argmax, tf_margin = top2_margin(step_logits)
    k = min(logit_steps, steps)

    tensors = {
        "audio": torch.from_numpy(audio.copy()),
        "mel": mel[0].transpose(0, 1),
        "conv": stages["conv"],
        "encoder": stages["encoder"],
        "adapter": stages["adapter"],
        "prompt": torch.tensor(prompt),
        "tokens": torch.tensor(tokens),
        "tf_logits": step_logits[:k],
        "tf_argmax": tf_argmax,
        "tf_margin": tf_margin,
    }
    int_names = {"prompt", "tokens", "tf_argmax"}
    tensors = {
        name: t.detach().to("cpu", torch.int32 if name in int_names else torch.float32).contiguous()
        for name, t in tensors.items() if name not in omit
    }

    margins = tf_margin.cpu().tolist()
    mismatches = int((tf_argmax.cpu() != torch.tensor(tokens)).sum())
    stats = {
        "audio": wav.name,
        "delay_ms": delay_ms,
        "n_delay": n_delay,
        "n_samples": int(audio.size),
        "n_positions": int(n_positions),
        "prompt_len": len(prompt),
        "steps": steps,
        "distinct_tokens": len(set(tokens)),
        "eos_stopped": bool(eos_stopped),
        "min_margin": float(min(margins)),
        "median_margin": float(statistics.median(margins)),
        "tf_mismatches": mismatches,
        "decoder": decoder,
        "logit_steps": k,
        "omitted": sorted(omit),
    }
    metadata = {
        "delay_ms": delay_ms,
        "n_delay": n_delay,
        "prompt_len": len(prompt),
        "n_samples": int(audio.size),
        "n_positions": int(n_positions),
        "steps": steps,
        "eos_stopped": int(eos_stopped),
        "min_margin": f"{stats['min_margin']:.6g}",
        "tf_mismatches": mismatches,
        "decoder": decoder,
        "audio_file": wav.name,
        "transformers_version": transformers_version(),
        "torch_version": torch.__version__,
        "device": str(device),
    }
    return tensors, {k: str(v) for k, v in metadata.items()}, stats


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def save_golden(path: Path, tensors: dict, metadata: dict) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)


def summary_line(stats: dict) -> str:
    agree = "yes" if stats["tf_mismatches"] == 0 else f"NO ({stats['tf_mismatches']} differ)"
    return (f"{stats['audio']}@{stats['delay_ms']}ms: steps={stats['steps']} "
            f"distinct={stats['distinct_tokens']} eos={stats['eos_stopped']} "
            f"margin min={stats['min_margin']:.3f} median={stats['median_margin']:.3f} "
            f"tf_argmax==tokens: {agree} [{stats['decoder']}]")
