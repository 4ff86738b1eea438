# The replica contract, end to end, with local_adamw (independent replicas, no communication):
# ranks agree only at the log/evaluation/checkpoint cadence (no collective on other steps), a
# slow rank (GOSSAMER_FAULT=delay) delays only itself, evaluation and model.safetensors see the
# average of the replicas, per-rank state resumes bit for bit at the same world size and is
# refused at another, and parallel.check_replicas_every is refused. For contrast, data-parallel
# AdamW waits for the slow rank.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=8 --set train.log_every=4 --set train.eval_every=8 --set train.eval_batches=2
        --set train.checkpoint_every=4 --set train.keep_checkpoints=0 --set data.micro_batch=2)
local_=(--set optimizer.name=local_adamw)

train2() {  # NAME ARGS... (2 ranks)
  local name="$1"; shift
  mpirun_np 2 "$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 20 "$WORK/$name.log"; fail "$name: training failed"; return 1; }
}

train2 local "${local_[@]}" && pass "local_adamw trained at 2 ranks"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse);
  const train = lines.filter((j) => "loss" in j);
  let bad = [];
  for (const j of train) {
    const agreed = j.step % 4 === 0;
    const calls = Object.values(j.comm).reduce((a, c) => a + c.calls, 0);
    if (agreed && !("ranks" in j && j.comm.all_gather)) bad.push(`step ${j.step}: no agreement`);
    if (!agreed && (calls !== 0 || j.loss_of !== "rank 0")) bad.push(`step ${j.step}: ${calls} collective call(s)`);
  }
  const vals = lines.filter((j) => "val_loss" in j).map((j) => j.step);
  if (vals.join() !== "0,8") bad.push(`evaluations at ${vals}`);
  if (train.length !== 8) bad.push(`${train.length} training lines`);
  console.log(bad.join("; ")); process.exit(bad.length ? 1 : 0);' "$WORK/local/metrics.jsonl" >"$WORK/cmp" \
  && pass "no collective on steps between agreements (1-3, 5-7); telemetry at steps 4 and 8" \
  || fail "agreement cadence: $(cat "$WORK/cmp")"

# model.safetensors holds the average of the replicas, which the optimizer state holds per rank.
node -e '
  const fs = require("fs");
  const load = (f) => { const b = fs.readFileSync(f); const n = Number(b.readBigUInt64LE(0));
    return {h: JSON.parse(b.subarray(8, 8 + n).toString()), d: b.subarray(8 + n)}; };
  const f32 = (st, name) => { const t = st.h[name];
    return new Float32Array(st.d.buffer.slice(st.d.byteOffset + t.data_offsets[0], st.d.byteOffset + t.data_offsets[1])); };
  const dir = process.argv[1];
  const model = load(dir + "/model.safetensors"), opt = load(dir + "/optimizer.safetensors");
  const r0 = f32(opt, "local.params@rank0"), r1 = f32(opt, "local.params@rank1");
  if (opt.h.__metadata__.world_size !== "2" || opt.h["adamw.m@rank1"].dtype !== "F32") process.exit(2);
  const wte = f32(model, "wte"), off = model.h.wte;  // wte is the last view of the flat layout
  const base = r0.length - wte.length;
  let wrong = 0, differ = 0;
  for (let i = 0; i < wte.length; ++i) {
    if (Math.fround(Math.fround(r0[base + i] + r1[base + i]) * 0.5) !== wte[i]) ++wrong;
    if (r0[base + i] !== r1[base + i]) ++differ;
  }
  console.log(`${wrong} wrong of ${wte.length}, replicas differ at ${differ}`);
  process.exit(wrong === 0 && differ > 0 ? 0 : 1);' "$WORK/local/checkpoints/step_00000008" >"$WORK/cmp" \
  && pass "model.safetensors = average of the per-rank replicas ($(cat "$WORK/cmp"))" \
  || fail "evaluation weights: $(cat "$WORK/cmp")"

# Per-rank state: the same world size resumes bit for bit; another is refused clearly.
train2 local-r4 "${local_[@]}" --resume "$WORK/local/checkpoints/step_00000004" \
  && cmp -s "$WORK/local/checkpoints/step_00000008/optimizer.safetensors" "$WORK/local-r4/checkpoints/step_00000008/optimizer.safetensors" \
  && cmp -s "$WORK/local/checkpoints/step_00000008/model.safetensors" "$WORK/local-r4/checkpoints/step_00000008/model.safetensors" \
  && pass "resume at 2 ranks is bit-identical (replicas and moments per rank)" || fail "resume at the same world size differs"
expect_error "per-rank state at another world size" "per rank .*saved at 2 rank\(s\); this run has 1" \
  "$G" train -c $TINY "${common[@]}" "${local_[@]}" --set data.micro_batch=4 --out "$WORK/local-1" \
  --resume "$WORK/local/checkpoints/step_00000004"
expect_error "replica check refused" 'check_replicas_every: optimizer "local_adamw" keeps replicas that are independent' \
  "$G" train -c $TINY "${common[@]}" "${local_[@]}" --set parallel.check_replicas_every=1 --out "$WORK/chk"

# A rank that sleeps 2 s before step 3 (GOSSAMER_FAULT=delay): rank 0 of local_adamw does not
# wait for it; rank 0 of data-parallel AdamW does.
step3() { node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) { const j = JSON.parse(l); if (j.step === 3 && "loss" in j) console.log(j.time_s.total); }' "$1"; }
export GOSSAMER_FAULT=delay:1:3:2000
train2 local-slow "${local_[@]}" --set train.eval_every=0 && train2 dp-slow --set train.eval_every=0
unset GOSSAMER_FAULT
a="$(step3 "$WORK/local-slow/metrics.jsonl")"; b="$(step3 "$WORK/dp-slow/metrics.jsonl")"
grep -q "rank 1 will sleep 2000 ms before step 3" "$WORK/local-slow.log" && pass "the delay fault is announced" || fail "no delay announcement"
node -e "process.exit($a < 1.0 && $b >= 1.9 ? 0 : 1)" \
  && pass "slow rank 1: rank 0's step 3 took ${a} s under local_adamw, ${b} s under data-parallel AdamW" \
  || fail "slow rank 1: step 3 took ${a} s (local_adamw) and ${b} s (adamw)"
finish
