#!/usr/bin/python3
"""The SMET study's figures (docs/RESULTS.md, issue 13) from a sweep of dense AdamW, naive DST and
SMET (configs/studies/smet.json): per run, the final validation loss and its gap to the reference,
the loss spikes after topology updates, the regrown/old update-size ratio over the 10 steps after
each update, the median step time and the peak resident memory each rank logged, as a Markdown
table; and a PNG of the training loss with the update steps marked.

A spike is measured on the training loss paired with the reference run: every run sees the same
batches in the same order, so d(t) = loss(t) - reference loss(t) removes the batch-to-batch noise;
the spike after an update at step u is the largest d(t) over t in u+1..u+10 minus the mean of
d(t) over u-9..u (the reference's own figure is 0 by construction; the unpaired figure, the same
statistic on the raw loss, is given for the reference as the noise it hides).

Usage: /usr/bin/python3 scripts/study-smet.py SWEEP_DIR [--reference adamw] [--png OUT.png] [--runs A,B,...]
Needs Debian's python3-matplotlib for the PNG (the table needs only the standard library)."""
import argparse
import json
import os
import re
import statistics
import sys


def read_run(directory):
    steps, vals = {}, {}
    with open(os.path.join(directory, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if "loss" in j:
                steps[j["step"]] = j
            if "val_loss" in j:
                vals[j["step"]] = j["val_loss"]
    peaks = []
    log = os.path.join(directory, "train.log")
    if os.path.exists(log):
        with open(log) as f:
            peaks = [float(x) for x in re.findall(r"peak resident memory ([0-9.]+) MiB", f.read())]
    return steps, vals, peaks


def update_steps(steps):
    return sorted(s for s, j in steps.items() if j.get("optim", {}).get("topology_update") == 1)


def spike(steps, u, ref=None, window=10):
    d = lambda s: steps[s]["loss"] - (ref[s]["loss"] if ref else 0.0)
    ok = lambda s: s in steps and (ref is None or s in ref)
    before = [d(s) for s in range(u - window + 1, u + 1) if ok(s)]
    after = [d(s) for s in range(u + 1, u + window + 1) if ok(s)]
    if len(before) < window or len(after) < window:
        return None
    return max(after) - statistics.mean(before)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--reference", default="adamw")
    ap.add_argument("--png")
    ap.add_argument("--runs", help="comma-separated run names to include (default: all)")
    a = ap.parse_args()
    names = sorted(d for d in os.listdir(a.sweep)
                   if os.path.exists(os.path.join(a.sweep, d, "metrics.jsonl")))
    runs = {n: read_run(os.path.join(a.sweep, n)) for n in names}
    names = [n for n in names if runs[n][1]]  # evaluated at least once
    if a.runs:
        names = [n for n in names if n in a.runs.split(",")]
    if a.reference not in runs:
        sys.exit(f"study-smet.py: no run {a.reference} in {a.sweep}")
    updates = sorted({u for n in names for u in update_steps(runs[n][0])})
    ref_val = runs[a.reference][1]
    ref_last = ref_val[max(ref_val)]
    ref_steps = runs[a.reference][0]
    print("| run | final val loss | vs " + a.reference + " | spike after an update, paired with "
          + a.reference + ": largest (median) | unpaired: largest (median) | regrown/old update "
          "ratio, max in 10 steps after an update: largest (median) | median step s | peak "
          "resident MiB per rank |")
    print("|---|---|---|---|---|---|---|---|")
    for n in names:
        steps, vals, peaks = runs[n]
        last = max(vals)
        paired = [x for x in (spike(steps, u, ref_steps) for u in updates) if x is not None]
        spikes = [x for x in (spike(steps, u) for u in updates) if x is not None]
        ratios = []
        for u in updates:
            r = [steps[s]["optim"].get("regrown_update_ratio") for s in range(u + 1, u + 11)
                 if s in steps and "optim" in steps[s]]
            r = [x for x in r if x is not None]
            if r:
                ratios.append(max(r))
        times = [j["time_s"]["total"] for s, j in steps.items() if s > 10 and "time_s" in j]
        fmt = lambda xs: (f"{max(xs):.3f} ({statistics.median(xs):.3f})" if xs else "-")
        print(f"| {n} | {vals[last]:.4f} (step {last}) | {100 * (vals[last] / ref_last - 1):+.2f}% "
              f"| {fmt(paired)} | {fmt(spikes)} | {fmt(ratios)} | "
              f"{statistics.median(times):.3f} | {max(peaks) if peaks else float('nan'):.1f} |")
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        def mean_of(xs, ys, k):  # trailing k-step mean
            return [statistics.mean(ys[max(0, i - k + 1):i + 1]) for i in range(len(ys))]

        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for n in names:
            steps, vals, _ = runs[n]
            xs = sorted(steps)
            line, = axes[0].plot(xs, mean_of(xs, [steps[s]["loss"] for s in xs], 20), lw=1.0,
                                 label=n)
            axes[0].plot(sorted(vals), [vals[s] for s in sorted(vals)], "o", ms=3,
                         color=line.get_color())
            if n == a.reference:
                continue
            px = [s for s in xs if s in ref_steps]
            d = [steps[s]["loss"] - ref_steps[s]["loss"] for s in px]
            axes[1].plot(px, mean_of(px, d, 5), lw=0.8, color=line.get_color(), label=n)
        for ax in axes:
            for u in updates:
                ax.axvline(u, color="grey", lw=0.5, ls=":")
            ax.set_xlabel("step")
        axes[0].set_ylim(4.9, 7.5)
        axes[0].set_ylabel("loss")
        axes[0].set_title("training loss (20-step mean), validation (dots); dotted: updates")
        axes[1].axhline(0, color="black", lw=0.5)
        axes[1].set_ylim(-0.3, 0.8)
        axes[1].set_ylabel("training loss minus " + a.reference + "'s on the same batch")
        axes[1].set_title("paired with " + a.reference + " (5-step mean)")
        axes[0].legend(fontsize=8)
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print(f"\nwrote {a.png}")


if __name__ == "__main__":
    main()
