# Run directories are never lost (docs/RELIABILITY.md): a new run refuses a directory that holds
# a run (offering --resume and --overwrite, which moves the old run aside), refuses any other
# non-empty directory even with --overwrite, refuses a directory another training holds
# (naming its pid), and --resume skips a damaged newest checkpoint for the newest intact one,
# continuing bit for bit; a checkpoint named explicitly must be intact, and trainer.json's
# fields are checked. A resume that changes the run's definition (model, data order, optimizer,
# seed, global batch) is refused unless --allow-change names the key; harmless keys are logged.
# A run stopped before its first checkpoint is started again by --resume, and leftovers of
# writes a crash interrupted are removed, each named.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
short=(--set train.steps=6 --set train.eval_every=0 --set train.checkpoint_every=2
       --set train.keep_checkpoints=0 --set train.log_every=100)
train() { "$G" train -c $TINY "${short[@]}" "$@"; }
sum() { sha256sum "$1" | cut -d' ' -f1; }

R="$WORK/run"
train --out "$R" >"$WORK/first.log" 2>&1 || { tail "$WORK/first.log"; fail "first run failed"; }
lines="$(wc -l <"$R/metrics.jsonl")"; config="$(sum "$R/config.json")"; model="$(sum "$R/checkpoints/step_00000006/model.safetensors")"

# 1. A new run into a run directory: refused, nothing touched.
expect_error "existing run without --resume" "already holds a run .*--resume .*--overwrite" train --out "$R" --set optimizer.lr=1e-2
[[ "$(wc -l <"$R/metrics.jsonl")" == "$lines" && "$(sum "$R/config.json")" == "$config" && -d "$R/checkpoints/step_00000002" ]] \
  && pass "the refused run left metrics.jsonl ($lines lines), config.json and the checkpoints as they were" \
  || fail "the refused run changed the run directory"

# 2. --overwrite moves the old run aside and says so.
train --out "$R" --overwrite >"$WORK/over.log" 2>&1 || { tail "$WORK/over.log"; fail "--overwrite failed"; }
aside="$(ls -d "$R".replaced-* 2>/dev/null | head -1)"
grep -q "moved the existing run .* to .*replaced-" "$WORK/over.log" && [[ -n "$aside" ]] \
  && [[ "$(wc -l <"$aside/metrics.jsonl")" == "$lines" && "$(sum "$aside/checkpoints/step_00000006/model.safetensors")" == "$model" ]] \
  && pass "--overwrite moved the old run whole to $(basename "$aside") and said so" || fail "--overwrite did not keep the old run"
expect_error "--overwrite with --resume" "--overwrite and --resume exclude each other" train --out "$R" --overwrite --resume "$R"

# 3. A directory that is not a run: refused, with or without --overwrite.
mkdir -p "$WORK/hf" && echo '{"model_type": "gpt2"}' >"$WORK/hf/config.json"
hf="$(sum "$WORK/hf/config.json")"
expect_error "non-run directory" "holds no gossamer run \(found config.json\)" train --out "$WORK/hf"
expect_error "non-run directory with --overwrite" "refusing to write into it, even with --overwrite" train --out "$WORK/hf" --overwrite
[[ "$(sum "$WORK/hf/config.json")" == "$hf" && ! -e "$WORK/hf/metrics.jsonl" ]] && pass "the foreign directory is untouched" || fail "the foreign directory was written"
expect_error "a file as --out" "exists and is not a directory" train --out "$WORK/hf/config.json"

# 4. Two trainings into one directory: the second is refused naming the first's pid.
L="$WORK/long"
"$G" train -c $TINY --set train.steps=100000 --set train.eval_every=0 --set train.log_every=1 --out "$L" >"$WORK/long.log" 2>&1 &
long=$!
for _ in $(seq 1 300); do [[ -s "$L/metrics.jsonl" ]] && break; sleep 0.1; done
expect_error "second training into a busy directory" "is in use by another training \(pid $long on " train --out "$L" --resume "$L"
expect_error "overwriting a busy directory" "is in use by another training \(pid $long" train --out "$L" --overwrite
expect_error "export-hf --force into a training's directory" "is in use by a training \(pid $long on " "$G" export-hf --force "$R" "$L"
kill -INT "$long"; wait "$long" || true
[[ -d "$L" && ! -e "$L.replaced-"* ]] 2>/dev/null && pass "the busy run was neither moved nor truncated" || fail "the busy run was moved"

