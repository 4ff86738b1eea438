#!/usr/bin/python3
"""Golden reference for the Llama model test: an independent, from-scratch float64 PyTorch
Llama (no transformers), written from the semantics of Hugging Face's LlamaForCausalLM, with
gossamer's parameter names and layouts, dumped to safetensors.

Run with Debian's python (python3-torch 1.13 CPU + numpy), not a pyenv python:

    /usr/bin/python3 scripts/make_golden_llama.py tests/assets/llama_golden.safetensors

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
Model (HF LlamaForCausalLM): x = wte[tok] (no position embedding); per block
  x += o(attn(rope(q(h)), rope(k(h)), v(h))), h = rmsnorm(x; attn_norm)
  x += down(silu(gate(h)) * up(h)),           h = rmsnorm(x; mlp_norm)
logits = lm_head(rmsnorm(x; norm_f)) (untied); no biases anywhere.
  rmsnorm(x; w) = x * rsqrt(mean(x^2) + norm_eps) * w
  rope: HF rotate_half convention: inv_freq = 1 / theta^(arange(0, hs, 2) / hs),
        freqs = t * inv_freq, emb = cat(freqs, freqs), x' = x cos(emb) + rotate_half(x) sin(emb),
        rotate_half(x) = cat(-x[hs/2:], x[:hs/2])   (element i pairs with i + hs/2)
  attn: causal softmax(q k^T / sqrt(hs)) v with n_kv_head key/value heads shared by groups of
        n_head / n_kv_head consecutive query heads (HF repeat_kv: query head h uses kv head
        h // (n_head / n_kv_head)).
Linear layers are nn.Linear layout: y = x @ W^T, W (out, in). Head h of q uses output columns
h*hs:(h+1)*hs of attn.q, kv head g columns g*hs:(g+1)*hs of attn.k / attn.v.
Optimizer: torch.optim.AdamW (lr 1e-3, betas (0.9, 0.95), eps 1e-8), weight decay 0.1 only on
the attention / MLP matrices (attn.q/k/v/o, mlp.gate/up/down), none on norms, wte, lm_head;
after torch.nn.utils.clip_grad_norm_(1.0).
Self-checks (asserts): rotate_half RoPE against Meta's interleaved complex-number RoPE under the
head-dimension permutation that relates them (and its relative-position property), SiLU and
cross-entropy against torch built-ins, grouped-query attention against multi-head attention
with k/v heads repeated, padded lm_head/wte rows get zero gradient, the losses decrease, and a
hand-written AdamW + clipping loop reproduces torch's losses and final parameters to 1e-12.
Also prints the float32-vs-float64 logits difference.
Initialisation (torch.manual_seed(4321), drawn in param_shapes order, then tokens, then targets):
matrices N(0, 0.05) (attn.o / mlp.down N(0, 0.05/sqrt(2L))), norm weights 1 + 0.1 N(0,1),
wte and lm_head N(0, 0.05) with rows >= V zeroed.
"""
import math
import sys

import numpy as np
import torch

from golden_common import manual_adamw, write_safetensors

SCRIPT = "scripts/make_golden_llama.py"
CFG = dict(n_layer=2, n_head=4, n_kv_head=2, d_model=64, d_ff=96, vocab_size=997,
           padded_vocab=1024, max_seq_len=32, rope_theta=500000.0, norm_eps=1e-5, B=3, T=13)
HP = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0, steps=10)
SEED = 4321


def param_shapes(cfg):
    """(name, shape) for every parameter, in gossamer's naming (forward order here; the C++
    layout stores them in backward order, which does not matter to a name -> tensor file)."""
    C, L, F = cfg["d_model"], cfg["n_layer"], cfg["d_ff"]
    hs = C // cfg["n_head"]
    Q, KV = cfg["n_head"] * hs, cfg["n_kv_head"] * hs
    out = [("wte", (cfg["padded_vocab"], C))]
    for l in range(L):
        b = f"blocks.{l}."
        out += [
            (b + "attn_norm.weight", (C,)),
            (b + "attn.q.weight", (Q, C)), (b + "attn.k.weight", (KV, C)),
            (b + "attn.v.weight", (KV, C)), (b + "attn.o.weight", (C, Q)),
            (b + "mlp_norm.weight", (C,)),
            (b + "mlp.gate.weight", (F, C)), (b + "mlp.up.weight", (F, C)),
            (b + "mlp.down.weight", (C, F)),
        ]
    out += [("norm_f.weight", (C,)), ("lm_head.weight", (cfg["padded_vocab"], C))]
    return out


