#!/usr/bin/python3
"""Golden reference for the GPT-2 model test: an independent, from-scratch float64 PyTorch
GPT-2 (no transformers) with gossamer's parameter names and layouts, dumped to safetensors.

Run with Debian's python (python3-torch 1.13 CPU + numpy), not a pyenv python:

    /usr/bin/python3 scripts/make_golden_gpt2.py tests/assets/gpt2_golden.safetensors

Output is deterministic (same bytes on every run with the same torch build). Contents (F64
unless noted; the header keys are sorted, data in the same order):
  tokens (B,T) I32, targets (B,T) I32       random in [0, V)
  param.<name>                              initial parameters, our layout (see param_shapes)
  logits (B,T,V)                            real vocabulary columns only (the Vp-V padding dropped)
  loss []                                   mean cross-entropy over B*T positions, first V columns
  grad.<name>                               d loss / d param at the initial parameters (unclipped)
  losses (steps)                            loss before each of 10 AdamW steps on the same batch
                                            (losses[0] == loss)
  grad_norms (steps)                        global grad L2 norm before clipping at each step
  __metadata__                              config and hyperparameters as strings
Model: x = wte[tok] + wpe[pos]; per block x += attn(ln1(x)); x += mlp(ln2(x)), mlp = proj(gelu_tanh(
fc(.))); causal attention, scale 1/sqrt(hs); ln_f; logits = x @ wte^T (tied); LayerNorm eps 1e-5.
Linear layers are nn.Linear layout: y = x @ W^T + b, W (out, in). qkv output columns [0,C) q,
[C,2C) k, [2C,3C) v; head h uses columns h*hs:(h+1)*hs of each.
Optimizer: torch.optim.AdamW (lr 1e-3, betas (0.9, 0.95), eps 1e-8), weight decay 0.1 only on
the qkv / attn.proj / mlp.fc / mlp.proj weights, after torch.nn.utils.clip_grad_norm_(1.0).
Self-checks (asserts): hand-written ops vs torch built-ins, padded wte rows get zero gradient,
the losses decrease, and a hand-written AdamW + clipping loop reproduces torch's losses and
final parameters to 1e-12. Also prints the float32-vs-float64 logits difference.
Initialisation (torch.manual_seed(1234), drawn in param_shapes order, then tokens, then targets):
weights N(0, 0.05) (attn.proj / mlp.proj weights N(0, 0.05/sqrt(2L))), biases N(0, 0.02),
LN weights 1 + 0.1 N(0,1), LN biases 0.1 N(0,1), wte/wpe N(0, 0.05) with wte rows >= V zeroed.
"""
import math
import sys

import numpy as np
import torch

from golden_common import manual_adamw, write_safetensors

SCRIPT = "scripts/make_golden_gpt2.py"
CFG = dict(n_layer=2, n_head=4, d_model=64, vocab_size=997, padded_vocab=1024, max_seq_len=32,
           B=3, T=13)
HP = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0, steps=10)
SEED = 1234
LN_EPS = 1e-5


def param_shapes(cfg):
    """(name, shape) for every parameter, in gossamer's naming."""
    C, L = cfg["d_model"], cfg["n_layer"]
    out = [("wte", (cfg["padded_vocab"], C)), ("wpe", (cfg["max_seq_len"], C))]
    for l in range(L):
        b = f"blocks.{l}."
        out += [
            (b + "ln1.weight", (C,)), (b + "ln1.bias", (C,)),
            (b + "attn.qkv.weight", (3 * C, C)), (b + "attn.qkv.bias", (3 * C,)),
            (b + "attn.proj.weight", (C, C)), (b + "attn.proj.bias", (C,)),
            (b + "ln2.weight", (C,)), (b + "ln2.bias", (C,)),
            (b + "mlp.fc.weight", (4 * C, C)), (b + "mlp.fc.bias", (4 * C,)),
            (b + "mlp.proj.weight", (C, 4 * C)), (b + "mlp.proj.bias", (C,)),
        ]
    out += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return out


def is_decayed(name):
    """Weight decay applies to the 2-D attention / MLP matrices only."""
    return name.endswith(("attn.qkv.weight", "attn.proj.weight", "mlp.fc.weight",
                          "mlp.proj.weight"))


