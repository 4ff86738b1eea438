# SentencePiece parity on the whole default corpus: `gossamer prep --train-spm` trains a BPE
# model (8000 pieces, byte fallback) on data/corpus/web/train.txt, tokenises train and val, and
# every shard token must equal what Debian's `spm_encode --output_format=id` gives for the same
# text. prep encodes a document (a run of non-blank lines joined with "\n") as one string, and
# the model's default normalisation (nmt_nfkc) turns "\n" into a space between two
# whitespace-split words, so a document's tokens are its lines' spm_encode ids concatenated;
# the expected stream is [<s>, line ids..., <s>, line ids...]. It also checks that the trained
# model's pieces and scores equal `spm_train`'s with the same settings, a unigram model (on
# val.txt), and that the comparison can fail. Fails loudly when the corpus or the sentencepiece
# tools are missing (scripts/prepare-data.sh web; scripts/install-deps.sh).
source "$(dirname "$0")/lib.sh"

corpus=data/corpus/web
for f in "$corpus/train.txt" "$corpus/val.txt"; do
  [[ -f "$f" ]] || { echo "FAIL: $f missing: run scripts/prepare-data.sh web first" >&2; exit 1; }
done
for t in spm_encode spm_train python3; do
  command -v "$t" >/dev/null || { echo "FAIL: $t not found: run scripts/install-deps.sh" >&2; exit 1; }
done

# compare SHARD_PREFIX TEXT IDS VOCAB: shard tokens vs the per-line spm_encode ids of TEXT.
compare() {
  python3 - "$@" <<'PY'
import array, glob, struct, sys
prefix, text_path, ids_path, vocab_path = sys.argv[1:]
pieces = [l.split("\t")[0] for l in open(vocab_path, encoding="utf-8").read().split("\n")[:-1]]
doc = pieces.index("<s>") if "<s>" in pieces else pieces.index("</s>")
got = []
for p in sorted(glob.glob(prefix + "_*.bin")):
    b = open(p, "rb").read()
    magic, version, n = struct.unpack("<3i", b[:12])
    assert magic == 20240520 and version in (1, 2), (p, magic, version)
    a = array.array("H" if version == 1 else "I")
    a.frombytes(b[1024:1024 + n * a.itemsize])
    got.extend(a)
text = open(text_path, "rb").read().split(b"\n")
ids = open(ids_path, "rb").read().split(b"\n")
if text and text[-1] == b"": text.pop()
if ids and ids[-1] == b"": ids.pop()
if len(text) != len(ids):
    sys.exit(f"FAILED: {text_path} has {len(text)} lines but spm_encode printed {len(ids)}")
want, where, in_doc = [], [], False
for i, (line, row) in enumerate(zip(text, ids)):
    if line.strip(b" \t\r") == b"":
        in_doc = False
        continue
    if not in_doc:
        want.append(doc); where.append(i + 1); in_doc = True
    toks = [int(x) for x in row.split()]
    want.extend(toks); where.extend([i + 1] * len(toks))
for k, (g, w) in enumerate(zip(got, want)):
    if g != w:
        sys.exit(f"FAILED at token {k} (line {where[k]} of {text_path}): shard {got[k:k + 8]}, "
                 f"spm_encode {want[k:k + 8]} (pieces {pieces[g]!r} vs {pieces[w]!r})")
if len(got) != len(want):
    sys.exit(f"FAILED: shard has {len(got)} tokens, spm_encode {len(want)} (equal prefix)")
print(f"{len(got)} tokens, {sum(1 for t in got if t == doc)} documents, all equal to spm_encode")
PY
}

spm="$WORK/spm/web"
start=$SECONDS
if ! "$GOSSAMER" prep --train-spm "$spm" --spm-vocab-size 8000 --spm-type bpe --spm-byte-fallback \
  --output "$WORK/train" "$corpus/train.txt" 2>"$WORK/prep_train.log"; then
  cat "$WORK/prep_train.log" >&2
  echo "FAIL: gossamer prep --train-spm failed" >&2
  exit 1
