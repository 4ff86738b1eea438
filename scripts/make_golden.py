#!/usr/bin/python3
"""Golden references for the model tests (tests/unit/test_model_golden.cpp): per model family an
independent, from-scratch float64 PyTorch model (no transformers) with gossamer's parameter names
and layouts, dumped to safetensors. One script body for every family; the families differ only
in their class below (config, seed, parameters, initialisation, forward, ops self-checks).

Run with Debian's python (python3-torch 1.13 CPU + numpy), not a pyenv python:

    /usr/bin/python3 scripts/make_golden.py --family gpt2 tests/assets/gpt2_golden.safetensors
    /usr/bin/python3 scripts/make_golden.py --family llama tests/assets/llama_golden.safetensors

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
  __metadata__                              config and hyperparameters as strings, the family's
                                            own keys (see META) and the command that wrote it
Linear layers are nn.Linear layout: y = x @ W^T (+ b), W (out, in).
Optimizer: torch.optim.AdamW (lr 1e-3, betas (0.9, 0.95), eps 1e-8), weight decay 0.1 only on
the family's attention / MLP matrices (is_decayed), after torch.nn.utils.clip_grad_norm_(1.0).
Self-checks (asserts), every family: its hand-written ops against independent formulations
(self_check_ops), padded rows of its vocabulary tables get zero gradient and stay zero through
training, the losses decrease, and a hand-written AdamW + clipping loop (golden_common.py)
reproduces torch's losses and final parameters to 1e-12. Also prints the float32-vs-float64
logits difference.
Draw order: torch.manual_seed(SEED), every parameter in param_shapes order, tokens, targets.
"""
import argparse
import math

import numpy as np
import torch

from golden_common import manual_adamw, write_safetensors

SCRIPT = "scripts/make_golden.py"
HP = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0, steps=10)


def linear(x, w, b=None):
    y = x @ w.t()
    return y if b is None else y + b


def cross_entropy(logits, targets, V):
    """Mean cross-entropy over the first V columns (the padded ones are not the vocabulary)."""
    logp = torch.log_softmax(logits[..., :V], dim=-1)
    return -logp.gather(-1, targets.unsqueeze(-1)).mean()


def causal_softmax(att):
    T = att.shape[-1]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)


def check_cross_entropy(g):
    logits = torch.randn(6, 11, dtype=torch.float64, generator=g)
    t = torch.randint(0, 11, (6,), generator=g)
    ref = torch.nn.functional.cross_entropy(logits, t)
    assert abs(cross_entropy(logits, t, 11).item() - ref.item()) < 1e-14


# ---- GPT-2 ----------------------------------------------------------------------------------

