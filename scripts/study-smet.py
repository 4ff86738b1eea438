#!/usr/bin/python3
"""The SMET study's figures (docs/RESULTS.md, issue 13) from a sweep of dense AdamW, naive DST and
SMET (configs/studies/smet.json): per run, the final validation loss and its gap to the reference,
the loss spikes after topology updates (the largest rise of the training loss within 10 steps
after each update over the mean of the 10 steps up to it; the same statistic at the same steps for
the dense run is the noise floor), the regrown/old update-size ratio over those 10 steps, the
median step time and the peak resident memory each rank logged, as a Markdown table; and a PNG of
the training loss with the update steps marked.

Usage: /usr/bin/python3 scripts/study-smet.py SWEEP_DIR [--reference adamw] [--png OUT.png]
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


def spike(steps, u, window=10):
    before = [steps[s]["loss"] for s in range(u - window + 1, u + 1) if s in steps]
    after = [steps[s]["loss"] for s in range(u + 1, u + window + 1) if s in steps]
    if len(before) < window or len(after) < window:
        return None
    return max(after) - statistics.mean(before)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--reference", default="adamw")
    ap.add_argument("--png")
    a = ap.parse_args()
    names = sorted(d for d in os.listdir(a.sweep)
                   if os.path.exists(os.path.join(a.sweep, d, "metrics.jsonl")))
    runs = {n: read_run(os.path.join(a.sweep, n)) for n in names}
    if a.reference not in runs:
        sys.exit(f"study-smet.py: no run {a.reference} in {a.sweep}")
    updates = sorted({u for n in names for u in update_steps(runs[n][0])})
    ref_val = runs[a.reference][1]
    ref_last = ref_val[max(ref_val)]
    print("| run | final val loss | vs " + a.reference + " | largest spike after an update "
          "(median over updates) | regrown/old update ratio, max in 10 steps after an update "
          "(median) | median step s | peak resident MiB per rank |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        steps, vals, peaks = runs[n]
        last = max(vals)
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
              f"| {fmt(spikes)} | {fmt(ratios)} | "
              f"{statistics.median(times):.3f} | {max(peaks) if peaks else float('nan'):.1f} |")
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for n in names:
            steps = runs[n][0]
            xs = sorted(steps)
            ys = [steps[s]["loss"] for s in xs]
            axes[0].plot(xs, ys, lw=0.6, label=n)
            lo, hi = (updates[len(updates) // 2] - 15, updates[len(updates) // 2] + 25) if updates else (0, 0)
            zx = [s for s in xs if lo <= s <= hi]
            axes[1].plot(zx, [steps[s]["loss"] for s in zx], lw=1.0, marker=".", ms=3, label=n)
        for ax in axes:
            for u in updates:
                ax.axvline(u, color="grey", lw=0.5, ls=":")
            ax.set_xlabel("step")
            ax.set_ylabel("training loss")
        axes[0].set_ylim(top=min(8.0, axes[0].get_ylim()[1]))
        axes[0].set_title("training loss; dotted: topology updates")
        axes[1].set_title("around one update")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print(f"\nwrote {a.png}")


if __name__ == "__main__":
    main()
