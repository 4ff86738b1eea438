#!/usr/bin/env bash
# Launch modes side by side (docs/PERF.md, "Ranks in one process"): the median step time of
# `gossamer train` at N ranks of CONFIG launched three ways: mpirun with MPI's own sums
# (parallel.sum_order = backend), mpirun with the fixed-order sums (the default), and threads of
# one process (--ranks N). One thread per rank unless N < cores; REPS runs of each, interleaved;
# the median over every run's steps after the first WARMUP. Run it on a quiet machine.
# Usage: scripts/bench-launch-modes.sh [N] [STEPS] [REPS] [CONFIG] [--set KEY=VALUE ...]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-4}"; steps="${2:-40}"; reps="${3:-2}"; cfg="${4:-configs/test/gpt2-tiny-v512.json}"
shift $(( $# < 4 ? $# : 4 ))
warmup=5
bash scripts/build.sh >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
threads=$(( $(nproc) / n > 0 ? $(nproc) / n : 1 ))
G=build/bin/gossamer
args=(train -c "$cfg" --set train.steps="$steps" --set train.eval_every=0
      --set train.checkpoint_every=0 --set train.log_every=1 "$@")
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores;" \
     "$cfg at $n ranks, $steps steps x $reps runs, median of steps $((warmup + 1))-$steps"
run() {  # MODE REP
  local out="$work/$1-$2"
  case "$1" in
    mpi-backend) OMP_NUM_THREADS=$threads scripts/mpirun.sh "$n" "$G" "${args[@]}" \
                   --set parallel.sum_order=backend --out "$out" ;;
    mpi-fixed) OMP_NUM_THREADS=$threads scripts/mpirun.sh "$n" "$G" "${args[@]}" --out "$out" ;;
    ranks) "$G" "${args[@]}" --ranks "$n" --out "$out" ;;
  esac >"$out.log" 2>&1 || { tail -n 5 "$out.log" >&2; exit 1; }
}
modes=(mpi-backend mpi-fixed ranks)
for rep in $(seq "$reps"); do
  for mode in "${modes[@]}"; do run "$mode" "$rep"; done
done
python3 - "$work" "$warmup" "${modes[@]}" <<'EOF'
import glob, json, statistics, sys
work, warmup, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def steps(mode):
    t = []
    for f in sorted(glob.glob(f"{work}/{mode}-*/metrics.jsonl")):
        for line in open(f):
            r = json.loads(line)
            if "time_s" in r and r.get("step", 0) > warmup:
                t.append(1e3 * r["time_s"]["total"])
    return t
base = statistics.median(steps("mpi-fixed"))
print("| launch | median step (ms) | vs mpirun, fixed order |")
print("|---|---|---|")
for m in modes:
    med = statistics.median(steps(m))
    print(f"| {m} | {med:.1f} | {med / base:.3f} |")
EOF
