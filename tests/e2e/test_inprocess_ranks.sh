# `gossamer train --ranks N` (issue 41, train/inprocess_ranks.h): N ranks as threads of one
# process equal `mpirun -np N` bit for bit (every logged loss and byte count, the final weights
# and optimizer state) for each optimizer and ZeRO stage below, with the default parallel.sum_order = fixed
# (the inprocess backend's own sums against the zip decorator's plain algorithms over MPI) and
# with parallel.compression = plain (the decorator on both sides);
# a checkpoint written by one launch mode resumes under the other, bit-identical to the run
# uninterrupted; 16 ranks run, one thread each; a hung rank and NaN gradients end the run
# with mpirun's messages and exit codes; bad uses are refused naming --ranks, and more ranks than
# memory allows before any rank starts.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=12 --set train.eval_every=6 --set train.eval_batches=2
        --set train.log_every=1 --set data.micro_batch=2)
ckpt() { echo "$WORK/$1/checkpoints/step_00000012/$2.safetensors"; }
same_run() {  # A B: the same losses (every step and evaluation), bytes sent (per kind and per
  # rank), weights and optimizer state
  diff <(grep -oE '"(val_)?loss":[^,]*|"bytes_sent":[0-9]+' "$WORK/$1/metrics.jsonl") \
       <(grep -oE '"(val_)?loss":[^,]*|"bytes_sent":[0-9]+' "$WORK/$2/metrics.jsonl") >/dev/null \
    && cmp -s "$(ckpt "$1" model)" "$(ckpt "$2" model)" \
    && cmp -s "$(ckpt "$1" optimizer)" "$(ckpt "$2" optimizer)"
}
inproc() {  # NAME N ARGS...
  local name="$1" n="$2"; shift 2
  "$G" train -c $TINY "${common[@]}" --ranks "$n" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 5 "$WORK/$name.log"; fail "$name: --ranks $n failed"; return 1; }
}
launched() {  # NAME N ARGS...
  local name="$1" n="$2"; shift 2
  mpirun_np "$n" "$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 5 "$WORK/$name.log"; fail "$name: mpirun -np $n failed"; return 1; }
}

i=0
for case in "2|" "3|--set parallel.zero_stage=1" "4|--set parallel.compression=plain" "4|--set parallel.zero_stage=2" \
            "4|--set optimizer.name=scape" "2|--set optimizer.name=smet" \
            "4|--set optimizer.name=gasloc --set optimizer.gasloc.local_steps=3" \
            "3|--set optimizer.name=diloco --set optimizer.diloco.local_steps=3" \
            "2|--set optimizer.name=dst" "4|--set optimizer.name=gossip" \
            "3|--set optimizer.name=local_adamw"; do
  i=$((i + 1)); n="${case%%|*}"; args="${case#*|}"
  # shellcheck disable=SC2086  # args holds whole --set options
  inproc "in$i" "$n" $args && launched "mpi$i" "$n" $args || continue
  same_run "in$i" "mpi$i" && pass "--ranks $n = mpirun -np $n bit for bit ${args:-(adamw)}" \
    || fail "--ranks $n differs from mpirun -np $n ${args:-(adamw)}"
done

# parallel.ranks in the config is --ranks.
"$G" train -c $TINY "${common[@]}" --set parallel.ranks=2 --out "$WORK/key" >"$WORK/key.log" 2>&1 \
  && same_run in1 key && pass "parallel.ranks = 2 is --ranks 2 bit for bit" \
  || fail "parallel.ranks = 2: $(tail -n 3 "$WORK/key.log")"

# Across launch modes: checkpoint 6 of each resumed by the other gives the uninterrupted run.
ck=(--set train.checkpoint_every=6 --set train.keep_checkpoints=0)
inproc whole 2 "${ck[@]}" && launched whole-mpi 2 "${ck[@]}" \
  && launched resumed-mpi 2 "${ck[@]}" --resume "$WORK/whole/checkpoints/step_00000006" \
  && inproc resumed-in 2 "${ck[@]}" --resume "$WORK/whole-mpi/checkpoints/step_00000006" \
  && cmp -s "$(ckpt whole model)" "$(ckpt resumed-mpi model)" \
  && cmp -s "$(ckpt whole model)" "$(ckpt resumed-in model)" \
  && cmp -s "$(ckpt whole optimizer)" "$(ckpt resumed-in optimizer)" \
  && pass "saved by --ranks 2, resumed under mpirun (and back): the uninterrupted run's weights" \
  || fail "resume across launch modes"

