# Checkpoints written before the architecture step (tests/assets/legacy_v1, made by
# scripts/make_legacy_checkpoints.sh with the binary of commit 5300dbc) still load: resuming
# each one at its world size reproduces the losses the old binary logged after it, bit for
# bit (AdamW, AdamS under ZeRO-1, SCAPE readings A and B with a pending mask); eval, generate
# and export-hf accept them.
source "$(dirname "$0")/lib.sh"
G="$GOSSAMER"
A=tests/assets/legacy_v1

resume() {  # NAME NP SETS...
  local name="$1" np="$2"; shift 2
  local cmd=("$G" train -c "$A/base.json" --out "$WORK/$name" --resume "$A/$name/step_00000002")
  for s in "$@"; do cmd+=(--set "$s"); done
  if [[ $np == 1 ]]; then "${cmd[@]}" >"$WORK/$name.log" 2>&1; else mpirun_np "$np" "${cmd[@]}" >"$WORK/$name.log" 2>&1; fi \
    || { tail -n 20 "$WORK/$name.log"; fail "$name: resume failed"; return; }
  grep '"loss"' "$WORK/$name/metrics.jsonl" | node -e '
    for (const l of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean))
      { const j = JSON.parse(l); console.log(j.step, j.loss); }' >"$WORK/$name.losses"
  if cmp -s "$A/$name/losses.txt" "$WORK/$name.losses"; then
    pass "$name: resumed at $np rank(s), losses of steps 3-6 equal the old binary's bit for bit"
  else
    fail "$name: losses differ: $(paste -d' ' "$A/$name/losses.txt" "$WORK/$name.losses" | tr '\n' ';')"
  fi
}

# SCAPE's defaults changed after these were written (docs/SCAPE.md): the runs continue only
# with the specified reading they ran with, named here; without it the resume is refused.
specified=(optimizer.scape.mask_score=momentum optimizer.scape.normaliser=step optimizer.scape.mask_age_bonus=0)
expect_error "legacy SCAPE checkpoint under today's defaults" \
  '^\[error\] --resume: optimizer.scape.mask_score is "momentum" in the checkpoint and "momentum_residual" now' \
  mpirun_np 2 "$G" train -c "$A/base.json" --out "$WORK/scape-a-defaults" --resume "$A/scape-a/step_00000002" \
  --set optimizer.name=scape --set optimizer.scape.sparsity=0.9 --set optimizer.scape.dense_warmup_steps=1 \
  --set parallel.zero_stage=1

resume adamw 1
resume adams-zero1 2 optimizer.name=adams parallel.zero_stage=1
resume scape-a 2 optimizer.name=scape optimizer.scape.sparsity=0.9 optimizer.scape.dense_warmup_steps=1 parallel.zero_stage=1 \
  "${specified[@]}"
resume scape-b 2 optimizer.name=scape optimizer.scape.sparsity=0.9 optimizer.scape.dense_warmup_steps=1 optimizer.scape.reading=B parallel.zero_stage=1 \
  "${specified[@]}"

# The config stored in an old checkpoint (flat optimizer keys) is still read by the tools.
"$G" export-hf "$A/scape-a/step_00000002" "$WORK/hf" --no-tokenizer >"$WORK/export.log" 2>&1 \
  && [[ -f "$WORK/hf/model.safetensors" ]] && pass "export-hf of a legacy SCAPE checkpoint" \
  || { cat "$WORK/export.log"; fail "export-hf of a legacy checkpoint"; }
"$G" eval -c "$A/base.json" --checkpoint "$A/scape-b/step_00000002" --data "$A/train_000000.bin" --json \
  >"$WORK/eval.out" 2>"$WORK/eval.log" && tail -n 1 "$WORK/eval.out" | grep -q '"val_loss"' \
  && pass "eval of a legacy checkpoint" || { cat "$WORK/eval.log"; fail "eval of a legacy checkpoint"; }
finish