class Gpt2:
    """x = wte[tok] + wpe[pos]; per block x += attn(ln1(x)); x += mlp(ln2(x)),
    mlp = proj(gelu_tanh(fc(.))); causal attention, scale 1/sqrt(hs); ln_f; logits = x @ wte^T
    (tied); LayerNorm eps 1e-5; biases everywhere. qkv output columns [0,C) q, [C,2C) k,
    [2C,3C) v; head h uses columns h*hs:(h+1)*hs of each.
    Initialisation: weights N(0, 0.05) (attn.proj / mlp.proj weights N(0, 0.05/sqrt(2L))),
    biases N(0, 0.02), LN weights 1 + 0.1 N(0,1), LN biases 0.1 N(0,1), wte/wpe N(0, 0.05) with
    wte rows >= V zeroed."""
    CFG = dict(n_layer=2, n_head=4, d_model=64, vocab_size=997, padded_vocab=1024, max_seq_len=32,
               B=3, T=13)
    SEED = 1234
    LN_EPS = 1e-5
    VOCAB_TABLES = ("wte",)  # tables with padded rows >= V
    META = {"ln_eps": repr(LN_EPS), "gelu": "tanh"}

    @staticmethod
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

    @staticmethod
    def is_decayed(name):
        """Weight decay applies to the 2-D attention / MLP matrices only."""
        return name.endswith(("attn.qkv.weight", "attn.proj.weight", "mlp.fc.weight",
                              "mlp.proj.weight"))

    @staticmethod
    def init_params(cfg):
        """Draws every parameter from the global torch RNG (seeded by the caller), float64."""
        L, V = cfg["n_layer"], cfg["vocab_size"]
        params = {}
        for name, shape in Gpt2.param_shapes(cfg):
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

    @staticmethod
    def layernorm(x, w, b):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased, as nn.LayerNorm
        return (x - mean) / torch.sqrt(var + Gpt2.LN_EPS) * w + b

    @staticmethod
    def gelu_tanh(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    @staticmethod
    def attention(x, w_qkv, b_qkv, w_proj, b_proj, n_head):
        B, T, C = x.shape
        hs = C // n_head
        qkv = linear(x, w_qkv, b_qkv)                                   # (B,T,3C)
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        q = q.reshape(B, T, n_head, hs).transpose(1, 2)                 # (B,nh,T,hs)
        k = k.reshape(B, T, n_head, hs).transpose(1, 2)
        v = v.reshape(B, T, n_head, hs).transpose(1, 2)
        att = causal_softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)))  # (B,nh,T,T)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)                  # heads back to columns
        return linear(y, w_proj, b_proj)

    @staticmethod
    def forward(P, tokens, targets, cfg):
        """Returns (logits (B,T,Vp), mean loss over the first V columns)."""
        B, T = tokens.shape
        ln, attention = Gpt2.layernorm, Gpt2.attention
        x = P["wte"][tokens] + P["wpe"][:T]
        for l in range(cfg["n_layer"]):
            b = f"blocks.{l}."
            h = ln(x, P[b + "ln1.weight"], P[b + "ln1.bias"])
            x = x + attention(h, P[b + "attn.qkv.weight"], P[b + "attn.qkv.bias"],
                              P[b + "attn.proj.weight"], P[b + "attn.proj.bias"], cfg["n_head"])
            h = ln(x, P[b + "ln2.weight"], P[b + "ln2.bias"])
            h = Gpt2.gelu_tanh(linear(h, P[b + "mlp.fc.weight"], P[b + "mlp.fc.bias"]))
            x = x + linear(h, P[b + "mlp.proj.weight"], P[b + "mlp.proj.bias"])
        x = ln(x, P["ln_f.weight"], P["ln_f.bias"])
        logits = x @ P["wte"].t()                                       # (B,T,Vp)
        return logits, cross_entropy(logits, targets, cfg["vocab_size"])

    @staticmethod
    def self_check_ops():
        """LayerNorm, GELU and cross-entropy against torch's built-ins."""
        g = torch.Generator().manual_seed(7)
        x = torch.randn(5, 7, 24, dtype=torch.float64, generator=g)
        w = torch.randn(24, dtype=torch.float64, generator=g)
        b = torch.randn(24, dtype=torch.float64, generator=g)
        ref = torch.nn.functional.layer_norm(x, (24,), w, b, eps=Gpt2.LN_EPS)
        assert torch.allclose(Gpt2.layernorm(x, w, b), ref, rtol=0, atol=1e-12)
        ref = torch.nn.functional.gelu(x, approximate="tanh")
        assert torch.allclose(Gpt2.gelu_tanh(x), ref, rtol=0, atol=1e-14)
        check_cross_entropy(g)


# ---- Llama ----------------------------------------------------------------------------------