# 5. --resume skips a damaged newest checkpoint and continues bit for bit from the one before.
D="$WORK/damaged"
train --out "$D" >/dev/null 2>&1 || fail "run to damage failed"
want="$(sum "$D/checkpoints/step_00000006/model.safetensors")"
truncate -s 100 "$D/checkpoints/step_00000006/optimizer.safetensors"
expect_error "an explicitly named damaged checkpoint" "optimizer.safetensors" train --out "$D" --resume "$D/checkpoints/step_00000006"
train --out "$D" --resume "$D" >"$WORK/fallback.log" 2>&1 || { tail "$WORK/fallback.log"; fail "fallback resume failed"; }
grep -q "skipping the damaged checkpoint .*step_00000006" "$WORK/fallback.log" && grep -q "resumed from .*step_00000004 at step 4" "$WORK/fallback.log" \
  && pass "--resume warned about step 6 and resumed from step 4" || fail "no fallback to step 4: $(grep -E 'warn|resumed' "$WORK/fallback.log" | head -3)"
[[ "$(sum "$D/checkpoints/step_00000006/model.safetensors")" == "$want" ]] \
  && pass "steps 5-6 retrained bit for bit (model.safetensors of step 6 as before the damage)" || fail "the retrained step 6 differs"

# 6. Resuming another run's checkpoint into a run directory, and a hand-edited trainer.json.
expect_error "resume into another run's directory" "holds another run than the checkpoint" train --out "$R" --resume "$D/checkpoints/step_00000002"
cp -r "$D/checkpoints/step_00000002" "$WORK/neg"
sed -i 's/"step": 2/"step": -5/' "$WORK/neg/trainer.json"
expect_error "negative step in trainer.json" "trainer.json: step must be >= 0, found -5" train --out "$WORK/negrun" --resume "$WORK/neg"
# Every field of trainer.json by name: the data position, the RNG state, step against tokens.
edit_trainer() {  # NAME NODE_EXPRESSION: a copy of step 2 whose trainer.json t is edited
  cp -r "$D/checkpoints/step_00000002" "$WORK/$1"
  node -e 'const fs = require("fs"), f = process.argv[1], t = JSON.parse(fs.readFileSync(f));
    '"$2"'; fs.writeFileSync(f, JSON.stringify(t, null, 2));' "$WORK/$1/trainer.json"
}
edit_trainer epoch 't.loader.epoch = -3'
expect_error "negative loader.epoch in trainer.json" "trainer.json: loader.epoch must be >= 0, found -3" train --out "$WORK/r-epoch" --resume "$WORK/epoch"
edit_trainer cursor 't.loader.cursor = -1'
expect_error "negative loader.cursor in trainer.json" "trainer.json: loader.cursor must be >= 0, found -1" train --out "$WORK/r-cursor" --resume "$WORK/cursor"
edit_trainer far 't.loader.cursor = 123456789'
expect_error "loader.cursor beyond the data in trainer.json" "trainer.json: loader.cursor 123456789 is beyond the [0-9]+ windows of an epoch of data.train" \
  train --out "$WORK/r-far" --resume "$WORK/far"
edit_trainer rng 't.sample_rng = ["0", "0", "0", "0"]'
expect_error "all-zero RNG state in trainer.json" "trainer.json: sample_rng is all zero" train --out "$WORK/r-rng" --resume "$WORK/rng"
edit_trainer tokens 't.step = 3'
expect_error "step and tokens_seen disagree in trainer.json" "trainer.json: step 3 and tokens_seen 512 disagree \(256 tokens per step since step 0 make 768\)" \
  train --out "$WORK/r-tokens" --resume "$WORK/tokens"
edit_trainer float 't.loader.epoch = 1.5'
expect_error "fractional loader.epoch in trainer.json" "trainer.json: loader.epoch must be an integer, found 1.5" train --out "$WORK/r-float" --resume "$WORK/float"

# 7. What may change on --resume.
C="$D/checkpoints/step_00000004"
expect_error "resume with another seed" "--resume: train.seed is 1337 in the checkpoint and 7 now.*--allow-change train.seed" \
  train --out "$WORK/seed" --resume "$C" --set train.seed=7
expect_error "resume with another lr" "optimizer.lr is 0.003 in the checkpoint and 0.001 now" train --out "$WORK/lr" --resume "$C" --set optimizer.lr=1e-3
expect_error "resume with another global batch" "global batch is 256 tokens per step in the checkpoint and 128 now" \
  train --out "$WORK/gb" --resume "$C" --set data.micro_batch=2
expect_error "allow-change of an unknown key" "--allow-change train.sed: not a config key" train --out "$WORK/u" --resume "$C" --allow-change train.sed
expect_error "allow-change without resume" "--allow-change goes with --resume" train --out "$WORK/u" --allow-change train.seed
expect_error "resume with another optimizer, allowed" "optimizer.name is \"adamw\" in the checkpoint and \"scape\" now; a checkpoint's optimizer state continues only the method that wrote it.*--init-from" \
  train --out "$WORK/other" --resume "$C" --set optimizer.name=scape --allow-change optimizer.name
