# configs/test/llama-tiny.json (RoPE, RMSNorm, SwiGLU, grouped-query attention, untied head)
# trains on the default corpus and its validation loss clearly falls; the run directory holds a
# complete checkpoint with every Llama tensor; generate samples from it; and a run stopped at
# step 6 and resumed reproduces the uninterrupted run's losses, weights and optimizer state bit
# for bit (as tests/e2e/test_resume.sh does for GPT-2).
source "$(dirname "$0")/lib.sh"
require_data
CFG=configs/test/llama-tiny.json
RUN="$WORK/run"
"$GOSSAMER" train -c $CFG --out "$RUN" >"$WORK/log" 2>&1 || { cat "$WORK/log"; fail "train exited non-zero"; finish; }
grep -q '"family": *"llama"' "$RUN/config.json" && pass "resolved config names family llama" || fail "config.json lacks family llama"
v0=$(json_field "$RUN/metrics.jsonl" 0 val_loss)
v1=$(json_field "$RUN/metrics.jsonl" 120 val_loss)
echo "val loss: $v0 -> $v1"
node -e "process.exit(($v0) - ($v1) > 2.0 ? 0 : 1)" && pass "validation loss fell by > 2 nats" || fail "validation loss did not fall enough: $v0 -> $v1"
CK="$RUN/checkpoints/step_00000120"
[[ -f "$CK/model.safetensors" && -f "$CK/optimizer.safetensors" && -f "$CK/trainer.json" ]] \
  && pass "final checkpoint complete" || fail "final checkpoint missing"
for name in wte lm_head.weight norm_f.weight blocks.1.attn.q.weight blocks.1.attn.k.weight \
            blocks.0.attn.v.weight blocks.0.attn.o.weight blocks.0.mlp.gate.weight \
            blocks.0.mlp.up.weight blocks.0.mlp.down.weight blocks.0.attn_norm.weight blocks.0.mlp_norm.weight; do
  grep -qa "\"$name\"" "$CK/model.safetensors" || fail "checkpoint lacks tensor $name"
done
grep -qa '"wpe"' "$CK/model.safetensors" && fail "llama checkpoint has a position embedding" || pass "checkpoint tensors are Llama's"
out=$("$GOSSAMER" generate --checkpoint "$RUN" --prompt "In the beginning" --tokens 20 --seed 1 2>/dev/null)
[[ ${#out} -gt 20 ]] && pass "generate: $out" || fail "generate printed too little: $out"

# Resume: a, uninterrupted 12 steps; c, the same run restarted from its step-6 checkpoint.
common=(--set train.steps=12 --set train.eval_every=0 --set train.checkpoint_every=6 --set train.keep_checkpoints=0)
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/a" >"$WORK/a.log" 2>&1 || { cat "$WORK/a.log"; fail "run a failed"; }
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/c" >/dev/null 2>&1 || fail "run c failed"
rm -rf "$WORK/c/checkpoints/step_00000012"
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/c" --resume "$WORK/c/checkpoints/step_00000006" >"$WORK/c.log" 2>&1 \
  || { cat "$WORK/c.log"; fail "resume failed"; }
cmp -s "$WORK/a/checkpoints/step_00000012/model.safetensors" "$WORK/c/checkpoints/step_00000012/model.safetensors" \
  && pass "resumed run: identical final weights" || fail "resumed run's weights differ"
cmp -s "$WORK/a/checkpoints/step_00000012/optimizer.safetensors" "$WORK/c/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "resumed run: identical optimizer state" || fail "resumed run's optimizer state differs"
[[ "$(losses "$WORK/a/metrics.jsonl")" == "$(losses "$WORK/c/metrics.jsonl")" ]] && pass "resumed run: identical loss log" \
  || { fail "resumed losses differ"; diff <(losses "$WORK/a/metrics.jsonl") <(losses "$WORK/c/metrics.jsonl") | head; }
grep -q "resumed from" "$WORK/c.log" && pass "resume is logged" || fail "resume not logged"
finish
