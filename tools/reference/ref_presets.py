"""Model sizes (tiny / full), random-weight scales, and the two config formats built from them.

One `Preset` describes a model once; `hf_config()` turns it into transformers'
VoxtralRealtimeConfig and `mistral_params()` into the official params.json layout, so both
checkpoint layouts always describe the same model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROPE_THETA = 1_000_000.0
NORM_EPS = 1e-5
ADA_T_COND_DIM = 32  # VoxtralRealtimeTextAdaRmsNorm's bottleneck (hard-coded 32 in transformers)

# Token ids (docs/model.md §8); the synthetic tekken.json puts the named specials at these ranks.
BOS_ID = 1
EOS_ID = 2
STREAMING_PAD_ID = 32
STREAMING_WORD_ID = 33
NUM_SPECIAL_TOKENS = 1000


@dataclass(frozen=True)
class WeightScales:
    """How the random weights are drawn (see README.md, "Weight scales").

    Default PyTorch init gives a random model that repeats one token forever with tiny logit
    margins. These scales make it behave like a (meaningless but well-conditioned) ASR model:
    tokens follow the audio, attention is peaked, the delay conditioning matters, and the typical
    top-1 logit margin (median ~4-7) is far above fp32 round-off. A few steps per clip are still
    near-ties (margin < 0.05); the fixtures record every margin (tf_margin) so tests can skip them.
    Measured on the tiny and the full model: see README.md.
    """

    linear_gain: float = 1.0        # every Linear/Conv weight ~ N(0, gain^2 / fan_in)
    qk_gain: float = 2.0            # q_proj and k_proj: sharper attention
    residual_depth_factor: float = 1.0  # o_proj / down_proj gain 1/sqrt(factor * n_layers of the
                                        # stack), GPT-2 style, 0 = off: without it the 26-32 layer
                                        # full-size stacks drown the audio signal in the residual
    bias_std: float = 0.05          # encoder biases (q, v, o, w2, convs): non-zero, but small, since
                                    # constant offsets make every frame alike (and tokens repeat)
    norm_std: float = 0.1           # RMSNorm weights = 1 + norm_std * N(0, 1)
    token_embed_norm: float = 0.8   # embedding rows ~ N(0, (norm^2 / dim)): row length ~0.8, small
                                    # next to the adapter's (~2 * sqrt(dim)). With the head tied, a
                                    # long row would make the previous token its own favourite and
                                    # greedy decoding would repeat one token forever.
    adapter_out_gain: float = 3.0   # multi_modal_projector.linear_2 gain: audio path dominates
    ada_out_std: float = 0.12       # ada_rms_norm.linear2 std: (1 + W2 gelu(W1 t)) ~ 1 +- 0.3
    eos_row_scale: float = 0.25     # EOS embedding row (tied head => its logit) scaled down
    final_norm_gain: float = 30.0   # multiplies the final decoder norm weight. Logits are
                                    # ~ gain * token_embed_norm * N(0, 1) ~ +-24, so top-1 margins
                                    # are large next to fp32 round-off.


@dataclass(frozen=True)
class Preset:
    name: str
    # Encoder (audio tower).
    enc_dim: int
    enc_layers: int
    enc_heads: int
    enc_head_dim: int
    enc_hidden: int
    enc_window: int
    enc_max_positions: int
    # Decoder (text model).
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden: int
    vocab: int
    window: int
    max_positions: int
    # Adapter.
    downsample: int = 4
    num_mel_bins: int = 128
    scales: WeightScales = field(default_factory=WeightScales)


PRESETS = {
    # Small enough for CI on a CPU, but every shape relation of the real model is kept
    # (attention width != model width in the encoder, GQA in the decoder), and the decoder
    # window (64 tokens = 5.1 s) is shorter than the long test clips so the ring is exercised.
    "tiny": Preset(
        name="tiny",
        enc_dim=64, enc_layers=2, enc_heads=4, enc_head_dim=32, enc_hidden=128,
        enc_window=750, enc_max_positions=4096,
        dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=32, hidden=192,
        vocab=2048, window=64, max_positions=131072,
    ),
    # The real Voxtral-Mini-4B-Realtime-2602 shapes (docs/model.md §1, §3-§5).
    "full": Preset(
        name="full",
        enc_dim=1280, enc_layers=32, enc_heads=32, enc_head_dim=64, enc_hidden=5120,
        enc_window=750, enc_max_positions=4096,
        dim=3072, n_layers=26, n_heads=32, n_kv_heads=8, head_dim=128, hidden=9216,
        vocab=131072, window=8192, max_positions=131072,
    ),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise SystemExit(f"error: unknown size {name!r}; expected one of {sorted(PRESETS)}")
    return PRESETS[name]


def rope_parameters() -> dict:
    return {"rope_type": "default", "rope_theta": ROPE_THETA}


def hf_config(p: Preset, attn_implementation: str = "eager"):
    """transformers' VoxtralRealtimeConfig for preset p."""
    from transformers import VoxtralRealtimeConfig

    audio_config = {
        "hidden_size": p.enc_dim,
        "intermediate_size": p.enc_hidden,
        "num_hidden_layers": p.enc_layers,
        "num_attention_heads": p.enc_heads,
        "head_dim": p.enc_head_dim,
        "num_mel_bins": p.num_mel_bins,
        "rms_norm_eps": NORM_EPS,
        "sliding_window": p.enc_window,
        "rope_parameters": rope_parameters(),
        "max_position_embeddings": p.enc_max_positions,
        "vocab_size": p.vocab,
        "hidden_act": "silu",
        "activation_function": "gelu",
    }
    text_config = {
        "vocab_size": p.vocab,
        "hidden_size": p.dim,
        "intermediate_size": p.hidden,
        "num_hidden_layers": p.n_layers,
        "num_attention_heads": p.n_heads,
        "num_key_value_heads": p.n_kv_heads,
        "head_dim": p.head_dim,
        "rms_norm_eps": NORM_EPS,
        "sliding_window": p.window,
        "max_position_embeddings": p.max_positions,
        "rope_parameters": rope_parameters(),
        "tie_word_embeddings": True,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
    }
    config = VoxtralRealtimeConfig(
        audio_config=audio_config,
        text_config=text_config,
        downsample_factor=p.downsample,
        audio_length_per_tok=8,
        default_num_delay_tokens=6,
        projector_hidden_act="gelu",
        tie_word_embeddings=True,
    )
    set_attn_implementation(config, attn_implementation)
    check_hf_config(config, p)
    return config