class Llama:
    """Hugging Face LlamaForCausalLM's semantics: x = wte[tok] (no position embedding); per block
      x += o(attn(rope(q(h)), rope(k(h)), v(h))), h = rmsnorm(x; attn_norm)
      x += down(silu(gate(h)) * up(h)),           h = rmsnorm(x; mlp_norm)
    logits = lm_head(rmsnorm(x; norm_f)) (untied); no biases anywhere.
      rmsnorm(x; w) = x * rsqrt(mean(x^2) + norm_eps) * w
      rope: HF rotate_half convention: inv_freq = 1 / theta^(arange(0, hs, 2) / hs),
            freqs = t * inv_freq, emb = cat(freqs, freqs),
            x' = x cos(emb) + rotate_half(x) sin(emb),
            rotate_half(x) = cat(-x[hs/2:], x[:hs/2])   (element i pairs with i + hs/2)
      attn: causal softmax(q k^T / sqrt(hs)) v with n_kv_head key/value heads shared by groups
            of n_head / n_kv_head consecutive query heads (HF repeat_kv: query head h uses kv
            head h // (n_head / n_kv_head)).
    Head h of q uses output columns h*hs:(h+1)*hs of attn.q, kv head g columns g*hs:(g+1)*hs of
    attn.k / attn.v. Weight decay on attn.q/k/v/o and mlp.gate/up/down only.
    Initialisation: matrices N(0, 0.05) (attn.o / mlp.down N(0, 0.05/sqrt(2L))), norm weights
    1 + 0.1 N(0,1), wte and lm_head N(0, 0.05) with rows >= V zeroed."""
    CFG = dict(n_layer=2, n_head=4, n_kv_head=2, d_model=64, d_ff=96, vocab_size=997,
               padded_vocab=1024, max_seq_len=32, rope_theta=500000.0, norm_eps=1e-5, B=3, T=13)
    SEED = 4321
    VOCAB_TABLES = ("wte", "lm_head.weight")  # tables with padded rows >= V
    META = {"family": "llama", "rope": "rotate_half"}

    @staticmethod
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

    @staticmethod
    def is_decayed(name):
        """Weight decay applies to the 2-D attention / MLP matrices only."""
        return name.startswith("blocks.") and name.endswith(
            ("attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight",
             "mlp.gate.weight", "mlp.up.weight", "mlp.down.weight"))

    @staticmethod
    def init_params(cfg):
        """Draws every parameter from the global torch RNG (seeded by the caller), float64."""
        L, V = cfg["n_layer"], cfg["vocab_size"]
        params = {}
        for name, shape in Llama.param_shapes(cfg):
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

    @staticmethod
    def rmsnorm(x, w, eps):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w

    @staticmethod
    def silu(x):
        return x * torch.sigmoid(x)

    @staticmethod
    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    @staticmethod
    def apply_rope(x, theta):
        """x (B, heads, T, hs) -> rotated, HF apply_rotary_pos_emb, position_ids = arange(T)."""
        T, hs = x.shape[-2], x.shape[-1]
        inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
        freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, hs/2)
        emb = torch.cat((freqs, freqs), dim=-1)                              # (T, hs)
        cos, sin = emb.cos(), emb.sin()
        return x * cos.to(x.dtype) + Llama.rotate_half(x) * sin.to(x.dtype)

    @staticmethod
    def repeat_kv(x, n_rep):
        """(B, nkv, T, hs) -> (B, nkv * n_rep, T, hs), as HF: kv head g serves heads g*n_rep.."""
        B, nkv, T, hs = x.shape
        return x[:, :, None, :, :].expand(B, nkv, n_rep, T, hs).reshape(B, nkv * n_rep, T, hs)

    @staticmethod
    def attention(x, wq, wk, wv, wo, n_head, n_kv_head, theta):
        B, T, C = x.shape
        hs = wq.shape[0] // n_head
        q = linear(x, wq).reshape(B, T, n_head, hs).transpose(1, 2)       # (B,nh,T,hs)
        k = linear(x, wk).reshape(B, T, n_kv_head, hs).transpose(1, 2)    # (B,nkv,T,hs)
        v = linear(x, wv).reshape(B, T, n_kv_head, hs).transpose(1, 2)
        q, k = Llama.apply_rope(q, theta), Llama.apply_rope(k, theta)
        k, v = Llama.repeat_kv(k, n_head // n_kv_head), Llama.repeat_kv(v, n_head // n_kv_head)
        att = causal_softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs)))  # (B,nh,T,T)
        y = (att @ v).transpose(1, 2).reshape(B, T, n_head * hs)          # heads back to columns
        return linear(y, wo)

    @staticmethod
    def forward(P, tokens, targets, cfg):
        """Returns (logits (B,T,Vp), mean loss over the first V columns)."""
        eps, theta, norm = cfg["norm_eps"], cfg["rope_theta"], Llama.rmsnorm
        x = P["wte"][tokens]
        for l in range(cfg["n_layer"]):
            b = f"blocks.{l}."
            h = norm(x, P[b + "attn_norm.weight"], eps)
            x = x + Llama.attention(h, P[b + "attn.q.weight"], P[b + "attn.k.weight"],
                                    P[b + "attn.v.weight"], P[b + "attn.o.weight"],
                                    cfg["n_head"], cfg["n_kv_head"], theta)
            h = norm(x, P[b + "mlp_norm.weight"], eps)
            h = Llama.silu(linear(h, P[b + "mlp.gate.weight"])) * linear(h, P[b + "mlp.up.weight"])
            x = x + linear(h, P[b + "mlp.down.weight"])
        x = norm(x, P["norm_f.weight"], eps)
        logits = linear(x, P["lm_head.weight"])                          # (B,T,Vp)
        return logits, cross_entropy(logits, targets, cfg["vocab_size"])

    @staticmethod
    def self_check_ops():
        """RoPE against Meta's interleaved complex-number form (and its relative-position
        property), SiLU and cross-entropy against torch, GQA against MHA with repeated k/v."""
        g = torch.Generator().manual_seed(7)
        # Meta's original RoPE rotates interleaved pairs (2i, 2i+1) as complex numbers by
        # t * inv_freq[i]. rotate_half is the same rotation on the head dimension permuted so
        # that pair i is (i, i + hs/2).
        B, H, T, hs, theta = 2, 3, 11, 16, 500000.0
        x = torch.randn(B, H, T, hs, dtype=torch.float64, generator=g)
        inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
        angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
        inter = torch.stack((x[..., :hs // 2], x[..., hs // 2:]), dim=-1)    # (.., hs/2, 2)
        z = torch.view_as_complex(inter.contiguous()) * torch.polar(torch.ones_like(angles),
                                                                    angles)
        zr = torch.view_as_real(z)
        ref = torch.cat((zr[..., 0], zr[..., 1]), dim=-1)
        assert torch.allclose(Llama.apply_rope(x, theta), ref, rtol=0, atol=1e-13)
        # Relative positions: <rope(q)_t, rope(k)_s> depends on t - s only.
        rope = Llama.apply_rope
        q = torch.randn(hs, dtype=torch.float64, generator=g).expand(1, 1, T, hs)
        k = torch.randn(hs, dtype=torch.float64, generator=g).expand(1, 1, T, hs)
        d = (rope(q, theta) * rope(k, theta).roll(-3, dims=2)).sum(-1)[0, 0, :T - 3]
        assert torch.allclose(d, d[0].expand_as(d), rtol=0, atol=1e-12)
        y = torch.randn(5, 7, 24, dtype=torch.float64, generator=g)
        assert torch.allclose(Llama.silu(y), torch.nn.functional.silu(y), rtol=0, atol=1e-15)
        check_cross_entropy(g)
        # GQA with n_kv_head = 2 equals MHA (n_kv_head = n_head = 4) whose k/v heads are the
        # repeated kv heads: kv head g serves query heads 2g, 2g+1.
        C, nh, nkv = 32, 4, 2
        hs = C // nh
        x = torch.randn(2, 9, C, dtype=torch.float64, generator=g)
        wq = torch.randn(C, C, dtype=torch.float64, generator=g)
        wk = torch.randn(nkv * hs, C, dtype=torch.float64, generator=g)
        wv = torch.randn(nkv * hs, C, dtype=torch.float64, generator=g)
        wo = torch.randn(C, C, dtype=torch.float64, generator=g)
        rep = lambda w: w.reshape(nkv, hs, C).repeat_interleave(nh // nkv, dim=0).reshape(
            nh * hs, C)
        gqa = Llama.attention(x, wq, wk, wv, wo, nh, nkv, 10000.0)
        mha = Llama.attention(x, wq, rep(wk), rep(wv), wo, nh, nh, 10000.0)
        assert torch.allclose(gqa, mha, rtol=0, atol=1e-12)


FAMILIES = {"gpt2": Gpt2, "llama": Llama}


# ---- the reference run, the same for every family ----------------------------------------------

def train_with_torch(fam, init, tokens, targets, cfg, hp, loss, grads):
    """torch's own AdamW and clip_grad_norm_ on the same batch; returns (losses, grad norms,
    final parameters). Step 0 must reproduce the step-0 loss and gradients exactly."""
    names = [n for n, _ in fam.param_shapes(cfg)]
    W = {n: torch.nn.Parameter(init[n].clone()) for n in names}
    opt = torch.optim.AdamW(
        [{"params": [W[n] for n in names if fam.is_decayed(n)], "weight_decay": hp["weight_decay"]},
         {"params": [W[n] for n in names if not fam.is_decayed(n)], "weight_decay": 0.0}],
        lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    losses, grad_norms = [], []
    for step in range(hp["steps"]):
        opt.zero_grad(set_to_none=True)
        _, l = fam.forward(W, tokens, targets, cfg)
        l.backward()
        if step == 0:
            assert l.item() == loss.item()
            for n in names:
                assert torch.equal(W[n].grad, grads[n]), n
        norm = torch.nn.utils.clip_grad_norm_([W[n] for n in names], hp["grad_clip"])
        losses.append(l.item())
        grad_norms.append(norm.item())
        opt.step()
    return losses, grad_norms, {n: W[n].detach() for n in names}


def main():
    ap = argparse.ArgumentParser(description="Writes a model family's golden reference.")
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("out", metavar="OUT.safetensors")
    args = ap.parse_args()
    fam = FAMILIES[args.family]
    torch.set_num_threads(1)  # fixed reduction order -> identical bytes on every run
    torch.use_deterministic_algorithms(True)
    fam.self_check_ops()

    cfg, hp = fam.CFG, HP
    B, T, V = cfg["B"], cfg["T"], cfg["vocab_size"]
    torch.manual_seed(fam.SEED)
    init = fam.init_params(cfg)
    tokens = torch.randint(0, V, (B, T), dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), dtype=torch.int64)

    # Step-0 reference: logits, loss and unclipped gradients at the initial parameters.
    P = {n: p.clone().requires_grad_(True) for n, p in init.items()}
    logits, loss = fam.forward(P, tokens, targets, cfg)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in P.items()}
    logits = logits.detach()
    for n in fam.VOCAB_TABLES:
        assert torch.all(grads[n][V:] == 0), f"padded {n} rows must get zero gradient"

    # float32 sanity run (printed only).
    P32 = {n: p.float() for n, p in init.items()}
    with torch.no_grad():
        logits32, loss32 = fam.forward(P32, tokens, targets, cfg)
    print(f"float32 vs float64: max |logits diff| = "
          f"{(logits32.double() - logits).abs().max().item():.3e}, "
          f"|loss diff| = {abs(loss32.item() - loss.item()):.3e}")

    losses, grad_norms, final = train_with_torch(fam, init, tokens, targets, cfg, hp, loss, grads)
    print("losses:", " ".join(f"{x:.12f}" for x in losses))
    print("grad norms (before clipping):", " ".join(f"{x:.6f}" for x in grad_norms))
    assert losses[-1] < losses[0] - 0.05, "the 10 AdamW steps must decrease the loss"
    assert sum(b < a for a, b in zip(losses, losses[1:])) >= 7, "loss should mostly decrease"
    for n in fam.VOCAB_TABLES:
        assert torch.all(final[n][V:] == 0), f"padded {n} rows must stay zero"

    # Cross-check: the documented update rule, written out by hand, reproduces torch's run.
    manual_losses, manual_final = manual_adamw(
        init, lambda P: fam.forward(P, tokens, targets, cfg)[1], fam.is_decayed, hp)
    assert max(abs(a - b) for a, b in zip(losses, manual_losses)) < 1e-12, manual_losses
    names = [n for n, _ in fam.param_shapes(cfg)]
    for n in names:
        assert torch.allclose(manual_final[n], final[n], rtol=0, atol=1e-12), n

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
    meta.update({"torch_version": torch.__version__, "seed": str(fam.SEED),
                 "script": f"{SCRIPT} --family {args.family}"})
    meta.update(fam.META)
    nbytes = write_safetensors(args.out, tensors, meta)
    print(f"wrote {args.out}: {len(tensors)} tensors, {nbytes} bytes")


if __name__ == "__main__":
    main()
