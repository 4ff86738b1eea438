# Dynamic sparse training across ranks (smet and dst; docs/SMET.md): replicas bit-identical
# after every step (parallel.check_replicas_every = 1) and the ranks' mask hashes compared at
# every topology update; gradient bytes equal the analytic count (active blocks plus dense
# weights); a topology update at every update_interval steps; resuming across a topology update
# bit-identical at the same world size and loading at others; Llama; bad settings refused naming
# the key.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=12 --set train.eval_every=0 --set train.log_every=100
        --set train.checkpoint_every=6 --set train.keep_checkpoints=0
        --set parallel.check_replicas_every=1 --set optimizer.dst.update_interval=4)

run() {  # NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  local cmd=("$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@")
  if [[ $np == 1 ]]; then "${cmd[@]}" >"$WORK/$name.log" 2>&1; else mpirun_np "$np" "${cmd[@]}" >"$WORK/$name.log" 2>&1; fi \
    && pass "$name: trained, replicas identical at every step" || { tail -n 20 "$WORK/$name.log"; fail "$name: failed"; }
}
train() { "$G" train -c $TINY "${common[@]}" "$@"; }

# Rank 0's bytes at step 7 (no topology update) and step 8 (an update): the gradient
# all-reduces carry the active blocks of the block matrices (round(d x blocks) x B per matrix)
# and every dense weight; the control all-reduces add 4 bytes (the finite-gradient vote) and, at
# an update, 16 (the mask hashes). At 2 ranks an all-reduce of S bytes counts S.
bytes_check() {  # NAME DENSITY BLOCK
  node -e '
    const fs = require("fs");
    const [file, cfgFile, P, d, B] = process.argv.slice(1);
    const m = JSON.parse(fs.readFileSync(cfgFile, "utf8")).model, C = m.d_model;
    let sparse = 0, active = 0;
    for (let l = 0; l < m.n_layer; ++l)
      for (const n of [3 * C * C, C * C, 4 * C * C, 4 * C * C]) {
        const blocks = Math.ceil(n / B);
        sparse += n; active += Math.max(1, Math.round(d * blocks)) * B;
      }
    const grad = 4 * (Number(P) - sparse + active);
    const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j);
    const at = (s) => lines.find((j) => j.step === s);
    const got = [7, 8].map((s) => [at(s).optim.grad_bytes, at(s).comm.all_reduce.bytes_sent]);
    const want = [[grad, grad + 4], [grad, grad + 4 + 16]];
    console.log(JSON.stringify({got, want}));
    process.exit(JSON.stringify(got) === JSON.stringify(want) ? 0 : 1);' \
    "$WORK/$1/metrics.jsonl" "$TINY" "$P" "$2" "$3" >"$WORK/cmp" \
    && pass "$1: bytes = analytic $(cat "$WORK/cmp")" || fail "$1: bytes $(cat "$WORK/cmp")"
}

run smet-np2 2 --set data.micro_batch=2 --set optimizer.name=smet
P="$(grep -o '[0-9]* parameters' "$WORK/smet-np2.log" | head -n 1 | cut -d' ' -f1)"
bytes_check smet-np2 0.5 16
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j);
  const updates = lines.filter((j) => j.optim.topology_update === 1).map((j) => j.step);
  const hashes = lines.filter((j) => "mask_hash" in j.optim).map((j) => j.optim.mask_hash);
  const ratio = lines.filter((j) => "regrown_update_ratio" in j.optim).map((j) => j.step);
  const density = lines.every((j) => Math.abs(j.optim.density - 0.5) < 0.05);
  const pruned = lines.filter((j) => "pruned_blocks" in j.optim);
  const ok = JSON.stringify(updates) === "[4,8,12]" && new Set(hashes).size === 3 &&
    lines.filter((j) => j.step > 4).every((j) => ratio.includes(j.step)) && !ratio.includes(4) &&
    density && JSON.stringify(pruned.map((j) => j.step)) === "[4,8,12]" &&
    pruned.every((j) => j.optim.pruned_blocks > 0 && j.optim.pruned_blocks === j.optim.regrown_blocks);
  console.log(JSON.stringify({updates, hashes, ratio})); process.exit(ok ? 0 : 1);' "$WORK/smet-np2/metrics.jsonl" >"$WORK/cmp" \
  && pass "smet-np2: topology updates at steps 4, 8, 12, each a new mask, blocks pruned and regrown counted; density every step; regrown/old update ratio logged after the first" \
  || fail "smet-np2: topology telemetry $(cat "$WORK/cmp")"
