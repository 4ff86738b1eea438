# `gossamer eval`: validation loss over every window of the shards exactly once (independent of
# the micro-batch, equal to the trainer's whole-set validation, the same for a run directory,
# its checkpoint and its HF export), the JSON last line, and the HellaSwag-format
# multiple-choice accuracy on a file generated here (a trained model must tell real
# continuations of the corpus from letter salad; chance is 25%), with every bad input named.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny.json
# The validation set here: a shard of the first 9,950 tokens of the corpus's (155 windows: 38
# batches of 4 and a last of 3, or 51 of 3 and a last of 2), so that the whole-set passes are
# quick; every check below holds for any set.
node -e '
  const fs = require("fs"), b = fs.readFileSync(process.argv[1]), n = 9950;
  const out = Buffer.from(b.subarray(0, 1024 + 2 * n)); out.writeInt32LE(n, 8);
  fs.writeFileSync(process.argv[2], out);' data/web/val_000000.bin "$WORK/small.bin"
VAL=(--set "data.val=$WORK/small.bin")
"$G" train -c $TINY "${VAL[@]}" --set train.steps=60 --set train.eval_every=60 --set train.eval_batches=0 \
  --set train.log_every=100 --out "$WORK/run" >"$WORK/train.log" 2>&1 \
  || { cat "$WORK/train.log"; fail "training failed"; finish; }
CK="$WORK/run/checkpoints/step_00000060"

field() { node -e 'const j = JSON.parse(process.argv[1]); if (!(process.argv[2] in j)) process.exit(1); console.log(JSON.stringify(j[process.argv[2]]))' "$1" "$2"; }
close() { node -e 'const [a, b, tol] = process.argv.slice(1).map(Number); process.exit(Math.abs(a - b) <= tol * Math.abs(b) ? 0 : 1)' "$1" "$2" "$3"; }

last="$("$G" eval -c $TINY "${VAL[@]}" --checkpoint "$WORK/run" --json 2>"$WORK/eval.log" | tail -n 1)" || { cat "$WORK/eval.log"; fail "eval failed"; }
loss="$(field "$last" val_loss)" && pass "val_loss $loss" || fail "no val_loss in: $last"
tokens="$(field "$last" tokens)" && pass "tokens $tokens" || fail "no tokens in: $last"
ppl="$(field "$last" perplexity)" || fail "no perplexity"
node -e "process.exit(Math.abs(Math.exp($loss) - $ppl) < 1e-6 * $ppl ? 0 : 1)" && pass "perplexity = exp(val_loss)" || fail "perplexity $ppl != exp($loss)"

# Every complete 65-token window once: windows start every 64 tokens of each shard.
expected_tokens="$(node -e '
  let total = 0;
  for (const f of process.argv.slice(1)) {
    const n = require("fs").readFileSync(f).readInt32LE(8);
    if (n >= 65) total += Math.floor((n - 65) / 64) + 1;
  }
  console.log(total * 64)' "$WORK/small.bin")"
[[ "$tokens" == "$expected_tokens" ]] && pass "tokens = every window of the val shard ($expected_tokens)" || fail "tokens $tokens, expected $expected_tokens"

trainer_loss="$(json_field "$WORK/run/metrics.jsonl" 60 val_loss)"
close "$loss" "$trainer_loss" 1e-6 && pass "equals the trainer's whole-set validation loss $trainer_loss" || fail "eval $loss vs trainer $trainer_loss"

small() { field "$("$G" eval -c $TINY --data "$WORK/small.bin" --json "$@" 2>/dev/null | tail -n 1)" val_loss; }
l4="$(small --checkpoint "$WORK/run")"
l3="$(small --set data.micro_batch=3 --checkpoint "$CK")"
close "$l3" "$l4" 1e-5 && pass "micro_batch 3 (partial last batch), checkpoint dir: $l3 = micro_batch 4's" || fail "micro_batch 3 gives $l3, micro_batch 4 $l4"

"$G" export-hf "$WORK/run" "$WORK/hf" 2>/dev/null || fail "export-hf failed"
lhf="$(small --checkpoint "$WORK/hf")"
close "$lhf" "$l4" 1e-5 && pass "HF export evaluates to the same loss" || fail "HF dir gives $lhf vs $l4"

plain="$("$G" eval -c $TINY --checkpoint "$WORK/run" --data "$WORK/small.bin" 2>/dev/null | tail -n 1)"
[[ "$plain" == "val_loss "*" perplexity "*" tokens 9920" ]] && pass "summary line: $plain" || fail "summary line: $plain"

# ---- multiple choice -------------------------------------------------------------------------
node -e '
  const text = require("fs").readFileSync("data/corpus/web/train.txt", "utf8");
  const words = text.split(/\s+/).filter(Boolean);
  let seed = 7; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const salad = (n) => Array.from({length: n}, () => Array.from({length: 2 + Math.floor(rnd() * 5)},
      () => "qxzjvkwpfy"[Math.floor(rnd() * 10)]).join("")).join(" ");
  const lines = [];
  for (let i = 0; i < 12; ++i) {
    const at = 1000 + i * 9001;
    const ctx = words.slice(at, at + 12).join(" "), real = words.slice(at + 12, at + 20).join(" ");
    const label = i % 4, endings = [0, 1, 2, 3].map((k) => (k === label ? real : salad(8)));
    lines.push(JSON.stringify({ctx, endings, label}));
  }
  require("fs").writeFileSync(process.argv[1], lines.join("\n") + "\n");' "$WORK/hs.jsonl"
