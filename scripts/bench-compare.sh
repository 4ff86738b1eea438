#!/usr/bin/env bash
# Step time of two gossamer binaries side by side on every configs/bench/*.json: for each config,
# ROUNDS rounds of `gossamer bench -c CONFIG --steps STEPS` alternating A and B (so a drift of the
# machine hits both alike); each run reports its median step time; the table gives the median
# over rounds for A and B and the ratio A/B. Run it on a quiet machine (nothing else running).
# Usage: scripts/bench-compare.sh BINARY_A BINARY_B [ROUNDS (5)] [STEPS (20)]
set -euo pipefail
cd "$(dirname "$0")/.."
a="$1" b="$2" rounds="${3:-5}" steps="${4:-20}"
step_ms() {  # BINARY CONFIG: the median step time (ms) of one bench run (found by its header)
  "$1" bench -c "$2" --steps "$steps" 2>/dev/null | tail -n 3 | awk -F'|' '
    NR == 1 { for (i = 1; i <= NF; ++i) if ($i ~ /step ms/) col = i }
    NR == 3 { gsub(/ /, "", $col); print $col }'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $rounds rounds x $steps steps"
echo "# A: $a"
echo "# B: $b"
echo "| config | A step ms (median) | B step ms (median) | A / B | A runs | B runs |"
echo "|---|---|---|---|---|---|"
for cfg in configs/bench/*.json; do
  ra=() rb=()
  for ((i = 0; i < rounds; ++i)); do ra+=("$(step_ms "$a" "$cfg")"); rb+=("$(step_ms "$b" "$cfg")"); done
  ma="$(printf '%s\n' "${ra[@]}" | median)" mb="$(printf '%s\n' "${rb[@]}" | median)"
  printf '| %s | %s | %s | %.3f | %s | %s |\n' "$(basename "$cfg" .json)" "$ma" "$mb" \
    "$(awk -v x="$ma" -v y="$mb" 'BEGIN {print x / y}')" "${ra[*]}" "${rb[*]}"
done
