#!/usr/bin/env bash
# Wall-clock to a validation loss under an emulated slow link (docs/RESULTS.md, issue 12): dense
# AdamW (ZeRO-1) and SCAPE on 4 ranks, each rank's egress capped by scripts/emulate-network.sh,
# both evaluated every few steps on the same validation tokens; prints, per method, the training
# time (the sum of the logged step times: evaluation excluded) until its validation loss first
# reaches the target, which defaults to SCAPE's final validation loss (a loss both reach).
# Needs root (network namespaces) and a quiet machine (the times are the result).
# --simulate SCALE runs the same trainings as 4 ranks in one process with simulated time instead
# (parallel.sim: a uniform network at RATE, compute = thread CPU time x SCALE; SCALE = ranks /
# cores reproduces 4 ranks sharing this machine's cores, as the emulated runs do): no root, and
# the times do not depend on a quiet machine (docs/NETWORK.md, "Simulated time").
# Usage: scripts/study-time-to-loss.sh [--rate RATE] [--config FILE] [--adamw-steps N]
#          [--scape-steps N] [--eval-every N] [--target LOSS] [--simulate SCALE]
#          [--adamw-set K=V]... [--scape-set K=V]...
# Defaults: 1gbit, configs/study-model.json, AdamW lr 2e-3 for 300 steps, SCAPE-99 (the
# defaults, lr 5e-4) for 500 steps, evaluation every 50 steps. GOSSAMER_BIN selects the binary
# (default build/bin/gossamer). Writes runs/study-time-to-loss/RATE-METHOD/ (RATE-sim-METHOD/
# with --simulate).
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
rate=1gbit config=configs/study-model.json adamw_steps=300 scape_steps=500 eval_every=50 target=""
simulate=""
adamw_sets=(--set optimizer.lr=0.002)
scape_sets=(--set optimizer.lr=0.0005 --set optimizer.scape.sparsity=0.99)
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "study-time-to-loss.sh: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --rate) rate="$2" ;;
    --config) config="$2" ;;
    --adamw-steps) adamw_steps="$2" ;;
    --scape-steps) scape_steps="$2" ;;
    --eval-every) eval_every="$2" ;;
    --target) target="$2" ;;
    --simulate) simulate="$2" ;;
    --adamw-set) adamw_sets+=(--set "$2") ;;
    --scape-set) scape_sets+=(--set "$2") ;;
    *) echo "study-time-to-loss.sh: unknown option $1 (see the header of this script)" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -f "$config" ]] || { echo "study-time-to-loss.sh: config $config not found" >&2; exit 2; }
bin="${GOSSAMER_BIN:-build/bin/gossamer}"
out=runs/study-time-to-loss
mkdir -p "$out"
common=(-c "$config" --set train.eval_every="$eval_every" --set train.eval_batches=64
        --set train.sample_every=0 --set train.checkpoint_every=0 --set train.log_every=25
        --set parallel.zero_stage=1)

tag="$rate" how="emulated"
if [[ -n "$simulate" ]]; then
  mbit=$(rate_mbit "$rate") \
    || { echo "study-time-to-loss.sh: --rate $rate: not a rate (e.g. 200mbit, 1gbit)" >&2; exit 2; }
  tag="$rate-sim" how="simulated, compute x $simulate"
fi

train() {  # METHOD STEPS SETS...
  local method="$1" steps="$2"; shift 2
  local dir="$out/$tag-$method"
  rm -rf "$dir"
  if [[ -n "$simulate" ]]; then
    GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" "$bin" train "${common[@]}" --ranks 4 \
      --set parallel.sim.network=uniform --set parallel.sim.bandwidth_mbit="$mbit" \
      --set parallel.sim.compute_scale="$simulate" --set train.steps="$steps" "$@" \
      --out "$dir" >"$dir.log" 2>&1 || { tail -n 20 "$dir.log"; exit 1; }
    return
  fi
  scripts/emulate-network.sh --rate "$rate" -- -np 4 -x OMP_NUM_THREADS=1 \
    -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" \
    "$bin" train "${common[@]}" --set train.steps="$steps" "$@" --out "$dir" >"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log"; exit 1; }
}
train scape "$scape_steps" --set optimizer.name=scape "${scape_sets[@]}"
train adamw "$adamw_steps" --set optimizer.name=adamw "${adamw_sets[@]}"

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, 4 ranks x 1 thread, link $rate per rank ($how), $config"
echo "# AdamW: ${adamw_sets[*]}; SCAPE: ${scape_sets[*]}"
node scripts/time_to_loss_table.js "$target" "$out/$tag-scape:scape" "$out/$tag-adamw:adamw"
