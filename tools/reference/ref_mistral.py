"""Writes a transformers VoxtralRealtime model in Mistral's layout (consolidated.safetensors, BF16).

This is the inverse of transformers' convert_voxtral_realtime_weights_to_hf.py: the same name
table read the other way, and the inverse of its `permute_for_rope` on the q/k projections
(docs/model.md §6). The file is written tensor by tensor (our own small safetensors writer), so
the 8.9 GB full-size checkpoint never has to sit in host memory at once.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

import torch

from ref_presets import ROPE_THETA, Preset, expected_mistral_tensor_count

ENC = "mm_streams_embeddings.embedding_module.whisper_encoder"
EMB = "mm_streams_embeddings.embedding_module"
_L = r"^(?:model\.)?language_model\.(?:model\.)?"  # decoder prefix, with or without wrappers
_A = r"^(?:model\.)?audio_tower\."
_P = r"^(?:model\.)?multi_modal_projector\."

# (HF name regex, Mistral name template). First match wins.
NAME_RULES = [
    (_L + r"embed_tokens\.weight$", EMB + ".tok_embeddings.weight"),
    (_L + r"norm\.weight$", "norm.weight"),
    (_L + r"layers\.(\d+)\.input_layernorm\.weight$", r"layers.\1.attention_norm.weight"),
    (_L + r"layers\.(\d+)\.post_attention_layernorm\.weight$", r"layers.\1.ffn_norm.weight"),
    (_L + r"layers\.(\d+)\.self_attn\.([qkvo])_proj\.weight$", r"layers.\1.attention.w\2.weight"),
    (_L + r"layers\.(\d+)\.mlp\.gate_proj\.weight$", r"layers.\1.feed_forward.w1.weight"),
    (_L + r"layers\.(\d+)\.mlp\.down_proj\.weight$", r"layers.\1.feed_forward.w2.weight"),
    (_L + r"layers\.(\d+)\.mlp\.up_proj\.weight$", r"layers.\1.feed_forward.w3.weight"),
    (_L + r"layers\.(\d+)\.ada_rms_norm\.linear1\.weight$", r"layers.\1.ada_rms_norm_t_cond.0.weight"),
    (_L + r"layers\.(\d+)\.ada_rms_norm\.linear2\.weight$", r"layers.\1.ada_rms_norm_t_cond.2.weight"),
    (_A + r"embedder\.conv1\.(weight|bias)$", ENC + r".conv_layers.0.conv.\1"),
    (_A + r"embedder\.conv2\.(weight|bias)$", ENC + r".conv_layers.1.conv.\1"),
    (_A + r"norm\.weight$", ENC + ".transformer.norm.weight"),
    (_A + r"layers\.(\d+)\.self_attn\.([qkvo])_proj\.(weight|bias)$",
     ENC + r".transformer.layers.\1.attention.w\2.\3"),
    (_A + r"layers\.(\d+)\.self_attn_layer_norm\.weight$", ENC + r".transformer.layers.\1.attention_norm.weight"),
    (_A + r"layers\.(\d+)\.final_layer_norm\.weight$", ENC + r".transformer.layers.\1.ffn_norm.weight"),
    (_A + r"layers\.(\d+)\.mlp\.gate_proj\.(weight|bias)$", ENC + r".transformer.layers.\1.feed_forward.w1.\2"),
    (_A + r"layers\.(\d+)\.mlp\.down_proj\.(weight|bias)$", ENC + r".transformer.layers.\1.feed_forward.w2.\2"),
    (_A + r"layers\.(\d+)\.mlp\.up_proj\.(weight|bias)$", ENC + r".transformer.layers.\1.feed_forward.w3.\2"),
    (_P + r"linear_1\.weight$", EMB + ".audio_language_projection.0.weight"),
    (_P + r"linear_2\.weight$", EMB + ".audio_language_projection.2.weight"),
]
_COMPILED = [(re.compile(pattern), template) for pattern, template in NAME_RULES]


def is_tied_head(hf_name: str) -> bool:
    """lm_head is tied to the token embedding; the Mistral layout does not store it."""
    return hf_name.endswith("lm_head.weight")


def mistral_name(hf_name: str) -> str:
    for pattern, template in _COMPILED:
        if pattern.match(hf_name):
            return pattern.sub(template, hf_name)
    raise SystemExit(f"error: no Mistral name for HF tensor {hf_name!r} (update NAME_RULES)")


# ---------------------------------------------------------------------------------------------
# RoPE layout (docs/model.md §6)
# ---------------------------------------------------------------------------------------------

def hf_from_mistral_rope(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """transformers' permute_for_rope (Mistral interleaved pairs -> HF rotate-half order)."""
    dim1 = t.shape[0]
    if t.dim() == 1:
        return t.view(n_heads, dim1 // n_heads // 2, 2).transpose(1, 2).reshape(dim1)
    dim2 = t.shape[1]
    return t.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def mistral_from_hf_rope(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Inverse of hf_from_mistral_rope: within each head, HF row (j * hd/2 + i) -> Mistral
    row (2i + j), i.e. rotate-half halves back to interleaved (2i, 2i+1) pairs."""
    dim1 = t.shape[0]
    if t.dim() == 1:
        return t.view(n_heads, 2, dim1 // n_heads // 2).transpose(1, 2).reshape(dim1)
    dim2 = t.shape[1]
    return t.view(n_heads, 2, dim1 // n_heads // 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def rope_heads(hf_name: str, p: Preset) -> int | None:
    """Number of heads to un-permute over, or None when the tensor carries no RoPE layout.
    q (weight, and the encoder's q bias) and k weights of both stacks; v/o are untouched."""
    is_encoder = re.search(r"(?:^|\.)audio_tower\.", hf_name) is not None
    if re.search(r"self_attn\.q_proj\.(weight|bias)$", hf_name):
        return p.enc_heads if is_encoder else p.n_heads
    if re.search(r"self_attn\.k_proj\.(weight|bias)$", hf_name):
        return p.enc_heads if is_encoder else p.n_kv_heads
    return None


def to_mistral_tensor(hf_name: str, t: torch.Tensor, p: Preset) -> torch.Tensor:
    """The Mistral-layout tensor (same dtype as t) for one HF tensor."""
    heads = rope_heads(hf_name, p)
    if heads is not None:
        t = mistral_from_hf_rope(t, heads)
    return t.contiguous()


def mistral_tensors(state_dict: dict, p: Preset):
    """Yields (mistral_name, hf_name) for every stored tensor, sorted by Mistral name."""
    pairs = [(mistral_name(k), k) for k in state_dict if not is_tied_head(k)]
    names = [m for m, _ in pairs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"error: several HF tensors map to {sorted(duplicates)[:5]}")
    expected = expected_mistral_tensor_count(p)
    if len(pairs) != expected:
        raise SystemExit(f"error: {len(pairs)} Mistral tensors, expected {expected}")
    return sorted(pairs)


# ---------------------------------------------------------------------------------------------
# Streaming safetensors writer
# ---------------------------------------------------------------------------------------------

_ST_DTYPES = {torch.bfloat16: ("BF16", torch.int16), torch.float32: ("F32", torch.float32)}


def tensor_bytes(t: torch.Tensor) -> bytes:
    """Little-endian raw bytes (numpy has no bf16, so bf16 goes through an int16 view)."""
    _, view_dtype = _ST_DTYPES[t.dtype]
    return t.detach().contiguous().cpu().view(view_dtype).numpy().tobytes()


def write_safetensors_streaming(path: Path, entries, metadata: dict | None = None) -> None:
    """entries: list of (name, shape, torch dtype, producer) where producer() returns the tensor.
    Writes the header first (offsets are known from shapes), then each tensor as it is produced."""
    header = {}
    offset = 0
    for name, shape, dtype, _ in entries:
        nbytes = math.prod(shape) * torch.tensor([], dtype=dtype).element_size()
        header[name] = {"dtype": _ST_DTYPES[dtype][0], "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    header_json = json.dumps(header, separators=(",", ":")).encode()
    header_json += b" " * (-len(header_json) % 8)  # data section starts 8-byte aligned
    tmp = path.with_suffix(path.suffix + ".part")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header_json)))
        f.write(header_json)
        for name, shape, dtype, produce in entries:
            t = produce()
            if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
                raise SystemExit(f"error: {name}: produced {tuple(t.shape)} {t.dtype}, declared {shape} {dtype}")
            f.write(tensor_bytes(t))
    tmp.replace(path)


def write_mistral_checkpoint(model, p: Preset, path: Path) -> list[str]:
    """consolidated.safetensors in BF16. Returns the tensor names written."""
    state = model.state_dict()
    entries = []
    for m_name, hf_name in mistral_tensors(state, p):
        t = state[hf_name]
        entries.append((m_name, tuple(t.shape), torch.bfloat16,
                        lambda hf_name=hf_name: to_mistral_tensor(hf_name, state[hf_name], p).to(torch.bfloat16)))
    write_safetensors_streaming(path, entries, metadata={"format": "pt"})
    return [e[0] for e in entries]


def verify_mistral_checkpoint(model, p: Preset, path: Path) -> None:
    """Reads the file back and checks every tensor bit for bit against the model."""
    from safetensors import safe_open

    state = model.state_dict()
    pairs = mistral_tensors(state, p)
    with safe_open(str(path), framework="pt", device="cpu") as f:
        stored = set(f.keys())
        wanted = {m for m, _ in pairs}
        if stored != wanted:
            raise SystemExit(f"error: {path}: names differ; missing {sorted(wanted - stored)[:5]}, "
                             f"extra {sorted(stored - wanted)[:5]}")
        for m_name, hf_name in pairs:
            got = f.get_tensor(m_name)
            want = to_mistral_tensor(hf_name, state[hf_name], p).to(torch.bfloat16).cpu()
            back = hf_from_mistral_rope(got, rope_heads(hf_name, p)) if rope_heads(hf_name, p) else got
            if got.dtype != torch.bfloat16 or not torch.equal(got, want):
                raise SystemExit(f"error: {path}: {m_name} differs from the model")
            # The fp32 model holds bf16-representable values, so the bf16 copy is exact.
            if not torch.equal(back.to(torch.float32), state[hf_name].detach().cpu()):
                raise SystemExit(f"error: {m_name}: bf16 copy is not exact (weights not rounded?)")
    print(f"verified {len(pairs)} tensors in {path}")


# ---------------------------------------------------------------------------------------------
# Semantic RoPE check: same attention scores from both layouts
# ---------------------------------------------------------------------------------------------

def rope_rotate_half(x: torch.Tensor, pos: float, theta: float = ROPE_THETA) -> torch.Tensor:
    """HF convention: pairs (i, i + d/2). x: [heads, d]."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.cat([inv_freq, inv_freq]) * pos
    rotated = torch.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1)
    return x * torch.cos(angle) + rotated * torch.sin(angle)


def rope_interleaved(x: torch.Tensor, pos: float, theta: float = ROPE_THETA) -> torch.Tensor:
    """Mistral convention: pairs (2i, 2i+1) rotated as complex numbers. x: [heads, d]."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    z = z * torch.polar(torch.ones_like(inv_freq), inv_freq * pos)
    return torch.view_as_real(z).reshape(x.shape)


def attention_scores(q_w, q_b, k_w, n_heads, n_kv, head_dim, x, rope, p_q, p_k):
    """Per-head q.k after RoPE, for one input vector x at query/key positions p_q, p_k."""
    q = (q_w @ x + (q_b if q_b is not None else 0)).view(n_heads, head_dim)
    k = (k_w @ x).view(n_kv, head_dim)
    q, k = rope(q, p_q), rope(k, p_k)
    k = k.repeat_interleave(n_heads // n_kv, dim=0)
    return (q * k).sum(-1)


def check_rope_layout(model, p: Preset) -> None:
    """Layer 0 of both stacks: attention scores computed from the HF weights with rotate-half RoPE
    must equal those from the Mistral-layout weights with interleaved RoPE, and must differ when
    the layouts are mixed (so the check can fail)."""
    state = model.state_dict()
    stacks = [
        ("encoder", r"audio_tower\.layers\.0\.self_attn\.", p.enc_heads, p.enc_heads, p.enc_head_dim, p.enc_dim),
        ("decoder", r"language_model\.(?:model\.)?layers\.0\.self_attn\.", p.n_heads, p.n_kv_heads, p.head_dim, p.dim),
    ]
    gen = torch.Generator().manual_seed(0)
    for label, prefix, n_heads, n_kv, hd, width in stacks:
        found = {k: v for k, v in state.items() if re.search(prefix, k)}
        get = lambda suffix: next((v.detach().cpu().double() for k, v in found.items() if k.endswith(suffix)), None)  # noqa: E731
        hf_q, hf_qb, hf_k = get("q_proj.weight"), get("q_proj.bias"), get("k_proj.weight")
        if hf_q is None or hf_k is None:
            raise SystemExit(f"error: rope check: {label} layer 0 q/k weights not found")
        mi_q = mistral_from_hf_rope(hf_q, n_heads)
        mi_qb = mistral_from_hf_rope(hf_qb, n_heads) if hf_qb is not None else None
        mi_k = mistral_from_hf_rope(hf_k, n_kv)
        x = torch.randn(width, generator=gen, dtype=torch.float64)
        for p_q, p_k in ((5.0, 3.0), (700.0, 1.0), (37.0, 37.0)):
            ref = attention_scores(hf_q, hf_qb, hf_k, n_heads, n_kv, hd, x, rope_rotate_half, p_q, p_k)
            ours = attention_scores(mi_q, mi_qb, mi_k, n_heads, n_kv, hd, x, rope_interleaved, p_q, p_k)
            mixed = attention_scores(mi_q, mi_qb, mi_k, n_heads, n_kv, hd, x, rope_rotate_half, p_q, p_k)
            scale = ref.abs().max().item() + 1e-9
            if (ref - ours).abs().max().item() > 1e-9 * scale:
                raise SystemExit(f"error: rope check failed for {label} at {p_q},{p_k}")
            if p_q != p_k and (ref - mixed).abs().max().item() < 1e-3 * scale:
                raise SystemExit(f"error: rope check cannot tell the layouts apart ({label})")
    print("rope layout check passed (HF rotate-half == Mistral interleaved, both stacks)")
