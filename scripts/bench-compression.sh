#!/usr/bin/env bash
# Measures the zip decorator (docs/PERF.md, "Compressed collectives") on one machine, every rank
# behind an emulated 1 Gbit/s link (scripts/emulate-network.sh, tc tbf) unless stated:
#   1. `gossamer bench comm` at 2 and 4 ranks, fp32 and bf16, 16-64 MB, all-reduce /
#      reduce-scatter / all-gather, --compression off (Open MPI's collectives), plain (the
#      decorator's own uncompressed algorithms) and on;
#   2. `gossamer bench` training steps of the study model (configs/study-model.json) with
#      parallel.comm_dtype bf16 at 2 and 4 ranks, compression off vs adaptive, under the emulated
#      link and on shared memory (where adaptive must bypass).
# Every cell runs REPEATS times (environment, default 3); the summary printed last gives each
# cell's median. Needs root (network namespaces). Benchmark on a quiet machine. Writes
# OUT_DIR/*-runN.txt; a result file that exists is kept (delete it to measure again), so an
# interrupted run resumes.
#   scripts/bench-compression.sh [BUILD_DIR (build)] [OUT_DIR (runs/bench-compression)]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-runs/bench-compression}"
G="$build/bin/gossamer"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The launchers' malloc settings (scripts/mpirun.sh): without them the start-up probes of
# adaptive (freed buffers of several MB) moved glibc's dynamic mmap threshold and made the
# training step that followed 2-3% slower than off on shared memory, with no collective changed.
source scripts/launch-common.sh

emulated() {  # NP ARGS...: gossamer ARGS under the emulated 1 Gbit/s link
  local np="$1"; shift
  bash scripts/emulate-network.sh --rate 1gbit -- -np "$np" -x OMP_NUM_THREADS=1 \
    -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" "$G" "$@"
}
shared() {  # NP ARGS...: gossamer ARGS over shared memory
  local np="$1"; shift
  mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1 \
    -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" "$G" "$@"
}

# fp32 at 4 ranks: the uncompressed baseline; bf16 at 4 and 2 ranks: compression.
repeats="${REPEATS:-3}"
for rep in $(seq 1 "$repeats"); do
for run in 4:bf16:off 4:bf16:plain 4:bf16:on 4:fp32:off 4:fp32:plain 2:bf16:off 2:bf16:plain \
           2:bf16:on; do
  IFS=: read -r np dtype mode <<<"$run"
  f="$out/comm-np$np-$dtype-$mode-run$rep.txt"
  [[ -s "$f" ]] && { echo "== kept $f"; continue; }  # complete: written as .part, then moved
  echo "== bench comm: $np ranks, $dtype, compression $mode -> $f"
  emulated "$np" bench comm --compression "$mode" --dtype "$dtype" \
    --ops all_reduce,reduce_scatter,all_gather --min-bytes 16777216 --max-bytes 67108864 \
    --step-factor 4 --iters 3 --warmup 1 >"$f.part" 2>&1
  mv "$f.part" "$f"
  grep -E '^ +[0-9]' "$f" || true
done

# Training steps, off and adaptive in turn; on shared memory three pairs per repeat (its 2% bound
# is below one run's spread), the order of each pair alternating.
step=(bench -c configs/study-model.json --steps 8 --warmup 2 --set parallel.comm_dtype=bf16)
for run in 4:emulated:1 2:emulated:1 4:shared:1 4:shared:2 4:shared:3; do
  IFS=: read -r np where k <<<"$run"
  per=1 modes="off adaptive"
  [[ $where == shared ]] && per=3
  n=$(( (rep - 1) * per + k ))
  if [[ $where == shared ]] && (( n % 2 == 0 )); then modes="adaptive off"; fi
  for mode in $modes; do
    f="$out/step-np$np-$where-$mode-run$n.txt"
    [[ -s "$f" ]] && { echo "== kept $f"; continue; }
    echo "== training step: $np ranks, $where, compression $mode -> $f"
    "$where" "$np" "${step[@]}" --set "parallel.compression=$mode" >"$f.part" 2>&1
    mv "$f.part" "$f"
    grep -E '^\|' "$f" | tail -n 1 || true
  done
done
done  # repeats

echo "== medians over $repeats run(s) (scripts/summarize-compression.py $out)"
python3 scripts/summarize-compression.py "$out"
