# A failing rank ends the whole job within a bounded time, with a message naming the rank and
# the step, a non-zero exit status, and the last complete checkpoint usable:
#   - NaN gradients on one rank (GOSSAMER_FAULT=nan:1:3): found before they are communicated;
#     every rank stops at step 3 with the same message, exit 1, no step-3 checkpoint;
#   - a rank that hangs (GOSSAMER_FAULT=hang:1:3) or is stopped (SIGSTOP): the others give up
#     after parallel.timeout_s, naming their rank, the collective, the step and the rank that
#     did not answer their roll call, exit 3 (comm::kExitPeerFailure);
#   - a rank killed with SIGKILL mid-run: mpirun ends the job naming the rank; training
#     resumes from the last checkpoint at another world size;
#   - SIGTERM to one rank: every rank checkpoints the same step and exits 143, rank 0 naming
#     the signal and the rank;
#   - ranks started with different configs (MPMD, another --set on rank 1): every rank stops at
#     start-up, rank 1 naming the key and both values; another model size is the same clear
#     error, not a collective of another size.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.eval_every=0 --set train.log_every=1 --set train.checkpoint_every=2
        --set data.micro_batch=2)

# rank_pid OUT RANK: the pid of this job's rank RANK (found by its unique --out; ctest runs other
# tests' trainings at the same time), or nothing.
rank_pid() {
  local pid
  for pid in $(pgrep -f -- "--out $1" || true); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$pid"
  done
  return 0
}

run_fault() {  # NAME FAULT SECONDS_LIMIT ARGS... ; sets RC and OUT
  local name="$1" fault="$2" limit="$3"; shift 3
  local t0=$SECONDS
  RC=0
  GOSSAMER_FAULT="$fault" timeout 120 bash -c 'source "$1/tests/e2e/lib.sh" "$2" "$1" >/dev/null; shift 2; mpirun_np 2 -x GOSSAMER_FAULT "$@"' _ "$SRC" "$G" \
    "$G" train -c $TINY "${common[@]}" "$@" >"$WORK/$name.log" 2>&1 || RC=$?
  OUT="$(cat "$WORK/$name.log")"
  local dt=$((SECONDS - t0))
  [[ $dt -le $limit ]] && pass "$name: job ended in ${dt} s (limit $limit s)" || fail "$name: took ${dt} s"
}

run_fault nan nan:1:3 60 --set train.steps=10 --out "$WORK/nan"
[[ $RC -eq 1 ]] && pass "nan: exit 1" || fail "nan: exit $RC"
[[ $(grep -c 'step 3: non-finite (NaN/Inf) gradients on rank 1, found before they were communicated' <<<"$OUT") -ge 2 ]] \
  && pass "nan: both ranks name rank 1 and step 3" || { echo "$OUT" | tail; fail "nan: message"; }
# rank 0's line: both ranks print it, in either order
record_case "NaN gradients on rank 1 at step 3 (2 ranks)" $RC "$(grep -m1 '^\[error\] step 3: non-finite' <<<"$OUT")" \
  GOSSAMER_FAULT=nan:1:3 mpirun -np 2 gossamer train ...
[[ -d "$WORK/nan/checkpoints/step_00000002" && ! -e "$WORK/nan/checkpoints/step_00000003" ]] \
  && pass "nan: checkpoint 2 complete, nothing written for step 3" || fail "nan: checkpoints $(ls "$WORK/nan/checkpoints")"

run_fault hang hang:1:3 60 --set train.steps=10 --set parallel.timeout_s=5 --out "$WORK/hang"
[[ $RC -eq 3 ]] && pass "hang: exit 3" || fail "hang: exit $RC"
absent='did not answer a roll call within 2.5 s \(stopped, hung or dead\); the last operation completed on this rank was [a-z_]+ \(step [0-9]+\)'
hang_line='rank 0: [a-z_]+ of [0-9]+ bytes did not complete within 5 s \(step 3\); rank 1 '"$absent"
grep -qE "$hang_line" <<<"$OUT" \
  && pass "hang: rank 0 names itself, the collective, step 3 and rank 1" || { echo "$OUT" | tail; fail "hang: message"; }
# placeholders: the size and the last operation vary with timing
record_case "rank 1 hangs at step 3 (2 ranks)" $RC "$(grep -m1 -oE "$hang_line" <<<"$OUT" \
  | sed -E 's/(of) [0-9]+ (bytes)/\1 N \2/; s/was [a-z_]+ \(step [0-9]+\)/was OP (step S)/')" \
  GOSSAMER_FAULT=hang:1:3 mpirun -np 2 gossamer train ... --set parallel.timeout_s=5

