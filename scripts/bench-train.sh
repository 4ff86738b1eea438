#!/usr/bin/env bash
# Training throughput benchmark of the two reference shapes (docs/PERF.md), single process,
# both cores: (i) L=4 C=128 NH=4 T=64 B=4 V=50257 and (ii) GPT-2 124M with T=64 B=4.
# Each row is the median of the timed steps after warm-up; MFU is against the best sgemm rate
# measured in the same process. Usage: scripts/bench-train.sh [STEPS] (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-20}"
bash scripts/build.sh >/dev/null
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
for cfg in configs/bench/gpt2-l4-c128.json configs/bench/gpt2-124m-t64.json; do
  echo "## $cfg"
  for gemm in auto onednn openblas; do
    build/bin/gossamer bench -c "$cfg" --steps "$steps" --set kernels.gemm=$gemm 2>/dev/null | tail -1
  done
done