def is_decayed(name):
    """Weight decay applies to the 2-D attention / MLP matrices only."""
    return name.startswith("blocks.") and name.endswith(
        ("attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight", "mlp.gate.weight",
         "mlp.up.weight", "mlp.down.weight"))


def init_params(cfg):
    """Draws every parameter from the global torch RNG (seeded by the caller), float64."""
    L, V = cfg["n_layer"], cfg["vocab_size"]
    params = {}
    for name, shape in param_shapes(cfg):
        z = torch.randn(shape, dtype=torch.float64)
        if name in ("wte", "lm_head.weight"):
            p = 0.05 * z
            p[V:] = 0.0
        elif name.endswith("norm.weight") or name == "norm_f.weight":
            p = 1.0 + 0.1 * z
        elif name.endswith(("attn.o.weight", "mlp.down.weight")):
            p = (0.05 / math.sqrt(2 * L)) * z
        elif name.endswith(".weight"):
            p = 0.05 * z
        else:
            raise AssertionError(name)
        params[name] = p
    return params


# ---- the model, written out op by op -------------------------------------------------

def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


def silu(x):
    return x * torch.sigmoid(x)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(T, hs, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, hs/2)
    emb = torch.cat((freqs, freqs), dim=-1)                              # (T, hs)
    return emb.cos(), emb.sin()


def apply_rope(x, theta):
    """x (B, heads, T, hs) -> rotated, HF apply_rotary_pos_emb with position_ids = arange(T)."""
    cos, sin = rope_cos_sin(x.shape[-2], x.shape[-1], theta)
    return x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype)


def repeat_kv(x, n_rep):
    """(B, nkv, T, hs) -> (B, nkv * n_rep, T, hs), as HF: kv head g serves heads g*n_rep.."""
    B, nkv, T, hs = x.shape
    return x[:, :, None, :, :].expand(B, nkv, n_rep, T, hs).reshape(B, nkv * n_rep, T, hs)


def linear(x, w):
    return x @ w.t()


