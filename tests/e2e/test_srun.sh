# srun direct launch: on a throwaway single-node Slurm (scripts/slurm-local.sh, its own directory
# and ports, stopped again on every exit path), `srun -n 2 gossamer train` takes rank and world
# size from Slurm (SLURM_PROCID / SLURM_STEP_NUM_TASKS; MPI wires up through Slurm's PMIx server)
# and trains exactly as `mpirun -np 2`: the same losses, bit for bit, and the same parameters.
# scripts/srun.sh does the same; srun without PMIx fails with a hint. Needs root and Slurm (or
# apt to install it); without them it prints SKIPPED.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=4 --set train.eval_every=0 --set train.log_every=1
        --set train.sample_every=0 --set data.micro_batch=2 --set kernels.threads=0)

export PATH="$PATH:/usr/sbin:/sbin"  # slurmd, slurmctld, munged
if [[ "$(id -u)" != 0 ]]; then echo "SKIPPED: a local Slurm (scripts/slurm-local.sh) needs root"; exit 0; fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v srun >/dev/null \
  || ! command -v munged >/dev/null; then
  scripts/install-deps.sh >"$WORK/deps.log" 2>&1 \
    || { echo "SKIPPED: Slurm is not installed and scripts/install-deps.sh could not install it: $(tail -n 1 "$WORK/deps.log")"; exit 0; }
fi

# A cluster of our own, so that a running `scripts/slurm-local.sh start` of the user is untouched.
export GOSSAMER_SLURM_DIR="$WORK/slurm"
export GOSSAMER_SLURM_PORT=$((20000 + ($$ % 5000) * 2))
export SLURM_CONF="$GOSSAMER_SLURM_DIR/slurm.conf"
trap 'scripts/slurm-local.sh stop >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
trap 'exit 143' INT TERM  # runs the EXIT trap too (a SIGKILL, as ctest's timeout sends, cannot)
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMIX_RANK
t0=$SECONDS
scripts/slurm-local.sh start >"$WORK/slurm-start.log" 2>&1 \
  || { cat "$WORK/slurm-start.log"; fail "scripts/slurm-local.sh start failed"; finish; }
pass "local Slurm up in $((SECONDS - t0)) s: $(sinfo -h -N -o '%N %t %c CPUs')"
scripts/slurm-local.sh status >/dev/null && pass "slurm-local.sh status: running" || fail "slurm-local.sh status"
scripts/slurm-local.sh start >/dev/null && pass "slurm-local.sh start again: no-op" || fail "second start"

mpirun_np 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/mpirun" >"$WORK/mpirun.log" 2>&1 \
  || { tail -n 20 "$WORK/mpirun.log"; fail "mpirun -np 2 training failed"; finish; }

comm_line() { grep -m1 '\[info\] comm: backend' "$1" || true; }
threads() { grep -o 'cpu: [0-9]* OpenMP threads' "$1" | head -n 1; }
expected_threads="cpu: $(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 )) OpenMP threads"

check_run() {  # NAME LOG RUN_DIR
  local name="$1" log="$2" run="$3" line
  line="$(comm_line "$log")"
  grep -qF "backend mpi, 2 rank(s)" <<<"$line" && grep -qF "launched by SLURM_PROCID/SLURM_NTASKS as rank 0 of 2" <<<"$line" \
    && pass "$name: rank and world from Slurm: ${line#*comm: }" || fail "$name: comm line: '$line'"
  [[ "$(threads "$log")" == "$expected_threads" ]] \
    && pass "$name: $expected_threads (2 tasks on this node, from SLURM_STEP_TASKS_PER_NODE)" \
    || fail "$name: '$(threads "$log")', expected '$expected_threads'"
  if [[ "$(losses "$run/metrics.jsonl" | wc -l)" == 4 ]] && cmp -s <(losses "$WORK/mpirun/metrics.jsonl") <(losses "$run/metrics.jsonl"); then
    pass "$name: 4 losses identical to mpirun -np 2: $(losses "$run/metrics.jsonl" | tr '\n' ' ')"
  else
    fail "$name: losses differ from mpirun: $(losses "$run/metrics.jsonl" | tr '\n' ' ') vs $(losses "$WORK/mpirun/metrics.jsonl" | tr '\n' ' ')"
  fi
  local d
  d="$(st_maxdiff "$WORK/mpirun/checkpoints/step_00000004/model.safetensors" "$run/checkpoints/step_00000004/model.safetensors" 2>/dev/null || echo missing)"
  [[ "$d" == 0 ]] && pass "$name: final parameters bit-identical to mpirun's" || fail "$name: parameters differ from mpirun's by $d"
}

grep -qF "launched by OMPI_COMM_WORLD_* as rank 0 of 2" <<<"$(comm_line "$WORK/mpirun.log")" \
  && pass "mpirun: $(comm_line "$WORK/mpirun.log" | sed 's/.*comm: //')" || fail "mpirun comm line: $(comm_line "$WORK/mpirun.log")"
[[ "$(threads "$WORK/mpirun.log")" == "$expected_threads" ]] && pass "mpirun: $expected_threads" \
  || fail "mpirun: '$(threads "$WORK/mpirun.log")', expected '$expected_threads'"

# Plain srun: the cluster's MpiDefault=pmix gives Open MPI its PMIx server.
if timeout 60 srun -n 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/srun" >"$WORK/srun.log" 2>&1; then
  check_run "srun -n 2" "$WORK/srun.log" "$WORK/srun"
else
  tail -n 20 "$WORK/srun.log"; fail "srun -n 2 training failed"
fi

# The helper: --mpi=pmix explicitly, --kill-on-bad-exit, --cpu-bind=none.
if timeout 60 scripts/srun.sh 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/srun-sh" >"$WORK/srun-sh.log" 2>&1; then
  check_run "scripts/srun.sh 2" "$WORK/srun-sh.log" "$WORK/srun-sh"
else
  tail -n 20 "$WORK/srun-sh.log"; fail "scripts/srun.sh 2 training failed"
fi

# Without PMIx, Debian's Open MPI cannot start under srun; gossamer says what to do first.
expect_error "srun --mpi=none" 'without PMIx.*srun --mpi=pmix' \
  timeout 60 srun --mpi=none -n 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/srun-none"

scripts/slurm-local.sh stop >/dev/null 2>&1 && [[ ! -e "$GOSSAMER_SLURM_DIR" ]] \
  && pass "slurm-local.sh stop: daemons stopped, $GOSSAMER_SLURM_DIR removed" || fail "slurm-local.sh stop"
pass "total $((SECONDS - t0)) s"
finish
