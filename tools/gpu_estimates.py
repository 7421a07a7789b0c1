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

  Live five-minute streams = min(memory bound, time bound), each end of the time bound's range:
    memory bound = floor((GPU memory - CUDA context 0.5 GB - the rest 11.74 GB) / cache a stream)
                   cache a stream: 0.640 GB bf16, 0.333 GB fp8 (reserved for 300 s); the rest: the
                   weights (8.84 GB) and the passes' working memory, as measured beside the caches
                   on the H200 and the H100 (memory.filled_bytes - memory.cache_total_bytes)
    time bound   = the largest n with  step(n) = step_1 + (n - 1) x per_stream <= 80 ms
                   step_1: the GPU's batch-1 step, both ends of its range (two-part and proportional)
                   per_stream_H200 = (busy_H200 - 4.97 ms) / (n_H200 - 1): the H200's marginal time
                   of a stream, from its loop's busy time per 80 ms step (busy_ms_per_step) at the
                   count measured to hold: bf16 (79.65 - 4.97) / 199 = 0.375 ms (200 streams,
                   2026-12-04T130802Z), fp8 (79.70 - 4.97) / 127 = 0.588 ms (128 streams,
                   2026-12-03T193023Z; 176 did not hold). fp8's step_1 is taken as bf16's (a batch-1
                   step reads the weights and little else), and its larger per_stream is measured,
                   not derived: fp8 attention is bound by its instructions, not its bytes
                   (bench/results/2026-12-04-issue13-closing.txt).
                   per_stream_GPU = per_stream_H200 x stream_floor_GPU / stream_floor_H200, with
                   stream_floor = max(s / BW, f / R): the floor of a stream's marginal work, split
                   into bytes and FLOPs by the records (s: the caches a stream's step reads, 0.596
                   GB bf16 / 0.298 GB fp8, from rounds.floor_bytes at 200 and 100 streams; f: its
                   FLOPs, 14.6 GFLOP, rounds.floor_flops / streams). That is bandwidth-bound on every
                   GPU here, so the ratio is BW_H200 / BW_GPU; the cruder max(BW ratio, R ratio)
                   would charge the A10G its tensor ratio (14.1 against 8.0) for work it does not
                   do at that rate.
                   The busy time is saturation, not the work of a step (src/bench/streams_bench.cpp:
                   with arrivals spread over the step, rounds run back to back and busy nears 80 ms
                   at any load that keeps the loop running: the H200 read 79.7 at 128 bf16 too), so
                   per_stream_H200 is an upper figure: the H200's own rounds' fit, fixed + n x
                   ms_per_stream a round, gives 0.317-0.335 ms a stream. The H200's row is 200 by
                   construction; its fit puts it at 239-252 (memory: 216).
  The H100 check (same tree, 2026-12-05T16{4543,5104}Z ...streams100-issue34-close-main.json):
  the model gives its step of 100 streams 59.1-60.4 ms (per_stream 0.538 ms) and a time bound of
  136-138. Its measured busy time, 79.6-79.7 ms a step, is saturation (7.5 rounds a step of 13
  streams each), not that work; its rounds' fit gives one round of 100 streams 62.7-63.9 ms
  (2.45-2.66 + 100 x 0.600-0.614), so the model is 4-8 % low there, and its rounds' fit puts the
  time bound at 130-133 (80 ms / ms_per_stream) against the model's 136-138. The 100 streams
  measured (what 70 GB of caches held) kept real time with lag max 37-43 ms in these two runs (44
  ms over the eight runs of three trees in bench/results/2026-12-05-issue34-closing.txt). The per-stream time scaled 1.81x from the H200
  to the H100 by the two fits on the same tree (0.335 -> 0.607 ms) against the bandwidth ratio's
  1.43x: the model may be optimistic where bandwidth is much lower. sm_80 and sm_86 (A100, A10G)
  convert fp8 in software (the same values, more instructions): their fp8 figures are the least
  certain.
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
# streams, its fp8 200 run (the fp8 bytes; it did not keep real time), the fp8 128 that held (its
# busy time; 176 did not: T132410Z-cuda-streams176-300s-fp8-closing.json), the H100's 100 bf16
# streams (with the H200's 200, the weights and a stream's bytes of the floor model) and, for the
# H100 check, its second run of the same tree; the H200's 200 on that tree (2026-12-05) as a
# cross-check of the busy time.
H200_PASSES = "2026-12-04T172220Z-cuda-steps-issue15.json"
H200_BF16_STREAMS = "2026-12-04T130802Z-cuda-streams200-300s-bf16-closing.json"
H200_FP8_STREAMS = "2026-12-04T131131Z-cuda-streams200-300s-fp8-closing.json"
H200_FP8_HELD = "2026-12-03T193023Z-cuda-streams128-300s-fp8-one-chain.json"
H100_BF16_STREAMS = "2026-12-05T164543Z-cuda-streams100-issue34-close-main.json"
H100_BF16_STREAMS_2 = "2026-12-05T165104Z-cuda-streams100-issue34-close-main.json"
H200_BF16_STREAMS_1205 = "2026-12-05T110730Z-cuda-streams200-issue34-main.json"
# Not in JSON: the H100's batch-1 passes (main, three runs: 2026-12-05-issue34-closing.txt, point 1).
H100_ENCODER_MS = (2.249 + 2.213 + 2.269) / 3
H100_DECODER_MS = (3.611 + 3.608 + 3.636) / 3


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
    f128, h100s, s200b = load(H200_FP8_HELD), [s100, load(H100_BF16_STREAMS_2)], load(H200_BF16_STREAMS_1205)
    for r in (s100, f200, f128, h100s[1], s200b):
        assert r["stream_seconds"] == s200["stream_seconds"], "streams records of different lengths"
    for r in (s200, f128, s200b, *h100s):
        assert r["within_real_time"], "a record of streams that did not hold"
    assert f128["memory"]["cache_bytes_per_stream"] == f200["memory"]["cache_bytes_per_stream"], "not fp8"
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
        "h200_bf16_held": n2, "h200_bf16_busy": s200["busy_ms_per_step"],
        "h200_bf16_lag_max": s200["lag_ms"]["max"],
        "h200_bf16_fit": s200["rounds"]["fit"], "h200_bf16_1205": s200b,
        "h200_fp8_held": f128["streams"], "h200_fp8_busy": f128["busy_ms_per_step"],
        "h100": h100s,
        "h100_bf16_measured": n1,
        "stream_seconds": s200["stream_seconds"],
    }


