#!/usr/bin/env bash
# Data-parallel step time split (docs/PERF.md, "Data-parallel training"): GPT-2 124M, T=64,
# micro-batch 4 per rank, on 2 ranks of this machine, replicated and ZeRO-1, with and without
# overlapping the gradient buckets with backward, over shared memory and over an emulated
# 1 Gbit/s link per rank (scripts/emulate-network.sh; needs root). Each row is `gossamer bench`
# on every rank (median of the timed steps; "comm wait" is the exposed communication).
# Usage: scripts/bench-parallel.sh [STEPS] [CONFIG] (default 4, configs/bench/gpt2-124m-t64.json)
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
steps="${1:-4}"
cfg="${2:-configs/bench/gpt2-124m-t64.json}"
bash scripts/build.sh >/dev/null
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, 2 ranks x $(( $(nproc) / 2 )) thread(s)"
header=1
row() {  # LINK ZERO OVERLAP
  local link="$1" zero="$2" overlap="$3" out
  local args=(build/bin/gossamer bench -c "$cfg" --steps "$steps" --warmup 1
              --set parallel.zero_stage="$zero" --set parallel.overlap="$overlap" --set parallel.bucket_mb=25)
  if [[ "$link" == shm ]]; then
    out="$(scripts/mpirun.sh 2 "${args[@]}" 2>/dev/null)"
  else
    out="$(scripts/emulate-network.sh --rate "$link" -- -np 2 -x OMP_NUM_THREADS=$(( $(nproc) / 2 )) \
      -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" \
      "${args[@]}" 2>/dev/null)"
  fi
  if [[ $header == 1 ]]; then
    echo "| link $(grep '^| model' <<<"$out")"
    echo "|---$(grep '^|---' <<<"$out")"
    header=0
  fi
  echo "| $link $(grep '^| L' <<<"$out")"
}
for link in shm 1gbit; do
  for zero in 0 1; do
    for overlap in true false; do row "$link" "$zero" "$overlap"; done
  done
done