def init_params(cfg):
    """Draws every parameter from the global torch RNG (seeded by the caller), float64."""
    L, V = cfg["n_layer"], cfg["vocab_size"]
    params = {}
    for name, shape in param_shapes(cfg):
        z = torch.randn(shape, dtype=torch.float64)
        if name in ("wte", "wpe"):
            p = 0.05 * z
        elif name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")):
            p = 1.0 + 0.1 * z
        elif name.endswith(("ln1.bias", "ln2.bias", "ln_f.bias")):
            p = 0.1 * z
        elif name.endswith(("attn.proj.weight", "mlp.proj.weight")):
            p = (0.05 / math.sqrt(2 * L)) * z
        elif name.endswith(".weight"):
            p = 0.05 * z
        elif name.endswith(".bias"):
            p = 0.02 * z
        else:
            raise AssertionError(name)
        if name == "wte":
            p[V:] = 0.0
        params[name] = p
    return params


# ---- the model, written out op by op -------------------------------------------------

def layernorm(x, w, b):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased, as nn.LayerNorm
    return (x - mean) / torch.sqrt(var + LN_EPS) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def linear(x, w, b):
    return x @ w.t() + b


def attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
    B, T, C = x.shape
    hs = C // n_head
    qkv = linear(x, w_qkv, b_qkv)                                   # (B,T,3C)
    q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
    q = q.reshape(B, T, n_head, hs).transpose(1, 2)                 # (B,nh,T,hs)
    k = k.reshape(B, T, n_head, hs).transpose(1, 2)
    v = v.reshape(B, T, n_head, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))         # (B,nh,T,T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)                  # heads back to columns
    return linear(y, w_proj, b_proj)


def forward(P, tokens, targets, cfg):
    """Returns (logits (B,T,Vp), mean loss over the first V columns)."""
    B, T = tokens.shape
    V = cfg["vocab_size"]
    x = P["wte"][tokens] + P["wpe"][:T]
    for l in range(cfg["n_layer"]):
        b = f"blocks.{l}."
        h = layernorm(x, P[b + "ln1.weight"], P[b + "ln1.bias"])
        x = x + attention(h, P[b + "attn.qkv.weight"], P[b + "attn.qkv.bias"],
                          P[b + "attn.proj.weight"], P[b + "attn.proj.bias"], cfg["n_head"])
        h = layernorm(x, P[b + "ln2.weight"], P[b + "ln2.bias"])
        h = gelu_tanh(linear(h, P[b + "mlp.fc.weight"], P[b + "mlp.fc.bias"]))
        x = x + linear(h, P[b + "mlp.proj.weight"], P[b + "mlp.proj.bias"])
    x = layernorm(x, P["ln_f.weight"], P["ln_f.bias"])
    logits = x @ P["wte"].t()                                       # (B,T,Vp)
    logp = torch.log_softmax(logits[..., :V], dim=-1)
    loss = -logp.gather(-1, targets.unsqueeze(-1)).mean()
    return logits, loss


