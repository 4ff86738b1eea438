# kill -9 at 20 random moments of a training run that checkpoints every step (some during
# start-up, some mid-step, some while a checkpoint is being written) and --resume after each:
# the run still ends bit for bit like an uninterrupted one (final weights and optimizer state,
# the loss of every step, each step logged once in metrics.jsonl), every resume starts from the
# newest complete checkpoint, the killed holder's .lock does not block it, and no temporary
# file or staging directory is left in the run directory. The moments come from a seeded RNG
# (KILL_SEED, default 11), scaled to the speed this machine showed in the reference run.
source "$(dirname "$0")/lib.sh"
require_data
CFG=configs/test/gpt2-tiny-v512.json
STEPS=60 KILLS=20 KEEP=2
RANDOM="${KILL_SEED:-11}"
# metrics.peak_gflops given: no sgemm measurement at start-up (3 s here), so kills fall on steps.
common=(-c $CFG --set train.steps=$STEPS --set train.eval_every=0 --set train.checkpoint_every=1
        --set train.keep_checkpoints=$KEEP --set metrics.peak_gflops=100)
pid=""
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$WORK"' EXIT
now_ms() { echo $(( ${EPOCHREALTIME/./} / 1000 )); }
msleep() { sleep "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))"; }
# last_step FILE: the step of the last training line of a metrics file (0 when none); no forks.
last_step() {
  local lines=() i
  [[ -f "$1" ]] && mapfile -t lines <"$1" 2>/dev/null
  for ((i = ${#lines[@]} - 1; i >= 0; --i)); do
    [[ "${lines[i]}" =~ \"loss\":.*[{,]\"step\":([0-9]+)[,}] ]] && { echo "${BASH_REMATCH[1]}"; return; }
  done
  echo 0
}
# newest RUN: the step of the newest complete checkpoint (one with trainer.json), 0 when none.
newest() {
  local d s=0
  for d in "$1"/checkpoints/step_*/trainer.json; do [[ -f "$d" ]] && s=$((10#$(basename "$(dirname "$d")" | cut -c6-))); done
  echo $s
}

# 1. The reference: uninterrupted, timed (start-up to its first step, then the period of a step
# with its checkpoint).
REF="$WORK/ref"
t0=$(now_ms)
"$GOSSAMER" train "${common[@]}" --out "$REF" >"$WORK/ref.log" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null && [[ $(last_step "$REF/metrics.jsonl") -lt 1 ]]; do sleep 0.01; done
t1=$(now_ms)
rc=0; wait $pid || rc=$?; pid=""
t2=$(now_ms)
[[ $rc -eq 0 && -f "$REF/checkpoints/step_$(printf %08d $STEPS)/model.safetensors" ]] \
  || { tail "$WORK/ref.log"; fail "reference run failed (exit $rc)"; finish; }
STARTUP=$((t1 - t0)) PERIOD=$(( (t2 - t1) / (STEPS - 1) + 1 ))
pass "reference: $STEPS steps in $((t2 - t0)) ms (start-up to step 1: $STARTUP ms, then $PERIOD ms a step with its checkpoint)"

# 2. The victim: launched, killed at a random moment, relaunched with --resume, 20 times. Each
# kill is one of: a delay from launch within the first half of the reference's start-up; a delay
# of up to a period after the launch's first or second new step is logged (mid-step or
# checkpoint); up to an eighth of a period after the launch's first new checkpoint is complete
# (training: a step computes in about a quarter of a period, so the other kinds rarely land
# there); a short delay after a checkpoint's staging directory appears (checkpoint write).
# The kinds take turns; delays are seeded fractions of the reference's timings. A kill moves the run on by 3 steps at
# most, so 20 of them never reach the end.
V="$WORK/victim"
kills=0 launches=0 in_ckpt=0 in_startup=0 in_step=0 in_other=0 restarts=0 stale_lock_ok=0
while true; do
  launches=$((launches + 1))
  k=$(newest "$V")
  if [[ $k -gt 0 ]]; then
    how=(--resume "$V") what="--resume (newest complete checkpoint: step $k)"
    # .lock still names a killed holder: the launch must get past it.
    stale=0; holder=$(grep -o 'pid [0-9]*' "$V/.lock" 2>/dev/null || true)
    [[ -n "$holder" ]] && ! kill -0 "${holder#pid }" 2>/dev/null && stale=1
  elif [[ -d "$V" ]]; then
    # Killed before its first checkpoint: --resume starts the run again from step 0.
    how=(--resume "$V") what="--resume (no checkpoint yet: from step 0)" stale=0; restarts=$((restarts + 1))
  else
    how=() what="fresh" stale=0
  fi
  log="$WORK/victim.$launches.log"
  "$GOSSAMER" train "${common[@]}" --out "$V" "${how[@]}" >"$log" 2>&1 &
  pid=$!
  if [[ $kills -ge $KILLS ]]; then
    rc=0; wait $pid || rc=$?; pid=""
    r=$(grep -o 'resumed from .* at step [0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    echo "  launch $launches: $what, resumed at step $r, ran to the end (exit $rc)"
    [[ $rc -eq 0 ]] || { tail -5 "$log"; fail "the last launch failed (exit $rc)"; }
    [[ $r -eq $k ]] || fail "the last launch resumed at step $r, the newest complete checkpoint was step $k"
    break
  fi
  launched=$(now_ms)
  case $((kills % 4)) in  # each kind in turn, five times
    0) delay=$((RANDOM * STARTUP / 65536)) kind="launch" ;;
    1) j=$((k + 1 + RANDOM % 2)) delay=$((RANDOM * PERIOD / 32768)) kind="step $j logged"
       # Set up (so metrics.jsonl is cut back to step k), then step j logged.
       while kill -0 $pid 2>/dev/null && ! grep -q "optimizer: " "$log"; do sleep 0.01; done
       while kill -0 $pid 2>/dev/null && [[ $(last_step "$V/metrics.jsonl") -lt $j ]]; do sleep 0.005; done ;;
    2) j=$((k + 1)) delay=$((RANDOM * PERIOD / 8 / 32768)) kind="checkpoint $j complete"
       # The next step computes (here about a quarter of a period; the checkpoint write takes
       # the rest): a short delay after checkpoint j is complete lands in training.
       while kill -0 $pid 2>/dev/null && [[ ! -f "$V/checkpoints/step_$(printf %08d $j)/trainer.json" ]]; do sleep 0.002; done ;;
    3) delay=$((RANDOM * PERIOD / 3 / 32768)) kind="staging directory created"
       while kill -0 $pid 2>/dev/null && ! compgen -G "$V/checkpoints/.step_*.tmp-$pid" >/dev/null; do sleep 0.002; done ;;
  esac
  msleep $delay
  kill -9 $pid 2>/dev/null || true
  rc=0; wait $pid 2>/dev/null || rc=$?
  at=$(( $(now_ms) - launched ))
  if [[ $rc -ne 137 ]]; then
    pid=""; tail -5 "$log"
    fail "launch $launches ($what) ended by itself (exit $rc) before kill $((kills + 1))$([[ $rc -eq 0 ]] && echo ': raise STEPS')"
    break
  fi
  kills=$((kills + 1))
  staging=$(compgen -G "$V/checkpoints/.step_*.tmp-$pid" || true)
  other=$(find "$V" -name "*.tmp-$pid" -not -path "*/.step_*.tmp-$pid*" 2>/dev/null | head -1 || true)  # no $V yet: killed early in start-up
  pid=""
  if [[ -n "$staging" ]]; then
    landed="in a checkpoint write ($(basename "$staging") holds: $(ls -A "$staging" | tr '\n' ' '))"; in_ckpt=$((in_ckpt + 1))
  elif [[ -n "$other" ]]; then
    landed="in an atomic write ($(basename "$other"))"; in_other=$((in_other + 1))
  elif ! grep -q "optimizer: " "$log"; then
    landed="in start-up"; in_startup=$((in_startup + 1))
  else
    landed="in training (last logged step $(last_step "$V/metrics.jsonl"))"; in_step=$((in_step + 1))
  fi
  grep -q "in use by another training" "$log" && fail "launch $launches was refused by the killed run's .lock: $(grep error "$log")"
  r=$(grep -o 'resumed from .* at step [0-9]*' "$log" | grep -o '[0-9]*$' || true)
  [[ -n "$r" && $r -ne $k ]] && fail "launch $launches resumed at step $r, the newest complete checkpoint was step $k"
  [[ -n "$r" && $stale -eq 1 ]] && stale_lock_ok=$((stale_lock_ok + 1))
  echo "  kill $kills: launch $launches $what${r:+, resumed at step $r}; killed $delay ms after $kind (${at} ms after launch): landed $landed; newest checkpoint now step $(newest "$V")"
done
[[ $kills -eq $KILLS ]] && pass "$kills kills over $launches launches: $in_ckpt in a checkpoint write, $in_step in training, $in_startup in start-up, $in_other in another atomic write; $restarts resume(s) before any checkpoint" \
  || fail "only $kills of $KILLS kills"
[[ $in_ckpt -ge 1 && $in_step -ge 1 && $in_startup -ge 1 ]] \
  && pass "kills landed in a checkpoint write (staging directory present), in training and in start-up" \
  || fail "not every kind of moment was hit (checkpoint write $in_ckpt, training $in_step, start-up $in_startup)"
[[ $stale_lock_ok -ge 1 ]] && pass "$stale_lock_ok launch(es) found .lock naming a killed pid and went on" \
  || fail "no launch met a stale .lock"

# 3. The victim ends like the reference.
last="checkpoints/step_$(printf %08d $STEPS)"
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$REF/$last/$f" "$V/$last/$f" && pass "final $f bit-identical to the reference" \
    || fail "final $f differs from the reference (max |diff| $(st_maxdiff "$REF/$last/$f" "$V/$last/$f" 2>/dev/null || echo '?'))"
done
steps="$(grep '"loss"' "$V/metrics.jsonl" | grep -o '[{,]"step":[0-9]*' | cut -d: -f2 | tr '\n' ' ')"
[[ "$steps" == "$(seq -s ' ' 1 $STEPS) " ]] && pass "metrics.jsonl logs steps 1-$STEPS once each" \
  || fail "metrics.jsonl steps are not 1-$STEPS once each: $steps"
[[ "$(losses "$REF/metrics.jsonl")" == "$(losses "$V/metrics.jsonl")" ]] && pass "per-step losses identical to the reference" \
  || { fail "losses differ from the reference"; diff <(losses "$REF/metrics.jsonl") <(losses "$V/metrics.jsonl") | head || true; }

record_case "kill -9 at $KILLS random moments, --resume after each" 0 \
  "(checked) final weights, optimizer state and every step's loss equal an uninterrupted run's" \
  "gossamer train ... --set train.checkpoint_every=1 --out RUN [--resume RUN], killed $KILLS times"

# 4. Nothing but the run's own files is left in the run directory.
want=". ./.lock ./config.json ./metrics.jsonl ./checkpoints"
for s in $(seq $((STEPS - KEEP + 1)) $STEPS); do
  d="./checkpoints/step_$(printf %08d $s)"
  want+=" $d $d/model.safetensors $d/optimizer.safetensors $d/trainer.json"
done
stray="$(cd "$V" && comm -23 <(find . | sort) <(tr ' ' '\n' <<<"$want" | sort) | tr '\n' ' ')"
missing="$(cd "$V" && comm -13 <(find . | sort) <(tr ' ' '\n' <<<"$want" | sort) | tr '\n' ' ')"
[[ -z "$stray$missing" ]] && pass "the run directory holds its files and the newest $KEEP checkpoints, nothing else" \
  || fail "run directory: left over: ${stray:-nothing}; missing: ${missing:-nothing}"
finish
