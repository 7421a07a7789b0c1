#!/usr/bin/env python3
"""What to expect on other GPUs: ESTIMATES from the bench's floor model, not measurements.

Prints the Markdown table of docs/deploy.md ("What one GPU holds"): for each GPU people run the
model on, the batch-1 step (one 80 ms audio position: one encoder pass plus one decoder pass of
one stream) and the live five-minute streams one GPU holds, with bf16 and with fp8 K/V caches,
estimated from the GPU's published memory size, memory bandwidth and dense bf16 tensor rate with
the floor model of `voxrt bench` (src/bench/benchmark.cpp, src/bench/streams_bench.cpp), scaled
from the H200's measured figures (bench/results/, read by this script). The H200 row gives the
measured figures.

  python3 tools/gpu_estimates.py            # the table (as pasted in docs/deploy.md)
  python3 tools/gpu_estimates.py --details  # the table, then every input and intermediate figure

Python 3 standard library only; run from anywhere (the records are found from this file's place).

The model (B: bytes a pass or a step reads, F: its FLOPs, BW: memory bandwidth, R: dense bf16
tensor rate, all from the data sheets below):

  floor(pass) = max(B / BW, F / R)                        the bench's floor of a pass or a step

  Batch-1 step, two estimates, given as a range:
    proportional: t = t_H200 x floor_gpu / floor_H200      the H200's measured share of its floor
                                                           carries over (t_H200 = 4.97 ms)
    two-part:     t = a + b x floor_gpu                    a fixed (latency) part and a part that
                                                           scales with the floor, fitted through the
                                                           H200 and the H100 (the same GH100 chip at
                                                           the same clocks, differing in memory
                                                           bandwidth): a = 2.91 ms, b = 1.09
  The proportional estimate for the H100 (7.12 ms) is 21 % above its measured 5.86 ms (which the
  two-part one meets by construction): the batch-1 passes are partly latency-bound
  (bench/results/2026-12-04-issue13-closing.txt), so the proportional figure is pessimistic where
  bandwidth is lower. The two-part one is optimistic on GPUs with fewer SMs or lower clocks (its
  fixed part was measured on 132 SMs at 1.98 GHz), and below sm_90 the engine runs its GEMM on
  mma.sync instead of Hopper's wgmma and launches without programmatic dependent launch
  (docs/cuda.md), which neither estimate sees.

  Live five-minute streams = min(memory bound, time bound):
    memory bound = floor((GPU memory - CUDA context 0.5 GB - the rest 11.74 GB) / cache a stream)
                   cache a stream: 0.640 GB bf16, 0.333 GB fp8 (reserved for 300 s); the rest: the
                   weights (8.84 GB) and the passes' working memory, as measured beside the caches
                   on the H200 and the H100 (memory.filled_bytes - memory.cache_total_bytes)
    time bound   = the largest n with  e x max((W + n x s) / BW, n x f / R) <= 80 ms
                   W: the weights a step reads (8.84 GB), s: the caches a stream's step reads
                   (0.596 GB bf16: the bench's floor counts five minutes of keys), f: a stream's FLOPs a step (14.6 GFLOP): the bench's
                   rounds.floor_bytes and floor_flops of its streams runs
                   e = 80 ms / floor_H200(200) = 3.0: the H200's 200 measured bf16 streams keep
                   within the 80 ms step with its loop busy the whole step, so e is the H200's time
                   for a step's work against that step's floor; it is assumed to carry over
                   fp8: the same, with s replaced by the bytes whose reads at that efficiency take
                   an fp8 stream's time, such that the H200 holds the 128 fp8 streams measured to
                   hold (on 2026-12-03's tree; 176 did not on 2026-12-04's): 0.93 GB against its 0.298 GB of caches, because fp8
                   attention runs no faster than bf16 (its kernel is bound by instructions, not
                   bytes: bench/results/2026-12-04-issue13-closing.txt)
  The H100 check: its time bound by this model is 135 bf16 streams; its own rounds' fit gave
  130-133 (streams_per_step_at_full), and 100 streams (what 70 GB of caches held) kept real time
  with lag max 44 ms (bench/results/2026-12-05-issue34-closing.txt). Where bandwidth is far lower
  (L4, A10G) the carried efficiency is likely pessimistic, as at batch 1; --details prints the time
  bound at the floor itself (e = 1), which no engine passes. sm_80 and sm_86 (A100, A10G) convert
  fp8 in software (the same values, more instructions): their fp8 figures are the least certain.
"""

