# A failing rank ends the whole job within a bounded time, with a message naming the rank and
# the step, a non-zero exit status, and the last complete checkpoint usable:
#   - NaN gradients on one rank (GOSSAMER_FAULT=nan:1:3): found before they are communicated;
#     every rank stops at step 3 with the same message, exit 1, no step-3 checkpoint;
#   - a rank that hangs (GOSSAMER_FAULT=hang:1:3): the others give up after parallel.timeout_s,
#     naming their rank, the collective and the step, exit 3 (comm::kExitPeerFailure);
#   - a rank killed with SIGKILL mid-run: mpirun ends the job naming the rank; training
#     resumes from the last checkpoint at another world size;
#   - ranks started with different configs (MPMD, another --set on rank 1): every rank stops at
#     start-up, rank 1 naming the key and both values; another model size is the same clear
#     error, not a collective of another size.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny.json
common=(--set train.eval_every=0 --set train.log_every=1 --set train.checkpoint_every=2
        --set data.micro_batch=2)

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
[[ -d "$WORK/nan/checkpoints/step_00000002" && ! -e "$WORK/nan/checkpoints/step_00000003" ]] \
  && pass "nan: checkpoint 2 complete, nothing written for step 3" || fail "nan: checkpoints $(ls "$WORK/nan/checkpoints")"

run_fault hang hang:1:3 60 --set train.steps=10 --set parallel.timeout_s=5 --out "$WORK/hang"
[[ $RC -eq 3 ]] && pass "hang: exit 3" || fail "hang: exit $RC"
grep -qE 'rank 0: [a-z_]+ of [0-9]+ bytes did not complete within 5 s \(step 3\); a peer rank died or hangs' <<<"$OUT" \
  && pass "hang: rank 0 names itself, the collective and step 3" || { echo "$OUT" | tail; fail "hang: message"; }

# SIGKILL one rank while training runs.
(rc=0; mpirun_np 2 "$G" train -c $TINY "${common[@]}" --set train.steps=100000 --out "$WORK/kill" >"$WORK/kill.log" 2>&1 || rc=$?; echo $rc >"$WORK/kill.rc") &
for _ in $(seq 1 120); do
  [[ -d "$WORK/kill/checkpoints/step_00000004" ]] && break
  sleep 0.5
done
victim=""
# Only this job's ranks: ctest runs other tests' trainings at the same time.
for pid in $(pgrep -f -- "--out $WORK/kill" || true); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$pid; fi
done
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
[[ ! -e "$WORK/lr/metrics.jsonl" ]] && pass "nothing was trained or written" || fail "the mismatched job wrote metrics"
mpmd layers model.n_layer=3
[[ $RC -eq 1 ]] && grep -q 'model.n_layer is 2 on rank 0 and 3 on rank 1' <<<"$OUT" && ! grep -q MPI_ERR_TRUNCATE <<<"$OUT" \
  && pass "another n_layer on rank 1: named at start-up, no MPI_ERR_TRUNCATE" || { tail -5 <<<"$OUT"; fail "n_layer mismatch: exit $RC"; }
finish