def self_check_ops():
    """Our hand-written ops against torch's built-ins (catches a typo in a formula)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(5, 7, 24, dtype=torch.float64, generator=g)
    w = torch.randn(24, dtype=torch.float64, generator=g)
    b = torch.randn(24, dtype=torch.float64, generator=g)
    ref = torch.nn.functional.layer_norm(x, (24,), w, b, eps=LN_EPS)
    assert torch.allclose(layernorm(x, w, b), ref, rtol=0, atol=1e-12)
    ref = torch.nn.functional.gelu(x, approximate="tanh")
    assert torch.allclose(gelu_tanh(x), ref, rtol=0, atol=1e-14)
    logits = torch.randn(6, 11, dtype=torch.float64, generator=g)
    t = torch.randint(0, 11, (6,), generator=g)
    ref = torch.nn.functional.cross_entropy(logits, t)
    ours = -torch.log_softmax(logits, -1).gather(-1, t.unsqueeze(-1)).mean()
    assert abs(ours.item() - ref.item()) < 1e-14


# ---- main -------------------------------------------------------------------------------

def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: /usr/bin/python3 {SCRIPT} OUT.safetensors")
    out_path = sys.argv[1]
    torch.set_num_threads(1)  # fixed reduction order -> identical bytes on every run
    torch.use_deterministic_algorithms(True)
    self_check_ops()

    cfg, hp = CFG, HP
    B, T, V = cfg["B"], cfg["T"], cfg["vocab_size"]
    torch.manual_seed(SEED)
    init = init_params(cfg)
    tokens = torch.randint(0, V, (B, T), dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), dtype=torch.int64)

    # Step-0 reference: logits, loss and unclipped gradients at the initial parameters.
    P = {n: p.clone().requires_grad_(True) for n, p in init.items()}
    logits, loss = forward(P, tokens, targets, cfg)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in P.items()}
    logits = logits.detach()
    assert torch.all(grads["wte"][V:] == 0), "padded wte rows must get zero gradient"

    # float32 sanity run (printed only).
    P32 = {n: p.float() for n, p in init.items()}
    with torch.no_grad():
        logits32, loss32 = forward(P32, tokens, targets, cfg)
    print(f"float32 vs float64: max |logits diff| = "
          f"{(logits32.double() - logits).abs().max().item():.3e}, "
          f"|loss diff| = {abs(loss32.item() - loss.item()):.3e}")

    # Training: torch's own AdamW and clip_grad_norm_ on the same batch.
    names = [n for n, _ in param_shapes(cfg)]
    W = {n: torch.nn.Parameter(init[n].clone()) for n in names}
    opt = torch.optim.AdamW(
        [{"params": [W[n] for n in names if is_decayed(n)], "weight_decay": hp["weight_decay"]},
         {"params": [W[n] for n in names if not is_decayed(n)], "weight_decay": 0.0}],
        lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    losses, grad_norms = [], []
    for step in range(hp["steps"]):
        opt.zero_grad(set_to_none=True)
        _, l = forward(W, tokens, targets, cfg)
        l.backward()
        if step == 0:
            assert l.item() == loss.item()
            for n in names:
                assert torch.equal(W[n].grad, grads[n]), n
        norm = torch.nn.utils.clip_grad_norm_([W[n] for n in names], hp["grad_clip"])
        losses.append(l.item())
        grad_norms.append(norm.item())
        opt.step()
    print("losses:", " ".join(f"{x:.12f}" for x in losses))
    print("grad norms (before clipping):", " ".join(f"{x:.6f}" for x in grad_norms))
    assert losses[-1] < losses[0] - 0.05, "the 10 AdamW steps must decrease the loss"
    assert sum(b < a for a, b in zip(losses, losses[1:])) >= 7, "loss should mostly decrease"
    assert torch.all(W["wte"].detach()[V:] == 0), "padded wte rows must stay zero"

    # Cross-check: the documented update rule, written out by hand, reproduces torch's run.
    manual_losses, manual_final = manual_adamw(
        init, lambda P: forward(P, tokens, targets, cfg)[1], is_decayed, hp)
    assert max(abs(a - b) for a, b in zip(losses, manual_losses)) < 1e-12, manual_losses
    for n in names:
        assert torch.allclose(manual_final[n], W[n].detach(), rtol=0, atol=1e-12), n

    tensors = {
        "tokens": tokens.to(torch.int32).numpy(),
        "targets": targets.to(torch.int32).numpy(),
        "logits": logits[..., :V].contiguous().numpy(),
        "loss": np.array(loss.item(), dtype=np.float64),
        "losses": np.array(losses, dtype=np.float64),
        "grad_norms": np.array(grad_norms, dtype=np.float64),
    }
    for n in names:
        tensors["param." + n] = init[n].numpy()
        tensors["grad." + n] = grads[n].numpy()
    meta = {k: str(v) for k, v in cfg.items()}
    meta.update({k: repr(v) if isinstance(v, float) else str(v) for k, v in hp.items()})
    meta.update({"torch_version": torch.__version__, "script": SCRIPT, "seed": str(SEED),
                 "ln_eps": repr(LN_EPS), "gelu": "tanh"})
    nbytes = write_safetensors(out_path, tensors, meta)
    print(f"wrote {out_path}: {len(tensors)} tensors, {nbytes} bytes")


if __name__ == "__main__":
    main()
