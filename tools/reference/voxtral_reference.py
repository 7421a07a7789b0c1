#!/usr/bin/env python3
"""Golden fixtures for voxrt from the transformers Voxtral Realtime reference (random weights).

Commands (details in README.md beside this file):
  make-model --size tiny|full --out DIR [--seed S]
      random-weight model in both checkpoint layouts: DIR/mistral/{params.json,
      consolidated.safetensors (BF16), tekken.json} and DIR/hf/ (transformers' save_pretrained,
      float32) + tekken.json
  golden --model DIR --audio WAV --delay-ms D --out FILE.safetensors [--device cpu|cuda]
      every stage of the reference on one 16 kHz mono WAV: mel, conv, encoder, adapter,
      free-running greedy tokens, teacher-forced logits / argmax / margins
  fixtures --out tests/data/tiny --audio-dir tests/data/audio
      make-model tiny (fixed seed) + golden for the standard cases, summary.json
  golden-stream --model DIR --audio WAV --delay-ms D --out FILE.safetensors [--device cpu|cuda]
      the reference in STREAMING mode (generate() fed a generator of per-chunk mel features, with and
      without the right-pad flush) next to its offline generate() on the same audio
  fixtures-stream --out tests/data/tiny/streaming --audio-dir tests/data/audio [--model tests/data/tiny]
      golden-stream for the standard streaming cases on the existing tiny model, summary.json

Needs torch, transformers (with models.voxtral_realtime), safetensors and numpy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import traceback
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TINY_SEED = 1234
# (audio file stem, delay in ms) for `fixtures`.
FIXTURE_CASES = [
    ("speech_short", 480),
    ("speech_short", 160),
    ("speech_short", 2400),
    ("speech_long", 480),
    ("odd_length", 480),
    ("speech_to_end", 480),
    ("jfk", 480),
    # stereo_44k.wav as voxrt hears it (16 kHz mono float, written by
    # `voxrt decode-audio tests/data/audio/stereo_44k.wav tests/data/audio/stereo_44k_heard.wav`):
    # the reference has no resampler, so the non-16 kHz stereo input is checked on these samples.
    ("stereo_44k_heard", 480),
]
# The mel features are the largest tensor; to keep tests/data/tiny small only these cases keep it.
FIXTURE_MEL_CASES = {"speech_short_480", "speech_long_480"}
FIXTURE_SIZE_BUDGET = 12 * 1024 * 1024


def require_stack() -> None:
    """Fail early, with the reason, when the reference stack is missing."""
    missing = []
    for module in ("numpy", "torch", "safetensors", "transformers"):
        try:
            __import__(module)
        except ImportError as exc:
            missing.append(f"{module} ({exc})")
    if missing:
        raise SystemExit("error: this tool needs " + ", ".join(missing) +
                         "; run it on the GPU machine (torch + transformers >= 5 with voxtral_realtime)")
    import transformers

    if not hasattr(transformers, "VoxtralRealtimeForConditionalGeneration"):
        raise SystemExit(f"error: transformers {transformers.__version__} has no VoxtralRealtime model")


# ---------------------------------------------------------------------------------------------
# make-model
# ---------------------------------------------------------------------------------------------

def make_model(size: str, out: Path, seed: int, device: str, hf_dtype: str, verify: bool) -> Path:
    import torch

    from ref_golden import set_determinism
    from ref_mistral import check_rope_layout, verify_mistral_checkpoint, write_mistral_checkpoint
    from ref_presets import get_preset, mistral_params
    from ref_tekken import write_tekken
    from ref_weights import build_random_model, count_parameters

    preset = get_preset(size)
    mistral_dir, hf_out = out / "mistral", out / "hf"
    mistral_dir.mkdir(parents=True, exist_ok=True)
    hf_out.mkdir(parents=True, exist_ok=True)
    set_determinism()

    print(f"building random {size} model (seed {seed}) on {device} ...")
    model = build_random_model(preset, seed, device)
    print(f"  {count_parameters(model):,} parameters")
    check_rope_layout(model, preset)

    # Mistral layout: params.json, tekken.json, consolidated.safetensors (BF16).
    write_json(mistral_dir / "params.json", mistral_params(preset))
    write_tekken(mistral_dir / "tekken.json", preset.vocab)
    names = write_mistral_checkpoint(model, preset, mistral_dir / "consolidated.safetensors")
    print(f"  wrote {len(names)} tensors to {mistral_dir / 'consolidated.safetensors'}")
    if verify:
        verify_mistral_checkpoint(model, preset, mistral_dir / "consolidated.safetensors")

    # HF layout: exactly what transformers' save_pretrained writes.
    if hf_dtype == "bf16":
        model = model.to(torch.bfloat16)  # exact: the weights are bf16 values; buffers are not saved
    save_hf(model, hf_out, force_shards=(size == "tiny"))
    shutil.copyfile(mistral_dir / "tekken.json", hf_out / "tekken.json")
    if verify:
        verify_hf_checkpoint(model, hf_out)

    write_json(out / "model_info.json", {
        "size": size,
        "seed": seed,
        "device": device,
        "hf_dtype": hf_dtype,
        "parameters": count_parameters(model),
        "mistral_tensors": len(names),
        "weight_scales": asdict(preset.scales),
        "transformers_version": __import__("transformers").__version__,
        "torch_version": torch.__version__,
    })
    print(f"model written to {out}")
    return out


def write_json(path: Path, data) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def save_hf(model, hf_out: Path, force_shards: bool) -> None:
    """model.save_pretrained; for the tiny model a small shard size forces >= 2 shards so that
    the C++ loader's index-file path is exercised."""
    for stale in list(hf_out.glob("model*.safetensors")) + list(hf_out.glob("model*.safetensors.index.json")):
        stale.unlink()
    max_shard_size: int | str = "5GB"
    if force_shards:
        sizes = [t.numel() * t.element_size() for t in unique_tensors(model)]
        max_shard_size = max(max(sizes), sum(sizes) // 3) + 1
    model.save_pretrained(str(hf_out), max_shard_size=max_shard_size, safe_serialization=True)
    shards = sorted(hf_out.glob("model*.safetensors"))
    index = hf_out / "model.safetensors.index.json"
    print(f"  wrote {len(shards)} HF shard(s) to {hf_out}" + (" + index" if index.is_file() else ""))
    if not shards:
        raise SystemExit(f"error: save_pretrained wrote no model*.safetensors in {hf_out}")
    if force_shards and (len(shards) < 2 or not index.is_file()):
        raise SystemExit(f"error: expected >= 2 shards and an index in {hf_out}, got {[s.name for s in shards]}")


def unique_tensors(model):
    seen = set()
    for t in model.state_dict().values():
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            yield t


def verify_hf_checkpoint(model, hf_out: Path) -> None:
    """Reloads the HF directory with from_pretrained and compares every tensor with the model."""
    import torch
    from transformers import VoxtralRealtimeForConditionalGeneration as Model

    try:
        reloaded = Model.from_pretrained(str(hf_out), dtype=torch.float32)
    except TypeError:
        reloaded = Model.from_pretrained(str(hf_out), torch_dtype=torch.float32)
    ours, theirs = model.state_dict(), reloaded.state_dict()
    if set(ours) != set(theirs):
        raise SystemExit(f"error: reloaded HF keys differ: {sorted(set(ours) ^ set(theirs))[:5]}")
    for name, t in ours.items():
        if not torch.equal(t.detach().float().cpu(), theirs[name].detach().float().cpu()):
            raise SystemExit(f"error: reloaded HF tensor {name} differs")
    print(f"verified {len(ours)} tensors reloaded from {hf_out}")


def cmd_make_model(args) -> None:
    require_stack()
    device = args.device or ("cuda" if args.size == "full" else "cpu")
    verify = args.verify if args.verify is not None else args.size == "tiny"
    make_model(args.size, Path(args.out), args.seed, device, args.hf_dtype, verify)


# ---------------------------------------------------------------------------------------------
# golden
# ---------------------------------------------------------------------------------------------

def default_logit_steps(model) -> int:
    """48 rows of logits for tiny models (small vocab), 4 for the full one (131072 x 4 B a row)."""
    return 48 if model.config.text_config.vocab_size <= 8192 else 4


def omitted_tensors(args) -> set[str]:
    """--omit a,b -> {"a", "b"}: tensors a golden file leaves out to stay small."""
    return {name for name in (args.omit or "").split(",") if name}


def cmd_golden(args) -> None:
    require_stack()
    from ref_golden import golden_case, load_reference_model, save_golden, set_determinism, summary_line

    set_determinism()
    model = load_reference_model(Path(args.model), args.device)
    steps = args.logit_steps if args.logit_steps is not None else default_logit_steps(model)
    omit = omitted_tensors(args)
    tensors, metadata, stats = golden_case(model, Path(args.audio), args.delay_ms, steps, omit)
    save_golden(Path(args.out), tensors, metadata)
    print(summary_line(stats))
    print(f"wrote {args.out}")


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------

def cmd_fixtures(args) -> None:
    require_stack()
    import torch

    from ref_golden import golden_case, load_reference_model, save_golden, set_determinism, summary_line

    out, audio_dir = Path(args.out), Path(args.audio_dir)
    wavs = {stem: audio_dir / f"{stem}.wav" for stem, _ in FIXTURE_CASES}
    missing = [str(p) for p in wavs.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"error: missing audio {missing}; run tools/make_test_audio.sh first")

    torch.manual_seed(0)
    make_model("tiny", out, args.seed, args.device, "fp32", verify=True)
    set_determinism()
    model = load_reference_model(out, args.device)

    golden_dir = out / "golden"
    golden_dir.mkdir(parents=True, exist_ok=True)
    cases = {}
    for stem, delay_ms in FIXTURE_CASES:
        case = f"{stem}_{delay_ms}"
        omit = set() if case in FIXTURE_MEL_CASES else {"mel"}
        tensors, metadata, stats = golden_case(model, wavs[stem], delay_ms, args.logit_steps, omit)
        save_golden(golden_dir / f"{case}.safetensors", tensors, metadata)
        print(summary_line(stats))
        cases[case] = stats

    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    write_json(golden_dir / "summary.json", {
        "model": {"size": "tiny", "seed": args.seed, "dir": "."},
        "device": args.device,
        "transformers_version": __import__("transformers").__version__,
        "torch_version": torch.__version__,
        "mel_only_in": sorted(FIXTURE_MEL_CASES),
        "cases": cases,
    })
    print(f"fixtures in {out}: {total / 1e6:.2f} MB")
    if total > FIXTURE_SIZE_BUDGET:
        print(f"warning: {out} is larger than {FIXTURE_SIZE_BUDGET / 1e6:.0f} MB; consider --logit-steps lower")
    bad = [c for c, s in cases.items() if s["tf_mismatches"]]
    if bad:
        print(f"warning: teacher-forced argmax differs from the free-running tokens in {bad} "
              f"(near-ties or a generate() bug; see tf_margin)")


# ---------------------------------------------------------------------------------------------
# golden-stream / fixtures-stream
# ---------------------------------------------------------------------------------------------

# (audio file stem, delay in ms) for `fixtures-stream`.
STREAM_CASES = [
    ("speech_short", 480),
    ("speech_short", 160),
    ("speech_short", 2400),
    ("speech_to_end", 480),
    ("jfk", 480),
    ("speech_long", 480),
]
# To keep tests/data/tiny/streaming under 3 MB: stream_mel only here; the long clips' audio is in
# their golden/ files (and the WAVs), so it is not stored twice.
STREAM_MEL_CASES = {"speech_short_480"}
STREAM_NO_AUDIO_CASES = {"jfk_480", "speech_long_480"}
STREAM_SIZE_BUDGET = 3 * 1000 * 1000


def cmd_golden_stream(args) -> None:
    require_stack()
    from ref_golden import load_reference_model, save_golden, set_determinism
    from ref_streaming import streaming_case, summary_line

    set_determinism()
    model = load_reference_model(Path(args.model), args.device)
    omit = omitted_tensors(args)
    tensors, metadata, stats = streaming_case(model, Path(args.audio), args.delay_ms, omit)
    save_golden(Path(args.out), tensors, metadata)
    print(summary_line(stats))
    print(f"wrote {args.out}")


def cmd_fixtures_stream(args) -> None:
    require_stack()
    import torch

    from ref_golden import load_reference_model, save_golden, set_determinism
    from ref_streaming import dump_reference_source, streaming_case, summary_line

    out, audio_dir = Path(args.out), Path(args.audio_dir)
    model_dir = Path(args.model) if args.model else out.parent
    golden_dir = Path(args.golden_dir) if args.golden_dir else model_dir / "golden"
    wavs = {stem: audio_dir / f"{stem}.wav" for stem, _ in STREAM_CASES}
    missing = [str(p) for p in wavs.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"error: missing audio {missing}; run tools/make_test_audio.sh first")

    set_determinism()
    model = load_reference_model(model_dir, args.device)  # the committed tiny model, not rebuilt
    out.mkdir(parents=True, exist_ok=True)
    if args.source_dump:
        dump_reference_source(Path(args.source_dump))
    cases = {}
    for stem, delay_ms in STREAM_CASES:
        case = f"{stem}_{delay_ms}"
        omit = set() if case in STREAM_MEL_CASES else {"stream_mel"}
        if case in STREAM_NO_AUDIO_CASES:
            omit.add("audio")
        try:
            tensors, metadata, stats = streaming_case(model, wavs[stem], delay_ms, omit,
                                                      golden=golden_dir / f"{case}.safetensors")
        except Exception as exc:  # noqa: BLE001 - record it, go on with the other cases
            traceback.print_exc()
            print(f"error: {case}: {type(exc).__name__}: {exc}", flush=True)
            cases[case] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        save_golden(out / f"{case}.safetensors", tensors, metadata)
        print(summary_line(stats), flush=True)
        cases[case] = stats

    write_json(out / "summary.json", {
        "model": str(model_dir),
        "device": args.device,
        "transformers_version": __import__("transformers").__version__,
        "torch_version": torch.__version__,
        "stream_mel_only_in": sorted(STREAM_MEL_CASES),
        "audio_omitted_in": sorted(STREAM_NO_AUDIO_CASES),
        "cases": cases,
    })
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"streaming fixtures in {out}: {total / 1e6:.2f} MB")
    if total > STREAM_SIZE_BUDGET:
        print(f"warning: {out} is larger than {STREAM_SIZE_BUDGET / 1e6:.0f} MB")
    bad = [c for c, s in cases.items() if not s.get("tokens_equal_offline")]
    if bad:
        print(f"warning: streaming tokens differ from offline tokens (or the case failed) in {bad}")


