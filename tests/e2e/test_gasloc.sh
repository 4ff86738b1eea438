# DiLoCo, GASLoC and gossip end to end (docs/GASLOC.md), at 4 ranks on the tiny model: GASLoC
# mixed_nesterov on the complete graph reproduces DiLoCo bit for bit, and the accelerated default
# within 1e-4 of every loss (its general mixing path rounds differently); a gossip round issues
# sendrecv calls only, of the analytic size (one_peer: one parameter vector per round, ring: two);
# a slow rank (GOSSAMER_FAULT=delay) delays only the peers it exchanges with (DiLoCo: everyone);
# per-rank local_steps; each replica's validation loss and the consensus distance at evaluation;
# per-rank state of every mode (and of mix_momentum) resumes bit-identical at the same world
# size, from mid-round and from a round end, and is refused at another; bad
# settings are refused naming the key.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=16 --set train.eval_every=0 --set train.log_every=1
        --set train.checkpoint_every=0 --set data.micro_batch=2)
train4() {  # NAME ARGS... (4 ranks)
  local name="$1"; shift
  mpirun_np 4 "$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 20 "$WORK/$name.log"; fail "$name: training failed"; return 1; }
}
metrics() { echo "$WORK/$1/metrics.jsonl"; }

# 1. The complete graph in mixed_nesterov mode is DiLoCo, bit for bit: every logged loss and the
# final model.
train4 diloco --set optimizer.name=diloco --set optimizer.diloco.local_steps=4 \
  --set train.eval_every=4 --set train.eval_batches=2
# compare_losses RUN_A RUN_B TOLERANCE: every logged training and validation loss of two runs,
# the largest relative difference (21 losses expected) and the rounds' ends of RUN_A; exit 0
# when that difference is at most TOLERANCE.
compare_losses() {
  node -e '
    const rd = (f) => require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse);
    const a = rd(process.argv[1]), b = rd(process.argv[2]), tol = Number(process.argv[3]);
    let worst = 0, n = 0;
    for (const k of ["loss", "val_loss"]) {
      const x = a.filter((j) => k in j), y = b.filter((j) => k in j);
      if (x.length !== y.length) process.exit(2);
      for (let i = 0; i < x.length; ++i, ++n) worst = Math.max(worst, Math.abs(x[i][k] - y[i][k]) / Math.abs(x[i][k]));
    }
    const rounds = a.filter((j) => "loss" in j && j.optim.round_end === 1).map((j) => j.step).join();
    console.log(`${n} losses, largest relative difference ${worst.toExponential(2)}, rounds end at ${rounds}`);
    process.exit(n === 21 && worst <= tol && rounds === "4,8,12,16" ? 0 : 1);' \
    "$(metrics "$1")" "$(metrics "$2")" "$3"
}
train4 complete --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=4 \
  --set optimizer.gasloc.mode=mixed_nesterov \
  --set optimizer.gasloc.topology=complete --set train.eval_every=4 --set train.eval_batches=2
compare_losses diloco complete 0 >"$WORK/cmp" \
  && cmp -s "$WORK/diloco/checkpoints/step_00000016/model.safetensors" \
            "$WORK/complete/checkpoints/step_00000016/model.safetensors" \
  && pass "gasloc on the complete graph = diloco bit for bit: $(cat "$WORK/cmp"), the same final model" \
  || fail "complete graph vs diloco: $(cat "$WORK/cmp")"
train4 complete-acc --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=4 \
  --set optimizer.gasloc.topology=complete --set train.eval_every=4 --set train.eval_batches=2
compare_losses diloco complete-acc 1e-4 >"$WORK/cmp" \
  && pass "gasloc accelerated on the complete graph = diloco to rounding: $(cat "$WORK/cmp")" \
  || fail "accelerated on the complete graph vs diloco: $(cat "$WORK/cmp")"