def attention(x, wq, wk, wv, wo, n_head, n_kv_head, theta):
    B, T, C = x.shape
    hs = wq.shape[0] // n_head
    q = linear(x, wq).reshape(B, T, n_head, hs).transpose(1, 2)       # (B,nh,T,hs)
    k = linear(x, wk).reshape(B, T, n_kv_head, hs).transpose(1, 2)    # (B,nkv,T,hs)
    v = linear(x, wv).reshape(B, T, n_kv_head, hs).transpose(1, 2)
    q, k = apply_rope(q, theta), apply_rope(k, theta)
    k, v = repeat_kv(k, n_head // n_kv_head), repeat_kv(v, n_head // n_kv_head)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))           # (B,nh,T,T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, n_head * hs)          # heads back to columns
    return linear(y, wo)


def forward(P, tokens, targets, cfg):
    """Returns (logits (B,T,Vp), mean loss over the first V columns)."""
    V, eps, theta = cfg["vocab_size"], cfg["norm_eps"], cfg["rope_theta"]
    x = P["wte"][tokens]
    for l in range(cfg["n_layer"]):
        b = f"blocks.{l}."
        h = rmsnorm(x, P[b + "attn_norm.weight"], eps)
        x = x + attention(h, P[b + "attn.q.weight"], P[b + "attn.k.weight"],
                          P[b + "attn.v.weight"], P[b + "attn.o.weight"], cfg["n_head"],
                          cfg["n_kv_head"], theta)
        h = rmsnorm(x, P[b + "mlp_norm.weight"], eps)
        h = silu(linear(h, P[b + "mlp.gate.weight"])) * linear(h, P[b + "mlp.up.weight"])
        x = x + linear(h, P[b + "mlp.down.weight"])
    x = rmsnorm(x, P["norm_f.weight"], eps)
    logits = linear(x, P["lm_head.weight"])                          # (B,T,Vp)
    logp = torch.log_softmax(logits[..., :V], dim=-1)
    loss = -logp.gather(-1, targets.unsqueeze(-1)).mean()
    return logits, loss


def self_check_ops():
    """Our hand-written ops against independent formulations (catches a typo in a formula)."""
    g = torch.Generator().manual_seed(7)
    # RoPE: Meta's original form rotates interleaved pairs (2i, 2i+1) as complex numbers by
    # t * inv_freq[i]. rotate_half is the same rotation on the head dimension permuted so that
    # pair i is (i, i + hs/2).
    B, H, T, hs, theta = 2, 3, 11, 16, 500000.0
    x = torch.randn(B, H, T, hs, dtype=torch.float64, generator=g)
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    inter = torch.stack((x[..., :hs // 2], x[..., hs // 2:]), dim=-1)    # (.., hs/2, 2)
    z = torch.view_as_complex(inter.contiguous()) * torch.polar(torch.ones_like(angles), angles)
    zr = torch.view_as_real(z)
    ref = torch.cat((zr[..., 0], zr[..., 1]), dim=-1)
    assert torch.allclose(apply_rope(x, theta), ref, rtol=0, atol=1e-13)
    # Relative positions: <rope(q)_t, rope(k)_s> depends on t - s only.
    q = torch.randn(hs, dtype=torch.float64, generator=g).expand(1, 1, T, hs)
    k = torch.randn(hs, dtype=torch.float64, generator=g).expand(1, 1, T, hs)
    d = (apply_rope(q, theta) * apply_rope(k, theta).roll(-3, dims=2)).sum(-1)[0, 0, :T - 3]
    assert torch.allclose(d, d[0].expand_as(d), rtol=0, atol=1e-12)
    # SiLU, cross-entropy.
    y = torch.randn(5, 7, 24, dtype=torch.float64, generator=g)
    assert torch.allclose(silu(y), torch.nn.functional.silu(y), rtol=0, atol=1e-15)
    logits = torch.randn(6, 11, dtype=torch.float64, generator=g)
    t = torch.randint(0, 11, (6,), generator=g)
    ref = torch.nn.functional.cross_entropy(logits, t)
    ours = -torch.log_softmax(logits, -1).gather(-1, t.unsqueeze(-1)).mean()
    assert abs(ours.item() - ref.item()) < 1e-14
    # GQA with n_kv_head = 2 equals MHA (n_kv_head = n_head = 4) whose k/v heads are the
    # repeated kv heads: kv head g serves query heads 2g, 2g+1.
    C, nh, nkv = 32, 4, 2
    hs = C // nh
    x = torch.randn(2, 9, C, dtype=torch.float64, generator=g)
    wq = torch.randn(C, C, dtype=torch.float64, generator=g)
    wk = torch.randn(nkv * hs, C, dtype=torch.float64, generator=g)
    wv = torch.randn(nkv * hs, C, dtype=torch.float64, generator=g)
    wo = torch.randn(C, C, dtype=torch.float64, generator=g)
    rep = lambda w: w.reshape(nkv, hs, C).repeat_interleave(nh // nkv, dim=0).reshape(nh * hs, C)
    gqa = attention(x, wq, wk, wv, wo, nh, nkv, 10000.0)
    mha = attention(x, wq, rep(wk), rep(wv), wo, nh, nh, 10000.0)
    assert torch.allclose(gqa, mha, rtol=0, atol=1e-12)


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
    assert torch.all(grads["lm_head.weight"][V:] == 0), "padded lm_head rows: zero gradient"

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
    assert torch.all(W["lm_head.weight"].detach()[V:] == 0), "padded lm_head rows stay zero"

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
    meta = {k: repr(v) if isinstance(v, float) else str(v) for k, v in cfg.items()}
    meta.update({k: repr(v) if isinstance(v, float) else str(v) for k, v in hp.items()})
    meta.update({"torch_version": torch.__version__, "script": SCRIPT, "seed": str(SEED),
                 "family": "llama", "rope": "rotate_half"})
    nbytes = write_safetensors(out_path, tensors, meta)
    print(f"wrote {out_path}: {len(tensors)} tensors, {nbytes} bytes")


if __name__ == "__main__":
    main()