# wait_checkpoint OUT STEP: waits (up to 60 s) until OUT's newest checkpoint is step STEP or later
# (an older one may already be pruned: the steps of the small model take milliseconds).
wait_checkpoint() {
  local newest
  for _ in $(seq 1 120); do
    newest="$(ls "$1/checkpoints" 2>/dev/null | grep -E '^step_[0-9]+$' | tail -n 1 || true)"
    [[ -n "$newest" ]] && ((10#${newest#step_} >= $2)) && return 0
    sleep 0.5
  done
}

# start_job NAME STEP ARGS...: a 2-rank training into $WORK/NAME in the background (output in
# NAME.log, exit status in NAME.rc once it ends); waits until its checkpoint STEP exists, then
# sets RANK1 to rank 1's pid (empty if not found).
start_job() {
  local name="$1" step="$2"; shift 2
  (rc=0; mpirun_np 2 "$G" train -c $TINY "${common[@]}" --set train.steps=100000 "$@" \
    --out "$WORK/$name" >"$WORK/$name.log" 2>&1 || rc=$?; echo $rc >"$WORK/$name.rc") &
  wait_checkpoint "$WORK/$name" "$step"
  RANK1="$(rank_pid "$WORK/$name" 1 | head -1)"
}

# SIGSTOP one rank: it cannot answer; the other names it.
start_job stop 2 --set parallel.timeout_s=4
stopped="$RANK1"
if [[ -z "$stopped" ]]; then
  fail "stop: could not find rank 1"
else
  kill -STOP "$stopped"
  for _ in $(seq 1 120); do [[ -f "$WORK/stop.rc" ]] && break; sleep 0.5; done
  kill -9 "$stopped" 2>/dev/null || true
  rc="$(cat "$WORK/stop.rc" 2>/dev/null || echo none)"
  stop_line='rank 0: [a-z_]+ of [0-9]+ bytes did not complete within 4 s \(step [0-9]+\); rank 1 did not answer a roll call within 2 s \(stopped, hung or dead\); the last operation completed on this rank was [a-z_]+ \(step [0-9]+\)'
  [[ "$rc" == 3 ]] && grep -qE "$stop_line" "$WORK/stop.log" \
    && pass "stop: exit 3, rank 0 names rank 1 and the last operation completed" \
    && record_case "rank 1 stopped with SIGSTOP (2 ranks)" "$rc" \
         "$(grep -m1 -oE "$stop_line" "$WORK/stop.log" \
            | sed -E 's/[a-z_]+ (of) [0-9]+ (bytes)/OP \1 N \2/; s/was [a-z_]+/was OP/; s/step [0-9]+/step S/g')" \
         "mpirun -np 2 gossamer train ... --set parallel.timeout_s=4 & kill -STOP RANK1" \
    || { tail -5 "$WORK/stop.log"; fail "stop: exit $rc or message"; }
fi
pkill -9 -f -- "--out $WORK/stop" 2>/dev/null || true

# SIGKILL one rank while training runs.
start_job kill 4
victim="$RANK1"
if [[ -z "$victim" ]]; then
  fail "kill: could not find rank 1"
else
  t0=$SECONDS
  kill -9 "$victim"
  for _ in $(seq 1 120); do [[ -f "$WORK/kill.rc" ]] && break; sleep 0.5; done
  dt=$((SECONDS - t0))
  [[ -f "$WORK/kill.rc" && $dt -le 30 ]] && pass "kill: job ended ${dt} s after rank 1 was killed" || fail "kill: job still running after ${dt} s"
  rc="$(cat "$WORK/kill.rc" 2>/dev/null || echo none)"
  [[ "$rc" != 0 ]] && pass "kill: exit $rc" || fail "kill: exit 0"
  grep -qE 'rank 1 .*(exited on signal 9|killed)|process rank 1' "$WORK/kill.log" \
    && pass "kill: mpirun names rank 1" || { tail "$WORK/kill.log"; fail "kill: rank 1 not named"; }
  # mpirun's wording varies with its version and timing: the check is the pattern above
  record_case "rank 1 killed with SIGKILL (2 ranks)" "mpirun's, non-zero" \
    "(mpirun names rank 1, e.g. 'process rank 1 with PID N on node HOST exited on signal 9')" \
    "mpirun -np 2 gossamer train ... & kill -9 RANK1"
  grep -oE 'step [0-9]+/100000' "$WORK/kill.log" | tail -n 1 | sed 's/^/kill: last progress line: /'
  ls -a "$WORK/kill/checkpoints" | grep -q tmp && fail "kill: temporary checkpoint left" || pass "kill: no temporary checkpoint"
  last="$(ls "$WORK/kill/checkpoints" | grep step_ | tail -n 1)"
  steps=$((10#${last#step_} + 2))
  "$G" train -c $TINY "${common[@]}" --set data.micro_batch=4 --set train.steps=$steps \
    --resume "$WORK/kill/checkpoints/$last" --out "$WORK/resumed" >"$WORK/resume.log" 2>&1 \
    && pass "kill: $last resumes at 1 rank for 2 more steps" || { tail "$WORK/resume.log"; fail "kill: resume from $last failed"; }
fi
# Never leave the job behind (and never wait on it forever).
pkill -9 -f -- "--out $WORK/kill" 2>/dev/null || true
wait
# SIGTERM to one rank (as a node's Slurm daemon may send): every rank checkpoints the same step
# and stops with 143, and rank 0 names the signal and the rank that received it.
(rc=0; mpirun_np 2 "$G" train -c $TINY "${common[@]}" --set train.steps=100000 --out "$WORK/term" >"$WORK/term.log" 2>&1 || rc=$?; echo $rc >"$WORK/term.rc") &
wait_checkpoint "$WORK/term" 2
victim="$(rank_pid "$WORK/term" 1 | head -1)"
if [[ -z "$victim" ]]; then
  fail "term: could not find rank 1"
else
  kill -TERM "$victim"
  for _ in $(seq 1 120); do [[ -f "$WORK/term.rc" ]] && break; sleep 0.5; done
  rc="$(cat "$WORK/term.rc" 2>/dev/null || echo none)"
  msg="$(grep -m1 '^\[warn\] interrupted by SIGTERM on rank 1 after step' "$WORK/term.log" || true)"
  [[ "$rc" == 143 && -n "$msg" ]] && pass "SIGTERM to rank 1: exit 143, rank 0 says: $msg" \
    && record_case "SIGTERM to one rank of 2: all stop at one step" "$rc" "$(sed 's/step [0-9]*/step N/' <<<"$msg")" \
         "mpirun -np 2 gossamer train ... & kill -TERM RANK1" \
    || { tail -5 "$WORK/term.log"; fail "SIGTERM to rank 1: exit $rc"; }
fi
pkill -9 -f -- "--out $WORK/term" 2>/dev/null || true
wait
# Ranks started with different runs (Open MPI's MPMD form: one command per rank).
mpmd() {  # NAME SET_FOR_RANK_1
  local name="$1" set1="$2" rc=0
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe --bind-to none \
    --mca btl self,vader -x OMP_NUM_THREADS=1 \
    -np 1 "$G" train -c $TINY "${common[@]}" --set train.steps=4 --out "$WORK/$name" : \
    -np 1 "$G" train -c $TINY "${common[@]}" --set train.steps=4 --out "$WORK/$name" --set "$set1" \
    >"$WORK/$name.log" 2>&1 || rc=$?
  OUT="$(cat "$WORK/$name.log")"; RC=$rc
}
mpmd lr optimizer.lr=0.002
[[ $RC -eq 1 ]] && grep -q 'rank 1 was started with a different run than rank 0: optimizer.lr is 0.003 on rank 0 and 0.002 on rank 1' <<<"$OUT" \
  && pass "another optimizer.lr on rank 1: exit 1, the key and both values named" || { tail -5 <<<"$OUT"; fail "lr mismatch: exit $RC"; }
record_case "ranks started with different optimizer.lr" $RC "$(grep -m1 'optimizer.lr is 0.003 on rank 0 and 0.002 on rank 1' <<<"$OUT")" \
  "mpirun -np 1 gossamer train ... : -np 1 gossamer train ... --set optimizer.lr=0.002"
[[ ! -e "$WORK/lr/metrics.jsonl" ]] && pass "nothing was trained or written" || fail "the mismatched job wrote metrics"
mpmd layers model.n_layer=3
[[ $RC -eq 1 ]] && grep -q 'model.n_layer is 2 on rank 0 and 3 on rank 1' <<<"$OUT" && ! grep -q MPI_ERR_TRUNCATE <<<"$OUT" \
  && pass "another n_layer on rank 1: named at start-up, no MPI_ERR_TRUNCATE" || { tail -5 <<<"$OUT"; fail "n_layer mismatch: exit $RC"; }
record_case "ranks started with different model.n_layer" $RC "$(grep -m1 'model.n_layer is 2 on rank 0 and 3 on rank 1' <<<"$OUT")" \
  "mpirun -np 1 gossamer train ... : -np 1 gossamer train ... --set model.n_layer=3"
# Another run directory on rank 1 (relative or absolute, the same directory is the same path).
RC=0
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe --bind-to none \
  --mca btl self,vader -x OMP_NUM_THREADS=1 \
  -np 1 "$G" train -c $TINY "${common[@]}" --set train.steps=4 --out "$WORK/outdir" : \
  -np 1 "$G" train -c $TINY "${common[@]}" --set train.steps=4 --out "$WORK/elsewhere" \
  >"$WORK/outdir.log" 2>&1 || RC=$?
OUT="$(cat "$WORK/outdir.log")"
[[ $RC -eq 1 ]] && grep -q 'train.out_dir is ".*/outdir" on rank 0 and ".*/elsewhere" on rank 1' <<<"$OUT" \
  && pass "another --out on rank 1: refused at start-up, both directories named" || { tail -5 <<<"$OUT"; fail "out_dir mismatch: exit $RC"; }
record_case "ranks started with different --out" $RC \
  "$(grep -m1 'train.out_dir is .* on rank 0 and .* on rank 1' <<<"$OUT" | sed "s|$WORK|\$WORK|g")" \
  "mpirun -np 1 gossamer train ... --out \$WORK/outdir : -np 1 gossamer train ... --out \$WORK/elsewhere"
finish
