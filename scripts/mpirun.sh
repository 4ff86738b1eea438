#!/usr/bin/env bash
# Launch helper: `scripts/mpirun.sh N COMMAND...` runs COMMAND on N ranks of this machine with
# the Open MPI settings measured to be quiet and fast here (docs/COMM.md):
#   --bind-to none                  let OpenMP threads use every core given to the rank
#   --mca btl self,vader            shared memory between local ranks
#   --oversubscribe                 more ranks than cores is allowed (tests, small machines)
#   --allow-run-as-root             when run as root (containers, CI)
#   -x GLIBC_TUNABLES=...           malloc keeps big buffers (a 64 MB all-reduce went from
#                                   350 ms to 15 ms on these VMs: no page faults per call)
#   -x OMP_NUM_THREADS              cores / N unless already set
# Extra mpirun options go before COMMAND after a `--`: scripts/mpirun.sh 4 --mca ... -- CMD...
# For several machines use mpirun or srun directly (docs/COMM.md, "Launching").
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
launch_parse_args "scripts/mpirun.sh N [MPIRUN_OPTIONS... --] COMMAND [ARGS...]" "$@"
command -v mpirun >/dev/null || { echo "scripts/mpirun.sh: mpirun not found (run scripts/install-deps.sh)" >&2; exit 1; }
cores="$(nproc)"
threads="${OMP_NUM_THREADS:-$(( cores / np > 0 ? cores / np : 1 ))}"
root=()
[[ "$(id -u)" == 0 ]] && root=(--allow-run-as-root)
exec mpirun "${root[@]}" --oversubscribe --bind-to none --mca btl self,vader \
  -x GLIBC_TUNABLES="$LAUNCH_GLIBC_TUNABLES" -x OMP_NUM_THREADS="$threads" -np "$np" \
  "${extra[@]}" "${cmd[@]}"