inproc sixteen 16 --set train.steps=4 --set train.eval_every=4 --set data.micro_batch=1 \
  && grep -q -- "--ranks 16: the ranks are threads of this process (the inprocess backend), 1 thread(s) each" "$WORK/sixteen.log" \
  && grep -q '"step":4' "$WORK/sixteen/metrics.jsonl" && pass "16 ranks in one process, one thread each" \
  || fail "16 ranks: $(tail -n 3 "$WORK/sixteen.log")"

# Faults and timeouts as under mpirun (tests/e2e/test_parallel_failure.sh): a rank that hangs is
# named by the roll call, exit 3; NaN gradients on one rank stop every rank at that step, exit 1.
rc=0
GOSSAMER_FAULT=hang:1:3 timeout 120 "$G" train -c $TINY "${common[@]}" --ranks 2 --set train.steps=6 \
  --set parallel.timeout_s=5 --out "$WORK/hang" >"$WORK/hang.log" 2>&1 || rc=$?
hang_line='rank 0: [a-z_]+ of [0-9]+ bytes did not complete within 5 s \(step 3\); rank 1 did not answer a roll call within 2.5 s \(stopped, hung or dead\); the last operation completed on this rank was [a-z_]+ \(step [0-9]+\)'
[[ $rc == 3 ]] && grep -qE "$hang_line" "$WORK/hang.log" \
  && pass "hang on rank 1 of --ranks 2: exit 3, rank 0 names rank 1 as mpirun's does" \
  && record_case "rank 1 of --ranks 2 hangs at step 3" $rc "$(grep -m1 -oE "$hang_line" "$WORK/hang.log" \
       | sed -E 's/(of) [0-9]+ (bytes)/\1 N \2/; s/was [a-z_]+ \(step [0-9]+\)/was OP (step S)/')" \
       GOSSAMER_FAULT=hang:1:3 gossamer train ... --ranks 2 --set parallel.timeout_s=5 \
  || fail "hang under --ranks: exit $rc, $(grep -v '^\[info' "$WORK/hang.log" | tail -n 2)"
rc=0
GOSSAMER_FAULT=nan:1:3 "$G" train -c $TINY "${common[@]}" --ranks 2 --set train.steps=6 \
  --out "$WORK/nan" >"$WORK/nan.log" 2>&1 || rc=$?
[[ $rc == 1 ]] && grep -q "step 3: non-finite (NaN/Inf) gradients on rank 1, found before they were communicated" "$WORK/nan.log" \
  && pass "NaN on rank 1 of --ranks 2: exit 1, rank 1 and step 3 named" \
  || fail "nan under --ranks: exit $rc, $(grep -v '^\[info' "$WORK/nan.log" | tail -n 2)"

expect_error "--ranks 0" "\[error\] --ranks 0: the number of ranks must be at least 1" \
  "$G" train -c $TINY --ranks 0 --out "$WORK/bad0"
expect_error "--ranks under mpirun" "\[error\] --ranks 2: this process was started by a launcher" \
  mpirun_np 1 "$G" train -c $TINY --ranks 2 --out "$WORK/bad1"
expect_error "--ranks on the GPU" "\[error\] --ranks 2 with kernels.device = cuda" \
  "$G" train -c $TINY --ranks 2 --set kernels.device=cuda --out "$WORK/bad2"
expect_error "parallel.ranks under mpirun" "\[error\] parallel.ranks 2: this process was started by a launcher" \
  mpirun_np 1 "$G" train -c $TINY --set parallel.ranks=2 --out "$WORK/bad4"
expect_error "parallel.ranks negative" "parallel.ranks: must be >= 0 \(0: the launcher's ranks\), found -1" \
  "$G" train -c $TINY --set parallel.ranks=-1 --out "$WORK/bad5"
# About 2 GiB per rank: one rank fits, 64 do not (on a machine with less than 128 GiB).
expect_error "--ranks beyond memory" "the run needs at least [0-9.]+ GiB per rank .* for 64 rank\(s\) on it" \
  "$G" train -c $TINY --ranks 64 --set model.n_layer=1000 --out "$WORK/bad3"
[[ ! -e "$WORK/bad0" && ! -e "$WORK/bad1" && ! -e "$WORK/bad2" && ! -e "$WORK/bad3" && ! -e "$WORK/bad4" && ! -e "$WORK/bad5" ]] && pass "nothing written by the refused runs" \
  || fail "a refused run wrote its directory"
finish
