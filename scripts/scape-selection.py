#!/usr/bin/python3
"""Where a SCAPE checkpoint's mask and updates went, per tensor (docs/RESULTS.md, issue 12).

Reads CHECKPOINT/model.safetensors (the tensors and their offsets in the flat space) and
CHECKPOINT/optimizer.safetensors (`scape.next_mask`: one byte per coordinate, 1 where the mask of
the next step selects it; `scape.last_update`: the step of each coordinate's last update; both
saved flat, whatever the world size) and prints a Markdown table per tensor group (the same
tensor of every block together): its share of the parameters, its share of the mask, the
fraction of it the mask selects, the fraction updated after the dense warm-up, and the mean steps
since the last update.

Invariant: every coordinate of the flat space belongs to exactly one tensor (checked), so the
shares sum to 100%.

  /usr/bin/python3 scripts/scape-selection.py CHECKPOINT --warmup STEPS
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "U8": np.uint8}


def read_safetensors(path, keys=None):
    if not os.path.isfile(path):
        sys.exit(f"scape-selection: {path} not found")
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for key, v in header.items():
        if key == "__metadata__" or (keys is not None and key not in keys):
            continue
        begin, end = v["data_offsets"]
        out[key] = (v, np.frombuffer(data[8 + n + begin:8 + n + end], dtype=DTYPES.get(v["dtype"], np.uint8)))
    return header, out


def group_of(name):
    # "blocks.3.mlp.fc.weight" -> "mlp.fc.weight": one row per kind of tensor
    return name.split(".", 2)[2] if name.startswith("blocks.") else name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--warmup", type=int, required=True, help="dense warm-up steps of the run")
    args = ap.parse_args()
    header, _ = read_safetensors(os.path.join(args.checkpoint, "model.safetensors"), keys=set())
    tensors = sorted((v["data_offsets"][0], k, v) for k, v in header.items() if k != "__metadata__")
    opt_path = os.path.join(args.checkpoint, "optimizer.safetensors")
    _, state = read_safetensors(opt_path, {"scape.next_mask", "scape.last_update"})
    for key in ("scape.next_mask", "scape.last_update"):
        if key not in state:
            sys.exit(f"scape-selection: {opt_path}: no {key} (not a SCAPE checkpoint?)")
    mask = state["scape.next_mask"][1]
    last = state["scape.last_update"][1]
    with open(os.path.join(args.checkpoint, "trainer.json")) as f:
        step = json.load(f)["step"]
    groups, offset = {}, 0
    for _, name, v in tensors:
        n = int(np.prod(v["shape"]))
        groups.setdefault(group_of(name), []).append(slice(offset, offset + n))
        offset += n
    if offset != mask.size or offset != last.size:
        sys.exit(f"scape-selection: the tensors cover {offset} coordinates, the state {mask.size}")
    total_sel = max(int(mask.sum()), 1)
    print(f"Checkpoint `{args.checkpoint}` (step {step}, dense warm-up {args.warmup}): "
          f"{mask.size:,} coordinates, {int(mask.sum()):,} in the next mask.\n")
    print("| tensor | parameters | share of parameters | share of the mask | selected | "
          "updated after warm-up | mean steps since update |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    rows = list(groups.items()) + [("all", [slice(0, mask.size)])]
    for name, parts in rows:
        m = np.concatenate([mask[s] for s in parts])
        lu = np.concatenate([last[s] for s in parts])
        print(f"| {name} | {m.size:,} | {100 * m.size / mask.size:.1f}% | "
              f"{100 * m.sum() / total_sel:.1f}% | {100 * m.mean():.2f}% | "
              f"{100 * np.mean(lu > args.warmup):.1f}% | {np.mean(step - lu):.0f} |")


if __name__ == "__main__":
    main()
