# SIGINT during training: the step in progress finishes, a checkpoint of it is written, the
# process exits 130, nothing half-written is left, and --resume continues to the end. SIGTERM
# does the same with exit status 143 (128 + the signal, the shell's convention).
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
interrupt_message() { grep -m1 "interrupted by signal" "$1" | sed 's/step [0-9]*/step N/'; }
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

# SIGTERM: the same clean stop, exit status 143.
interrupt TERM "$WORK/run2" "$WORK/log_term"
if [[ $rc -eq 143 ]] && ls -d "$WORK"/run2/checkpoints/step_* >/dev/null 2>&1 \
  && grep -q "interrupted by signal 15" "$WORK/log_term"; then
  pass "SIGTERM: checkpoint written, exit status 143"
  record_case "SIGTERM during training: checkpoint, then stop" $rc "$(interrupt_message "$WORK/log_term")" \
    "gossamer train -c configs/test/gpt2-tiny.json --out $WORK/run2 & kill -TERM \$!"
else
  cat "$WORK/log_term"; fail "SIGTERM: exit status $rc (expected 143 and a checkpoint)"
fi

# A second signal ends the process at once (128+SIGINT), without waiting for the step; the
# newest complete checkpoint stays usable.
# Steps of 40 micro-batches (seconds each), so the second signal surely comes mid-step.
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=100000 --set train.eval_every=0 \
  --set train.global_batch_tokens=10240 --out "$WORK/run3" --init-from "$RUN" >"$WORK/log3" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [[ -f "$WORK/run3/metrics.jsonl" ]] && grep -q '"loss"' "$WORK/run3/metrics.jsonl" && break; sleep 0.1; done
kill -INT $pid
for _ in $(seq 1 100); do grep -q "signal received" "$WORK/log3" && break; sleep 0.05; done
kill -INT $pid
rc=0; wait $pid || rc=$?
[[ $rc -eq 130 ]] && pass "second SIGINT: exit status 130" || { cat "$WORK/log3"; fail "exit status $rc after two SIGINTs"; }
record_case "second SIGINT: stop at once, no checkpoint" $rc "$(grep -m1 "second signal" "$WORK/log3")" \
  "gossamer train ... --out $WORK/run3 & kill -INT \$!; kill -INT \$!"
grep -q "second signal: stopping now" "$WORK/log3" && pass "second signal stops at once" || fail "second signal did not stop the process at once"
ls -d "$WORK"/run3/checkpoints/step_* >/dev/null 2>&1 && fail "a checkpoint was written despite the second signal" || pass "no checkpoint written after the second signal"
finish
