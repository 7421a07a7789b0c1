#!/usr/bin/env python3
"""Whether fp16 activations would hold voxrt's bf16 parity tolerances (issue 35, point 2: an sm_75
GPU such as the T4 has fp16 tensor cores but no bf16 ones). Runs the transformers reference on a
make-model directory three times, in fp32 (the reference), bf16 and fp16 (weights and activations
cast with model.to(dtype)), and prints for bf16 and fp16 against fp32: each audio stage's relative
error (Frobenius, as tests/parity/golden.h's rel_error), the teacher-forced logits' relative error,
how often the argmax agrees (all steps, and steps whose fp32 top-2 margin is at least 3, the margin
bf16_tolerances() holds the argmax to), and the largest activation magnitude anywhere in the
decoder's and encoder's residual streams (fp16 overflows past 65504). The tolerances: stages 3e-2
(tests/parity/parity_check.h). On random weights this measures precision; the real checkpoint's
activation range cannot be had here.

  python3 tools/reference/half_precision_check.py --model /tmp/voxrt-full [--audio WAV] [--device cuda]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ref_golden import (MEL_FRAMES_PER_TOKEN, build_prompt, compute_mel, delay_tokens, forward_logits,  # noqa: E402
                        free_running_tokens, load_reference_model, pad_ids, pad_offline, read_wav_mono16k,
                        run_audio_stages, set_determinism, top2_margin)


def rel_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b).clamp_min(1e-30))


class LargestActivation:
    """Forward hooks on every layer of the model recording the largest |output| seen."""

    def __init__(self, model):
        self.largest = 0.0
        self.handles = []
        for name, module in model.named_modules():
            if name.endswith(("layers." + name.split(".")[-1],)) and name.split(".")[-1].isdigit():
                self.handles.append(module.register_forward_hook(self.hook))

    def hook(self, _module, _inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        if torch.is_tensor(out):
            self.largest = max(self.largest, float(out.detach().abs().float().max()))

    def close(self):
        for h in self.handles:
            h.remove()


@torch.no_grad()
def run(model, mel, ids, n_delay, dtype):
    model = model.to(dtype)
    watch = LargestActivation(model)
    stages = run_audio_stages(model, mel.to(dtype))
    logits = forward_logits(model, ids, mel.to(dtype), n_delay)
    watch.close()
    return {k: v.float() for k, v in stages.items()}, logits.float(), watch.largest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--audio", default="tests/data/audio/speech_short.wav")
    p.add_argument("--delay-ms", type=int, default=480)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    set_determinism()
    model = load_reference_model(Path(a.model), a.device)
    n_delay = delay_tokens(a.delay_ms)
    mel = compute_mel(pad_offline(read_wav_mono16k(Path(a.audio)), n_delay)).to(a.device)
    n_positions = mel.shape[-1] // MEL_FRAMES_PER_TOKEN
    prompt = build_prompt(n_delay)
    tokens, _ = free_running_tokens(model, mel, prompt, n_delay, n_positions)
    ids = pad_ids(prompt + tokens, n_positions)
    first, steps = len(prompt) - 1, len(tokens)
    ref_stages, ref_logits, ref_largest = run(model, mel, ids, n_delay, torch.float32)
    ref_steps = ref_logits[first:first + steps]
    ref_argmax, ref_margin = top2_margin(ref_steps)
    clear = ref_margin >= 3.0
    print(f"{a.audio} at {a.delay_ms} ms: {steps} steps, {int(clear.sum())} with an fp32 margin >= 3; "
          f"largest activation in fp32 {ref_largest:.4g}")
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        stages, logits, largest = run(model, mel, ids, n_delay, dtype)
        steps_logits = logits[first:first + steps]
        argmax, _ = top2_margin(steps_logits)
        finite = bool(torch.isfinite(steps_logits).all())
        agree = int((argmax == ref_argmax).sum())
        agree_clear = int(((argmax == ref_argmax) & clear).sum())
        errors = ", ".join(f"{k} {rel_error(stages[k], ref_stages[k]):.3g}" for k in ("conv", "encoder", "adapter"))
        print(f"{name}: {errors}, logits {rel_error(steps_logits, ref_steps):.3g} relative error; argmax agrees "
              f"{agree}/{steps} ({agree_clear}/{int(clear.sum())} clear); finite {finite}; largest activation "
              f"{largest:.4g}")


if __name__ == "__main__":
    main()
