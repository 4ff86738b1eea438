#!/usr/bin/env bash
# Slurm launch helper: `scripts/srun.sh N COMMAND...` runs COMMAND as N tasks of one srun step
# (direct launch: Slurm starts every rank, no mpirun) with the settings gossamer needs:
#   --mpi=pmix              Open MPI finds its peers through Slurm's PMIx server; Debian's Open
#                           MPI has no PMI-1/PMI-2 client, and Slurm's own default is --mpi=none
#   --kill-on-bad-exit=1    one rank failing ends the step instead of leaving its peers waiting
#   --cpu-bind=none         each rank sees the node's allocated cores and takes its share of
#                           them for OpenMP (as mpirun.sh's --bind-to none); left out where
#                           the cluster binds nothing anyway (TaskPlugin=task/none)
#   GLIBC_TUNABLES=...      the malloc settings of scripts/mpirun.sh (unless already set)
# Extra srun options go before COMMAND after a `--`: scripts/srun.sh 4 -N 2 -p gpu -- CMD...;
# they come after ours, so e.g. --cpu-bind=cores overrides. Without SLURM_CONF set, the local
# test cluster of scripts/slurm-local.sh is used when it runs. Docs: docs/COMM.md, "Launching".
set -euo pipefail
source "$(dirname "$0")/launch-common.sh"
launch_parse_args "scripts/srun.sh N [SRUN_OPTIONS... --] COMMAND [ARGS...]" "$@"
command -v srun >/dev/null || { echo "scripts/srun.sh: srun not found (not a Slurm machine? scripts/slurm-local.sh start sets up a local one)" >&2; exit 1; }
local_conf="${GOSSAMER_SLURM_DIR:-/tmp/gossamer-slurm}/slurm.conf"
if [[ -z "${SLURM_CONF:-}" && ! -e /etc/slurm/slurm.conf && -f "$local_conf" ]]; then
  export SLURM_CONF="$local_conf"
fi
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-$LAUNCH_GLIBC_TUNABLES}"
bind=(--cpu-bind=none)  # srun warns about it on clusters that cannot bind (task/none)
task_plugin="$(scontrol show config 2>/dev/null | grep -E '^TaskPlugin ' || true)"
[[ "$task_plugin" == *task/none* ]] && bind=()
exec srun --mpi=pmix --kill-on-bad-exit=1 "${bind[@]}" -n "$np" "${extra[@]}" "${cmd[@]}"
