# Checkpoints are world-size independent: a run saved at N ranks resumes at M ranks (2 -> 1,
# 1 -> 4, 4 -> 2, across ZeRO stages and bucket sizes, which decide the per-bucket shards) and continues the 1-rank reference run on the same
# global batch: the same data windows (the loader position is global), the same losses and
# parameters within fp32 summation tolerance. Resuming at the same world size and stage is
# bit-identical to not stopping.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=12 --set train.eval_every=0 --set train.log_every=100
        --set train.checkpoint_every=4 --set train.keep_checkpoints=0 --set parallel.bucket_mb=1)
LOSS_TOL=1e-5
PARAM_TOL=2e-5
one=(--set data.micro_batch=4)
two=(--set data.micro_batch=2)
four=(--set data.micro_batch=1)

train_np() {  # NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  local cmd=("$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@")
  if [[ $np == 1 ]]; then "${cmd[@]}" >"$WORK/$name.log" 2>&1; else mpirun_np "$np" "${cmd[@]}" >"$WORK/$name.log" 2>&1; fi \
    || { grep -E '^\[error' "$WORK/$name.log" || true; tail -n 20 "$WORK/$name.log"; fail "$name: training failed"; }
}
losses_match() {  # NAME RUN: every step the run logged matches the reference's step
  node -e '
    const read = (f) => new Map(require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j).map((j) => [j.step, j.loss]));
    const ref = read(process.argv[1]), run = read(process.argv[2]);
    let worst = 0, n = 0;
    for (const [step, loss] of run) { worst = Math.max(worst, Math.abs(loss - ref.get(step)) / Math.abs(ref.get(step))); ++n; }
    console.log(`${n} steps, worst ${worst}`); process.exit(n > 0 && worst <= Number(process.argv[3]) ? 0 : 1);' \
    "$WORK/ref/metrics.jsonl" "$2/metrics.jsonl" $LOSS_TOL >"$WORK/cmp" \
    && pass "$1: losses continue the reference ($(cat "$WORK/cmp"))" || fail "$1: losses differ ($(cat "$WORK/cmp"))"
  local d; d="$(st_maxdiff "$WORK/ref/checkpoints/step_00000012/model.safetensors" "$2/checkpoints/step_00000012/model.safetensors")"
  node -e "process.exit($d <= $PARAM_TOL ? 0 : 1)" && pass "$1: final parameters within $PARAM_TOL ($d)" || fail "$1: parameters differ by $d"
}

train_np ref 1 "${one[@]}"
train_np np2 2 "${two[@]}" --set parallel.zero_stage=1
train_np np4 4 "${four[@]}" --set parallel.zero_stage=1

train_np r2to1 1 "${one[@]}" --resume "$WORK/np2/checkpoints/step_00000004"
losses_match "2 -> 1 (ZeRO-1 -> single)" "$WORK/r2to1"
train_np r1to4 4 "${four[@]}" --set parallel.zero_stage=2 --resume "$WORK/ref/checkpoints/step_00000004"
losses_match "1 -> 4 (single -> ZeRO-2)" "$WORK/r1to4"
train_np r4to2 2 "${two[@]}" --set parallel.zero_stage=0 --resume "$WORK/np4/checkpoints/step_00000008"
losses_match "4 -> 2 (ZeRO-1 -> replicated)" "$WORK/r4to2"
# The shard layout follows the bucket size; the saved state does not depend on it.
train_np r4to2b 2 "${two[@]}" --set parallel.zero_stage=1 --set parallel.bucket_mb=0.0123 \
  --resume "$WORK/np4/checkpoints/step_00000008"
losses_match "4 -> 2 (ZeRO-1, buckets of 1 MB -> 3075 elements)" "$WORK/r4to2b"
grep -q "resumed from .*step_00000008 at step 8" "$WORK/r4to2.log" && pass "4 -> 2 resumed at step 8" || fail "4 -> 2 did not report its resume point"

# The optimizer state a sharded run saves is the whole flat state.
d="$(st_maxdiff "$WORK/ref/checkpoints/step_00000004/optimizer.safetensors" "$WORK/np4/checkpoints/step_00000004/optimizer.safetensors")"
node -e "process.exit($d <= 1e-6 ? 0 : 1)" && pass "ZeRO-1 at 4 ranks saves the same AdamW state as 1 rank ($d)" || fail "sharded state differs by $d"

# Same world size and stage: bit for bit.
train_np r2to2 2 "${two[@]}" --set parallel.zero_stage=1 --resume "$WORK/np2/checkpoints/step_00000004"
cmp -s "$WORK/np2/checkpoints/step_00000012/model.safetensors" "$WORK/r2to2/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/np2/checkpoints/step_00000012/optimizer.safetensors" "$WORK/r2to2/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "2 -> 2 resume is bit-identical to the uninterrupted run" || fail "2 -> 2 resume differs from the uninterrupted run"
finish
