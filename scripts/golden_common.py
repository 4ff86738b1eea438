"""Helpers of the golden-reference script (scripts/make_golden.py), for Debian's
/usr/bin/python3 (python3-torch 1.13 CPU + numpy):

  write_safetensors(path, tensors, metadata)   the hand-written, byte-deterministic writer
  manual_adamw(init, loss_fn, is_decayed, hp)  AdamW + global-norm clipping written out by hand,
                                               the cross-check of torch.optim.AdamW's run

Imported by the script as a sibling module (python puts the script's directory on sys.path).
"""
import json
import math
import os
import struct

import numpy as np
import torch

DTYPES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<i4"): "I32",
          np.dtype("<i8"): "I64"}


def write_safetensors(path, tensors, metadata):
    """tensors: name -> numpy array. Header JSON with sorted keys, data in sorted-name order,
    header padded with spaces to a multiple of 8. Written to path.tmp and renamed."""
    header = {"__metadata__": dict(metadata)}
    blobs, offset = [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])  # not ascontiguousarray: it turns 0-d into 1-d
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        raw = a.tobytes(order="C")
        header[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)
    return 8 + len(h) + offset


def manual_adamw(init, loss_fn, is_decayed, hp):
    """hp["steps"] steps of AdamW (decoupled weight decay hp["weight_decay"] on the parameters
    with is_decayed(name)) after global-norm clipping to hp["grad_clip"] (coefficient
    clip / (norm + 1e-6), applied when < 1), without torch.optim. loss_fn(P) -> scalar loss of
    the parameter dict P. Returns (losses before each step, final parameters)."""
    P = {n: p.clone() for n, p in init.items()}
    m = {n: torch.zeros_like(p) for n, p in P.items()}
    v = {n: torch.zeros_like(p) for n, p in P.items()}
    b1, b2, lr, eps, wd = hp["beta1"], hp["beta2"], hp["lr"], hp["eps"], hp["weight_decay"]
    losses = []
    for t in range(1, hp["steps"] + 1):
        Pg = {n: p.clone().requires_grad_(True) for n, p in P.items()}
        loss = loss_fn(Pg)
        loss.backward()
        losses.append(loss.item())
        g = {n: p.grad for n, p in Pg.items()}
        norm = math.sqrt(sum((x * x).sum().item() for x in g.values()))
        scale = hp["grad_clip"] / (norm + 1e-6)
        for n in P:
            gn = g[n] * scale if scale < 1.0 else g[n]
            if is_decayed(n):
                P[n] = P[n] * (1.0 - lr * wd)
            m[n] = b1 * m[n] + (1.0 - b1) * gn
            v[n] = b2 * v[n] + (1.0 - b2) * gn * gn
            mhat = m[n] / (1.0 - b1 ** t)
            vhat = v[n] / (1.0 - b2 ** t)
            P[n] = P[n] - lr * mhat / (torch.sqrt(vhat) + eps)
    return losses, P
