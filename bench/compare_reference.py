#!/usr/bin/env python3
"""Times the transformers reference on the same model, audio and GPU as a `voxrt bench` run, and
prints voxrt's figures against it (run both in the same device call).

    build/cuda/voxrt bench --model DIR/mistral --out bench/results
    python3 bench/compare_reference.py --model DIR --voxrt bench/results/<file>.json

The reference runs as users run it: bf16 weights on CUDA, `generate()` greedy over the offline
protocol (docs/model.md §9), which encodes the audio incrementally and decodes one token per 80 ms step.
Its per-step time is the generate() time over the number of steps (encoder and decoder together);
voxrt's comparable figure is its encoder step + decoder step.

Batched offline, against `voxrt bench --offline-batch B --offline-seconds S` (its JSON has "batch"):

    build/cuda/voxrt bench --model DIR/mistral --offline-batch 64 --offline-seconds 30 --out bench/results
    python3 bench/compare_reference.py --model DIR --voxrt bench/results/<file>.json

runs generate() once over B inputs of S seconds each (the same speech looped, each from its own
offset, so every input has the same length and none is padded) and compares the RTFx.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools" / "reference"))
from ref_golden import (  # noqa: E402
    SAMPLES_PER_TOKEN,
    build_prompt,
    compute_mel,
    delay_tokens,
    hf_dir,
    pad_offline,
    read_wav_mono16k,
)
from ref_presets import EOS_ID  # noqa: E402


def load_bf16(model_dir: Path):
    from transformers import VoxtralRealtimeForConditionalGeneration as Model

    model = Model.from_pretrained(str(hf_dir(model_dir)), dtype=torch.bfloat16).to("cuda").eval()
    # from_pretrained in bf16 rounds the fp32 RoPE / time-embedding buffers too; that is what users
    # get, and it does not change the cost measured here.
    return model


def time_offline(model, audio: np.ndarray, delay_ms: int) -> dict:
    n_delay = delay_tokens(delay_ms)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    padded = pad_offline(audio, n_delay)
    mel = compute_mel(padded).to("cuda", torch.bfloat16)
    prompt = build_prompt(n_delay)
    n_positions = len(padded) // SAMPLES_PER_TOKEN
    with torch.inference_mode():
        out = model.generate(input_ids=torch.tensor([prompt], device="cuda"), input_features=mel,
                             num_delay_tokens=n_delay, max_length=n_positions, do_sample=False,
                             eos_token_id=EOS_ID, pad_token_id=EOS_ID)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    steps = out.shape[1] - len(prompt)
    return {"audio_s": len(audio) / 16000, "wall_s": wall, "rtfx": len(audio) / 16000 / wall, "steps": steps,
            "step_ms": wall / max(steps, 1) * 1e3}


def time_offline_batch(model, speech: np.ndarray, batch: int, seconds: float, delay_ms: int) -> dict:
    """One generate() over `batch` inputs of `seconds` each: the RTFx of transformers batched."""
    n_delay = delay_tokens(delay_ms)
    n = int(seconds * 16000)
    audios = [np.resize(np.roll(speech, -(i * 7919 * 16) % speech.size), n).astype(np.float32) for i in range(batch)]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    padded = [pad_offline(a, n_delay) for a in audios]
    mel = torch.cat([compute_mel(p) for p in padded]).to("cuda", torch.bfloat16)
    prompt = build_prompt(n_delay)
    n_positions = len(padded[0]) // SAMPLES_PER_TOKEN
    ids = torch.tensor([prompt] * batch, device="cuda")
    with torch.inference_mode():
        # Every input has the same length: nothing is padded, the mask is all ones (given, so that
        # transformers need not guess it from pad ids).
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), input_features=mel,
                             num_delay_tokens=n_delay, max_length=n_positions, do_sample=False,
                             eos_token_id=EOS_ID, pad_token_id=EOS_ID)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"batch": batch, "seconds_each": seconds, "audio_s": batch * seconds, "wall_s": wall,
            "rtfx": batch * seconds / wall, "steps": int(out.shape[1] - len(prompt))}


def main_batch(args, ours: dict) -> None:
    speech = read_wav_mono16k(args.audio)
    model = load_bf16(args.model)
    time_offline(model, speech[:16000 * 3], args.delay_ms)  # warm-up: kernels, allocator
    ref = time_offline_batch(model, speech, ours["batch"], ours["seconds_each"], args.delay_ms)
    print(f"reference: transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    print(f"{'figure':34} {'voxrt':>10} {'reference':>10} {'ratio':>8}")
    label = f"offline RTFx, {ours['batch']} x {ours['seconds_each']:.0f} s at once"
    print(f"{label:34} {ours['rtfx']:10.1f} {ref['rtfx']:10.1f} {ours['rtfx'] / ref['rtfx']:7.1f}x")
    print(f"{'wall time':34} {ours['wall_s']:9.2f}s {ref['wall_s']:9.2f}s")
    out = args.voxrt.with_name(args.voxrt.stem + "-reference.json")
    out.write_text(json.dumps({"voxrt": str(args.voxrt), "reference_batch": ref}, indent=2) + "\n")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="make-model output dir (or its hf/ folder)")
    ap.add_argument("--voxrt", type=Path, required=True, help="the JSON `voxrt bench` wrote")
    ap.add_argument("--audio", type=Path, default=Path("tests/data/audio/jfk.wav"))
    ap.add_argument("--delay-ms", type=int, default=480)
    ap.add_argument("--seconds", type=float, nargs="+", default=[30.0], help="offline lengths (300 takes minutes)")
    args = ap.parse_args()

    ours = json.loads(args.voxrt.read_text())
    if "batch" in ours:  # voxrt bench --offline-batch
        return main_batch(args, ours)
    speech = read_wav_mono16k(args.audio)
    model = load_bf16(args.model)
    time_offline(model, speech[:16000 * 3], args.delay_ms)  # warm-up: kernels, allocator
    rows = []
    for seconds in args.seconds:
        audio = np.resize(speech, int(seconds * 16000)).astype(np.float32)
        ref = time_offline(model, audio, args.delay_ms)
        mine = next((o for o in ours["offline"] if abs(o["audio_s"] - seconds) < 1e-6), None)
        rows.append((seconds, ref, mine))

    # A result of voxrt before the pass figures' keys were renamed has only the old ones.
    figure = lambda name: ours.get(name + "_pass") or ours[name + "_step"]
    step = figure("encoder")["p50_ms"] + figure("decoder")["p50_ms"]
    print(f"reference: transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    print(f"{'figure':28} {'voxrt':>12} {'reference':>12} {'ratio':>8}")
    for seconds, ref, mine in rows:
        print(f"{'step (enc+dec), %4.0f s' % seconds:28} {step:10.2f}ms {ref['step_ms']:10.2f}ms "
              f"{ref['step_ms'] / step:7.1f}x")
        if mine:
            print(f"{'offline RTFx, %4.0f s' % seconds:28} {mine['rtfx']:12.1f} {ref['rtfx']:12.1f} "
                  f"{mine['rtfx'] / ref['rtfx']:7.1f}x")
    result = {"voxrt": str(args.voxrt), "reference": [r for _, r, _ in rows]}
    out = args.voxrt.with_name(args.voxrt.stem + "-reference.json")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
