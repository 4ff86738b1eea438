# SCAPE across ranks (ZeRO-1 sharded per bucket and replicated momentum): replicas
# bit-identical after every step (parallel.check_replicas_every = 1), bytes per collective equal
# the analytic formulas (compact reduce-scatter, sparse parameter all-gather, mask all-gather in
# the smaller encoding; also with shard blocks of 3075 elements), sparsity 0 equals dense AdamS under ZeRO-1, resuming mid-run at the same
# world size is bit-identical and a checkpoint loads at other world sizes and block sizes
# (masks, momentum and residuals included).
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=12 --set train.eval_every=0 --set train.log_every=100
        --set train.checkpoint_every=6 --set train.keep_checkpoints=0
        --set parallel.check_replicas_every=1)
scape=(--set optimizer.name=scape --set optimizer.scape.dense_warmup_steps=3)

run() {  # NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  local cmd=("$G" train -c $TINY "${common[@]}" "${scape[@]}" --out "$WORK/$name" "$@")
  if [[ $np == 1 ]]; then "${cmd[@]}" >"$WORK/$name.log" 2>&1; else mpirun_np "$np" "${cmd[@]}" >"$WORK/$name.log" 2>&1; fi \
    && pass "$name: trained, replicas identical at every step" || { tail -n 20 "$WORK/$name.log"; fail "$name: failed"; }
}

# Analytic bytes of rank 0 on a sparse step (step 8), from the parameter count and the shard
# block (rank r owns floor(n (r+1) / N) - floor(n r / N) of every block of n elements; the
# default optimizer.scape.shard_block_kb, 64, is 16000 elements).
bytes_check() {  # NAME NP SPARSITY SHARDED [BLOCK_ELEMENTS [PARAM_VALUES_PER_COORDINATE [MASK_FROM_RANK0]]]
  node -e '
    const file = process.argv[1];
    const [np, s, sharded, P, bucket, per, rank0] = process.argv.slice(2).map(Number);
    const j = require("fs").readFileSync(file, "utf8").split("\n").filter(Boolean).map(JSON.parse).find((x) => x.step === 8 && "loss" in x);
    const o = j.optim, d = 1 - s;
    const part = (n, r) => Math.floor(n * (r + 1) / np) - Math.floor(n * r / np);
    const n = (r) => {
      if (!sharded) return P;
      let sum = 0;
      for (let b = 0; b < P; b += bucket) sum += part(Math.min(bucket, P - b), r);
      return sum;
    };
    const k = (r) => Math.min(n(r), Math.ceil(d * n(r)));
    const R = sharded ? np : 1;
    let K = 0, idx = 0, bits = 0;
    for (let r = 0; r < R; ++r) { K += k(r); idx += 4 * k(r); bits += Math.ceil(n(r) / 8); }
    const want = sharded
      ? {selected: K, grad: 4 * (K - k(0)), param: per * 4 * (np - 1) * k(0),
         mask: (np - 1) * (bits < idx ? Math.ceil(n(0) / 8) : 4 * k(0))}
      : {selected: K, grad: 2 * (np - 1) / np * 4 * K, param: 0,
         mask: rank0 ? (np - 1) * Math.min(bits, idx) : 0};
    const got = {selected: o.selected, grad: o.grad_bytes, param: o.param_bytes, mask: o.mask_bytes};
    const ok = Object.keys(want).every((key) => want[key] === got[key]) && o.dense === 0;
    console.log(JSON.stringify({got, want})); process.exit(ok ? 0 : 1);' \
    "$WORK/$1/metrics.jsonl" "$2" "$3" "$4" "$P" "${5:-16000}" "${6:-1}" "${7:-0}" >"$WORK/cmp" \
    && pass "$1: bytes = analytic $(cat "$WORK/cmp")" || fail "$1: bytes $(cat "$WORK/cmp")"
}

run s90-np2-z1 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.9 --set parallel.zero_stage=1
P="$(grep -o '[0-9]* parameters' "$WORK/s90-np2-z1.log" | head -n 1 | cut -d' ' -f1)"
bytes_check s90-np2-z1 2 0.9 1
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j && j.step > 4);
  const ok = lines.every((j) => j.optim.mask_exchange_s >= 0 && j.optim.mask_wait_s >= 0 && j.optim.mask_wait_s <= j.time_s.total);
  process.exit(ok && lines.length === 8 ? 0 : 1);' "$WORK/s90-np2-z1/metrics.jsonl" \
  && pass "s90-np2-z1: mask exchange duration and exposed wait logged on every sparse step" || fail "mask timing telemetry missing"