# 2. Gossip rounds: between agreements (log_every 8) no collective at all, at a round end only
# sendrecv calls of P floats per exchange (one_peer: 1, ring: 2); the replicas' losses and the
# consensus distance at evaluation.
P="$(grep -o '[0-9]* parameters' "$WORK/diloco.log" | head -n 1 | cut -d' ' -f1)"
for topo in one_peer:1 ring:2; do
  name="gossip-${topo%%:*}"
  # The ring's replicas are evaluated on 1 micro-batch each (train.eval_replica_batches), one
  # eighth of the average's 2 x 4; one_peer's on the average's windows (the default).
  replica_batches=0 && [ "${topo%%:*}" = ring ] && replica_batches=1
  train4 "$name" --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=2 \
    --set "optimizer.gasloc.topology=${topo%%:*}" --set train.log_every=8 --set train.eval_every=8 \
    --set train.eval_batches=2 --set train.eval_replica_batches=$replica_batches || continue
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse);
    const P = Number(process.argv[2]), exchanges = Number(process.argv[3]);
    const bad = [];
    for (const j of lines.filter((j) => "loss" in j)) {
      const kinds = Object.keys(j.comm).filter((k) => j.comm[k].calls > 0);
      const agreed = j.step % 8 === 0, end = j.step % 2 === 0;
      const want = [...(end ? ["sendrecv"] : []), ...(agreed ? ["all_gather"] : [])].sort().join();
      if (kinds.sort().join() !== want) bad.push(`step ${j.step}: ${kinds}`);
      if (end && (j.comm.sendrecv.bytes_sent !== 4 * P * exchanges || j.optim.degree !== exchanges))
        bad.push(`step ${j.step}: sent ${j.comm.sendrecv.bytes_sent}`);
    }
    const ev = lines.filter((j) => "val_loss_replicas" in j);
    const share = Number(process.argv[4]) ? 8 : 1;  // tokens of the average per replica token
    if (ev.length !== 2 || ev.some((j) => j.val_loss_replicas.length !== 4 || !(j.optim.consensus_distance > 0)
                                    || j.val_tokens_replica * share !== j.val_tokens))
      bad.push(`evaluations ${JSON.stringify(ev)}`);
    console.log(bad.join("; ") || `sendrecv of ${4 * P * exchanges} bytes per round, nothing else`);
    process.exit(bad.length ? 1 : 0);' "$(metrics "$name")" "$P" "${topo##*:}" "$replica_batches" \
    >"$WORK/cmp" \
    && pass "$name: $(cat "$WORK/cmp"); 4 replica losses (on $([ $replica_batches = 1 ] && echo "1/8 of" || echo "the same as") the average's tokens) and a consensus distance per evaluation" \
    || fail "$name: $(cat "$WORK/cmp")"
done

# 3. Rank 0 sleeps 1.5 s before step 5 (H = 1: every step is a round). Only the ranks that
# exchange with it wait in that round: ring neighbours 1 and 3 (not 2); the one_peer partner
# rank 0's metrics name; with DiLoCo every rank waits in the all-reduce.
export GOSSAMER_FAULT=delay:0:5:1500
slow=(--set train.steps=6)  # the slow step and one after it
train4 slow-ring "${slow[@]}" --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=1 --set optimizer.gasloc.topology=ring
train4 slow-pair "${slow[@]}" --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=1 --set optimizer.gasloc.topology=one_peer
train4 slow-diloco "${slow[@]}" --set optimizer.name=diloco --set optimizer.diloco.local_steps=1
unset GOSSAMER_FAULT
waits() {  # FILE: "waiting ranks" (> 1 s) and "free ranks" (< 0.5 s) at step 5, and rank 0's peer
  node -e '
    const j = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).find((j) => j.step === 5 && "loss" in j);
    const w = j.ranks.filter((r) => r.rank !== 0);
    console.log(w.filter((r) => r.wait_s > 1).map((r) => r.rank).join() + "|" + w.filter((r) => r.wait_s < 0.5).map((r) => r.rank).join() + "|" + (j.optim.peer0 ?? ""));' "$1"
}
got="$(waits "$(metrics slow-ring)")"
[[ "$got" == "1,3|2|"* ]] && pass "slow rank 0 on the ring: neighbours 1 and 3 wait, rank 2 does not ($got)" \
  || fail "ring waits at the slow step: $got (want 1,3|2|...)"
got="$(waits "$(metrics slow-pair)")"; peer="${got##*|}"
others="$(for r in 1 2 3; do [[ $r != "$peer" ]] && printf '%s,' $r; done)"
[[ -n "$peer" && "$got" == "$peer|${others%,}|$peer" ]] \
  && pass "slow rank 0 on one_peer: only its partner $peer waits ($got)" || fail "one_peer waits: $got"
got="$(waits "$(metrics slow-diloco)")"
[[ "$got" == "1,2,3||" ]] && pass "diloco: every rank waits for the slow one ($got)" || fail "diloco waits: $got"

# 4. Per-rank local steps: ranks 0-1 take 1 step, ranks 2-3 take 3 per round of 3 steps; the
# idle slots draw no gradient (each rank's own inner step count) and the rounds end every 3.
train4 hetero --set optimizer.name=gossip --set 'optimizer.gossip.local_steps=[1,1,3,3]' \
  --set optimizer.gossip.topology=ring --set train.steps=9
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j);
  const ends = lines.filter((j) => j.optim.round_end === 1).map((j) => j.step).join();
  const idle = lines.filter((j) => j.time_s.fwd === 0).map((j) => j.step).join();  // rank 0 idles
  console.log(`rounds end at ${ends}; rank 0 idles at ${idle}`);
  process.exit(ends === "3,6,9" && idle === "2,3,5,6,8,9" ? 0 : 1);' "$(metrics hetero)" >"$WORK/cmp" \
  && pass "per-rank local_steps: $(cat "$WORK/cmp")" || fail "per-rank local_steps: $(cat "$WORK/cmp")"