import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
STEP_MS = 80.0  # one audio position
MIB = 1024 * 1024

# Published figures: memory (GB, the data sheet's), memory bandwidth (GB/s), dense bf16 tensor
# rate (TFLOP/s with fp32 accumulate, without 2:4 sparsity), and the memory the card reports
# (nvidia-smi's total in MiB, ECC on where it is on by default: what the engine can allocate from).
# Sources: NVIDIA's data sheets (A100 80GB SXM, H100 SXM, H200 SXM, L4, L40S), the Ada Lovelace
# architecture whitepaper (RTX 4090: 165.2 TF/s bf16 with fp32 accumulate, 330.4 with sparsity).
# The A10G (AWS G5) has no NVIDIA data sheet: 24 GB and 600 GB/s as AWS and the A10's data sheet
# give them; its tensor rate is the figure third-party spec tables give (~70 TF/s; the A10's data
# sheet says 125): the estimates below are bandwidth-bound and do not depend on it.
# Reported MiB: as nvidia-smi shows each card in public logs (A100 80GB SXM: 81920 MiB).
GPUS = [
    # name,              sm,  GB,  GB/s, TF/s,  MiB reported
    ("A10G",             86,  24,  600,   70.0,  23028),
    ("L4",               89,  24,  300,  121.0,  23034),
    ("RTX 4090",         89,  24, 1008,  165.2,  24564),
    ("L40S",             89,  48,  864,  362.0,  46068),
    ("A100 80GB SXM",    80,  80, 2039,  312.0,  81920),
    ("H100 80GB SXM",    90,  80, 3350,  989.0,  81559),
    ("H200",             90, 141, 4800,  989.0, 143771),
]
CONTEXT_BYTES = 0.5e9  # the CUDA context and the runtime's own allocations: an assumption

# The measured records (bench/results/): the H200's batch-1 passes, its 200 bf16 five-minute
# streams, its fp8 200 run (the fp8 bytes; it did not keep real time), the H100's 100 bf16 streams
# (with the H200's 200, the weights and a stream's bytes of the floor model).
H200_PASSES = "2026-12-04T172220Z-cuda-steps-issue15.json"
H200_BF16_STREAMS = "2026-12-04T130802Z-cuda-streams200-300s-bf16-closing.json"
H200_FP8_STREAMS = "2026-12-04T131131Z-cuda-streams200-300s-fp8-closing.json"
H100_BF16_STREAMS = "2026-12-05T164543Z-cuda-streams100-issue34-close-main.json"
# Not in JSON: the H100's batch-1 passes (main, three runs: 2026-12-05-issue34-closing.txt, point 1)
# and the fp8 count that held on the H200 (2026-12-03-capacity-5min-one-chain.txt; 176 did not,
# T132410Z-cuda-streams176-300s-fp8-closing.json).
H100_ENCODER_MS = (2.249 + 2.213 + 2.269) / 3
H100_DECODER_MS = (3.611 + 3.608 + 3.636) / 3
H200_FP8_STREAMS_HELD = 128


