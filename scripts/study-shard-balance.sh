#!/usr/bin/env bash
# How SCAPE's per-shard top-k spreads its budget over the tensors (issue 12, part 1;
# docs/RESULTS.md): the study model with SCAPE-99 on the same global batch at 1 rank (the global
# top-k), at 4 ranks with shards per block of 64 KB (the default optimizer.scape.shard_block_kb)
# and of 4 MB, and at 4 ranks with one contiguous slice per rank (a block larger than the
# model: the layout of the first versions).
# Every sparse step logs the fraction of each tensor the mask selected
# (optimizer.scape.log_selection_by_tensor); the table compares the 4-rank fractions with the
# 1-rank ones, averaged over the last 10 steps.
# Usage: scripts/study-shard-balance.sh [STEPS]   (default 40: 20 dense warm-up + 20 sparse)
# GOSSAMER_BIN selects the binary (default build/bin/gossamer), STUDY_CONFIG the model (default
# configs/study-model.json; RESULTS.md's table was measured on configs/studies/study-model-8l.json).
# Writes runs/study-shard-balance/.
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
steps="${1:-40}"
bin="${GOSSAMER_BIN:-build/bin/gossamer}"
config="${STUDY_CONFIG:-configs/study-model.json}"
out=runs/study-shard-balance
mkdir -p "$out"
common=(-c "$config" --set train.steps="$steps" --set train.eval_every=0
        --set train.checkpoint_every=0 --set train.log_every=1 --set optimizer.name=scape
        --set optimizer.scape.sparsity=0.99 --set optimizer.scape.dense_warmup_steps=$((steps / 2))
        --set optimizer.scape.log_selection_by_tensor=true --set parallel.zero_stage=1)
run() {  # NAME NP ARGS...
  local name="$1" np="$2"; shift 2
  rm -rf "${out:?}/$name"
  if [[ $np == 1 ]]; then
    "$bin" train "${common[@]}" "$@" --out "$out/$name" >"$out/$name.log" 2>&1
  else
    mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np "$np" \
      -x OMP_NUM_THREADS=1 -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" \
      "$bin" train "${common[@]}" "$@" --out "$out/$name" >"$out/$name.log" 2>&1
  fi || { tail -n 20 "$out/$name.log"; exit 1; }
}
run np1 1
run np4-blocks-64KB 4
run np4-blocks-4MB 4 --set optimizer.scape.shard_block_kb=4000
run np4-contiguous 4 --set optimizer.scape.shard_block_kb=1e9
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $config, SCAPE-99, $steps steps ($((steps / 2)) dense), fractions averaged over the last 10 steps"
node - "$out" <<'EOF'
const fs = require("fs");
const dir = process.argv[2];
const fractions = (name) => {
  const lines = fs.readFileSync(`${dir}/${name}/metrics.jsonl`, "utf8").split("\n").filter(Boolean)
    .map(JSON.parse).filter((j) => "loss" in j && j.optim && j.optim.dense === 0).slice(-10);
  const sum = {};
  for (const j of lines)
    for (const [k, v] of Object.entries(j.optim))
      if (k.startsWith("selected_fraction.")) sum[k.slice(18)] = (sum[k.slice(18)] || 0) + v / lines.length;
  return sum;
};
const ref = fractions("np1");
const names = Object.keys(ref);
const isBlock = (n) => n.startsWith("blocks.");
// Tensor sizes from the final checkpoint's safetensors header.
const ck = `${dir}/np1/checkpoints/` + fs.readdirSync(`${dir}/np1/checkpoints`).sort().pop() + "/model.safetensors";
const buf = fs.readFileSync(ck);
const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString("utf8"));
const sizes = {};
for (const [k, v] of Object.entries(header)) if (v.shape) sizes[k] = v.shape.reduce((a, b) => a * b, 1);
console.log("| layout (4 ranks) | tensors within 5% of 1 rank | median abs. rel. diff | worst tensor (4 ranks / 1 rank) | blocks' share of the budget (1 rank) | (4 ranks) |");
console.log("|---|---|---|---|---|---|");
for (const name of ["np4-blocks-64KB", "np4-blocks-4MB", "np4-contiguous"]) {
  const f = fractions(name);
  const rel = [], worst = {r: 0};
  let blocks4 = 0, blocks1 = 0, all4 = 0, all1 = 0;
  for (const n of names) {
    const a = f[n] || 0, b = ref[n];
    if (b > 0.002) {  // tensors the 1-rank mask selects from at all
      const r = Math.abs(a - b) / b;
      rel.push(r);
      if (r > worst.r) Object.assign(worst, {r, n, a, b});
    }
  }
  for (const n of names) {
    const k1 = ref[n] * sizes[n], k4 = (f[n] || 0) * sizes[n];
    all1 += k1, all4 += k4;
    if (isBlock(n)) blocks1 += k1, blocks4 += k4;
  }
  rel.sort((x, y) => x - y);
  const within = rel.filter((r) => r <= 0.05).length;
  console.log(`| ${name.slice(4)} | ${within} of ${rel.length} | ${(100 * rel[Math.floor(rel.length / 2)]).toFixed(1)}% | ${worst.n}: ${worst.a.toFixed(4)} / ${worst.b.toFixed(4)} | ${(100 * blocks1 / all1).toFixed(1)}% | ${(100 * blocks4 / all4).toFixed(1)}% |`);
}
EOF
