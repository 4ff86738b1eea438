# SIGINT during training: the step in progress finishes, a checkpoint of it is written, the
# process exits 130, nothing half-written is left, and --resume continues to the end. SIGTERM
# and SIGHUP (an ssh disconnect) do the same with exit status 143 and 129 (128 + the signal,
# the shell's convention). A signal during an evaluation abandons it and checkpoints the step
# promptly; a closed log pipe does not stop the training; a second signal stops at once.
source "$(dirname "$0")/lib.sh"
require_data
# interrupt SIGNAL RUN LOG: starts a long run, sends SIGNAL once 3 steps are logged, waits; sets rc.
interrupt() {
  local signal="$1" run="$2" log="$3" pid
  "$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=100000 --set train.eval_every=0 \
    --out "$run" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [[ -f "$run/metrics.jsonl" ]] && [[ $(grep -c '"loss"' "$run/metrics.jsonl") -ge 3 ]] && break
    sleep 0.1
  done
  kill "-$signal" $pid
  rc=0; wait $pid || rc=$?
}
RUN="$WORK/run"
interrupt INT "$RUN" "$WORK/log"
[[ $rc -eq 130 ]] && pass "exit status 130 after SIGINT" || { cat "$WORK/log"; fail "exit status $rc after SIGINT"; }
# interrupt_message LOG: the warning with its step number written as N (it varies by timing).
interrupt_message() { grep -m1 "interrupted by SIG" "$1" | sed 's/step [0-9]*/step N/'; }
record_case "SIGINT during training: checkpoint, then stop" $rc "$(interrupt_message "$WORK/log")" \
  "gossamer train -c configs/test/gpt2-tiny.json --out $RUN & kill -INT \$!"
ckpt=$(ls -d "$RUN"/checkpoints/step_* 2>/dev/null | tail -1)
[[ -n "$ckpt" && -f "$ckpt/trainer.json" && -f "$ckpt/model.safetensors" ]] && pass "checkpoint $ckpt written" || fail "no checkpoint after SIGINT"
ls -a "$RUN/checkpoints" | grep -q '\.tmp' && fail "temporary checkpoint left behind" || pass "no temporary files"
step=$(basename "$ckpt" | sed 's/step_0*//')
last=$(grep '"loss"' "$RUN/metrics.jsonl" | tail -1 | grep -o '"step":[0-9]*' | cut -d: -f2)
[[ "$step" == "$last" ]] && pass "checkpoint is the last logged step ($step)" || fail "checkpoint step $step != last logged step $last"
grep -q "resume with --resume" "$WORK/log" && pass "message says how to resume" || fail "no resume hint"
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=$((step + 3)) --set train.eval_every=0 \
  --out "$RUN" --resume "$RUN" >"$WORK/log2" 2>&1 && pass "resumed to step $((step + 3))" || { cat "$WORK/log2"; fail "resume after SIGINT failed"; }

# SIGTERM and SIGHUP: the same clean stop, exit status 143 and 129.
for sig in TERM:143 HUP:129; do
  name="${sig%:*}" want="${sig#*:}"
  interrupt "$name" "$WORK/run-$name" "$WORK/log-$name"
  if [[ $rc -eq $want ]] && ls -d "$WORK/run-$name"/checkpoints/step_* >/dev/null 2>&1 \
    && grep -q "interrupted by SIG$name after step" "$WORK/log-$name"; then
    pass "SIG$name: checkpoint written, exit status $want"
    record_case "SIG$name during training: checkpoint, then stop" $rc "$(interrupt_message "$WORK/log-$name")" \
      "gossamer train -c configs/test/gpt2-tiny.json --out $WORK/run-$name & kill -$name \$!"
  else
    cat "$WORK/log-$name"; fail "SIG$name: exit status $rc (expected $want and a checkpoint)"
  fi
done

# A closed log pipe (the reader of 2>&1 | head -1 is gone after one line): the training goes
# on to its end and its last checkpoint, exit status 0.
P="$WORK/piped"
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=30 --set train.eval_every=10 \
  --set train.eval_batches=2 --set train.log_every=1 --out "$P" 2>&1 | head -1 >/dev/null