grep -q 'smet: 8 matrices sparse at density 0.5 in blocks of 16' "$WORK/smet-np2.log" \
  && pass "smet-np2: the sparse matrices, density and bytes per weight are logged" || fail "smet-np2: no set-up line"

# Resume at step 6 across the update at step 8: bit for bit (masks, block step counts, compact
# moments restored); at 1 and 3 ranks the same checkpoint loads and trains on.
run smet-np2-r6 2 --set data.micro_batch=2 --set optimizer.name=smet --resume "$WORK/smet-np2/checkpoints/step_00000006"
cmp -s "$WORK/smet-np2/checkpoints/step_00000012/model.safetensors" "$WORK/smet-np2-r6/checkpoints/step_00000012/model.safetensors" \
  && cmp -s "$WORK/smet-np2/checkpoints/step_00000012/optimizer.safetensors" "$WORK/smet-np2-r6/checkpoints/step_00000012/optimizer.safetensors" \
  && pass "smet: resume at step 6, 2 ranks, across the topology update at step 8: bit-identical" || fail "smet: resume differs"
step_loss() { node -e 'const j = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((x) => x.step === Number(process.argv[2]) && "loss" in x)[0]; console.log(j.loss)' "$1" "$2"; }
for target in "1 4" "4 1"; do  # ranks, micro-batch (the same global batch)
  read -r np mb <<<"$target"
  run "smet-2to$np" "$np" --set data.micro_batch=$mb --set optimizer.name=smet --resume "$WORK/smet-np2/checkpoints/step_00000006"
  a="$(step_loss "$WORK/smet-np2/metrics.jsonl" 7)"; b="$(step_loss "$WORK/smet-2to$np/metrics.jsonl" 7)"
  node -e "process.exit(Math.abs($a - $b) <= 1e-5 * Math.abs($a) ? 0 : 1)" && pass "smet 2 -> $np: step 7 loss $b (uninterrupted $a)" || fail "smet 2 -> $np: step 7 loss $b vs $a"
  a="$(step_loss "$WORK/smet-np2/metrics.jsonl" 12)"; b="$(step_loss "$WORK/smet-2to$np/metrics.jsonl" 12)"
  node -e "process.exit(Math.abs($a - $b) <= 1e-2 * Math.abs($a) ? 0 : 1)" && pass "smet 2 -> $np: step 12 loss $b within 1% of $a" || fail "smet 2 -> $np: step 12 loss $b vs $a"
done

# Naive DST at blocks of 1, and SMET on Llama (fused q/k/v and gate/up products routed).
run dst-np2-b1 2 --set data.micro_batch=2 --set optimizer.name=dst --set optimizer.dst.block_size=1 --set optimizer.dst.density=0.25
bytes_check dst-np2-b1 0.25 1
mpirun_np 2 "$G" train -c configs/test/llama-tiny-v512.json "${common[@]}" --set data.micro_batch=2 --set optimizer.name=smet \
  --out "$WORK/llama" >"$WORK/llama.log" 2>&1 \
  && pass "llama smet, 2 ranks: trained, replicas identical at every step" || { tail -n 20 "$WORK/llama.log"; fail "llama smet failed"; }

expect_error "smet with ZeRO-1" 'parallel.zero_stage: optimizer "smet" keeps its compact state replicated' \
  train --set optimizer.name=smet --set parallel.zero_stage=1 --out "$WORK/e1"
expect_error "dst density 0" 'optimizer.dst.density: must lie in \(0, 1\]' \
  train --set optimizer.name=dst --set optimizer.dst.density=0 --out "$WORK/e2"
expect_error "smet block size 8" 'optimizer.dst.block_size: must be 1, 16, 32 or 128' \
  train --set optimizer.name=smet --set optimizer.dst.block_size=8 --out "$WORK/e3"
expect_error "dst with an optimizer.smet key" 'optimizer.smet.*optimizer.name is "dst"' \
  train --set optimizer.name=dst --set optimizer.smet.regrow_warmup_steps=10 --out "$WORK/e4"
finish
