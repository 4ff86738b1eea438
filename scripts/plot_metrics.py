#!/usr/bin/python3
"""Plots training and validation loss of one or more runs from their metrics.jsonl into a PNG.

Usage: /usr/bin/python3 scripts/plot_metrics.py [--title TEXT] [--x step|time|sim_time|bytes]
           OUT.png RUN_DIR [RUN_DIR ...]
--x: the horizontal axis: the step (default), the training time (the sum of the logged step
times, rank 0's view; evaluation excluded), the simulated training time (the same sum of
time_s.sim, runs with parallel.sim only) or the bytes rank 0 sent (the sum of the logged
per-step bytes_sent), each up to the step of the point; a run whose rank 0 sent nothing (one
rank) is drawn at 0 with a note on the plot. The training curve is a centred moving average over
2% of the run (no lag); the legend sits outside the axes.
Uses Debian's python3-matplotlib (installed by scripts/install-deps.sh); each run's label is
its directory name (`gossamer sweep` passes its point directories and a title).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(run_dir, x_axis="step"):
    train, val = [], []
    at_step, total = {0: 0.0}, 0.0  # step -> cumulative time or bytes
    path = os.path.join(run_dir, "metrics.jsonl")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
            if "loss" in j:
                if x_axis == "time":
                    total += j["time_s"]["total"]
                elif x_axis == "sim_time":
                    if "sim" not in j["time_s"]:
                        sys.exit(f"{path}:{n}: --x sim_time: this run has no simulated time "
                                 "(train it with --ranks N and parallel.sim.network)")
                    total += j["time_s"]["sim"]
                elif x_axis == "bytes":
                    total += j["bytes_sent"]
                at_step[j["step"]] = total
                train.append((j["step"] if x_axis == "step" else total, j["loss"]))
            if "val_loss" in j:
                x = j["step"] if x_axis == "step" else at_step.get(j["step"], total)
                val.append((x, j["val_loss"]))
    return train, val


def smooth(values, k=None):
    """Centred moving average (no lag): each point is the mean of up to k points on each side,
    the window narrowing at the ends; k is 2% of the run (at least 1, at most 25)."""
    n = len(values)
    if k is None:
        k = max(1, min(25, n // 50))
    prefix = [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
    out = []
    for i in range(n):
        half = min(k, i, n - 1 - i)
        out.append((prefix[i + half + 1] - prefix[i - half]) / (2 * half + 1))
    return out


def main():
    args = sys.argv[1:]
    title, x_axis = "gossamer training loss", "step"
    while len(args) >= 2 and args[0] in ("--title", "--x"):
        if args[0] == "--title":
            title = args[1]
        elif args[1] in ("step", "time", "sim_time", "bytes"):
            x_axis = args[1]
        else:
            sys.exit(f"--x: expected step, time, sim_time or bytes, found {args[1]!r}")
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    out, runs = args[0], args[1:]
    fig, ax = plt.subplots(figsize=(10, 5))
    silent = []  # runs whose rank 0 sent nothing: --x bytes puts every point at 0
    for i, run in enumerate(runs):
        train, val = read_metrics(run, x_axis)
        if x_axis == "bytes" and train and train[-1][0] == 0:
            silent.append(os.path.basename(os.path.normpath(run)))
        label = os.path.basename(os.path.normpath(run))
        color = f"C{i}"
        if train:
            steps, losses = zip(*train)
            ax.plot(steps, losses, color=color, alpha=0.25, linewidth=0.8)
            ax.plot(steps, smooth(losses), color=color, label=f"{label} train (smoothed)")
        if val:
            steps, losses = zip(*val)
            ax.plot(steps, losses, "o--", color=color, label=f"{label} validation")
    ax.set_xlabel({"step": "step", "time": "training time (s, rank 0)",
                   "sim_time": "simulated training time (s, rank 0)",
                   "bytes": "bytes sent by rank 0"}[x_axis])
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if silent:
        note = f"rank 0 sent no bytes (one rank?): {', '.join(silent)} drawn at x = 0"
        ax.text(0.01, 0.01, note, transform=ax.transAxes, fontsize="small", va="bottom")
        print(f"plot_metrics: {note}", file=sys.stderr)
    # Outside the axes, so that it never covers a curve.
    ax.legend(fontsize="small" if len(runs) > 3 else None, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
