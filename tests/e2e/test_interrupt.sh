# SIGINT during training: the step in progress finishes, a checkpoint of it is written, the
# process exits 130, nothing half-written is left, and --resume continues to the end.
source "$(dirname "$0")/lib.sh"
require_data
RUN="$WORK/run"
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=100000 --set train.eval_every=0 \
  --out "$RUN" >"$WORK/log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [[ -f "$RUN/metrics.jsonl" ]] && [[ $(grep -c '"loss"' "$RUN/metrics.jsonl") -ge 3 ]] && break
  sleep 0.1
done
kill -INT $pid
rc=0; wait $pid || rc=$?
[[ $rc -eq 130 ]] && pass "exit status 130 after SIGINT" || { cat "$WORK/log"; fail "exit status $rc after SIGINT"; }
ckpt=$(ls -d "$RUN"/checkpoints/step_* 2>/dev/null | tail -1)
[[ -n "$ckpt" && -f "$ckpt/trainer.json" && -f "$ckpt/model.safetensors" ]] && pass "checkpoint $ckpt written" || fail "no checkpoint after SIGINT"
ls -a "$RUN/checkpoints" | grep -q '\.tmp' && fail "temporary checkpoint left behind" || pass "no temporary files"
step=$(basename "$ckpt" | sed 's/step_0*//')
last=$(grep '"loss"' "$RUN/metrics.jsonl" | tail -1 | grep -o '"step":[0-9]*' | cut -d: -f2)
[[ "$step" == "$last" ]] && pass "checkpoint is the last logged step ($step)" || fail "checkpoint step $step != last logged step $last"
grep -q "resume with --resume" "$WORK/log" && pass "message says how to resume" || fail "no resume hint"
"$GOSSAMER" train -c configs/test/gpt2-tiny.json --set train.steps=$((step + 3)) --set train.eval_every=0 \
  --out "$RUN" --resume "$RUN" >"$WORK/log2" 2>&1 && pass "resumed to step $((step + 3))" || { cat "$WORK/log2"; fail "resume after SIGINT failed"; }

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
grep -q "second signal: stopping now" "$WORK/log3" && pass "second signal stops at once" || fail "second signal did not stop the process at once"
ls -d "$WORK"/run3/checkpoints/step_* >/dev/null 2>&1 && fail "a checkpoint was written despite the second signal" || pass "no checkpoint written after the second signal"
finish