hs="$("$G" eval -c $TINY --checkpoint "$WORK/run" --data "$WORK/small.bin" --hellaswag "$WORK/hs.jsonl" --json 2>"$WORK/hs.log" | tail -n 1)" || { cat "$WORK/hs.log"; fail "hellaswag eval failed"; }
n="$(field "$hs" hellaswag_examples)"; acc="$(field "$hs" hellaswag_acc)"; accn="$(field "$hs" hellaswag_acc_norm)"
[[ "$n" == 12 ]] && pass "12 examples scored" || fail "examples: $n"
node -e "process.exit($accn >= 0.75 ? 0 : 1)" && pass "acc_norm $accn (acc $acc) well above chance 0.25" || fail "acc_norm $accn: the trained model cannot tell text from letter salad"
field "$hs" val_loss >/dev/null && pass "loss and multiple choice in one run (--data)" || fail "val_loss missing with --hellaswag --data"
alone="$("$G" eval -c $TINY --checkpoint "$WORK/run" --hellaswag "$WORK/hs.jsonl" --limit 2 --json 2>/dev/null | tail -n 1)"
! field "$alone" val_loss >/dev/null && [[ "$(field "$alone" hellaswag_examples)" == 2 ]] \
  && pass "--hellaswag alone: no validation-loss pass" || fail "--hellaswag alone: $alone"
n5="$(field "$("$G" eval -c $TINY --checkpoint "$WORK/run" --data "$WORK/small.bin" --hellaswag "$WORK/hs.jsonl" --limit 5 --json 2>/dev/null | tail -n 1)" hellaswag_examples)"
[[ "$n5" == 5 ]] && pass "--limit 5" || fail "--limit 5 scored $n5"

# ---- bad input -------------------------------------------------------------------------------
{ head -n 3 "$WORK/hs.jsonl"; echo '{"ctx": "a", "endings": ["b", "c"], "label": 7}'; tail -n 2 "$WORK/hs.jsonl"; } >"$WORK/bad.jsonl"
expect_error "bad line named" "bad.jsonl:4: .label. 7 is not an index" "$G" eval -c $TINY --checkpoint "$WORK/run" --hellaswag "$WORK/bad.jsonl"
{ head -n 1 "$WORK/hs.jsonl"; echo '{"ctx": "a", "endings": ['; } >"$WORK/bad2.jsonl"
expect_error "broken JSON named" "bad2.jsonl:2: not a JSON object" "$G" eval -c $TINY --checkpoint "$WORK/run" --hellaswag "$WORK/bad2.jsonl"
expect_error "nothing to evaluate" "nothing to evaluate" "$G" eval -c $TINY --set 'data.val=""' --checkpoint "$WORK/run"
expect_error "model mismatch" "differs from the checkpoint.*n_layer" "$G" eval -c $TINY --set model.n_layer=3 --checkpoint "$WORK/run"

# kernels.device = cuda (eval) and --device cuda (generate): on a machine with a GPU the same
# numbers as on the CPU; without one (CI), an error naming the setting, never a CPU run.
if out="$("$G" eval -c $TINY --set kernels.device=cuda --checkpoint "$WORK/run" --data "$WORK/small.bin" --json 2>&1)"; then
  close "$(field "$(tail -n 1 <<<"$out")" val_loss)" "$l4" 1e-4 && pass "eval on cuda: val_loss as on the CPU" || fail "eval on cuda: $(tail -n 1 <<<"$out") vs $loss"
else
  grep -qE "kernels.device = cuda: (no GPU is visible|this build has no CUDA backend)" <<<"$out" && pass "eval with kernels.device = cuda and no GPU: refused, naming the key" || fail "eval on cuda without a GPU: $out"
fi
if out="$("$G" generate --checkpoint "$WORK/run" --tokens 4 --temperature 0 --device cuda 2>&1)"; then
  pass "generate on cuda ran"
else
  grep -qE "\-\-device = cuda: (no GPU is visible|this build has no CUDA backend)" <<<"$out" && pass "generate --device cuda and no GPU: refused, naming the flag" || fail "generate --device cuda without a GPU: $out"
fi
out="$("$G" generate --checkpoint "$WORK/run" --tokens 4 --device tpu 2>&1)" && fail "generate --device tpu accepted" || { grep -q -- "--device tpu: expected" <<<"$out" && pass "generate --device tpu refused" || fail "generate --device tpu: $out"; }
expect_error "missing checkpoint" "$WORK/nope" "$G" eval -c $TINY --checkpoint "$WORK/nope"
expect_error "no data matches" "nothing.bin" "$G" eval -c $TINY --checkpoint "$WORK/run" --data "$WORK/nothing.bin"
finish