def stream_floor_ms(s_bytes, x, bw, tf):
    """The floor of a stream's marginal work in a step: its caches' bytes or its FLOPs."""
    return max(s_bytes / (bw * 1e9), x["flops_per_stream"] / (tf * 1e12)) * 1e3


def time_bound(step_1, per_stream):
    """The largest n with step_1 + (n - 1) x per_stream <= 80 ms (0 when one stream does not fit)."""
    return 0 if step_1 > STEP_MS else 1 + math.floor((STEP_MS - step_1) / per_stream + 1e-9)


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
    # The H200's marginal time of a stream: its loop's busy time a step at the count that held,
    # less its batch-1 step, over the streams beyond the first (fp8: bf16's batch-1 step).
    ps0_bf16 = (x["h200_bf16_busy"] - t0) / (x["h200_bf16_held"] - 1)
    ps0_fp8 = (x["h200_fp8_busy"] - t0) / (x["h200_fp8_held"] - 1)
    sf0_bf16, sf0_fp8 = stream_floor_ms(x["s_bf16"], x, bw0, tf0), stream_floor_ms(x["s_fp8"], x, bw0, tf0)
    rows = []
    for name, sm, gb, bw, tf, mib in GPUS:
        f1 = floor1(bw, tf)
        r = {"name": name, "sm": sm, "gb": gb, "bw": bw, "tf": tf, "mib": mib,
             "floor1_ms": f1, "prop_ms": t0 * f1 / floor1(bw0, tf0), "twopart_ms": a + b * f1,
             "mem_bf16": memory_bound(mib, x["cache_bf16"], x), "mem_fp8": memory_bound(mib, x["cache_fp8"], x),
             "ps_bf16": ps0_bf16 * stream_floor_ms(x["s_bf16"], x, bw, tf) / sf0_bf16,
             "ps_fp8": ps0_fp8 * stream_floor_ms(x["s_fp8"], x, bw, tf) / sf0_fp8,
             "bw_bound": x["s_bf16"] / bw > x["flops_per_stream"] / (tf * 1e3)}
        ends = (r["twopart_ms"], r["prop_ms"])  # the step_1 range's ends: more streams at the lower
        for kind in ("bf16", "fp8"):
            r[f"time_{kind}"] = sorted(time_bound(t, r[f"ps_{kind}"]) for t in ends)
            r[f"n_{kind}"] = [min(r[f"mem_{kind}"], n) for n in r[f"time_{kind}"]]
        rows.append(r)
    return rows, {"t0": t0, "t100": t100, "a": a, "b": b, "ps0_bf16": ps0_bf16, "ps0_fp8": ps0_fp8}


