#!/usr/bin/env python3
"""Medians of scripts/bench-compression.sh's repeated runs: for every `bench comm` cell (ranks,
dtype, compression, op, size) the median time and busbw over the runs, and for every training
step cell (ranks, network, compression) the median of the runs' median step times. Standard
library only. Usage: scripts/summarize-compression.py OUT_DIR"""
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


def step_cells(out):
    cells = {}
    for path in sorted(glob.glob(os.path.join(out, "step-*-run*.txt"))):
        m = re.match(r"step-np(\d+)-(\w+)-(\w+)-run\d+\.txt$", os.path.basename(path))
        rows = [l for l in open(path) if l.startswith("| L")]
        if m and rows:
            step_ms = float(rows[-1].split("|")[12])
            cells.setdefault((int(m.group(1)), m.group(2), m.group(3)), []).append(step_ms)
    return cells


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


if __name__ == "__main__":
    main()
