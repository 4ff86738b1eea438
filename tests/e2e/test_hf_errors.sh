# Bad input to export-hf, import-hf and train --init-from: each gets one clear line naming the
# file and the tensor or key, a non-zero exit, and nothing written (no output directory, no
# staging directory left behind). Covered: missing checkpoint, missing/corrupt tokenizer (GPT-2
# files, SentencePiece model), non-empty or unwritable output, no config.json, invalid JSON,
# unknown model_type / architecture, unsupported settings, no weights file, safetensors with a
# lying header (length, offsets, truncation), missing / unexpected tensors, shape mismatch
# against config.json, a tied head that differs, a model of another shape for --init-from.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny.json

"$G" train -c $TINY --set train.steps=1 --set train.eval_every=0 --out "$WORK/run" >"$WORK/run.log" 2>&1 \
  || { cat "$WORK/run.log"; fail "training failed"; finish; }
"$G" export-hf "$WORK/run" "$WORK/hf" 2>/dev/null || { fail "export-hf failed"; finish; }

# expect_clean NAME PATTERN CMD...: the error, and neither $WORK/out nor a staging dir exists.
expect_clean() {
  local name="$1"; expect_error "$@"
  [[ -e "$WORK/out" ]] && { fail "$name: $WORK/out was created"; rm -rf "$WORK/out"; }
  if find "$WORK" -name '.*.tmp-*' | grep -q .; then fail "$name: staging directory left behind"; fi
}
# variant NAME: a fresh copy of the good export in $WORK/NAME
variant() { rm -rf "$WORK/$1"; cp -r "$WORK/hf" "$WORK/$1"; }
# st EDIT DIR: rewrites DIR/model.safetensors (stdlib python; see the cases below)
st() {
  python3 - "$@" <<'PY'
import json, struct, sys
edit, path = sys.argv[1], sys.argv[2] + "/model.safetensors"
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
def rebuild(header, blobs):
    h, off, out = {"__metadata__": header.get("__metadata__", {})}, 0, b""
    for name, blob in blobs:
        e = dict(header[name]); e["data_offsets"] = [off, off + len(blob)]; h[name] = e
        off += len(blob); out += blob
    return h, out
blobs = [(k, data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items() if k != "__metadata__"]
if edit == "header-length":      # claims more header bytes than the file has
    raw = struct.pack("<Q", len(raw)) + raw[8:]
elif edit == "offsets":          # first tensor claims 4 bytes more than its shape needs
    first = next(k for k in header if k != "__metadata__")
    header[first]["data_offsets"][1] += 4
    h = json.dumps(header).encode(); raw = struct.pack("<Q", len(h)) + h + data
elif edit == "truncate":
    raw = raw[:len(raw) - 100]
elif edit == "drop":             # transformer.h.1.ln_2.bias missing
    header, data = rebuild(header, [b for b in blobs if b[0] != "transformer.h.1.ln_2.bias"])
    h = json.dumps(header).encode(); raw = struct.pack("<Q", len(h)) + h + data
elif edit == "extra":            # an unknown tensor
    header["transformer.h.9.mlp.c_fc.bias"] = header["transformer.h.0.mlp.c_fc.bias"]
    header, data = rebuild(header, blobs + [("transformer.h.9.mlp.c_fc.bias", dict(blobs)["transformer.h.0.mlp.c_fc.bias"])])
    h = json.dumps(header).encode(); raw = struct.pack("<Q", len(h)) + h + data
elif edit == "untied":           # lm_head.weight present but not equal to wte
    wte = bytearray(dict(blobs)["transformer.wte.weight"]); wte[0] ^= 1
    header["lm_head.weight"] = header["transformer.wte.weight"]
    header, data = rebuild(header, blobs + [("lm_head.weight", bytes(wte))])
    h = json.dumps(header).encode(); raw = struct.pack("<Q", len(h)) + h + data
open(path, "wb").write(raw)
PY
}
# cfg DIR KEY JSON: sets a config.json key
cfg() { node -e 'const f = process.argv[1] + "/config.json", fs = require("fs"); const j = JSON.parse(fs.readFileSync(f)); j[process.argv[2]] = JSON.parse(process.argv[3]); fs.writeFileSync(f, JSON.stringify(j));' "$@"; }

# ---- export-hf
expect_clean "export: no checkpoint" "nope: no such checkpoint" "$G" export-hf "$WORK/nope" "$WORK/out"
expect_clean "export: tokenizer directory missing" "nodir/encoder.json" "$G" export-hf --tokenizer "$WORK/nodir" "$WORK/run" "$WORK/out"
mkdir -p "$WORK/badtok" && cp data/tokenizers/gpt2/* "$WORK/badtok/" && echo "x y" >>"$WORK/badtok/vocab.bpe"
expect_clean "export: tokenizer corrupt" "badtok/vocab.bpe.*sha256" "$G" export-hf --tokenizer "$WORK/badtok" "$WORK/run" "$WORK/out"
echo "not a sentencepiece model" >"$WORK/bad.model"
expect_clean "export: spm model corrupt" "bad.model" "$G" export-hf --tokenizer "spm:$WORK/bad.model" "$WORK/run" "$WORK/out"
expect_clean "export: spm model missing" "missing.model" "$G" export-hf --tokenizer "spm:$WORK/missing.model" "$WORK/run" "$WORK/out"
expect_clean "export: --tokenizer with --no-tokenizer" "exclude each other" "$G" export-hf --no-tokenizer --tokenizer x "$WORK/run" "$WORK/out"
mkdir -p "$WORK/busy" && echo mine >"$WORK/busy/notes.txt"
expect_clean "export: non-empty output" "busy is not empty \(notes.txt\) and was not made by gossamer export-hf" "$G" export-hf "$WORK/run" "$WORK/busy"
expect_clean "export: --force over a foreign directory" "busy is not empty \(notes.txt\) and was not made by gossamer export-hf; refusing to replace it, even with --force" "$G" export-hf --force "$WORK/run" "$WORK/busy"
[[ "$(cat "$WORK/busy/notes.txt")" == mine ]] && pass "foreign directory untouched" || fail "foreign directory changed"
touch "$WORK/afile"
expect_clean "export: unwritable output" "cannot create directory .*afile" "$G" export-hf "$WORK/run" "$WORK/afile/out"

# ---- import-hf
mkdir -p "$WORK/empty"
expect_clean "import: no config.json" "empty/config.json: cannot open" "$G" import-hf "$WORK/empty" "$WORK/out"
variant badjson && echo '{"model_type": ' >"$WORK/badjson/config.json"
expect_clean "import: config.json not JSON" "badjson/config.json: not a valid JSON object" "$G" import-hf "$WORK/badjson" "$WORK/out"
variant bert && cfg "$WORK/bert" model_type '"bert"'
expect_clean "import: unknown model_type" 'bert/config.json: "model_type" is "bert"' "$G" import-hf "$WORK/bert" "$WORK/out"
variant arch && cfg "$WORK/arch" architectures '["GPT2ForTokenClassification"]'
expect_clean "import: unknown architecture" 'arch/config.json: "architectures" is \["GPT2ForTokenClassification"\]' "$G" import-hf "$WORK/arch" "$WORK/out"
variant act && cfg "$WORK/act" activation_function '"relu"'
expect_clean "import: unsupported activation" 'act/config.json: "activation_function" is "relu"' "$G" import-hf "$WORK/act" "$WORK/out"
variant noweights && rm "$WORK/noweights/model.safetensors"
expect_clean "import: no weights" "noweights: no model.safetensors" "$G" import-hf "$WORK/noweights" "$WORK/out"
variant hlen && st header-length "$WORK/hlen"
expect_clean "import: lying header length" "hlen/model.safetensors.*header length" "$G" import-hf "$WORK/hlen" "$WORK/out"
variant offs && st offsets "$WORK/offs"
expect_clean "import: lying data_offsets" "offs/model.safetensors.*tensor 'transformer.wte.weight': data_offsets" "$G" import-hf "$WORK/offs" "$WORK/out"
variant trunc && st truncate "$WORK/trunc"
expect_clean "import: truncated weights" "trunc/model.safetensors.*(truncated|exceed)" "$G" import-hf "$WORK/trunc" "$WORK/out"
variant drop && st drop "$WORK/drop"
expect_clean "import: missing tensor" "drop/model.safetensors: missing tensor 'transformer.h.1.ln_2.bias'" "$G" import-hf "$WORK/drop" "$WORK/out"
variant extra && st extra "$WORK/extra"
expect_clean "import: unexpected tensor" "extra/model.safetensors: unexpected tensor 'transformer.h.9.mlp.c_fc.bias'" "$G" import-hf "$WORK/extra" "$WORK/out"
variant untied && st untied "$WORK/untied"
expect_clean "import: tied head differs" "untied/model.safetensors: tensor 'lm_head.weight' differs from 'transformer.wte.weight'" "$G" import-hf "$WORK/untied" "$WORK/out"
variant shape && cfg "$WORK/shape" n_embd 128
expect_clean "import: shape mismatch vs config.json" "shape/model.safetensors: tensor 'transformer.wte.weight' has shape \[50257, 64\], config.json .* implies \[50257, 128\]" "$G" import-hf "$WORK/shape" "$WORK/out"
variant layers && cfg "$WORK/layers" n_layer 3
expect_clean "import: fewer layers than config.json" "layers/model.safetensors: missing tensor 'transformer.h.2" "$G" import-hf "$WORK/layers" "$WORK/out"
variant nospm && rm "$WORK/nospm/vocab.json" "$WORK/nospm/merges.txt" && echo '{"tokenizer_class": "LlamaTokenizer"}' >"$WORK/nospm/tokenizer_config.json"
expect_clean "import: tokenizer model missing" "nospm/tokenizer.model: missing" "$G" import-hf "$WORK/nospm" "$WORK/out"
cp "$WORK/bad.model" "$WORK/nospm/tokenizer.model"
expect_clean "import: tokenizer model corrupt" "nospm/tokenizer.model" "$G" import-hf "$WORK/nospm" "$WORK/out"
variant badvocab && echo '{"hello": 0}' >"$WORK/badvocab/vocab.json"
expect_clean "import: vocab.json not GPT-2's" "badvocab/vocab.json: not GPT-2's encoder.json" "$G" import-hf "$WORK/badvocab" "$WORK/out"
variant nomerges && rm "$WORK/nomerges/merges.txt"
expect_clean "import: merges.txt missing" "nomerges/merges.txt: missing" "$G" import-hf "$WORK/nomerges" "$WORK/out"
expect_clean "import: non-empty output" "busy is not empty \(notes.txt\) and was not made by gossamer import-hf" "$G" import-hf "$WORK/hf" "$WORK/busy"

# ---- train --init-from, generate
expect_clean "init-from: another model shape" "train.init_from \(--init-from\) .*hf: config.json describes another model than the run's \(n_layer: 2 vs 3" \
  "$G" train -c $TINY --set model.n_layer=3 --set train.steps=1 --init-from "$WORK/hf" --out "$WORK/out"
expect_clean "init-from: another checkpoint shape" "train.init_from \(--init-from\) .*: the checkpoint is of another model than the run's \(d_model: 64 vs 128" \
  "$G" train -c $TINY --set model.d_model=128 --set train.steps=1 --init-from "$WORK/run" --out "$WORK/out"
expect_clean "init-from: nothing there" "nope: no such checkpoint" "$G" train -c $TINY --init-from "$WORK/nope" --out "$WORK/out"
expect_clean "init-from with resume" "--init-from and --resume exclude each other" "$G" train -c $TINY --init-from "$WORK/hf" --resume "$WORK/run" --out "$WORK/out"
expect_error "generate: unknown model_type" 'bert/config.json: "model_type" is "bert"' "$G" generate --checkpoint "$WORK/bert"
finish