rc=${PIPESTATUS[0]}
[[ $rc -eq 0 && -f "$P/checkpoints/step_00000030/trainer.json" && $(grep -c '"loss"' "$P/metrics.jsonl") -eq 30 ]] \
  && pass "a closed log pipe: all 30 steps trained and checkpointed, exit status 0" \
  && record_case "training whose log pipe closes (2>&1 | head -1)" $rc "(30 steps, the last checkpoint written)" \
       "gossamer train -c configs/test/gpt2-tiny.json --out $P 2>&1 | head -1" \
  || fail "a closed log pipe: exit status $rc, $(grep -c '"loss"' "$P/metrics.jsonl" 2>/dev/null) steps logged"

# A signal during an evaluation abandons it: the step is checkpointed promptly instead of after
# the whole evaluation (here every window of the training shard, about 18,000: a minute). The
# run is resumed from step 2 so that no evaluation comes before its first step.
E="$WORK/evalrun"
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=2 --set train.eval_every=0 \
  --out "$E" >"$WORK/log-eval0" 2>&1 || { tail -3 "$WORK/log-eval0"; fail "the run to resume failed"; }
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=100000 --set train.eval_every=1 \
  --set train.eval_batches=0 --set 'data.val="data/web/train_*.bin"' --set train.log_every=1 \
  --out "$E" --resume "$E" >"$WORK/log-eval" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q '"step":3,' "$E/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
sleep 1  # well inside the evaluation after step 3
t0=$(date +%s.%N)
kill -TERM $pid
rc=0; wait $pid || rc=$?
secs=$(node -e "console.log((process.argv[1] - process.argv[2]).toFixed(1))" "$(date +%s.%N)" "$t0")
if [[ $rc -eq 143 ]] && grep -q "step 3 | evaluation abandoned" "$WORK/log-eval" \
  && [[ -f "$E/checkpoints/step_00000003/trainer.json" ]] && ! grep -q '"val_loss"' "$E/metrics.jsonl"; then
  pass "SIGTERM during an evaluation: abandoned, step 3 checkpointed, exit 143 ${secs} s after the signal"
  record_case "SIGTERM during an evaluation: abandon it, checkpoint the step" $rc \
    "$(grep -m1 'evaluation abandoned' "$WORK/log-eval" | sed 's/after [0-9.]* s/after T s/')" \
    "gossamer train ... --set train.eval_batches=0 --out $E --resume $E & kill -TERM \$! (during the evaluation)"
else
  tail -5 "$WORK/log-eval"; fail "SIGTERM during an evaluation: exit $rc"
fi
node -e "process.exit(process.argv[1] < 10 ? 0 : 1)" "$secs" \
  && pass "the stop took ${secs} s (< 10 s: one evaluation batch and a checkpoint)" || fail "the stop took ${secs} s"

# A second signal ends the process at once (128+SIGINT), without waiting for the step; the
# newest complete checkpoint stays usable.
# Steps of 40 micro-batches (seconds each), so the second signal surely comes mid-step.
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=100000 --set train.eval_every=0 \
  --set train.global_batch_tokens=10240 --out "$WORK/run3" --init-from "$RUN" >"$WORK/log3" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [[ -f "$WORK/run3/metrics.jsonl" ]] && grep -q '"loss"' "$WORK/run3/metrics.jsonl" && break; sleep 0.1; done
kill -INT $pid
for _ in $(seq 1 100); do grep -q "SIGINT received" "$WORK/log3" && break; sleep 0.05; done
kill -INT $pid
rc=0; wait $pid || rc=$?
[[ $rc -eq 130 ]] && pass "second SIGINT: exit status 130" || { cat "$WORK/log3"; fail "exit status $rc after two SIGINTs"; }
record_case "second SIGINT: stop at once, no checkpoint" $rc "$(grep -m1 "second signal" "$WORK/log3")" \
  "gossamer train ... --out $WORK/run3 & kill -INT \$!; kill -INT \$!"
grep -q "second signal (SIGINT): stopping now" "$WORK/log3" && pass "second signal stops at once" || fail "second signal did not stop the process at once"
ls -d "$WORK"/run3/checkpoints/step_* >/dev/null 2>&1 && fail "a checkpoint was written despite the second signal" || pass "no checkpoint written after the second signal"
finish
