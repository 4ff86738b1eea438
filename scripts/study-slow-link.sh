#!/usr/bin/env bash
# The SCAPE study's wall-clock part (docs/RESULTS.md): the study's model and batch on 4 ranks,
# each rank's egress capped by scripts/emulate-network.sh, dense AdamW (ZeRO-1) against
# SCAPE-99, and the median step time over the sparse steps with its exposed-communication
# share. Needs root (network namespaces).
# Usage: scripts/study-slow-link.sh [--config FILE] [--set KEY=VALUE]... [RATE...]
# (default rates: 200mbit 1gbit; default config: configs/quickstart.json at 2 sequences per rank,
# the first study's setting; --config runs that config's own batch, e.g. configs/study-model.json;
# --set applies to SCAPE-99's run, e.g. its switches). GOSSAMER_BIN selects the binary (default
# build/bin/gossamer). Writes runs/study-slow-link/NAME-RATE-METHOD/ and prints a table.
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
cd "$(dirname "$0")/.."
config=configs/quickstart.json
config_args=(--set data.micro_batch=2)
scape_sets=()
rates=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config="$2"; config_args=(); shift 2 ;;
    --set) scape_sets+=(--set "$2"); shift 2 ;;
    -*) echo "study-slow-link.sh: unknown option $1 (usage: [--config FILE] [--set K=V]... [RATE...])" >&2; exit 2 ;;
    *) rates+=("$1"); shift ;;
  esac
done
[[ -f "$config" ]] || { echo "study-slow-link.sh: config $config not found" >&2; exit 2; }
[[ ${#rates[@]} -gt 0 ]] || rates=(200mbit 1gbit)
name="$(basename "$config" .json)"
bin="${GOSSAMER_BIN:-build/bin/gossamer}"
out=runs/study-slow-link
mkdir -p "$out"
common=(-c "$config" "${config_args[@]}" --set train.steps=40
        --set train.eval_every=0 --set train.sample_every=0 --set train.checkpoint_every=0
        --set train.log_every=10 --set parallel.zero_stage=1)
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, 4 ranks x 1 thread, $config ${config_args[*]} ${scape_sets[*]}; medians over steps 16-40"
echo "| link (per-rank egress, emulated) | method | step time (median) | exposed comm (median) | share of step | bytes sent per step | speed-up vs AdamW |"
echo "|---|---|---|---|---|---|---|"
for rate in "${rates[@]}"; do
  base=""
  for method in adamw scape99; do
    args=(--set optimizer.name=adamw)
    [[ $method == scape99 ]] && args=(--set optimizer.name=scape --set optimizer.scape.dense_warmup_steps=10
                                    --set optimizer.scape.sparsity=0.99 --set optimizer.scape.mask_score=momentum_residual
                                    "${scape_sets[@]}")
    dir="$out/$name-$rate-$method"
    rm -rf "$dir"
    scripts/emulate-network.sh --rate "$rate" -- -np 4 -x OMP_NUM_THREADS=1 \
      -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" \
      "$bin" train "${common[@]}" "${args[@]}" --out "$dir" >"$dir.log" 2>&1 \
      || { tail -n 20 "$dir.log"; exit 1; }
    row="$(node -e '
      const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j && j.step > 15);
      const med = (v) => { v = v.slice().sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
      const t = med(lines.map((j) => j.time_s.total)), w = med(lines.map((j) => j.time_s.comm_wait));
      console.log([t, w, med(lines.map((j) => j.bytes_sent))].join(" "));' "$dir/metrics.jsonl")"
    read -r t w b <<<"$row"
    [[ -z "$base" ]] && base="$t"
    node -e "const [t, w, b, base] = process.argv.slice(1).map(Number);
      console.log('| $rate | $method | ' + (1e3 * t).toFixed(0) + ' ms | ' + (1e3 * w).toFixed(0) + ' ms | ' + (100 * w / t).toFixed(0) + '% | ' + (b / 1e6).toFixed(2) + ' MB | ' + (base / t).toFixed(2) + 'x |')" "$t" "$w" "$b" "$base"
  done
done