fi
echo "train: $(grep -o 'spm training: [0-9]* lines.*' "$WORK/prep_train.log")"
echo "train: $(grep -o '[0-9]* documents, .*tokens/s' "$WORK/prep_train.log") ($((SECONDS - start)) s with training)"
[[ -f "$spm.model" && -f "$spm.vocab" ]] && pass "wrote $spm.model and $spm.vocab" || fail "model files missing"
ls "$WORK"/spm/*.tmp >/dev/null 2>&1 && fail "temporary files left in $WORK/spm"
"$GOSSAMER" prep --tokenizer "spm:$spm.model" --output "$WORK/val" "$corpus/val.txt" 2>"$WORK/prep_val.log" ||
  { cat "$WORK/prep_val.log" >&2; fail "val: gossamer prep --tokenizer spm:... failed"; }

for split in train val; do
  spm_encode --model="$spm.model" --output_format=id <"$corpus/$split.txt" >"$WORK/$split.ids"
  if out="$(compare "$WORK/$split" "$corpus/$split.txt" "$WORK/$split.ids" "$spm.vocab" 2>&1)"; then
    pass "bpe $split: $out"
  else
    fail "bpe $split: $out"
  fi
done

# The trained model is spm_train's: same pieces and scores with the same settings.
spm_train --input="$corpus/train.txt" --model_prefix="$WORK/ref" --vocab_size=8000 --model_type=bpe \
  --byte_fallback=true --max_sentence_length=1073741824 --num_threads=1 --minloglevel=1 >/dev/null 2>&1 ||
  fail "spm_train failed"
if cmp -s "$spm.vocab" "$WORK/ref.vocab"; then
  pass "trained vocabulary equals spm_train's ($(wc -l <"$spm.vocab") pieces)"
else
  fail "trained vocabulary differs from spm_train's: $(diff "$spm.vocab" "$WORK/ref.vocab" | head -3 | tr '\n' ' ')"
fi

# Unigram, trained and checked on val.txt (smaller, so fast).
uni="$WORK/spm/uni"
if "$GOSSAMER" prep --train-spm "$uni" --spm-vocab-size 2000 --spm-type unigram \
  --output "$WORK/uni" "$corpus/val.txt" 2>"$WORK/prep_uni.log"; then
  spm_encode --model="$uni.model" --output_format=id <"$corpus/val.txt" >"$WORK/uni.ids"
  if out="$(compare "$WORK/uni" "$corpus/val.txt" "$WORK/uni.ids" "$uni.vocab" 2>&1)"; then
    pass "unigram val: $out"
  else
    fail "unigram val: $out"
  fi
else
  cat "$WORK/prep_uni.log" >&2
  fail "unigram: gossamer prep --train-spm failed"
fi

# Training samples and generate work with the spm tokenizer: a few steps of the tiny model on
# the spm shards (vocabulary 8000), a sample every 5 steps, then generate from the checkpoint.
run="$WORK/run"
if "$GOSSAMER" train -c configs/test/gpt2-tiny.json --out "$run" --set model.vocab_size=8000 \
  --set "data.train=$WORK/train_*.bin" --set "data.val=$WORK/val_*.bin" \
  --set "data.tokenizer=spm:$spm.model" --set train.steps=10 --set train.sample_every=5 \
  --set train.eval_every=0 >"$WORK/train.log" 2>&1; then
  n=$(grep -c '\[info\] sample: ' "$WORK/train.log")
  [[ $n -eq 2 ]] && pass "training printed $n samples: $(grep -m1 -o 'sample: .\{0,60\}' "$WORK/train.log")" ||
    fail "training printed $n samples, expected 2"
  out=$("$GOSSAMER" generate --checkpoint "$run" --prompt "In the beginning" --tokens 12 --seed 1 2>"$WORK/gen.log")
  [[ "$out" == "In the beginning"?* ]] && pass "generate: $out" || { cat "$WORK/gen.log" >&2; fail "generate printed: $out"; }
else
  tail -5 "$WORK/train.log" >&2
  fail "training on spm shards failed"
fi
expect_error "spm tokenizer smaller than the model" "8000 tokens.*50257" "$GOSSAMER" train \
  -c configs/test/gpt2-tiny.json --out "$WORK/run2" --set "data.train=$WORK/train_*.bin" \
  --set "data.val=" --set "data.tokenizer=spm:$spm.model" --set train.sample_every=5

# The comparison itself must be able to fail: one altered token is reported with its position.
python3 - "$WORK/val_000000.bin" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
pos = 1024 + 2 * 1000  # token 1000 (uint16 tokens after the 256-int32 header)
b[pos] ^= 1
open(p, "wb").write(bytes(b))
PY
if out="$(compare "$WORK/val" "$corpus/val.txt" "$WORK/val.ids" "$spm.vocab" 2>&1)"; then
  fail "altered shard: comparison passed"
elif grep -q "FAILED at token 1000 " <<<"$out"; then
  pass "altered shard detected: $(head -1 <<<"$out")"
else
  fail "altered shard: unexpected report: $out"
fi
echo "total $((SECONDS - start)) s"
finish
