# Shared by the launch scripts (sourced, not run): scripts/mpirun.sh and scripts/srun.sh take
# their argument syntax `N [LAUNCHER_OPTIONS... --] COMMAND [ARGS...]` from it, and they and the
# benchmark scripts (bench-parallel.sh, study-slow-link.sh) their malloc settings.
# After `launch_parse_args USAGE "$@"`: $np is N, ${extra[@]} the launcher options and
# ${cmd[@]} the command; a bad N or no command prints "usage: USAGE" and exits 2.

# malloc keeps big buffers mapped: a 64 MB all-reduce went from 350 ms to 15 ms on the CI VMs.
LAUNCH_GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=2147483647

launch_parse_args() {
  local usage="$1"; shift
  if [[ $# -lt 2 || ! "$1" =~ ^[0-9]+$ || "$1" -lt 1 ]]; then
    echo "usage: $usage" >&2
    exit 2
  fi
  np="$1"; shift
  extra=()
  if printf '%s\n' "$@" | grep -qx -- '--'; then
    while [[ "$1" != "--" ]]; do extra+=("$1"); shift; done
    shift
  fi
  cmd=("$@")
}