# Small blocks (3075 elements): every rank owns ~1,000 pieces, none aligned with a tensor.
run s99-np4-z1 4 --set data.micro_batch=1 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 \
  --set optimizer.scape.shard_block_kb=12.3
bytes_check s99-np4-z1 4 0.99 1 3075
# Stale momentum: every rank moves the unselected coordinates alike (replicas stay identical);
# the owners send each selected coordinate's value and step (twice the parameter bytes).
run s99-np4-stale 4 --set data.micro_batch=1 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 \
  --set optimizer.scape.stale_momentum=true
bytes_check s99-np4-stale 4 0.99 1 16000 2
# Scores normalised per tensor, over pieces that cut across tensors: the same k per rank.
run s99-np2-pertensor 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 \
  --set optimizer.scape.shard_block_kb=12.3 --set optimizer.scape.mask_per_tensor=true
bytes_check s99-np2-pertensor 2 0.99 1 3075
run s99-np2-z0 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=0 \
  --set optimizer.scape.mask_score=momentum  # every rank selects the same mask itself
bytes_check s99-np2-z0 2 0.99 0
# Unsharded with a score from a rank's own residual: rank 0 selects the mask and sends it.
run mr-np2-z0 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=0 \
  --set optimizer.scape.mask_score=momentum_residual
bytes_check mr-np2-z0 2 0.99 0 16000 1 1
grep -q 'rank 0 selects the mask from its own residual' "$WORK/mr-np2-z0.log" \
  && pass "mr-np2-z0: the mask's source is logged" || fail "mr-np2-z0: no log line for the mask from rank 0"
run mr-np2-z0-r6 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=0 \
  --set optimizer.scape.mask_score=momentum_residual --resume "$WORK/mr-np2-z0/checkpoints/step_00000006"
