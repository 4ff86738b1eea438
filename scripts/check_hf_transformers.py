#!/usr/bin/env python3
"""Checks a `gossamer export-hf` directory with the real Hugging Face `transformers`, for a
machine that has it (pip install torch transformers sentencepiece):

    python3 scripts/check_hf_transformers.py HF_DIR [--asset tests/assets/hf_parity_gpt2.safetensors]
            [--gossamer build/bin/gossamer --tokenizer-spec data/tokenizers/gpt2]

1. AutoModelForCausalLM.from_pretrained(HF_DIR) loads it unchanged: the expected class
   (GPT2LMHeadModel / LlamaForCausalLM), no missing, unexpected or mismatched keys (GPT-2's
   lm_head.weight is tied to transformer.wte.weight, as the export intends).
2. Its logits (float64 and float32) equal those of scripts/hf_reference.py, the independent
   implementation that tests/unit/test_hf.cpp compares gossamer's logits with.
3. With --asset (the parity asset of test_hf, whose export `GOSSAMER_HF_PARITY_EXPORT_DIR=DIR
   build/bin/test_hf --gtest_filter='HfParity.*Committed*'` writes to DIR/gpt2 and DIR/llama):
   the directory is the one the asset was made from (sha256), and transformers' logits equal
   the asset's reference logits, which gossamer's match in CI: so transformers reproduces ours.
4. If the directory has tokenizer files: AutoTokenizer loads them; with --gossamer and
   --tokenizer-spec, `gossamer prep` and the HF tokenizer give the same ids for a sample text.
Exits non-zero on any mismatch; prints every number it checks.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference  # noqa: E402  (the independent implementation, same directory)

TOL64, TOL32 = 1e-9, 1e-4
SAMPLE = "Hello world! The quick brown fox jumps over the lazy dog.\nIt's 2024: naïve café, 東京."


def rel_err(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    return ok


def prep_ids(gossamer, spec, text):
    """Token ids gossamer's tokenizer gives `text` (through `gossamer prep`), minus the leading
    document token that prep writes."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "sample.txt")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        subprocess.run([gossamer, "prep", "--tokenizer", spec, "--docs", "file", "--output",
                        os.path.join(tmp, "s"), src], check=True, capture_output=True)
        raw = open(os.path.join(tmp, "s_000000.bin"), "rb").read()
        header = np.frombuffer(raw[:1024], dtype="<i4")
        dtype = "<u2" if header[1] == 1 else "<u4"
        ids = np.frombuffer(raw[1024:], dtype=dtype)[: header[2]]
        return [int(x) for x in ids[1:]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("--asset", help="tests/assets/hf_parity_<arch>.safetensors of this export")
    ap.add_argument("--random", default="2,16,0", help="B,T,SEED tokens when no --asset")
    ap.add_argument("--gossamer", help="gossamer binary, to compare tokenizers")
    ap.add_argument("--tokenizer-spec", help="the tokenizer spec the export was made from")
    args = ap.parse_args()
    try:
        import transformers
    except ImportError:
        sys.exit("check_hf_transformers.py needs transformers (pip install torch transformers "
                 "sentencepiece); without it, tests/unit/test_hf.cpp checks the export against "
                 "scripts/hf_reference.py")

    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    cfg = json.load(open(os.path.join(args.hf_dir, "config.json")))
    mtype = cfg["model_type"]
    want = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM"}[mtype]
    ok = True

    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        args.hf_dir, torch_dtype=torch.float32, output_loading_info=True)
    model.eval()
    ok &= check(type(model).__name__ == want, f"class {type(model).__name__}")
    missing = [k for k in info["missing_keys"] if not (mtype == "gpt2" and k == "lm_head.weight")]
    for key in ("unexpected_keys", "mismatched_keys"):
        ok &= check(not info[key], f"{key}: {info[key]}")
    ok &= check(not missing, f"missing_keys: {info['missing_keys']}")
    if mtype == "gpt2":
        ok &= check(model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr(),
                    "lm_head.weight is tied to transformer.wte.weight")

    V = cfg["vocab_size"]
    ref_asset = None
    if args.asset:
        a, meta = hf_reference.read_safetensors(args.asset)
        ok &= check(meta["config_sha256"] == hf_reference.sha256(os.path.join(args.hf_dir, "config.json")),
                    "config.json is the asset's")
        st = os.path.join(args.hf_dir, "model.safetensors")
        ok &= check(meta["tensors_sha256"] == hf_reference.tensors_sha256(st),
                    "model.safetensors tensors are the asset's")
        ids = torch.from_numpy(a["tokens"].astype(np.int64))
        ref_asset = a["logits"]
    else:
        B, T, seed = (int(s) for s in args.random.split(","))
        torch.manual_seed(seed)
        ids = torch.randint(0, V, (B, T))

    with torch.no_grad():
        ours_ref = hf_reference.MODELS[mtype](cfg, hf_reference.load_weights(args.hf_dir), ids).numpy()
        hf32 = model(ids).logits.double().numpy()
        hf64 = model.double()(ids).logits.numpy()
    e64, e32 = rel_err(hf64, ours_ref), rel_err(hf32, ours_ref)
    ok &= check(e64 <= TOL64, f"transformers float64 vs hf_reference.py: {e64:.3e} (<= {TOL64})")
    ok &= check(e32 <= TOL32, f"transformers float32 vs hf_reference.py: {e32:.3e} (<= {TOL32})")
    if ref_asset is not None:
        e = rel_err(hf64, ref_asset)
        ok &= check(e <= TOL64, f"transformers float64 vs asset reference logits: {e:.3e}")

    has_tok = any(os.path.exists(os.path.join(args.hf_dir, f))
                  for f in ("tokenizer.model", "vocab.json"))
    if has_tok:
        for fast in (False, True):
            tok = transformers.AutoTokenizer.from_pretrained(args.hf_dir, use_fast=fast)
            hf_ids = tok(SAMPLE, add_special_tokens=False)["input_ids"]
            print(f"{type(tok).__name__}: {len(hf_ids)} ids for the sample")
            if args.gossamer and args.tokenizer_spec:
                g = prep_ids(args.gossamer, args.tokenizer_spec, SAMPLE)
                ok &= check(g == hf_ids, f"{type(tok).__name__} ids == gossamer prep ids")
    print("all checks passed" if ok else "some checks FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
