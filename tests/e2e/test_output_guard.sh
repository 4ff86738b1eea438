# No command that writes destroys a run (issue 39, io/output_guard.h): export-hf, import-hf,
# prep, sweep and train recognise a training run, a training checkpoint, a path inside a run's
# checkpoints/ and a directory whose .lock a live process holds, and refuse them, naming what
# they found, whatever the options; --force replaces only an earlier output of the same
# command (its .gossamer-output marker). After every refusal the run is byte for byte as before.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
R="$WORK/run"
"$G" train -c $TINY --set train.steps=4 --set train.eval_every=0 --set train.checkpoint_every=2 \
  --set train.log_every=100 --out "$R" >"$WORK/train.log" 2>&1 || { tail "$WORK/train.log"; fail "training failed"; finish; }
C="$R/checkpoints/step_00000002"
snapshot() { (cd "$R" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
before="$(snapshot)"
"$G" export-hf "$R" "$WORK/hf" >/dev/null 2>&1 || fail "a plain export failed"
"$G" import-hf "$WORK/hf" "$WORK/imported" >/dev/null 2>&1 || fail "a plain import failed"
cp -r "$C" "$WORK/copied"  # a training checkpoint copied out of its run: no marker

# 1. export-hf and import-hf, with --force, into the run, its checkpoints and other outputs.
expect_error "export-hf --force into its own run" "HF_DIR: .*/run holds a training run \(config.json of a run, metrics.jsonl, checkpoints/ with 2 checkpoint\(s\)\); refusing to write there" \
  "$G" export-hf --force "$R" "$R"
expect_error "export-hf --force into a run's checkpoint" "is inside the checkpoints of the training run" \
  "$G" export-hf --force "$R" "$C"
expect_error "import-hf --force onto a run's checkpoint" "CHECKPOINT_DIR: .*step_00000002 is inside the checkpoints of the training run .*; refusing to write there" \
  "$G" import-hf --force "$WORK/hf" "$C"
expect_error "import-hf as a new step of a run" "step_00000009 is inside the checkpoints of the training run" \
  "$G" import-hf "$WORK/hf" "$R/checkpoints/step_00000009"
expect_error "import-hf --force onto a copied training checkpoint" "copied is a training checkpoint \(trainer.json, model.safetensors, optimizer.safetensors\); refusing to write there" \
  "$G" import-hf --force "$WORK/hf" "$WORK/copied"
expect_error "import-hf --force onto an HF export" "hf was made by gossamer export-hf, not import-hf; refusing to replace it, even with --force" \
  "$G" import-hf --force "$WORK/hf" "$WORK/hf"
expect_error "export-hf --force onto an imported checkpoint" "imported was made by gossamer import-hf, not export-hf" \
  "$G" export-hf --force "$R" "$WORK/imported"
expect_error "export-hf over its own export without --force" "hf holds an earlier output of export-hf; use --force to replace it" \
  "$G" export-hf "$R" "$WORK/hf"
"$G" export-hf --force "$R" "$WORK/hf" >/dev/null 2>&1 && "$G" import-hf --force "$WORK/hf" "$WORK/imported" >/dev/null 2>&1 \
  && pass "--force replaces an earlier output of the same command (export-hf, import-hf)" || fail "--force over its own output failed"

# 2. A directory whose lock a live process holds (flock(1) stands in for a training that has
# written nothing yet) is refused by every writer.
L="$WORK/locked"
mkdir -p "$L" && : >"$L/.lock"
bash -c 'exec 9>>"$1" && flock 9 && exec sleep 60' _ "$L/.lock" >/dev/null 2>&1 &
holder=$!  # sleep itself holds the lock: killing it lets go
for _ in $(seq 1 50); do flock -n "$L/.lock" true 2>/dev/null || break; sleep 0.1; done
expect_error "export-hf --force into a locked directory" "locked is in use by a training" "$G" export-hf --force "$R" "$L"
expect_error "import-hf --force into a locked directory" "locked is in use by a training" "$G" import-hf --force "$WORK/hf" "$L"
expect_error "prep into a locked directory" "prep: --output: .*locked is in use by a training" \
  "$G" prep --tokenizer data/tokenizers/gpt2 --output "$L/shard" data/corpus/web/val.txt
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true

# 3. prep and sweep write into directories: never a run's or a checkpoint's.
expect_error "prep into a run directory" "prep: --output: .*/run holds a training run" \
  "$G" prep --tokenizer data/tokenizers/gpt2 --output "$R/shard" data/corpus/web/val.txt
expect_error "prep into a run's checkpoint" "prep: --output: .*is inside the checkpoints of the training run" \
  "$G" prep --tokenizer data/tokenizers/gpt2 --output "$C/shard" data/corpus/web/val.txt
cat >"$WORK/sweep.json" <<EOF
{"base": "$SRC/$TINY", "out": "$R", "grid": {"optimizer.lr": [0.001]},
 "set": {"train.steps": 2, "train.eval_every": 0}}
EOF
expect_error "sweep into a run directory" "sweep: out: .*/run holds a training run" "$G" sweep "$WORK/sweep.json"

# 4. train's --out: a checkpoint, another command's output, a path inside a run's checkpoints.
t() { "$G" train -c $TINY --set train.steps=2 --set train.eval_every=0 "$@"; }
expect_error "train --out a run's checkpoints" "train.out_dir: .*checkpoints is inside the checkpoints of the training run .*even with --overwrite" \
  t --out "$R/checkpoints" --overwrite
expect_error "train --out a copied checkpoint" "train.out_dir: .*/copied is a training checkpoint .*, not a run directory" \
  t --out "$WORK/copied" --overwrite
expect_error "train --out an HF export" "train.out_dir: .*/hf holds the output of gossamer export-hf" \
  t --out "$WORK/hf" --overwrite

[[ "$(snapshot)" == "$before" ]] && pass "the run is byte for byte as before every refusal" || fail "a refused command changed the run"
[[ -z "$(find "$WORK" -name '.*.tmp-*' -o -name '.*.old-*')" ]] && pass "no staging directory left behind" || fail "staging directories left behind"
finish
