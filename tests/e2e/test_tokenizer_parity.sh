# Whole-corpus tokenizer parity: `gossamer prep` must produce, token for token, what the npm
# package gpt-3-encoder's encode() gives for data/corpus/web/{train,val}.txt (documents split
# and EOT-prefixed as prep does; the reference is scripts/tokenizer_reference.js, which feeds
# encode() piecewise at cuts that cannot change GPT-2's pre-tokenisation). On a mismatch it
# prints the first differing position with context. Needs scripts/prepare-data.sh web first
# (scripts/test.sh runs it); fails loudly when the corpus or the tokenizer is missing.
source "$(dirname "$0")/lib.sh"

corpus=data/corpus/web
for f in "$corpus/train.txt" "$corpus/val.txt" data/tokenizers/gpt2/encoder.json \
  tools/node_modules/gpt-3-encoder/Encoder.js; do
  [[ -f "$f" ]] || { echo "FAIL: $f missing: run scripts/prepare-data.sh web first" >&2; exit 1; }
done

for split in train val; do
  log="$WORK/prep_$split.log"
  if ! "$GOSSAMER" prep --tokenizer data/tokenizers/gpt2 --output "$WORK/$split" \
    "$corpus/$split.txt" 2>"$log"; then
    cat "$log" >&2
    fail "$split: gossamer prep failed"
    continue
  fi
  echo "$split: $(grep -o '[0-9]* documents, .*tokens/s' "$log")"
  if out="$(node scripts/tokenizer_reference.js compare "$WORK/$split" "$corpus/$split.txt" 2>&1)"; then
    pass "$split: $out"
  else
    fail "$split: $out"
  fi
done

# The comparison itself must be able to fail: one altered token is reported with its position.
python3 - "$WORK/val_000000.bin" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
pos = 1024 + 2 * 1000  # token 1000 (uint16 tokens after the 256-int32 header)
b[pos] ^= 1
open(p, "wb").write(bytes(b))
PY
if out="$(node scripts/tokenizer_reference.js compare "$WORK/val" "$corpus/val.txt" 2>&1)"; then
  fail "altered shard: comparison passed"
elif grep -q "FAILED at token 1000 " <<<"$out"; then
  pass "altered shard detected: $(head -1 <<<"$out")"
else
  fail "altered shard: unexpected report: $out"
fi
finish
