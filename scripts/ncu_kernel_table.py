#!/usr/bin/env python3
"""One line per kernel from an `ncu --print-summary per-kernel` report (stdin): its name without
namespaces, grid x block, how many launches were profiled, and the mean of gpu__time_duration.sum
(and of the DRAM throughput, when the report has it). Used by scripts/gpu_profile.sh.
--totals: the launches' total time per line as well, and first the sum of all of them
(scripts/gpu_profile_rounds.sh)."""
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the table quietly

HEADER = re.compile(r"^\s+(?:void )?(?P<name>\S.*?)\(.*\) \((?P<grid>[0-9, ]+)\)x\((?P<block>[0-9, ]+)\),"
                    r".*Invocations (?P<n>\d+)")
METRIC = re.compile(r"^\s+(?P<metric>gpu__time_duration\.sum|dram__throughput\.avg\.pct_of_peak_sustained_elapsed)"
                    r"\s+(?P<unit>\S+)\s+[\d.,]+\s+[\d.,]+\s+(?P<avg>[\d.,]+)")
# ncu writes the anonymous namespace as <unnamed>, and cuts long names at the front.
NAMESPACES = re.compile(r"voxrt::|cuda::|\(anonymous namespace\)::|<?unnamed>::")


def main() -> int:
    rows = []
    for line in sys.stdin:
        m = HEADER.match(line)
        if m:
            rows.append({"name": NAMESPACES.sub("", m["name"]), "grid": m["grid"].replace(" ", ""),
                         "block": m["block"].split(",")[0], "n": int(m["n"])})
            continue
        m = METRIC.match(line)
        if m and rows:
            avg = float(m["avg"].replace(",", ""))
            if m["metric"].startswith("gpu__time"):
                rows[-1]["us"] = avg * 1000 if m["unit"] == "ms" else avg
            else:
                rows[-1]["dram"] = avg
    if not rows:
        print("no per-kernel summary in the report (did ncu run?)", file=sys.stderr)
        return 1
    totals = "--totals" in sys.argv[1:]
    rows.sort(key=lambda r: -r.get("us", 0) * r["n"])
    if totals:
        grand = sum(r.get("us", 0) * r["n"] for r in rows)
        print(f"all {sum(r['n'] for r in rows)} launches: {grand / 1000:.3f} ms of GPU time")
    for r in rows:
        dram = f"  DRAM {r['dram']:5.1f} %" if "dram" in r else ""
        sum_col = f" {r.get('us', 0) * r['n'] / 1000:9.3f} ms" if totals else ""
        print(f"{r['name'][:58]:58s} ({r['grid']:>9s}) x{r['block']:<5s} n={r['n']:<4d} {r.get('us', 0):9.2f} us{sum_col}{dram}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
