#!/usr/bin/python3
"""Tables of the DiLoCo/GASLoC study (docs/RESULTS.md, issue 14) from a sweep's run directories.

Usage: /usr/bin/python3 scripts/study-gasloc.py [SWEEP_DIR]   (default runs/sweeps/gasloc)
Prints, per point: the final validation loss of the evaluation weights (the average model;
DiLoCo's anchor), the range of the replicas' own losses and the relative consensus distance at
the last evaluation, bytes rank 0 sent per round (the mean over the logged round ends, which
include the trainer's small telemetry all-gather), the gap to DiLoCo and to gossip on the same
topology at H = 1 (the gasloc-TOPOLOGY-h1* points); then the largest relative difference between
the complete graph's and DiLoCo's logged losses.
"""
import json
import os
import sys


def read(path):
    with open(os.path.join(path, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "runs/sweeps/gasloc"
    points = sorted(p for p in os.listdir(root) if os.path.isfile(os.path.join(root, p, "metrics.jsonl")))
    runs = {p: read(os.path.join(root, p)) for p in points}

    def final_val(lines):
        v = [j for j in lines if "val_loss" in j]
        return v[-1] if v else None

    ref = final_val(runs.get("diloco-h20", [])) if "diloco-h20" in runs else None
    print("| point | steps | final val (average model) | replicas' own val at the end | consensus distance (relative) | MB sent per round by rank 0 | vs diloco-h20 | vs gossip, same topology |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for p in points:
        lines = runs[p]
        steps = [j for j in lines if "loss" in j]
        fv = final_val(lines)
        if fv is None:
            continue
        reps = fv.get("val_loss_replicas")
        rep = f"{min(reps):.4f} to {max(reps):.4f}" if reps else "= average"
        cd = fv.get("optim", {}).get("consensus_distance_relative")
        cds = f"{cd:.3g}" if cd is not None else "0"
        ends = [j for j in steps if j.get("optim", {}).get("round_end") == 1]
        per_round = [j["bytes_sent"] for j in ends] or [j["bytes_sent"] for j in steps]
        # A logged round end also carries the telemetry all-gather (tens of bytes).
        mb = sum(per_round) / len(per_round) / 1e6
        gap = f"{100 * (fv['val_loss'] / ref['val_loss'] - 1):+.2f}%" if ref else "-"
        topo = None
        for t in ("one_peer", "ring"):
            if p.startswith("gasloc-" + t + "-h1"):
                topo = "gossip-" + t + "-h1"
        g = final_val(runs[topo]) if topo in runs else None
        vs_g = f"{100 * (fv['val_loss'] / g['val_loss'] - 1):+.2f}%" if g else "-"
        print(f"| {p} | {len(steps) and steps[-1]['step']} | {fv['val_loss']:.4f} | {rep} | {cds} | {mb:.2f} | {gap} | {vs_g} |")

    if "diloco-h20" in runs and "gasloc-complete-h20" in runs:
        a, b = runs["diloco-h20"], runs["gasloc-complete-h20"]
        worst, n, same = 0.0, 0, 0
        for key in ("loss", "val_loss"):
            xa = [j[key] for j in a if key in j]
            xb = [j[key] for j in b if key in j]
            for u, v in zip(xa, xb):
                worst = max(worst, abs(u - v) / abs(u))
                same += u == v
                n += 1
        print(f"\ncomplete graph vs diloco: {n} logged losses, {same} equal, largest relative difference {worst:.3g}")


if __name__ == "__main__":
    main()
