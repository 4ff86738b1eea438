# Determinism and resume: two identical runs are bitwise identical; a run stopped at step 6 and
# resumed reproduces the uninterrupted run's losses and final weights bit for bit.
source "$(dirname "$0")/lib.sh"
require_data
CFG=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=12 --set train.eval_every=0 --set train.checkpoint_every=6 --set train.keep_checkpoints=0)
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/a" >"$WORK/a.log" 2>&1 || { cat "$WORK/a.log"; fail "run a failed"; }
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/b" >"$WORK/b.log" 2>&1 || { cat "$WORK/b.log"; fail "run b failed"; }
cmp -s "$WORK/a/checkpoints/step_00000012/model.safetensors" "$WORK/b/checkpoints/step_00000012/model.safetensors" \
  && pass "two runs: identical final weights" || fail "two identical runs differ"
[[ "$(losses "$WORK/a/metrics.jsonl")" == "$(losses "$WORK/b/metrics.jsonl")" ]] && pass "two runs: identical losses" || fail "losses differ between identical runs"

# Run c to the end, drop its last checkpoint, resume from step 6 and redo steps 7-12.
"$GOSSAMER" train -c $CFG "${common[@]}" --out "$WORK/c" >/dev/null 2>&1
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