def set_attn_implementation(config, name: str) -> None:
    """Best effort: the attribute is a property with a setter in recent transformers."""
    for cfg in (config, getattr(config, "audio_config", None), getattr(config, "text_config", None)):
        if cfg is None:
            continue
        try:
            cfg._attn_implementation = name
        except Exception as exc:  # noqa: BLE001 - only a preference; from_pretrained sets it too
            print(f"warning: could not set _attn_implementation={name} on {type(cfg).__name__}: {exc}")


def check_hf_config(config, p: Preset) -> None:
    """Fail loudly if transformers silently changed a value we rely on."""
    a, t = config.audio_config, config.text_config
    expected = {
        "audio.hidden_size": (a.hidden_size, p.enc_dim),
        "audio.num_hidden_layers": (a.num_hidden_layers, p.enc_layers),
        "audio.num_attention_heads": (a.num_attention_heads, p.enc_heads),
        "audio.head_dim": (a.head_dim, p.enc_head_dim),
        "audio.sliding_window": (a.sliding_window, p.enc_window),
        "text.hidden_size": (t.hidden_size, p.dim),
        "text.num_hidden_layers": (t.num_hidden_layers, p.n_layers),
        "text.num_key_value_heads": (t.num_key_value_heads, p.n_kv_heads),
        "text.head_dim": (t.head_dim, p.head_dim),
        "text.sliding_window": (t.sliding_window, p.window),
        "text.vocab_size": (t.vocab_size, p.vocab),
        "downsample_factor": (config.downsample_factor, p.downsample),
    }
    bad = {k: v for k, v in expected.items() if v[0] != v[1]}
    if bad:
        raise SystemExit(f"error: VoxtralRealtimeConfig did not keep these values (got, wanted): {bad}")
    for name, cfg in (("audio", a), ("text", t)):
        theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta")
        if theta is not None and float(theta) != ROPE_THETA:
            raise SystemExit(f"error: {name} rope_theta is {theta}, expected {ROPE_THETA}")


def mistral_params(p: Preset) -> dict:
    """params.json in the official layout (same fields and order as the released file)."""
    return {
        "dim": p.dim,
        "n_layers": p.n_layers,
        "head_dim": p.head_dim,
        "hidden_dim": p.hidden,
        "n_heads": p.n_heads,
        "n_kv_heads": p.n_kv_heads,
        "use_biases": False,
        "causal": True,
        "rope_theta": ROPE_THETA,
        "norm_eps": NORM_EPS,
        "vocab_size": p.vocab,
        "model_parallel": 1,
        "tied_embeddings": True,
        "sliding_window": p.window,
        "model_max_length": p.max_positions,
        "multimodal": {
            "whisper_model_args": {
                "encoder_args": {
                    "audio_encoding_args": {
                        "sampling_rate": 16000,
                        "frame_rate": 12.5,
                        "num_mel_bins": p.num_mel_bins,
                        "hop_length": 160,
                        "window_size": 400,
                        "chunk_length_s": None,
                        "global_log_mel_max": 1.5,
                        "transcription_format": "streaming",
                    },
                    "dim": p.enc_dim,
                    "n_layers": p.enc_layers,
                    "head_dim": p.enc_head_dim,
                    "hidden_dim": p.enc_hidden,
                    "n_heads": p.enc_heads,
                    "vocab_size": p.vocab,
                    "n_kv_heads": p.enc_heads,
                    "use_biases": True,
                    "use_cache": False,
                    "rope_theta": ROPE_THETA,
                    "causal": True,
                    "norm_eps": NORM_EPS,
                    "pos_embed": "rope",
                    "max_source_positions": None,
                    "ffn_type": "swiglu",
                    "norm_type": "rms_norm",
                    "sliding_window": p.enc_window,
                },
                "downsample_args": {"downsample_factor": p.downsample},
            }
        },
        "ada_rms_norm_t_cond": True,
        "ada_rms_norm_t_cond_dim": ADA_T_COND_DIM,
    }


def expected_mistral_tensor_count(p: Preset) -> int:
    """711 for the real model: decoder 11/layer + embed + norm; encoder 13/layer + 4 conv + norm;
    adapter 2."""
    return 11 * p.n_layers + 2 + 13 * p.enc_layers + 5 + 2
