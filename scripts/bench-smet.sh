#!/usr/bin/env bash
# Step time and peak resident memory of dense AdamW against dynamic sparse training (dst, smet;
# docs/SMET.md) at the same shapes: `gossamer bench` (synthetic tokens, one process) on the study
# model and on GPT-2 124M (T 64), each method in turn, ROUNDS rounds (medians over rounds are
# for the reader: each line is one run's median step). Run it on a quiet machine.
# Usage: scripts/bench-smet.sh [ROUNDS (3)] [STEPS (20)]    GOSSAMER_BIN selects the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}" steps="${2:-20}"
bin="${GOSSAMER_BIN:-build/bin/gossamer}"
methods=("adamw" "dst 0.5" "smet 0.5" "smet 0.25")
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $bin"
for config in configs/study-model.json configs/bench/gpt2-124m-t64.json; do
  n="$steps"
  [[ "$config" == *124m* ]] && n=$(( steps / 4 > 3 ? steps / 4 : 3 ))
  echo "## $config ($n timed steps after 2 untimed, per run)"
  header=1
  for ((r = 1; r <= rounds; ++r)); do
    for m in "${methods[@]}"; do
      read -r name density <<<"$m"
      sets=(--set optimizer.name="$name" --set parallel.zero_stage=0)
      [[ -n "${density:-}" ]] && sets+=(--set optimizer.dst.density="$density")
      out="$("$bin" bench -c "$config" "${sets[@]}" --steps "$n" --warmup 2 2>/dev/null)"
      if ((header)); then tail -n 3 <<<"$out" | head -n 2 | sed 's/^| model |/| density | model |/; s/^|---|/|---|---|/'; header=0; fi
      tail -n 1 <<<"$out" | sed "s/^|/| ${density:-1} |/"
    done
  done
done
