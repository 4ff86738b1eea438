# A run's checkpoints are its timeline (issue 39, run/checkpoint.h): pruning by
# train.keep_checkpoints counts only the checkpoints at or before the step just written and never
# deletes a later one (an earlier timeline's, when a run resumed from an older checkpoint); a
# directory step_N whose trainer.json is missing or of another step is skipped by readers with a
# warning and moved aside by the training that holds the run, instead of shadowing or blocking
# a checkpoint; and each safetensors file is tied to its checkpoint's trainer.json, so files
# mixed across checkpoints are refused, naming the step the file belongs to.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
short=(--set train.eval_every=0 --set train.checkpoint_every=1 --set train.log_every=100)
train() { "$G" train -c $TINY "${short[@]}" "$@"; }
ck() { printf '%s/checkpoints/step_%08d' "$1" "$2"; }
R="$WORK/run"
train --set train.steps=6 --set train.keep_checkpoints=0 --out "$R" >"$WORK/first.log" 2>&1 \
  || { tail "$WORK/first.log"; fail "first run failed"; finish; }
cp -r "$R" "$WORK/pristine" && rm -f "$WORK/pristine/.lock"

# 1. Resumed from step 4 to step 5 with keep_checkpoints=1: step 5 (just written) is kept, and so
# is step 6 (after it, an earlier timeline's); steps 1-4 go.
train --set train.steps=5 --set train.keep_checkpoints=1 --out "$R" --resume "$(ck "$R" 4)" >"$WORK/prune.log" 2>&1 \
  || { tail "$WORK/prune.log"; fail "resume from step 4 failed"; }
left="$(cd "$R/checkpoints" && ls | tr '\n' ' ')"
[[ "$left" == "step_00000005 step_00000006 " ]] \
  && pass "keep_checkpoints=1 after a resume from step 4 to 5 kept step 5 (just written) and step 6 (later)" \
  || fail "pruning by the timeline: left $left, expected step_00000005 step_00000006"
msg="$(grep -m1 'also holds 2 checkpoint(s) after step 4 (the newest: step 6)' "$WORK/prune.log" || true)"
[[ -n "$msg" ]] && pass "the resume warned about the later checkpoint" \
  && record_case "resume before a later checkpoint, keep_checkpoints=1" 0 "$msg" \
       train --set train.steps=5 --set train.keep_checkpoints=1 --out "$R" --resume "$(ck "$R" 4)" \
  || fail "no warning about the later checkpoint: $(grep warn "$WORK/prune.log" | head -2)"

# 2. A directory step_N whose trainer.json is another step's (a copy under the wrong name):
# readers skip it, a resume moves it aside, and the run continues from the newest real one.
P="$WORK/named"
cp -r "$WORK/pristine" "$P" && cp -r "$(ck "$P" 4)" "$(ck "$P" 8)"
out="$("$G" generate --checkpoint "$P" --tokens 2 2>&1 >/dev/null)" \
  && grep -q "skipping .*step_00000008: not a checkpoint of that step (its trainer.json is of step 4)" <<<"$out" \
  && pass "generate skips step_8 whose trainer.json is step 4's, with a warning" \
  && record_case "generate from a run whose newest step_N holds another step" 0 \
       "$(grep -m1 'skipping' <<<"$out")" "$G" generate --checkpoint "$P" --tokens 2 \
  || fail "generate did not skip the misnamed checkpoint: $out"
train --set train.steps=7 --out "$P" --resume "$P" >"$WORK/named.log" 2>&1 \
  && grep -q "resumed from .*step_00000006 at step 6" "$WORK/named.log" \
  && grep -q "moved .*step_00000008 aside to aside-step_00000008-" "$WORK/named.log" \
  && [[ -f "$(ck "$P" 7)/trainer.json" && ! -e "$(ck "$P" 8)" ]] \
  && pass "--resume took step 6, moved the misnamed step_8 aside and wrote step 7" \
  && record_case "resume of a run whose newest step_N holds another step" 0 \
       "$(grep -m1 'moved .* aside' "$WORK/named.log")" train --set train.steps=7 --out "$P" --resume "$P" \
  || { grep -E 'warn|error|resumed' "$WORK/named.log" | head -4; fail "misnamed checkpoint not handled"; }