def h100_check(rows, k, x):
    """The model's step of 100 streams on the H100 against what its two records of that load say."""
    r = next(r for r in rows if r["name"].startswith("H100"))
    n = x["h100_bf16_measured"]
    model = sorted(t + (n - 1) * r["ps_bf16"] for t in (r["twopart_ms"], r["prop_ms"]))
    rec = x["h100"]
    fit = [j["rounds"]["fit"] for j in rec]
    return {
        "n": n, "per_stream": r["ps_bf16"], "model_step": model, "model_bound": r["time_bf16"],
        "busy": sorted(j["busy_ms_per_step"] for j in rec),
        "fit_round": sorted(f["fixed_ms"] + n * f["ms_per_stream"] for f in fit),
        "fit_slope": sorted(f["ms_per_stream"] for f in fit),
        "fit_fixed": sorted(f["fixed_ms"] for f in fit),
        "fit_full": sorted(f["streams_per_step_at_full"] for f in fit),
        "rounds_per_step": sorted(j["rounds"]["count"] / (j["measure_seconds"] * 1e3 / j["step_ms"]) for j in rec),
        "round_streams_p50": sorted(j["rounds"]["streams"]["p50"] for j in rec),
        "round_ms_p50": sorted(j["rounds"]["ms"]["p50"] for j in rec),
        "lag_max": sorted(j["lag_ms"]["max"] for j in rec),
    }