# ---------------------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    mm = sub.add_parser("make-model", help="random-weight model in Mistral and HF layouts")
    mm.add_argument("--size", choices=["tiny", "full"], required=True)
    mm.add_argument("--out", required=True, help="output directory (gets mistral/ and hf/)")
    mm.add_argument("--seed", type=int, default=TINY_SEED)
    mm.add_argument("--device", default=None, help="where to build it (default: cpu tiny, cuda full)")
    mm.add_argument("--hf-dtype", choices=["fp32", "bf16"], default="fp32",
                    help="dtype of the HF files (both exact; bf16 halves the full model's 17.7 GB)")
    mm.add_argument("--verify", dest="verify", action="store_true", default=None,
                    help="read both checkpoints back and compare (default: on for tiny)")
    mm.add_argument("--no-verify", dest="verify", action="store_false")
    mm.set_defaults(func=cmd_make_model)

    g = sub.add_parser("golden", help="record every reference stage for one WAV")
    g.add_argument("--model", required=True, help="make-model output directory (or its hf/)")
    g.add_argument("--audio", required=True, help="16 kHz mono 16-bit WAV")
    g.add_argument("--delay-ms", type=int, default=480)
    g.add_argument("--out", required=True, help="output .safetensors")
    g.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    g.add_argument("--logit-steps", type=int, default=None, help="rows of tf_logits (default 48 tiny, 4 full)")
    g.add_argument("--omit", default="", help="comma-separated tensor names not to store (e.g. mel)")
    g.set_defaults(func=cmd_golden)

    f = sub.add_parser("fixtures", help="tiny model + golden files for the standard test cases")
    f.add_argument("--out", required=True, help="e.g. tests/data/tiny")
    f.add_argument("--audio-dir", required=True, help="e.g. tests/data/audio")
    f.add_argument("--seed", type=int, default=TINY_SEED)
    f.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    f.add_argument("--logit-steps", type=int, default=48)
    f.set_defaults(func=cmd_fixtures)

    gs = sub.add_parser("golden-stream", help="the reference in streaming mode (generate() with a chunk generator)")
    gs.add_argument("--model", required=True, help="make-model output directory (or its hf/)")
    gs.add_argument("--audio", required=True, help="16 kHz mono 16-bit WAV")
    gs.add_argument("--delay-ms", type=int, default=480)
    gs.add_argument("--out", required=True, help="output .safetensors")
    gs.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    gs.add_argument("--omit", default="", help="comma-separated tensor names not to store (e.g. stream_mel,audio)")
    gs.set_defaults(func=cmd_golden_stream)

    fs = sub.add_parser("fixtures-stream", help="streaming golden files for the standard cases (existing tiny model)")
    fs.add_argument("--out", required=True, help="e.g. tests/data/tiny/streaming")
    fs.add_argument("--audio-dir", required=True, help="e.g. tests/data/audio")
    fs.add_argument("--model", default=None, help="model directory (default: the parent of --out)")
    fs.add_argument("--golden-dir", default=None, help="offline golden files to cross-check (default MODEL/golden)")
    fs.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    fs.add_argument("--source-dump", default=None, help="write the installed transformers' streaming code here")
    fs.set_defaults(func=cmd_fixtures_stream)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
