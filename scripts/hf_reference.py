#!/usr/bin/python3
"""Independent float64 reference for Hugging Face model directories: GPT2LMHeadModel and
LlamaForCausalLM forward passes written from scratch in PyTorch (no transformers, no
safetensors package) from the semantics of HF's config.json and modeling code, used to prove
that `gossamer export-hf` output computes gossamer's logits (tests/unit/test_hf.cpp).

Run with Debian's python (python3-torch + numpy), not a pyenv python:

    /usr/bin/python3 scripts/hf_reference.py HF_DIR --tokens-file T.safetensors --out R.safetensors
    /usr/bin/python3 scripts/hf_reference.py HF_DIR --random 2,16,0 --out R.safetensors

Input tokens: --tokens-file (a safetensors file with an integer tensor "tokens" (B,T)) or
--random B,T,SEED (uniform in [0, vocab_size) from torch.manual_seed(SEED)).
Output (safetensors, deterministic bytes): tokens (B,T) I32, logits (B,T,vocab_size) F64, and
__metadata__ with model_type, the sha256 of HF_DIR's config.json and model.safetensors (so a
consumer can prove which export the logits belong to), the script and the torch version.

Semantics implemented (transformers' defaults for absent keys, as PretrainedConfig does):
GPT-2: x = wte[ids] + wpe[pos]; per block x += attn(ln_1(x)), x += mlp(ln_2(x)); Conv1D
  layers y = x @ W + b with W (in, out); c_attn output columns [q | k | v], head h uses
  columns h*hs:(h+1)*hs of each; scores / sqrt(hs) if scale_attn_weights, / (layer+1) if
  scale_attn_by_inverse_layer_idx; causal; activation_function (gelu_new = tanh GELU);
  n_inner (None: 4*n_embd); LayerNorm eps layer_norm_epsilon; ln_f; logits = x @ W_head^T
  with W_head = wte when tie_word_embeddings (default true), else lm_head.weight. Tensor
  names with or without the "transformer." prefix (files saved from GPT2Model have none).
Llama: x = embed_tokens[ids]; per layer x += o_proj(attn(rmsnorm(x))), x += down(silu(gate(h))
  * up(h)) with h = rmsnorm(x); RMSNorm x * rsqrt(mean(x^2) + rms_norm_eps) * w; RoPE in
  rotate_half form: inv_freq = rope_theta^(-(0,2,..,d-2)/d), angles pos * inv_freq repeated
  twice, q' = q cos + rotate_half(q) sin with rotate_half([a, b]) = [-b, a]; head_dim (default
  hidden_size / num_attention_heads); grouped-query attention, query head h reads kv head
  h // (num_attention_heads / num_key_value_heads) (repeat_kv); scores / sqrt(head_dim);
  causal; optional attention_bias / mlp_bias; final norm; lm_head.weight, or embed_tokens when
  tie_word_embeddings (default false). rope_scaling must be null.
Self-checks (asserts): the hand-written LayerNorm, RMSNorm, GELU and SiLU against torch's
built-ins.
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import torch

SCRIPT = "scripts/hf_reference.py"

# ---- safetensors, by hand ---------------------------------------------------------------

NP_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
             "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """name -> numpy array (BF16 widened to float32), metadata dict. Validates the header."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        sys.exit(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        sys.exit(f"{path}: header length {n} exceeds the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out, end = {}, 0
    for name, e in header.items():
        b, t = e["data_offsets"]
        shape = tuple(e["shape"])
        count = int(np.prod(shape)) if shape else 1
        if e["dtype"] == "BF16":
            u16 = np.frombuffer(data[b:t], dtype="<u2")
            a = (u16.astype(np.uint32) << 16).view(np.float32)
        elif e["dtype"] in NP_DTYPES:
            a = np.frombuffer(data[b:t], dtype=NP_DTYPES[e["dtype"]])
        else:
            sys.exit(f"{path}: tensor {name}: unsupported dtype {e['dtype']}")
        if a.size != count:
            sys.exit(f"{path}: tensor {name}: {a.size} elements, shape {shape} needs {count}")
        out[name] = a.reshape(shape)
        end = max(end, t)
    if end != len(data):
        sys.exit(f"{path}: data buffer is {len(data)} bytes, tensors end at {end}")
    return out, meta