def load(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


def pass_figure(r, key, old_key):
    return r[key] if key in r else r[old_key]  # the bench writes both; older records the old key only


def inputs():
    passes = load(H200_PASSES)
    enc = pass_figure(passes, "encoder_pass", "encoder_step")
    dec = pass_figure(passes, "decoder_pass", "decoder_step")
    s200, s100, f200 = load(H200_BF16_STREAMS), load(H100_BF16_STREAMS), load(H200_FP8_STREAMS)
    for r in (s200, s100, f200):
        assert r["stream_seconds"] == s200["stream_seconds"], "streams records of different lengths"
    # The step's floor bytes are W + n x s (weights once, each stream's caches once): two counts give both.
    n2, n1 = s200["streams"], s100["streams"]
    b2, b1 = s200["rounds"]["floor_bytes"], s100["rounds"]["floor_bytes"]
    s_bf16 = (b2 - b1) / (n2 - n1)
    weights = b2 - n2 * s_bf16
    s_fp8 = (f200["rounds"]["floor_bytes"] - weights) / f200["streams"]
    rest = [r["memory"]["filled_bytes"] - r["memory"]["cache_total_bytes"] for r in (s200, s100)]
    return {
        "h200_encoder_ms": enc["p50_ms"], "h200_decoder_ms": dec["p50_ms"],
        "pass_bytes": enc["bytes"] + dec["bytes"], "decoder_keys": dec.get("keys"),
        "h200_copy_GBps": passes["ceilings"]["copy_GBps"],
        "weights": weights, "s_bf16": s_bf16, "s_fp8": s_fp8,
        "flops_per_stream": s200["rounds"]["floor_flops"] / n2,
        "cache_bf16": s200["memory"]["cache_bytes_per_stream"],
        "cache_fp8": f200["memory"]["cache_bytes_per_stream"],
        "rest_bytes": max(rest),
        "h200_bf16_held": n2 if s200["within_real_time"] else None,
        "h200_bf16_lag_max": s200["lag_ms"]["max"],
        "h100_bf16_measured": n1 if s100["within_real_time"] else None,
        "h100_fit_full": s100["rounds"]["fit"]["streams_per_step_at_full"],
        "stream_seconds": s200["stream_seconds"],
    }


def step_floor_ms(n, per_stream, x, bw, tf):
    return max((x["weights"] + n * per_stream) / (bw * 1e9), n * x["flops_per_stream"] / (tf * 1e12)) * 1e3


def time_bound(per_stream, e, x, bw, tf):
    """The largest n with e x floor(n) <= 80 ms (0 when one stream does not fit)."""
    n = 0
    while e * step_floor_ms(n + 1, per_stream, x, bw, tf) <= STEP_MS:
        n += 1
    return n


def memory_bound(mib, cache_per_stream, x):
    return max(0, math.floor((mib * MIB - CONTEXT_BYTES - x["rest_bytes"]) / cache_per_stream))


def estimates(x):
    h200 = next(g for g in GPUS if g[0] == "H200")
    _, _, _, bw0, tf0, _ = h200
    t0 = x["h200_encoder_ms"] + x["h200_decoder_ms"]
    b1_flops = x["flops_per_stream"]  # a batch-1 step's FLOPs: one stream's
    floor1 = lambda bw, tf: max(x["pass_bytes"] / (bw * 1e9), b1_flops / (tf * 1e12)) * 1e3
    h100 = next(g for g in GPUS if g[0].startswith("H100"))
    t100 = H100_ENCODER_MS + H100_DECODER_MS
    b = (t100 - t0) / (floor1(h100[3], h100[4]) - floor1(bw0, tf0))
    a = t0 - b * floor1(bw0, tf0)
    e_bf16 = STEP_MS / step_floor_ms(x["h200_bf16_held"], x["s_bf16"], x, bw0, tf0)
    # An fp8 stream's time: the bytes whose reads would take it at the bf16 efficiency, such that
    # the H200 holds the fp8 count measured (its attention is bound by instructions, not bytes).
    s_fp8_time = (STEP_MS / e_bf16 * 1e-3 * bw0 * 1e9 - x["weights"]) / H200_FP8_STREAMS_HELD
    rows = []
    for name, sm, gb, bw, tf, mib in GPUS:
        f1 = floor1(bw, tf)
        rows.append({
            "name": name, "sm": sm, "gb": gb, "bw": bw, "tf": tf, "mib": mib,
            "floor1_ms": f1, "prop_ms": t0 * f1 / floor1(bw0, tf0), "twopart_ms": a + b * f1,
            "mem_bf16": memory_bound(mib, x["cache_bf16"], x), "time_bf16": time_bound(x["s_bf16"], e_bf16, x, bw, tf),
            "mem_fp8": memory_bound(mib, x["cache_fp8"], x), "time_fp8": time_bound(s_fp8_time, e_bf16, x, bw, tf),
            "floor_time_bf16": time_bound(x["s_bf16"], 1.0, x, bw, tf),
        })
    return rows, {"t0": t0, "t100": t100, "a": a, "b": b, "e_bf16": e_bf16, "s_fp8_time": s_fp8_time}


def ms(v):
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def table(rows, k, x):
    out = ["| GPU | memory | bandwidth | bf16 TF/s | batch-1 step (est.) | 5-min bf16 streams (est.: memory / time bound) | fp8 streams (est.: memory / time bound) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['name']} (sm_{r['sm']}) | {r['gb']} GB | {r['bw']:,} GB/s | {r['tf']:g} |"
        if r["name"] == "H200":
            out.append(head + f" **{k['t0']:.2f} ms measured** (encoder {x['h200_encoder_ms']:.2f} + decoder {x['h200_decoder_ms']:.2f})"
                       f" | **{x['h200_bf16_held']} measured** (memory {r['mem_bf16']})"
                       f" | **{H200_FP8_STREAMS_HELD} measured** (176 not; memory {r['mem_fp8']}) |")
            continue
        lo, hi = sorted((r["twopart_ms"], r["prop_ms"]))
        step = f"{ms(lo)}-{ms(hi)} ms"
        if r["name"].startswith("H100"):
            step += f" (measured {k['t100']:.2f})"
        bf16 = f"{min(r['mem_bf16'], r['time_bf16'])} ({r['mem_bf16']} / {r['time_bf16']})"
        if r["name"].startswith("H100"):
            bf16 += f"; measured: {x['h100_bf16_measured']} held (70 GB of caches)"
        fp8 = f"{min(r['mem_fp8'], r['time_fp8'])} ({r['mem_fp8']} / {r['time_fp8']})"
        if r["sm"] in (80, 86):
            fp8 += ", fp8 emulated"
        out.append(head + f" {step} | {bf16} | {fp8} |")
    return "\n".join(out)


def details(rows, k, x):
    lines = [
        "",
        "Inputs (bench/results/):",
        f"  H200 batch-1 p50: encoder {x['h200_encoder_ms']:.3f} + decoder {x['h200_decoder_ms']:.3f} ms"
        f" ({x['decoder_keys']} keys) = {k['t0']:.3f} ms; bytes read {x['pass_bytes'] / 1e9:.3f} GB ({H200_PASSES})",
        f"  H100 batch-1 p50: {H100_ENCODER_MS:.3f} + {H100_DECODER_MS:.3f} = {k['t100']:.3f} ms (2026-12-05-issue34-closing.txt)",
        f"  weights a step reads W = {x['weights'] / 1e9:.3f} GB; a stream's caches read s = {x['s_bf16'] / 1e9:.4f} GB bf16,"
        f" {x['s_fp8'] / 1e9:.4f} GB fp8 at {x['stream_seconds']:.0f} s; f = {x['flops_per_stream'] / 1e9:.2f} GFLOP a stream a step",
        f"  caches reserved a stream: {x['cache_bf16'] / 1e9:.3f} GB bf16, {x['cache_fp8'] / 1e9:.3f} GB fp8;"
        f" the rest (weights + working memory) {x['rest_bytes'] / 1e9:.2f} GB; context {CONTEXT_BYTES / 1e9:.1f} GB (assumed)",
        f"  H200 streams: {x['h200_bf16_held']} bf16 held (lag max {x['h200_bf16_lag_max']:.1f} ms), {H200_FP8_STREAMS_HELD} fp8 held;"
        f" H100: {x['h100_bf16_measured']} bf16 held, its rounds' fit {x['h100_fit_full']:.0f} at full",
        f"  H200 copy rate measured by the bench: {x['h200_copy_GBps']:.0f} GB/s (data sheet 4800; the estimates use data-sheet rates throughout)",
        "Derived:",
        f"  two-part batch-1: a = {k['a']:.3f} ms, b = {k['b']:.3f}; e (step time / step floor) {k['e_bf16']:.2f};"
        f" an fp8 stream's time as {k['s_fp8_time'] / 1e9:.3f} GB of reads (its caches: {x['s_fp8'] / 1e9:.3f} GB)",
        "GPU              floor1 ms  prop ms  2-part ms  mem bf16  time bf16  at floor  mem fp8  time fp8",
    ]
    for r in rows:
        lines.append(f"  {r['name']:<15}{r['floor1_ms']:9.2f}{r['prop_ms']:9.2f}{r['twopart_ms']:11.2f}"
                     f"{r['mem_bf16']:10d}{r['time_bf16']:11d}{r['floor_time_bf16']:10d}{r['mem_fp8']:9d}{r['time_fp8']:10d}")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--details", action="store_true", help="print every input and intermediate figure after the table")
    args = p.parse_args()
    x = inputs()
    rows, k = estimates(x)
    print(table(rows, k, x))
    if args.details:
        print(details(rows, k, x))
    return 0


if __name__ == "__main__":
    sys.exit(main())
