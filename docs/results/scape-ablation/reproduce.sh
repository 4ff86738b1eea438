#!/usr/bin/env bash
# Reproduces the SCAPE ablation table of docs/RESULTS.md ("Ablation: what moves SCAPE-99's gap").
# The variants are a throw-away prototype (prototype.patch, environment switches, world size 1
# only for reading B); the committed optimizer is unchanged. This script checks out the commit
# the patch was written against into a temporary worktree, applies the patch, builds, and runs
# every variant for STEPS steps (default 300) in one process. About 1.3 min per variant on 2 cores.
# Usage: docs/results/scape-ablation/reproduce.sh [OUT_DIR]
#   env STEPS=N, ONLY="name ...", EXTRA="key=value ..." (more overrides, e.g. train.seed=2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/scape-ablation}
steps=${STEPS:-300}
base=774f402
tree="$out/src"
mkdir -p "$out"
if [[ ! -x "$out/build/bin/gossamer" ]]; then
  rm -rf "$tree"
  git -C "$repo" worktree prune
  git -C "$repo" worktree add --detach "$tree" "$base" >/dev/null
  git -C "$tree" apply "$here/prototype.patch"
  cmake -S "$tree" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$out/build" gossamer >/dev/null
fi
bin="$out/build/bin/gossamer"

# name | environment | config overrides (besides the common ones below)
variants=(
  "adams||optimizer.name=adams"
  "a99-momentum||optimizer.name=scape optimizer.sparsity=0.99"
  "a90-momentum||optimizer.name=scape optimizer.sparsity=0.9"
  "a99-mr||optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-mr-per-tensor|SCAPE_PERTENSOR=1|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-m-per-tensor|SCAPE_PERTENSOR=1|optimizer.name=scape optimizer.sparsity=0.99"
  "a99-mr-average-only|SCAPE_CATCHUP=1|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-mr-catchup10|SCAPE_CATCHUP=10|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-mr-catchup100|SCAPE_CATCHUP=100|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-mr-catchup10-b1pow|SCAPE_CATCHUP=10 SCAPE_CATCHUP_M=1|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual"
  "a99-mr-refresh100||optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual optimizer.dense_refresh_every=100"
  "a99-mr-refresh25||optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual optimizer.dense_refresh_every=25"
  "a99-mr-catchup10-refresh50|SCAPE_CATCHUP=10|optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual optimizer.dense_refresh_every=50"
  "a99-mr-warmup100||optimizer.name=scape optimizer.sparsity=0.99 optimizer.mask_score=momentum_residual optimizer.dense_warmup_steps=100"
  "b99|SCAPE_B=1|optimizer.name=scape optimizer.sparsity=0.99"
  "b99-catchup10|SCAPE_B=1 SCAPE_CATCHUP=10|optimizer.name=scape optimizer.sparsity=0.99"
  "b99-catchup100|SCAPE_B=1 SCAPE_CATCHUP=100|optimizer.name=scape optimizer.sparsity=0.99"
)
printf '%-28s %10s\n' variant val_loss
for v in "${variants[@]}"; do
  IFS='|' read -r name envs sets <<<"$v"
  [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]] && continue
  args=()
  for kv in optimizer.lr=0.001 optimizer.dense_warmup_steps=50 train.steps=$steps \
            train.eval_every=$steps train.eval_batches=0 train.log_every=25 train.sample_every=0 \
            train.checkpoint_every=0 $sets ${EXTRA:-}; do
    args+=(--set "$kv")
  done
  run="$out/runs/$name"
  rm -rf "$run"
  (cd "$repo" && env $envs "$bin" train -c configs/quickstart.json --out "$run" "${args[@]}" \
     >"$out/$name.log" 2>&1) || { echo "$name: failed, see $out/$name.log" >&2; exit 1; }
  loss=$(grep -o '"val_loss":[0-9.]*' "$run/metrics.jsonl" | tail -1 | cut -d: -f2)
  printf '%-28s %10.4f\n' "$name" "$loss"
done
