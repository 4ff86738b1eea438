#!/usr/bin/env bash
# Writes tests/assets/legacy_v1/: checkpoints in the format of gossamer before the architecture
# step of issue 10 (commit 5300dbc: flat optimizer keys, untyped float state), and the losses
# the old binary logged after them, so tests/e2e/test_legacy_checkpoints.sh can check that
# today's binary resumes them bit for bit. Run once with a binary built from that commit:
#   bash scripts/make_legacy_checkpoints.sh OLD_BUILD/bin/gossamer
# Each run: a 1-layer GPT-2 (vocab 256) on a synthetic shard, 6 steps, checkpoint at step 2;
# the step_00000002 checkpoint and the losses of steps 3-6 are kept.
set -euo pipefail
G="$(realpath "$1")"
cd "$(dirname "$0")/.."
out=tests/assets/legacy_v1
mkdir -p "$out"
# A shard of 4096 tokens < 256 (llm.c layout: 256 int32 header, uint16 tokens).
node -e '
  const n = 4096, b = Buffer.alloc(1024 + 2 * n);
  b.writeInt32LE(20240520, 0); b.writeInt32LE(1, 4); b.writeInt32LE(n, 8);
  let x = 12345;
  for (let i = 0; i < n; ++i) { x = (x * 1103515245 + 12345) % 2147483648; b.writeUInt16LE((x >> 8) % 256, 1024 + 2 * i); }
  require("fs").writeFileSync(process.argv[1], b);' "$out/train_000000.bin"
cat >"$out/base.json" <<JSON
{
  "model": {"family": "gpt2", "n_layer": 1, "n_head": 2, "d_model": 16, "vocab_size": 256, "max_seq_len": 16},
  "data": {"train": "$out/train_*.bin", "val": "", "seq_len": 16, "micro_batch": 2},
  "optimizer": {"name": "adamw", "lr": 1e-2},
  "schedule": {"warmup_steps": 0},
  "train": {"steps": 6, "eval_every": 0, "checkpoint_every": 2, "keep_checkpoints": 0, "seed": 7},
  "kernels": {"threads": 1}
}
JSON
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1)
run() {  # NAME NP SETS...
  local name="$1" np="$2"; shift 2
  local tmp; tmp="$(mktemp -d)"
  local cmd=("$G" train -c "$out/base.json" --out "$tmp/run")
  for s in "$@"; do cmd+=(--set "$s"); done
  if [[ $np == 1 ]]; then "${cmd[@]}" >"$tmp/log" 2>&1; else "${mpi[@]}" -np "$np" "${cmd[@]}" >"$tmp/log" 2>&1; fi \
    || { cat "$tmp/log"; exit 1; }
  rm -rf "$out/$name"; mkdir -p "$out/$name"
  cp -r "$tmp/run/checkpoints/step_00000002" "$out/$name/"
  grep '"loss"' "$tmp/run/metrics.jsonl" | node -e '
    const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean).map(JSON.parse);
    for (const j of lines) if (j.step > 2) console.log(j.step, j.loss);' >"$out/$name/losses.txt"
  printf '%s\n' "$np" "$@" >"$out/$name/args.txt"
  rm -rf "$tmp"
}
run adamw 1
run adams-zero1 2 optimizer.name=adams parallel.zero_stage=1
run scape-a 2 optimizer.name=scape optimizer.sparsity=0.9 optimizer.dense_warmup_steps=1 parallel.zero_stage=1
run scape-b 2 optimizer.name=scape optimizer.sparsity=0.9 optimizer.dense_warmup_steps=1 optimizer.scape_reading=B parallel.zero_stage=1
echo "wrote $out"