train --out "$WORK/seed" --resume "$C" --set train.seed=7 --allow-change train.seed >"$WORK/allowed.log" 2>&1 \
  && grep -q "train.seed changed from 1337 to 7 (--allow-change)" "$WORK/allowed.log" \
  && pass "--allow-change train.seed resumes and warns" || { tail -3 "$WORK/allowed.log"; fail "--allow-change did not work"; }
train --out "$WORK/longer" --resume "$C" --set train.steps=8 >"$WORK/longer.log" 2>&1 \
  && grep -q "resume: train.steps changed from 6 to 8" "$WORK/longer.log" \
  && pass "a longer run (train.steps) resumes, the change logged" || { tail -3 "$WORK/longer.log"; fail "extending a run failed"; }
# 8. A flipped bit in a checkpoint's weights: eval, generate and --resume refuse, naming the tensor.
F="$WORK/flipped"
cp -r "$D" "$F" && rm -f "$F/.lock"
node -e 'const fs = require("fs"), f = process.argv[1], b = fs.readFileSync(f); b[b.length - 100] ^= 16; fs.writeFileSync(f, b);' \
  "$F/checkpoints/step_00000006/model.safetensors"
expect_error "generate from a flipped bit" "tensor 'wte' does not match its checksum" "$G" generate --checkpoint "$F" --tokens 2
expect_error "eval of a flipped bit" "does not match its checksum" "$G" eval -c $TINY --checkpoint "$F/checkpoints/step_00000006" --data data/web-spm512/val_000000.bin
train --out "$F" --resume "$F" >"$WORK/flip.log" 2>&1 && grep -q "skipping the damaged checkpoint .*step_00000006.*checksum" "$WORK/flip.log" \
  && pass "--resume skips the checkpoint with the flipped bit" || { tail -3 "$WORK/flip.log"; fail "--resume did not skip the flipped checkpoint"; }

# 9. A run killed before its first checkpoint (here: its checkpoints removed): --resume starts it
# again from step 0 and ends like a fresh run; a changed definition is still refused.
N="$WORK/nockpt"
cp -r "$R" "$N" && rm -rf "$N/checkpoints" "$N/.lock"
expect_error "resume before the first checkpoint, another seed" "train.seed is 1337 in the checkpoint and 5 now" \
  train --out "$N" --resume "$N" --set train.seed=5
train --out "$N" --resume "$N" >"$WORK/nockpt.log" 2>&1 \
  && grep -q "the run stopped before its first checkpoint; starting it again from step 0" "$WORK/nockpt.log" \
  && [[ "$(sum "$N/checkpoints/step_00000006/model.safetensors")" == "$model" ]] \
  && pass "--resume of a run without a checkpoint starts it again and ends like the first run" \
  && record_case "--resume of a run stopped before its first checkpoint" 0 \
       "$(grep -m1 'before its first checkpoint' "$WORK/nockpt.log")" train --out "$N" --resume "$N" \
  || { tail -3 "$WORK/nockpt.log"; fail "--resume of a run without a checkpoint"; }

# 10. Leftovers of writes interrupted by kill -9 (a checkpoint's staging directory, an atomic
# file's temporary) of a process that no longer runs: removed when the run resumes, each named;
# a live process's temporary is left alone.
L="$WORK/leftovers"
cp -r "$R" "$L" && rm -f "$L/.lock"
sh -c 'exit 0' & dead=$!; wait $dead
mkdir "$L/checkpoints/.step_00000007.tmp-$dead" && echo partial >"$L/checkpoints/.step_00000007.tmp-$dead/model.safetensors"
echo partial >"$L/.metrics.jsonl.tmp-$dead"
echo live >"$L/.config.json.tmp-$$"
train --out "$L" --resume "$L" --set train.steps=8 >"$WORK/leftovers.log" 2>&1 \
  && [[ ! -e "$L/checkpoints/.step_00000007.tmp-$dead" && ! -e "$L/.metrics.jsonl.tmp-$dead" && -e "$L/.config.json.tmp-$$" ]] \
  && [[ $(grep -c "left by a write that was interrupted" "$WORK/leftovers.log") -eq 2 ]] \
  && pass "the dead writer's staging directory and temporary file were removed and named; a live one's kept" \
  && record_case "leftovers of an interrupted checkpoint write, on resume" 0 \
       "$(grep -m1 "step_00000007.tmp" "$WORK/leftovers.log" | sed "s|tmp-$dead|tmp-PID|")" train --out "$L" --resume "$L" \
  || { grep -E "warn|error" "$WORK/leftovers.log" | tail -5; ls -a "$L" "$L/checkpoints"; fail "leftovers of interrupted writes"; }
finish