cmp -s "$WORK/mr-np2-z0/checkpoints/step_00000012/model.safetensors" "$WORK/mr-np2-z0-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/mr-np2-z0/checkpoints/step_00000012/optimizer.safetensors" "$WORK/mr-np2-z0-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "mr-np2-z0: resume at step 6 bit-identical (rank 0's mask saved)" || fail "mr-np2-z0: resume differs"
run s90-np2-grad 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.9 --set parallel.zero_stage=1 --set optimizer.scape.mask_score=gradient

# Sparsity 0 is dense AdamS under ZeRO-1.
run s0-np2-z1 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0 --set parallel.zero_stage=1
mpirun_np 2 "$G" train -c $TINY "${common[@]}" --set optimizer.name=adams --set data.micro_batch=2 \
  --set parallel.zero_stage=1 --out "$WORK/adams" >"$WORK/adams.log" 2>&1 || { tail "$WORK/adams.log"; fail "adams run failed"; }
d="$(st_maxdiff "$WORK/adams/checkpoints/step_00000012/model.safetensors" "$WORK/s0-np2-z1/checkpoints/step_00000012/model.safetensors")"
node -e "process.exit($d <= 1e-5 ? 0 : 1)" && pass "sparsity 0 = dense AdamS (ZeRO-1, 2 ranks): parameters within 1e-5 ($d)" || fail "sparsity 0 differs from AdamS by $d"

# Resume mid-run: same world size bit for bit; other world sizes load masks, momentum, residuals.
run s90-np2-r6 2 --set data.micro_batch=2 --set optimizer.scape.sparsity=0.9 --set parallel.zero_stage=1 \
  --resume "$WORK/s90-np2-z1/checkpoints/step_00000006"
cmp -s "$WORK/s90-np2-z1/checkpoints/step_00000012/model.safetensors" "$WORK/s90-np2-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/s90-np2-z1/checkpoints/step_00000012/optimizer.safetensors" "$WORK/s90-np2-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "resume at step 6, 2 ranks: bit-identical to the uninterrupted run" || fail "resume at the same world size differs"
step7() { node -e 'const j = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((x) => x.step === Number(process.argv[2]) && "loss" in x)[0]; console.log(j.loss)' "$1" "$2"; }
for target in "1 4 64" "4 1 12.3"; do  # ranks, micro-batch, shard block KB (the saved run: 64)
  read -r np mb block <<<"$target"
  run "s90-2to$np" "$np" --set data.micro_batch=$mb --set optimizer.scape.sparsity=0.9 --set parallel.zero_stage=1 \
    --set optimizer.scape.shard_block_kb=$block --resume "$WORK/s90-np2-z1/checkpoints/step_00000006"
  a="$(step7 "$WORK/s90-np2-z1/metrics.jsonl" 7)"; b="$(step7 "$WORK/s90-2to$np/metrics.jsonl" 7)"
  node -e "process.exit(Math.abs($a - $b) <= 1e-5 * Math.abs($a) ? 0 : 1)" && pass "2 -> $np: step 7 loss $b (uninterrupted $a)" || fail "2 -> $np: step 7 loss $b vs $a"
  a="$(step7 "$WORK/s90-np2-z1/metrics.jsonl" 12)"; b="$(step7 "$WORK/s90-2to$np/metrics.jsonl" 12)"
  node -e "process.exit(Math.abs($a - $b) <= 1e-2 * Math.abs($a) ? 0 : 1)" && pass "2 -> $np: step 12 loss $b within 1% of $a" || fail "2 -> $np: step 12 loss $b vs $a"
done

# Error feedback "momentum" (DGC's momentum correction with factor masking) and "replay" with the
# frozen normaliser: replicas identical, reading A's bytes, resume bit-identical (the ranks' local
# momenta and the frozen normalisers are restored).
M=(--set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 --set optimizer.scape.error_feedback=momentum
   --set optimizer.scape.normaliser=step)
run m99-np2 2 "${M[@]}"
bytes_check m99-np2 2 0.99 1
run m99-np2-r6 2 "${M[@]}" --resume "$WORK/m99-np2/checkpoints/step_00000006"
cmp -s "$WORK/m99-np2/checkpoints/step_00000012/model.safetensors" "$WORK/m99-np2-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/m99-np2/checkpoints/step_00000012/optimizer.safetensors" "$WORK/m99-np2-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "error_feedback momentum: resume at step 6, 2 ranks: bit-identical" || fail "error_feedback momentum: resume differs"
R=(--set data.micro_batch=2 --set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 --set optimizer.scape.error_feedback=replay
   --set optimizer.scape.normaliser=frozen)
run r99-np2 2 "${R[@]}"
run r99-np2-r6 2 "${R[@]}" --resume "$WORK/r99-np2/checkpoints/step_00000006"
cmp -s "$WORK/r99-np2/checkpoints/step_00000012/model.safetensors" "$WORK/r99-np2-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/r99-np2/checkpoints/step_00000012/optimizer.safetensors" "$WORK/r99-np2-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "error_feedback replay, normaliser frozen: resume at step 6, 2 ranks: bit-identical" || fail "replay/frozen: resume differs"

# Reading B: every rank's local momentum at the mask, with catch-up; the same collectives and
# bytes as reading A, replicas identical, resume bit-identical and at another world size.
B=(--set optimizer.scape.sparsity=0.99 --set parallel.zero_stage=1 --set optimizer.scape.reading=B --set optimizer.scape.catch_up_max=4)
run b99-np2 2 --set data.micro_batch=2 "${B[@]}"
bytes_check b99-np2 2 0.99 1
run b99-np2-r6 2 --set data.micro_batch=2 "${B[@]}" --resume "$WORK/b99-np2/checkpoints/step_00000006"
cmp -s "$WORK/b99-np2/checkpoints/step_00000012/model.safetensors" "$WORK/b99-np2-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/b99-np2/checkpoints/step_00000012/optimizer.safetensors" "$WORK/b99-np2-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "reading B: resume at step 6, 2 ranks: bit-identical" || fail "reading B: resume at the same world size differs"
run b99-2to1 1 --set data.micro_batch=4 "${B[@]}" --resume "$WORK/b99-np2/checkpoints/step_00000006"
a="$(step7 "$WORK/b99-np2/metrics.jsonl" 7)"; b="$(step7 "$WORK/b99-2to1/metrics.jsonl" 7)"
node -e "process.exit(Math.abs($a - $b) <= 1e-5 * Math.abs($a) ? 0 : 1)" && pass "reading B 2 -> 1: step 7 loss $b (uninterrupted $a)" || fail "reading B 2 -> 1: step 7 loss $b vs $a"
if mpirun_np 2 "$G" train -c $TINY "${common[@]}" "${scape[@]}" --set data.micro_batch=2 "${B[@]}" --set parallel.zero_stage=0 \
     --out "$WORK/b-z0" >"$WORK/b-z0.log" 2>&1; then
  fail "reading B with replicated momentum at 2 ranks was accepted"
fi
grep -q 'optimizer.scape.reading: "B" needs parallel.zero_stage 1' "$WORK/b-z0.log" \
  && pass "reading B refuses zero_stage 0 at 2 ranks, naming the key" || { tail -n 5 "$WORK/b-z0.log"; fail "no clear error for reading B at zero_stage 0"; }
finish
