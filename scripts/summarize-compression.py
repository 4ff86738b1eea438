#!/usr/bin/env python3
"""Medians of scripts/bench-compression.sh's repeated runs: for every `bench comm` cell (ranks,
dtype, compression, op, size) the median time and busbw over the runs, and for every training
step cell (ranks, network, compression) the median of the runs' median step times; then the
compressed time against the better of off and plain per cell, and adaptive against off per
training cell, paired by run number (the script runs each pair back to back). Standard library
only. Usage: scripts/summarize-compression.py OUT_DIR"""
import glob
import os
import re
import statistics
import sys


def comm_cells(out):
    cells = {}
    for path in sorted(glob.glob(os.path.join(out, "comm-*-run*.txt"))):
        m = re.match(r"comm-np(\d+)-(\w+)-(\w+)-run\d+\.txt$", os.path.basename(path))
        if not m:
            continue
        op = None
        for line in open(path):
            head = re.match(r"# (all_reduce|reduce_scatter|all_gather|all_to_all|sendrecv)$",
                            line.strip())
            if head:
                op = head.group(1)
                continue
            f = line.split()
            if op and len(f) >= 10 and f[0].isdigit():
                key = (int(m.group(1)), m.group(2), m.group(3), op, int(f[0]))
                cells.setdefault(key, []).append((float(f[5]) / 1000.0, float(f[7])))
    return cells


def step_runs(out):
    """{(ranks, network, compression): {run number: median step ms}}"""
    cells = {}
    for path in sorted(glob.glob(os.path.join(out, "step-*-run*.txt"))):
        m = re.match(r"step-np(\d+)-(\w+)-(\w+)-run(\d+)\.txt$", os.path.basename(path))
        rows = [l for l in open(path) if l.startswith("| L")]
        if m and rows:
            step_ms = float(rows[-1].split("|")[12])
            key = (int(m.group(1)), m.group(2), m.group(3))
            cells.setdefault(key, {})[int(m.group(4))] = step_ms
    return cells


def step_cells(out):
    return {k: [v[r] for r in sorted(v)] for k, v in step_runs(out).items()}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summarize-compression.py OUT_DIR")
    out = sys.argv[1]
    print("| ranks | dtype | compression | op | MB | runs | median ms | median busbw GB/s | "
          "busbw / 0.125 |")
    print("|---|---|---|---|--:|--:|--:|--:|--:|")
    for key, v in sorted(comm_cells(out).items()):
        np_, dtype, mode, op, size = key
        t = statistics.median(x[0] for x in v)
        bw = statistics.median(x[1] for x in v)
        print(f"| {np_} | {dtype} | {mode} | {op} | {size >> 20} | {len(v)} | {t:.1f} | "
              f"{bw:.3f} | {bw / 0.125:.0%} |")
    print()
    print("| ranks | network | compression | runs | median step ms | each run |")
    print("|---|---|---|--:|--:|---|")
    for key, v in sorted(step_cells(out).items()):
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(v)} | {statistics.median(v):.1f} | "
              f"{', '.join(f'{x:.1f}' for x in v)} |")
    print()
    print("| ranks | dtype | op | MB | on ms | best of off / plain ms | on vs best |")
    print("|---|---|---|--:|--:|--:|--:|")
    cells = {k: statistics.median(x[0] for x in v) for k, v in comm_cells(out).items()}
    for (np_, dtype, mode, op, size), t in sorted(cells.items()):
        if mode != "on":
            continue
        others = [cells[k] for k in ((np_, dtype, m, op, size) for m in ("off", "plain"))
                  if k in cells]
        if others:
            best = min(others)
            print(f"| {np_} | {dtype} | {op} | {size >> 20} | {t:.1f} | {best:.1f} | "
                  f"{best / t:.2f}x |")
    print()
    print("| ranks | network | pairs | adaptive - off, median of pairs ms | share of off's median |")
    print("|---|---|--:|--:|--:|")
    runs = step_runs(out)
    for (np_, where, mode), v in sorted(runs.items()):
        off = runs.get((np_, where, "off"))
        if mode != "adaptive" or not off:
            continue
        diffs = [v[r] - off[r] for r in sorted(v) if r in off]
        if diffs:
            d = statistics.median(diffs)
            print(f"| {np_} | {where} | {len(diffs)} | {d:+.1f} | "
                  f"{d / statistics.median(off.values()):+.1%} |")


if __name__ == "__main__":
    main()
