"""Builds a random-weight VoxtralRealtimeForConditionalGeneration with controlled scales.

Every parameter is drawn from one seeded torch.Generator in a fixed order, then rounded to
bf16-representable float32 values: the BF16 Mistral checkpoint and the float32 model then hold
the very same numbers, so a C++ engine reading either file can be compared with the fp32
reference. Only parameters are rounded, never buffers: the RoPE and time-embedding inv_freq
buffers stay exact float32 (casting the module to bf16 would round them).
"""

from __future__ import annotations

import math
import re

import torch

from ref_presets import EOS_ID, Preset, WeightScales, hf_config


def build_random_model(p: Preset, seed: int, device: str):
    """Returns a float32 model on `device` with seeded random weights, rounded to bf16 values."""
    from transformers import VoxtralRealtimeForConditionalGeneration

    config = hf_config(p)
    torch.manual_seed(seed)  # only affects transformers' default init, which is overwritten
    with torch.device(device):
        model = VoxtralRealtimeForConditionalGeneration(config)
    model = model.to(device=device, dtype=torch.float32).eval()
    ensure_tied_head(model)

    names = [name for name, _ in model.named_parameters()]
    if not any(is_final_decoder_norm(n) for n in names):
        raise SystemExit("error: final decoder norm not found among parameters; names changed? "
                         f"first names: {names[:5]}")

    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():  # tied lm_head is listed once (as embed)
            param.copy_(draw_parameter(name, param, p.scales, generator, stack_depth(name, p)))
        round_parameters_to_bf16(model)
    ensure_tied_head(model)
    return model


def ensure_tied_head(model) -> None:
    """The Mistral checkpoint has no separate LM head; the HF model must tie it to the embedding."""
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    if head.data_ptr() != embed.data_ptr():
        model.tie_weights()
        head = model.get_output_embeddings().weight
    if head.data_ptr() != embed.data_ptr():
        raise SystemExit("error: lm_head is not tied to embed_tokens (tie_word_embeddings ignored?)")


def fan_in(param: torch.Tensor) -> int:
    """Linear [out, in] -> in; Conv1d [out, in, k] -> in * k."""
    return int(math.prod(param.shape[1:]))


def normal(shape, std: float, generator: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=generator, device=generator.device, dtype=torch.float32) * std


def stack_depth(name: str, p: Preset) -> int:
    """Number of layers of the stack (encoder or decoder) a parameter belongs to."""
    return p.enc_layers if "audio_tower." in name else p.n_layers


def draw_parameter(name: str, param: torch.Tensor, s: WeightScales, g: torch.Generator,
                   depth: int) -> torch.Tensor:
    """Random value for one parameter, chosen by its transformers name (rules in README.md)."""
    shape = param.shape
    if name.endswith("norm.weight"):  # every RMSNorm (encoder, decoder, final norms)
        value = 1.0 + normal(shape, s.norm_std, g)
        if is_final_decoder_norm(name):
            value = value * s.final_norm_gain
        return value
    if name.endswith(".bias"):
        return normal(shape, s.bias_std, g)
    if name.endswith("embed_tokens.weight"):
        value = normal(shape, s.token_embed_norm / math.sqrt(shape[1]), g)
        value[EOS_ID] *= s.eos_row_scale  # tied head: a shorter EOS row gives a smaller EOS logit
        return value
    if "ada_rms_norm.linear2" in name:
        return normal(shape, s.ada_out_std, g)
    if param.dim() < 2:
        raise SystemExit(f"error: no init rule for 1-D parameter {name} {tuple(shape)}")
    gain = s.linear_gain
    if name.endswith(("q_proj.weight", "k_proj.weight")):
        gain = s.qk_gain
    elif "multi_modal_projector.linear_2" in name:
        gain = s.adapter_out_gain
    elif name.endswith(("o_proj.weight", "down_proj.weight")) and s.residual_depth_factor > 0:
        gain = s.linear_gain / math.sqrt(s.residual_depth_factor * depth)
    return normal(shape, gain / math.sqrt(fan_in(param)), g)


FINAL_DECODER_NORM = re.compile(r"^(model\.)?language_model\.(model\.)?norm\.weight$")


def is_final_decoder_norm(name: str) -> bool:
    """language_model.model.norm.weight: the norm right before the (tied) LM head."""
    return FINAL_DECODER_NORM.match(name) is not None


def round_parameters_to_bf16(model) -> None:
    for param in model.parameters():
        param.copy_(param.to(torch.bfloat16).to(torch.float32))


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())
