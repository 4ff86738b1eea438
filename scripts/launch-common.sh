# Shared by the launch scripts (sourced, not run): scripts/mpirun.sh and scripts/srun.sh take
# their argument syntax `N [LAUNCHER_OPTIONS... --] COMMAND [ARGS...]` from it, and they and the
# benchmark scripts (bench-parallel.sh, study-slow-link.sh) their malloc settings; the timed
# studies' --simulate options convert tc rates to parallel.sim's Mbit/s with rate_mbit.
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

# rate_mbit RATE: tc's rate syntax (100mbit, 1gbit, 512kbit, 1gibit, 12.5mbps in bytes/s) in
# Mbit/s, printed; fails (status 1) on anything else.
rate_mbit() {
  awk -v r="${1,,}" 'BEGIN {
    if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit 1
    n = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
    m["bit"] = 1e-6; m["kbit"] = 1e-3; m["mbit"] = 1; m["gbit"] = 1e3; m["kibit"] = 1.024e-3
    m["mibit"] = 1.048576; m["gibit"] = 1073.741824; m["bps"] = 8e-6; m["kbps"] = 8e-3
    m["mbps"] = 8; m["gbps"] = 8e3
    if (!(u in m)) exit 1
    printf "%.9g\n", n * m[u] }'
}