# 3. The newest checkpoint without its trainer.json: skipped, moved aside, then written again.
M="$WORK/notrainer"
cp -r "$WORK/pristine" "$M" && rm "$(ck "$M" 6)/trainer.json"
train --set train.steps=7 --out "$M" --resume "$M" >"$WORK/notrainer.log" 2>&1 \
  && grep -q "resumed from .*step_00000005 at step 5" "$WORK/notrainer.log" \
  && [[ -f "$(ck "$M" 6)/trainer.json" && -f "$(ck "$M" 7)/trainer.json" ]] \
  && ls -d "$M"/checkpoints/aside-step_00000006-* >/dev/null 2>&1 \
  && pass "a step_6 without trainer.json was moved aside and step 6 written again" \
  && record_case "resume when the newest checkpoint lacks trainer.json" 0 \
       "$(grep -m1 'moved .* aside' "$WORK/notrainer.log")" train --set train.steps=7 --out "$M" --resume "$M" \
  || { grep -E 'warn|error|resumed' "$WORK/notrainer.log" | head -4; fail "checkpoint without trainer.json not handled"; }

# 4. Files mixed across checkpoints: step 4's model.safetensors (or optimizer.safetensors) in
# step 6 is refused by name; --resume RUN falls back to step 5.
for f in model optimizer; do
  X="$WORK/mixed-$f"
  cp -r "$WORK/pristine" "$X" && cp "$(ck "$X" 4)/$f.safetensors" "$(ck "$X" 6)/$f.safetensors"
  expect_error "resume from a checkpoint holding step 4's $f.safetensors" \
    "$f.safetensors: does not belong to this checkpoint \(the file says it is step 4's\): its tensors' checksums are not the ones .*trainer.json lists for checkpoint step 6" \
    train --set train.steps=7 --out "$WORK/mixed-out-$f" --resume "$(ck "$X" 6)"
  train --set train.steps=7 --out "$X" --resume "$X" >"$WORK/mixed-$f.log" 2>&1 \
    && grep -q "skipping the damaged checkpoint .*step_00000006.*does not belong" "$WORK/mixed-$f.log" \
    && grep -q "resumed from .*step_00000005 at step 5" "$WORK/mixed-$f.log" \
    && pass "--resume RUN skipped step 6 (mixed $f.safetensors) for step 5" \
    || { grep -E 'warn|error|resumed' "$WORK/mixed-$f.log" | head -3; fail "--resume RUN with a mixed $f.safetensors"; }
done
# 5. A run made longer on resume from step 3: a cosine decay stretches over the new length, so
# the lr jumps at the resumed step (warned, with both values); wsd, resumed in its stable phase
# (its decay was to take steps 5 and 6), continues unchanged.
for decay in cosine wsd; do
  S="$WORK/longer-$decay"
  sched=(--set schedule.warmup_steps=2 --set "schedule.decay=\"$decay\"")
  [[ $decay == wsd ]] && sched+=(--set schedule.decay_steps=2)
  train "${sched[@]}" --set train.steps=6 --set train.keep_checkpoints=0 --out "$S" >/dev/null 2>&1 || fail "$decay: the first run failed"
  train "${sched[@]}" --set train.steps=9 --out "$S" --resume "$(ck "$S" 3)" >"$WORK/longer-$decay.log" 2>&1 \
    || { tail -3 "$WORK/longer-$decay.log"; fail "$decay: the longer resume failed"; continue; }
  msg="$(grep -m1 'schedule stretches over the new length' "$WORK/longer-$decay.log" || true)"
  if [[ $decay == cosine ]]; then
    [[ "$msg" == *"train.steps changed from 6 to 9, and the cosine schedule stretches"*"the lr at step 4 is"*'schedule.decay = "wsd"'* ]] \
      && pass "cosine made longer: the lr jump is warned with both values" \
      && record_case "resume with more train.steps under a cosine decay" 0 "$msg" \
           train "${sched[@]}" --set train.steps=9 --out "$S" --resume "$(ck "$S" 3)" \
      || fail "cosine made longer: no warning ($msg)"
  else
    [[ -z "$msg" ]] && pass "wsd made longer in its stable phase: no jump, no warning" || fail "wsd warned: $msg"
  fi
done

E="$WORK/mixed-eval"
cp -r "$(ck "$WORK/pristine" 6)" "$E" && cp "$(ck "$WORK/pristine" 4)/model.safetensors" "$E/"
expect_error "eval of a checkpoint holding another step's weights" "model.safetensors: does not belong to this checkpoint \(the file says it is step 4's\)" \
  "$G" eval -c $TINY --checkpoint "$E" --data data/web-spm512/val_000000.bin
finish
