#!/usr/bin/python3
"""Plots training and validation loss of one or more runs from their metrics.jsonl into a PNG.

Usage: /usr/bin/python3 scripts/plot_metrics.py [--title TEXT] OUT.png RUN_DIR [RUN_DIR ...]
Uses Debian's python3-matplotlib (installed by scripts/install-deps.sh); each run's label is
its directory name (`gossamer sweep` passes its point directories and a title).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(run_dir):
    train, val = [], []
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
                train.append((j["step"], j["loss"]))
            if "val_loss" in j:
                val.append((j["step"], j["val_loss"]))
    return train, val


def smooth(values, k=20):
    out, acc = [], []
    for v in values:
        acc.append(v)
        if len(acc) > k:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def main():
    args = sys.argv[1:]
    title = "gossamer training loss"
    if len(args) >= 2 and args[0] == "--title":
        title, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    out, runs = args[0], args[1:]
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, run in enumerate(runs):
        train, val = read_metrics(run)
        label = os.path.basename(os.path.normpath(run))
        color = f"C{i}"
        if train:
            steps, losses = zip(*train)
            ax.plot(steps, losses, color=color, alpha=0.25, linewidth=0.8)
            ax.plot(steps, smooth(losses), color=color, label=f"{label} train (smoothed)")
        if val:
            steps, losses = zip(*val)
            ax.plot(steps, losses, "o--", color=color, label=f"{label} validation")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small" if len(runs) > 3 else None)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