def ms(v):
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def span(lo, hi):
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def table(rows, k, x):
    out = ["| GPU | memory | bandwidth | bf16 TF/s | batch-1 step (est.) | 5-min bf16 streams (est.: memory / time bound) | fp8 streams (est.: memory / time bound) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['name']} (sm_{r['sm']}) | {r['gb']} GB | {r['bw']:,} GB/s | {r['tf']:g} |"
        if r["name"] == "H200":
            out.append(head + f" **{k['t0']:.2f} ms measured** (encoder {x['h200_encoder_ms']:.2f} + decoder {x['h200_decoder_ms']:.2f})"
                       f" | **{x['h200_bf16_held']} measured** (memory {r['mem_bf16']})"
                       f" | **{x['h200_fp8_held']} measured** (176 not; memory {r['mem_fp8']}) |")
            continue
        lo, hi = sorted((r["twopart_ms"], r["prop_ms"]))
        step = f"{ms(lo)}-{ms(hi)} ms"
        if r["name"].startswith("H100"):
            step += f" (measured {k['t100']:.2f})"
        bf16 = f"{span(*r['n_bf16'])} ({r['mem_bf16']} / {span(*r['time_bf16'])})"
        if r["name"].startswith("H100"):
            bf16 += f"; measured: {x['h100_bf16_measured']} held (70 GB of caches)"
        fp8 = f"{span(*r['n_fp8'])} ({r['mem_fp8']} / {span(*r['time_fp8'])})"
        if r["sm"] in (80, 86):
            fp8 += ", fp8 emulated"
        out.append(head + f" {step} | {bf16} | {fp8} |")
    return "\n".join(out)


def details(rows, k, x):
    c = h100_check(rows, k, x)
    f0, b2 = x["h200_bf16_fit"], x["h200_bf16_1205"]
    rng = lambda v, fmt="{:.1f}": "-".join(dict.fromkeys(fmt.format(e) for e in (v[0], v[-1])))
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
        f"  H200 streams: {x['h200_bf16_held']} bf16 held (lag max {x['h200_bf16_lag_max']:.1f} ms), busy {x['h200_bf16_busy']:.2f} ms a step"
        f" ({H200_BF16_STREAMS}; 2026-12-05's tree: busy {b2['busy_ms_per_step']:.2f}, {H200_BF16_STREAMS_1205});"
        f" {x['h200_fp8_held']} fp8 held, busy {x['h200_fp8_busy']:.2f} ms ({H200_FP8_HELD})",
        f"  H200 rounds' fit at 200 bf16: {f0['fixed_ms']:.2f} + n x {f0['ms_per_stream']:.3f} ms a round"
        f" (2026-12-05's tree: {b2['rounds']['fit']['fixed_ms']:.2f} + n x {b2['rounds']['fit']['ms_per_stream']:.3f});"
        f" 80 ms / ms_per_stream {f0['streams_per_step_at_full']:.0f} ({b2['rounds']['fit']['streams_per_step_at_full']:.0f})",
        f"  H200 copy rate measured by the bench: {x['h200_copy_GBps']:.0f} GB/s (data sheet 4800; the estimates use data-sheet rates throughout)",
        "Derived:",
        f"  two-part batch-1: a = {k['a']:.3f} ms, b = {k['b']:.3f}",
        f"  per_stream_H200 = (busy - {k['t0']:.3f}) / (n - 1): bf16 {k['ps0_bf16']:.4f} ms, fp8 {k['ps0_fp8']:.4f} ms;"
        f" per_stream_GPU = per_stream_H200 x stream_floor_GPU / stream_floor_H200",
        "GPU              floor1 ms  prop ms  2-part ms  stream ms bf16 / fp8  mem bf16  time bf16  mem fp8  time fp8",
    ]
    for r in rows:
        lines.append(f"  {r['name']:<15}{r['floor1_ms']:9.2f}{r['prop_ms']:9.2f}{r['twopart_ms']:11.2f}"
                     f"{r['ps_bf16']:12.3f} / {r['ps_fp8']:6.3f}{'' if r['bw_bound'] else ' (R)':4}"
                     f"{r['mem_bf16']:8d}{span(*r['time_bf16']):>11}{r['mem_fp8']:9d}{span(*r['time_fp8']):>10}")
    lines += [
        f"H100 check ({c['n']} bf16 streams; {H100_BF16_STREAMS}, {H100_BF16_STREAMS_2}):",
        f"  model: step({c['n']}) = step_1 + {c['n'] - 1} x {c['per_stream']:.4f} ms = {rng(c['model_step'])} ms; time bound {span(*c['model_bound'])}",
        f"  measured: busy {rng(c['busy'], '{:.2f}')} ms a step (saturation: {rng(c['rounds_per_step'])} rounds a step,"
        f" {rng(c['round_streams_p50'], '{:.0f}')} streams and {rng(c['round_ms_p50'], '{:.2f}')} ms a round p50), lag max {rng(c['lag_max'])} ms",
        f"  rounds' fit: {rng(c['fit_fixed'], '{:.2f}')} + n x {rng(c['fit_slope'], '{:.3f}')} ms a round;"
        f" one round of {c['n']}: {rng(c['fit_round'])} ms; 80 ms / ms_per_stream: {rng(c['fit_full'], '{:.0f}')}",
        f"  model / fit at {c['n']}: {rng(sorted(m / f for m in c['model_step'] for f in c['fit_round']), '{:.3f}')};"
        f" the per-stream time H100 / H200 by the fits on 2026-12-05's tree: {sum(c['fit_slope']) / 2 / b2['rounds']['fit']['ms_per_stream']:.2f}x,"
        f" by the model: {c['per_stream'] / k['ps0_bf16']:.2f}x",
    ]
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
