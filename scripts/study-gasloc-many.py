#!/usr/bin/python3
"""Tables of the many-workers GASLoC study (docs/RESULTS.md, issue 42) from a sweep over seeds.

Usage: /usr/bin/python3 scripts/study-gasloc-many.py [--ref POINT] [--ranks N] SWEEP_DIR
The sweep's points are METHOD,seed=S (a `"grid": {"train.seed": [...]}`). Prints, per method:
the seeds, the final validation loss of the evaluation weights (the average model) as the mean
over seeds with the spread (max - min), the gap of the mean to the reference method's (--ref,
default adamw) in nats and percent, whether the gap exceeds the two spreads together and the
replicas' own final losses (mean over ranks and seeds); then
the relative consensus distance at every evaluation (mean over seeds), and, for a ring of
--ranks ranks with the default weight 1/3, its spectral gap and the best accelerated momentum.
Invariant: a method missing a seed's evaluation at its last planned step (point.json's
train.steps) is reported, never averaged over fewer seeds silently.
"""
import argparse
import json
import math
import os
import sys


def read(path):
    with open(os.path.join(path, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def method_and_seed(point):
    if ",seed=" not in point:
        return point, None
    method, seed = point.rsplit(",seed=", 1)
    return method, seed


def ring_gap(n, alpha=1.0 / 3):
    """Spectral gap 1 - lambda_2 of the ring's mixing matrix (n > 2), and the best gamma."""
    delta = alpha * (2 - 2 * math.cos(2 * math.pi / n))
    gamma = (1 - math.sqrt(delta)) ** 2 / (1 - delta)
    return delta, gamma


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="adamw")
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("sweep")
    a = ap.parse_args()
    points = sorted(p for p in os.listdir(a.sweep)
                    if os.path.isfile(os.path.join(a.sweep, p, "metrics.jsonl")))
    if not points:
        sys.exit(f"study-gasloc-many: no run with metrics.jsonl in {a.sweep}")
    methods, planned = {}, {}
    for p in points:
        m, s = method_and_seed(p)
        methods.setdefault(m, {})[s] = read(os.path.join(a.sweep, p))
        with open(os.path.join(a.sweep, p, "point.json"), encoding="utf-8") as f:
            planned[(m, s)] = json.load(f)["train"]["steps"]

    def final(lines, steps):  # the evaluation at the last planned step (a run still going has none)
        v = [j for j in lines if "val_loss" in j and j.get("step") == steps]
        return v[-1] if v else None

    def summary(m):
        vals = {s: final(l, planned[(m, s)]) for s, l in methods[m].items()}
        missing = [s for s, v in vals.items() if v is None]
        got = [v["val_loss"] for v in vals.values() if v is not None]
        return got, missing

    def replicas_mean(m):  # the replicas' own final losses, mean over ranks and seeds
        v = [x for s, l in methods[m].items() if (f := final(l, planned[(m, s)]))
             for x in f.get("val_loss_replicas", [])]
        return f"{sum(v) / len(v):.4f}" if v else "-"

    ref_vals, _ = summary(a.ref) if a.ref in methods else ([], [])
    ref_mean = sum(ref_vals) / len(ref_vals) if ref_vals else None
    ref_spread = max(ref_vals) - min(ref_vals) if ref_vals else None
    print(f"| method | seeds | final val, mean | spread (max - min) | vs {a.ref} (nats) | vs {a.ref} | beyond both spreads | replicas' own val, mean |")
    print("|---|--:|--:|--:|--:|--:|---|--:|")
    for m, runs in methods.items():
        got, missing = summary(m)
        if missing:
            print(f"| {m} | {len(runs)} | no final evaluation (yet) for seed(s) {', '.join(missing)} | | | | | |")
            continue
        mean, spread = sum(got) / len(got), max(got) - min(got)
        if ref_mean is None or m == a.ref:
            print(f"| {m} | {len(got)} | {mean:.4f} | {spread:.4f} | - | - | - | {replicas_mean(m)} |")
            continue
        d = mean - ref_mean
        beyond = "yes" if abs(d) > spread + ref_spread else "no"
        print(f"| {m} | {len(got)} | {mean:.4f} | {spread:.4f} | {d:+.4f} | {100 * d / ref_mean:+.2f}% | {beyond} | {replicas_mean(m)} |")

    print()
    print("Relative consensus distance |x_r - mean| / |mean| at each evaluation (mean over seeds):")
    print()
    steps = sorted({j["step"] for runs in methods.values() for l in runs.values() for j in l
                    if "optim" in j and "consensus_distance_relative" in j.get("optim", {})})
    if steps:
        print("| method | " + " | ".join(f"step {s}" for s in steps) + " |")
        print("|---|" + "--:|" * len(steps))
        for m, runs in methods.items():
            row = []
            for s in steps:
                v = [j["optim"]["consensus_distance_relative"] for l in runs.values() for j in l
                     if j.get("step") == s and "consensus_distance_relative" in j.get("optim", {})]
                row.append(f"{sum(v) / len(v):.2e}" if v else "-")
            print(f"| {m} | " + " | ".join(row) + " |")
    if a.ranks > 2:
        delta, gamma = ring_gap(a.ranks)
        print()
        print(f"Ring of {a.ranks}, alpha 1/3: spectral gap {delta:.4f}; plain gossip contracts the "
              f"slowest mode by {1 - delta:.4f} per round, accelerated at gamma {gamma:.3f} by "
              f"{1 - math.sqrt(delta):.4f}.")


if __name__ == "__main__":
    main()
