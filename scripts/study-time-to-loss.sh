#!/usr/bin/env bash
# Wall-clock to a validation loss under an emulated slow link (docs/RESULTS.md, issue 12): dense
# AdamW (ZeRO-1) and SCAPE on 4 ranks, each rank's egress capped by scripts/emulate-network.sh,
# both evaluated every few steps on the same validation tokens; prints, per method, the training
# time (the sum of the logged step times: evaluation excluded) until its validation loss first
# reaches the target, which defaults to SCAPE's final validation loss (a loss both reach).
# Needs root (network namespaces) and a quiet machine (the times are the result).
# Usage: scripts/study-time-to-loss.sh [--rate RATE] [--config FILE] [--adamw-steps N]
#          [--scape-steps N] [--eval-every N] [--target LOSS] [--adamw-set K=V]... [--scape-set K=V]...
# Defaults: 1gbit, configs/study-model.json, AdamW lr 2e-3 for 300 steps, SCAPE-99 (the
# defaults, lr 5e-4) for 500 steps, evaluation every 50 steps. GOSSAMER_BIN selects the binary
# (default build/bin/gossamer). Writes runs/study-time-to-loss/RATE-METHOD/.
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
rate=1gbit config=configs/study-model.json adamw_steps=300 scape_steps=500 eval_every=50 target=""
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

train() {  # METHOD STEPS SETS...
  local method="$1" steps="$2"; shift 2
  local dir="$out/$rate-$method"
  rm -rf "$dir"
  scripts/emulate-network.sh --rate "$rate" -- -np 4 -x OMP_NUM_THREADS=1 \
    -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" \
    "$bin" train "${common[@]}" --set train.steps="$steps" "$@" --out "$dir" >"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log"; exit 1; }
}
train scape "$scape_steps" --set optimizer.name=scape "${scape_sets[@]}"
train adamw "$adamw_steps" --set optimizer.name=adamw "${adamw_sets[@]}"

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, 4 ranks x 1 thread, link $rate per rank (emulated), $config"
echo "# AdamW: ${adamw_sets[*]}; SCAPE: ${scape_sets[*]}"
node scripts/time_to_loss_table.js "$target" "$out/$rate-scape:scape" "$out/$rate-adamw:adamw"