# 5. Per-rank state: resume at 4 ranks bit-identical from step 4 (mid-round: rounds of 3) and
# from step 6 (a round end), for every gasloc mode, mix_momentum's correction (gossip and
# mixed_nesterov) and diloco; refused at 2 ranks.
for m in "gasloc mode=accelerated" "gasloc mode=mixed_nesterov" "gasloc mode=zij_literal" \
         "gasloc mode=mixed_nesterov mix_momentum=0.5" "gossip mix_momentum=0.5" "diloco outer_lr=0.5"; do
  set -- $m
  method="$1"; shift
  name="res-$method-${1#*=}"
  opts=(--set "optimizer.name=$method" --set "optimizer.$method.local_steps=3"
        --set train.checkpoint_every=2 --set train.keep_checkpoints=0 --set train.steps=8)
  for kv in "$@"; do opts+=(--set "optimizer.$method.$kv"); done
  for kv in "${@:2}"; do name+="-${kv%%=*}"; done
  [[ $method != diloco ]] && opts+=(--set "optimizer.$method.topology=ring")
  train4 "$name" "${opts[@]}" || continue
  for from in 4 6; do
    train4 "$name-r$from" "${opts[@]}" --resume "$WORK/$name/checkpoints/step_0000000$from" \
      && cmp -s "$WORK/$name/checkpoints/step_00000008/optimizer.safetensors" "$WORK/$name-r$from/checkpoints/step_00000008/optimizer.safetensors" \
      && cmp -s "$WORK/$name/checkpoints/step_00000008/model.safetensors" "$WORK/$name-r$from/checkpoints/step_00000008/model.safetensors" \
      && pass "$m: resume from step $from ($( ((from % 3)) && echo mid-round || echo a round end)) at 4 ranks is bit-identical" \
      || fail "$m: resume from step $from differs"
  done
done
expect_error "gasloc state at another world size" "\[error\] .*per rank .*saved at 4 rank\(s\); this run has 2" \
  mpirun_np 2 "$G" train -c $TINY "${common[@]}" --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=3 \
  --set optimizer.gasloc.mode=zij_literal --set optimizer.gasloc.topology=ring --set train.steps=8 \
  --set data.micro_batch=4 --out "$WORK/res-2" --resume "$WORK/res-gasloc-zij_literal/checkpoints/step_00000004"

# 6. Bad settings, named by key.
bad() { local name="$1" pattern="$2"; shift 2
  expect_error "$name" "$pattern" "$G" train -c $TINY "${common[@]}" --out "$WORK/bad" "$@"; }
bad "gasloc topology unknown" 'optimizer.gasloc.topology: expected a string, one of' \
  --set optimizer.name=gasloc --set optimizer.gasloc.topology=torus
bad "gasloc local_steps < 1" 'optimizer.gasloc.local_steps: must be >= 1' \
  --set optimizer.name=gasloc --set optimizer.gasloc.local_steps=0
bad "diloco local_steps < 1 in a per-rank list" 'optimizer.diloco.local_steps\[1\]: must be >= 1' \
  --set optimizer.name=diloco --set 'optimizer.diloco.local_steps=[2,0]'
bad "gasloc outer_momentum >= 1" 'optimizer.gasloc.outer_momentum: must lie in \[0, 1\)' \
  --set optimizer.name=gasloc --set optimizer.gasloc.outer_momentum=1
bad "gossip mix_momentum >= 1" 'optimizer.gossip.mix_momentum: must lie in \[0, 1\)' \
  --set optimizer.name=gossip --set optimizer.gossip.mix_momentum=1
bad "gasloc mix_momentum in mode accelerated" 'optimizer.gasloc.mix_momentum: applies to mode mixed_nesterov only' \
  --set optimizer.name=gasloc --set optimizer.gasloc.mix_momentum=0.5
bad "gasloc mode unknown" 'optimizer.gasloc.mode: expected a string, one of' \
  --set optimizer.name=gasloc --set optimizer.gasloc.mode=nesterov
bad "gasloc section with diloco" 'optimizer.gasloc: section not used: optimizer.name is "diloco"' \
  --set optimizer.name=diloco --set optimizer.gasloc.local_steps=2
expect_error "per-rank local_steps of the wrong length" \
  '\[error\] optimizer.gossip.local_steps: a per-rank list of 3 values, but the run has 2 rank' \
  mpirun_np 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/bad2" --set optimizer.name=gossip \
  --set 'optimizer.gossip.local_steps=[1,2,3]'
expect_error "gossip_weight above 1 / degree" '\[error\] optimizer.gasloc.gossip_weight: 0.6 x the ring topology' \
  mpirun_np 4 "$G" train -c $TINY "${common[@]}" --out "$WORK/bad4" --set optimizer.name=gasloc \
  --set optimizer.gasloc.topology=ring --set optimizer.gasloc.gossip_weight=0.6
bad "diloco with ZeRO" 'parallel.zero_stage: optimizer "diloco" keeps a whole replica' \
  --set optimizer.name=diloco --set parallel.zero_stage=1
finish
