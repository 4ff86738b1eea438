#!/usr/bin/python3
"""The gap-versus-tokens report of an optimizer study (docs/RESULTS.md, issue 12 part 3).

Reads the validation losses of run directories (RUN/metrics.jsonl: `val_loss` lines, and the
step lines' cumulative `tokens`) and prints Markdown: each run's validation loss at every
evaluated step with its gap to the reference run at the same step, and the tokens each run needs
to reach the target run's final validation loss (linear interpolation between evaluations;
"not reached" if it never does). With --png it also plots the gaps against tokens.

Invariant: only steps evaluated in both a run and the reference are compared; nothing is
extrapolated.

  /usr/bin/python3 scripts/study-gap.py --ref adams=RUN_A --target adamw=RUN_W \
      [--png gap.png] NAME=RUN [NAME=RUN ...]
"""
import argparse
import json
import os
import sys


def read_run(path):
    metrics = os.path.join(path, "metrics.jsonl")
    if not os.path.isfile(metrics):
        sys.exit(f"study-gap: {metrics} not found")
    val, tokens = {}, {}
    with open(metrics) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"study-gap: {metrics}:{n}: not JSON ({e})")
            if "val_loss" in j:
                val[j["step"]] = j["val_loss"]
            elif "tokens" in j:
                tokens[j["step"]] = j["tokens"]
    if not val:
        sys.exit(f"study-gap: {metrics} has no val_loss line")
    tokens[0] = 0
    missing = [s for s in val if s not in tokens]
    if missing:
        sys.exit(f"study-gap: {metrics}: no step line for evaluated step(s) {missing}")
    return {s: (tokens[s], val[s]) for s in sorted(val)}


def named(arg):
    name, sep, path = arg.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=RUN_DIRECTORY, got {arg!r}")
    return name, path


def tokens_to_reach(curve, loss):
    """First token count at which the piecewise-linear validation curve reaches `loss`."""
    points = [curve[s] for s in sorted(curve)]
    for (t0, l0), (t1, l1) in zip(points, points[1:]):
        if l1 <= loss:
            return t0 + (t1 - t0) * (l0 - loss) / (l0 - l1) if l0 > loss else t0
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", type=named, required=True, help="NAME=RUN: the gaps are to this run")
    ap.add_argument("--target", type=named, required=True,
                    help="NAME=RUN: tokens to reach this run's final validation loss")
    ap.add_argument("--png", help="plot the gaps against tokens into this file")
    ap.add_argument("runs", type=named, nargs="+", help="NAME=RUN")
    args = ap.parse_args()

    ref_name, ref = args.ref[0], read_run(args.ref[1])
    target_name, target = args.target[0], read_run(args.target[1])
    runs = [(n, read_run(p)) for n, p in args.runs]
    target_step = max(target)
    target_loss = target[target_step][1]

    steps = sorted(set().union(*[set(c) for _, c in runs]) & set(ref) - {0})
    print("| run | " + " | ".join(f"val @{s}" for s in steps) + " | gap to " + ref_name +
          " @" + str(steps[-1] if steps else "-") + " | tokens to " + target_name +
          f"'s final {target_loss:.4f} (step {target_step}) |")
    print("|---|" + "--:|" * (len(steps) + 2))
    gaps = {}
    for name, curve in runs:
        cells, g = [], []
        for s in steps:
            if s in curve:
                gap = curve[s][1] / ref[s][1] - 1
                g.append((curve[s][0], 100 * gap))
                cells.append(f"{curve[s][1]:.4f} ({100 * gap:+.2f}%)")
            else:
                cells.append("–")
        gaps[name] = g
        last = f"{g[-1][1]:+.2f}%" if g and steps and steps[-1] in curve else "–"
        reach = tokens_to_reach(curve, target_loss)
        reach_s = "not reached" if reach is None else \
            f"{reach / 1e6:.2f} M ({reach / target[target_step][0]:.2f}x)"
        print(f"| {name} | " + " | ".join(cells) + f" | {last} | {reach_s} |")

    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, g in gaps.items():
            if g:
                ax.plot([t / 1e6 for t, _ in g], [v for _, v in g], marker="o", label=name)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlabel("tokens (millions)")
        ax.set_ylabel(f"validation loss gap to {ref_name} (%)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"\n(plot: {args.png})")


if __name__ == "__main__":
    main()
