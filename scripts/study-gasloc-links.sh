#!/usr/bin/env bash
# Wall-clock to a validation loss with one slow link or one slow worker (docs/RESULTS.md, issue
# 14): DiLoCo and GASLoC (one_peer; mode mixed_nesterov as recorded, or --gasloc-mode) on 4 ranks of the study model, the same
# local steps, every rank's egress capped by scripts/emulate-network.sh at RATE except one
# rank's at SLOW_RATE (default 10x lower), or with --slow-worker MS that rank sleeping MS before
# each step it computes (GOSSAMER_FAULT=delay). Prints, per method, the training time (the sum
# of rank 0's logged step times, evaluation excluded; evaluations synchronise the ranks) until
# its validation loss first reaches DiLoCo's final one. Needs root and a quiet machine.
# --simulate SCALE runs the same trainings as 4 ranks in one process with simulated time
# (parallel.sim: network slow_rank, or uniform with --slow-worker; compute = thread CPU time x
# SCALE, where ranks / cores reproduces 4 ranks sharing this machine's cores): no root, no quiet
# machine needed (docs/NETWORK.md, "Simulated time").
# Usage: scripts/study-gasloc-links.sh [--rate RATE] [--slow-rate RATE] [--slow-rank R]
#          [--slow-worker MS] [--local-steps H] [--gasloc-local-steps H|LIST] [--diloco-steps N]
#          [--gasloc-steps N] [--eval-every N] [--skip-diloco 1] [--simulate SCALE]
#          [--gasloc-mode MODE] [--set K=V]...
# Defaults: 1gbit, 100mbit on rank 3, H 20, 400 steps each, evaluation every 100 steps, inner
# lr 2e-3. --gasloc-local-steps gives GASLoC its own H or per-rank list (e.g. [20,20,20,13] for
# a slow rank 3; the run directory is then named gasloc-LIST); --skip-diloco 1 reuses the DiLoCo
# run of the same conditions. GOSSAMER_BIN selects the binary (default build/bin/gossamer).
# Writes runs/study-gasloc-links/TAG-METHOD/ (TAG-sim-METHOD/ with --simulate).
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
rate=1gbit slow_rate=100mbit slow_rank=3 slow_worker=0 h=20 diloco_steps=400 gasloc_steps=400
eval_every=100 gasloc_h="" skip_diloco=0 simulate=""
gasloc_mode=mixed_nesterov  # the mode of the recorded study (RESULTS.md, issue 14)
sets=(--set optimizer.lr=0.002)
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "study-gasloc-links.sh: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --rate) rate="$2" ;;
    --slow-rate) slow_rate="$2" ;;
    --slow-rank) slow_rank="$2" ;;
    --slow-worker) slow_worker="$2" ;;
    --local-steps) h="$2" ;;
    --gasloc-local-steps) gasloc_h="$2" ;;
    --gasloc-mode) gasloc_mode="$2" ;;
    --skip-diloco) skip_diloco="$2" ;;
    --simulate) simulate="$2" ;;
    --diloco-steps) diloco_steps="$2" ;;
    --gasloc-steps) gasloc_steps="$2" ;;
    --eval-every) eval_every="$2" ;;
    --set) sets+=(--set "$2") ;;
    *) echo "study-gasloc-links.sh: unknown option $1 (see the header of this script)" >&2; exit 2 ;;
  esac
  shift 2
done
bin="${GOSSAMER_BIN:-build/bin/gossamer}"
if [[ "$slow_worker" != 0 ]]; then
  tag="worker$slow_rank-${slow_worker}ms"
  export GOSSAMER_FAULT="delay:$slow_rank:1:$slow_worker:0"
  links=(--rate "$rate")
else
  tag="$rate-rank$slow_rank-$slow_rate"
  links=(--rate "$rate" --rate-rank "$slow_rank=$slow_rate")
fi
out=runs/study-gasloc-links
mkdir -p "$out"
common=(-c configs/study-model.json --set train.eval_every="$eval_every" --set train.eval_batches=16
        --set train.sample_every=0 --set train.checkpoint_every=0 --set train.log_every="$eval_every")

if [[ -n "$simulate" ]]; then
  fast=$(rate_mbit "$rate") || { echo "study-gasloc-links.sh: --rate $rate: not a rate" >&2; exit 2; }
  slow=$(rate_mbit "$slow_rate") || { echo "study-gasloc-links.sh: --slow-rate $slow_rate: not a rate" >&2; exit 2; }
  if [[ "$slow_worker" != 0 ]]; then
    sim=(--set parallel.sim.network=uniform)
  else
    sim=(--set parallel.sim.network=slow_rank --set parallel.sim.slow_rank="$slow_rank"
         --set parallel.sim.slow_bandwidth_mbit="$slow")
  fi
  sim+=(--set parallel.sim.bandwidth_mbit="$fast" --set parallel.sim.compute_scale="$simulate")
  tag="$tag-sim"
fi

train() {  # METHOD STEPS SETS...
  local method="$1" steps="$2"; shift 2
  local dir="$out/$tag-$method"
  rm -rf "$dir"
  if [[ -n "$simulate" ]]; then
    GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" "$bin" train "${common[@]}" --ranks 4 "${sim[@]}" \
      --set train.steps="$steps" "$@" --out "$dir" >"$dir.log" 2>&1 \
      || { tail -n 20 "$dir.log"; exit 1; }
    return
  fi
  scripts/emulate-network.sh "${links[@]}" -- -np 4 -x OMP_NUM_THREADS=1 \
    -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" ${GOSSAMER_FAULT:+-x GOSSAMER_FAULT} \
    "$bin" train "${common[@]}" --set train.steps="$steps" "$@" --out "$dir" >"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log"; exit 1; }
}
gasloc="gasloc${gasloc_h:+-$gasloc_h}"
[[ "$skip_diloco" == 1 ]] || \
  train diloco "$diloco_steps" --set optimizer.name=diloco --set optimizer.diloco.local_steps="$h" "${sets[@]}"
train "$gasloc" "$gasloc_steps" --set optimizer.name=gasloc --set optimizer.gasloc.mode="$gasloc_mode" \
  --set optimizer.gasloc.local_steps="${gasloc_h:-$h}" --set optimizer.gasloc.topology=one_peer "${sets[@]}"

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, 4 ranks x 1 thread, $tag (links: ${links[*]}), H $h"
node scripts/time_to_loss_table.js "" "$out/$tag-diloco:diloco" "$out/$tag-$gasloc:$gasloc"