def write_safetensors(path, tensors, metadata):
    """Header JSON with sorted keys, data in sorted-name order, padded to 8; tmp + rename."""
    dtypes = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<i4"): "I32"}
    header = {"__metadata__": dict(metadata)}
    blobs, offset = [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {"dtype": dtypes[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".tmp", path)


def load_weights(hf_dir):
    single = os.path.join(hf_dir, "model.safetensors")
    if os.path.exists(single):
        files = [single]
    else:
        index = json.load(open(os.path.join(hf_dir, "model.safetensors.index.json")))
        files = [os.path.join(hf_dir, f) for f in sorted(set(index["weight_map"].values()))]
    weights = {}
    for f in files:
        w, _ = read_safetensors(f)
        weights.update({k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()
                        if v.dtype.kind == "f"})
    return weights


def tensors_sha256(path):
    """sha256 over each tensor's "name\0dtype\0[shape]\0" in data order, then the data section:
    names, dtypes, shapes and bytes, not the header's formatting or __metadata__ (the same
    definition as tests/unit/test_hf.cpp)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    h = hashlib.sha256()
    for name, e in sorted(header.items(), key=lambda kv: (kv[1]["data_offsets"], kv[0])):
        shape = ", ".join(str(d) for d in e["shape"])
        h.update(f"{name}\0{e['dtype']}\0[{shape}]\0".encode("utf-8"))
    h.update(raw[8 + n:])
    return h.hexdigest()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

# ---- ops, written out -------------------------------------------------------------------


def layernorm(x, w, b, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def silu(x):
    return x / (1.0 + torch.exp(-x))


ACTIVATIONS = {"gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu": gelu_erf,
               "relu": torch.relu, "silu": silu, "swish": silu}


def causal_softmax(scores):
    T = scores.shape[-1]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def self_check_ops():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 5, 24, dtype=torch.float64, generator=g)
    w = torch.randn(24, dtype=torch.float64, generator=g)
    b = torch.randn(24, dtype=torch.float64, generator=g)
    ref = torch.nn.functional.layer_norm(x, (24,), w, b, eps=1e-5)
    assert torch.allclose(layernorm(x, w, b, 1e-5), ref, rtol=0, atol=1e-12)
    ref = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    assert torch.allclose(rmsnorm(x, w, 1e-6), ref, rtol=0, atol=1e-12)
    assert torch.allclose(gelu_tanh(x), torch.nn.functional.gelu(x, approximate="tanh"),
                          rtol=0, atol=1e-14)
    assert torch.allclose(gelu_erf(x), torch.nn.functional.gelu(x), rtol=0, atol=1e-14)
    assert torch.allclose(silu(x), torch.nn.functional.silu(x), rtol=0, atol=1e-14)

# ---- models -----------------------------------------------------------------------------


def cfg_get(cfg, key, default):
    v = cfg.get(key)
    return default if v is None else v


def gpt2_logits(cfg, W, ids):
    C = cfg_get(cfg, "n_embd", 768)
    nh = cfg_get(cfg, "n_head", 12)
    L = cfg_get(cfg, "n_layer", 12)
    eps = cfg_get(cfg, "layer_norm_epsilon", 1e-5)
    act = ACTIVATIONS[cfg_get(cfg, "activation_function", "gelu_new")]
    scale = cfg_get(cfg, "scale_attn_weights", True)
    by_layer = cfg_get(cfg, "scale_attn_by_inverse_layer_idx", False)
    p = "transformer." if "transformer.wte.weight" in W else ""
    B, T = ids.shape
    hs = C // nh
    x = W[p + "wte.weight"][ids] + W[p + "wpe.weight"][torch.arange(T)]
    for l in range(L):
        h = f"{p}h.{l}."
        a = layernorm(x, W[h + "ln_1.weight"], W[h + "ln_1.bias"], eps)
        qkv = a @ W[h + "attn.c_attn.weight"] + W[h + "attn.c_attn.bias"]       # Conv1D
        q, k, v = (t.reshape(B, T, nh, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
        s = q @ k.transpose(-1, -2)
        if scale:
            s = s / math.sqrt(hs)
        if by_layer:
            s = s / float(l + 1)
        y = (causal_softmax(s) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ W[h + "attn.c_proj.weight"] + W[h + "attn.c_proj.bias"]
        m = layernorm(x, W[h + "ln_2.weight"], W[h + "ln_2.bias"], eps)
        m = act(m @ W[h + "mlp.c_fc.weight"] + W[h + "mlp.c_fc.bias"])
        x = x + m @ W[h + "mlp.c_proj.weight"] + W[h + "mlp.c_proj.bias"]
    x = layernorm(x, W[p + "ln_f.weight"], W[p + "ln_f.bias"], eps)
    head = W[p + "wte.weight"] if cfg_get(cfg, "tie_word_embeddings", True) else W["lm_head.weight"]
    return x @ head.t()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_logits(cfg, W, ids):
    C = cfg_get(cfg, "hidden_size", 4096)
    nh = cfg_get(cfg, "num_attention_heads", 32)
    nkv = cfg_get(cfg, "num_key_value_heads", nh)
    L = cfg_get(cfg, "num_hidden_layers", 32)
    hd = cfg_get(cfg, "head_dim", C // nh)
    eps = cfg_get(cfg, "rms_norm_eps", 1e-6)
    theta = cfg_get(cfg, "rope_theta", 10000.0)
    act = ACTIVATIONS[cfg_get(cfg, "hidden_act", "silu")]
    if cfg.get("rope_scaling") is not None:
        sys.exit("rope_scaling is not implemented by this reference")
    B, T = ids.shape
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]    # (T, hd/2)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def lin(x, name):
        y = x @ W[name + ".weight"].t()
        return y + W[name + ".bias"] if name + ".bias" in W else y

    x = W["model.embed_tokens.weight"][ids]
    for l in range(L):
        p = f"model.layers.{l}."
        a = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = lin(a, p + "self_attn.q_proj").reshape(B, T, nh, hd).transpose(1, 2)
        k = lin(a, p + "self_attn.k_proj").reshape(B, T, nkv, hd).transpose(1, 2)
        v = lin(a, p + "self_attn.v_proj").reshape(B, T, nkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)          # repeat_kv: head h -> kv h // n_rep
        v = v.repeat_interleave(nh // nkv, dim=1)
        y = causal_softmax(q @ k.transpose(-1, -2) / math.sqrt(hd)) @ v
        x = x + lin(y.transpose(1, 2).reshape(B, T, nh * hd), p + "self_attn.o_proj")
        m = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + lin(act(lin(m, p + "mlp.gate_proj")) * lin(m, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rmsnorm(x, W["model.norm.weight"], eps)
    tied = cfg_get(cfg, "tie_word_embeddings", False)
    head = W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]
    return x @ head.t()


MODELS = {"gpt2": gpt2_logits, "llama": llama_logits}

# ---- main -------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hf_dir")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens-file", help="safetensors file with an integer tensor 'tokens' (B,T)")
    src.add_argument("--random", help="B,T,SEED: uniform random tokens")
    ap.add_argument("--out", required=True, help="output safetensors file")
    args = ap.parse_args()

    torch.set_num_threads(1)  # fixed reduction order: identical bytes on every run
    self_check_ops()
    cfg = json.load(open(os.path.join(args.hf_dir, "config.json")))
    mtype = cfg.get("model_type")
    if mtype not in MODELS:
        sys.exit(f"{args.hf_dir}/config.json: model_type {mtype!r} not implemented here")
    V = cfg_get(cfg, "vocab_size", 50257 if mtype == "gpt2" else 32000)
    if args.tokens_file:
        t, _ = read_safetensors(args.tokens_file)
        ids = torch.from_numpy(t["tokens"].astype(np.int64))
    else:
        B, T, seed = (int(s) for s in args.random.split(","))
        torch.manual_seed(seed)
        ids = torch.randint(0, V, (B, T), dtype=torch.int64)
    assert ids.dim() == 2 and int(ids.min()) >= 0 and int(ids.max()) < V, "tokens out of range"

    W = load_weights(args.hf_dir)
    with torch.no_grad():
        logits = MODELS[mtype](cfg, W, ids)
    assert logits.shape == (ids.shape[0], ids.shape[1], V), logits.shape
    assert torch.isfinite(logits).all()
    meta = {"script": SCRIPT, "torch_version": torch.__version__, "model_type": mtype,
            "config_sha256": sha256(os.path.join(args.hf_dir, "config.json")),
            "tokens": args.tokens_file and "file" or f"random {args.random}"}
    st = os.path.join(args.hf_dir, "model.safetensors")
    if os.path.exists(st):
        meta["model_sha256"] = sha256(st)
        meta["tensors_sha256"] = tensors_sha256(st)
    write_safetensors(args.out, {"tokens": ids.to(torch.int32).numpy(),
                                 "logits": logits.contiguous().numpy()}, meta)
    print(f"{SCRIPT}: {mtype}, tokens {tuple(ids.shape)}, logits max |x| "
          f"{logits.abs().max().item():.4f} -> {args.out}")


if __name__ == "__main__":
    main()
