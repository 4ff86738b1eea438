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
if [[ $# -lt 2 || ! "$1" =~ ^[0-9]+$ || "$1" -lt 1 ]]; then
  echo "usage: scripts/mpirun.sh N [MPIRUN_OPTIONS... --] COMMAND [ARGS...]" >&2
  exit 2
fi
np="$1"; shift
extra=()
if printf '%s\n' "$@" | grep -qx -- '--'; then
  while [[ "$1" != "--" ]]; do extra+=("$1"); shift; done
  shift
fi
command -v mpirun >/dev/null || { echo "scripts/mpirun.sh: mpirun not found (run scripts/install-deps.sh)" >&2; exit 1; }
cores="$(nproc)"
threads="${OMP_NUM_THREADS:-$(( cores / np > 0 ? cores / np : 1 ))}"
root=()
[[ "$(id -u)" == 0 ]] && root=(--allow-run-as-root)
exec mpirun "${root[@]}" --oversubscribe --bind-to none --mca btl self,vader \
  -x GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=2147483647 \
  -x OMP_NUM_THREADS="$threads" -np "$np" "${extra[@]}" "$@"
