# Shared by the launch scripts (sourced, not run): scripts/mpirun.sh and scripts/srun.sh take
# their argument syntax `N [LAUNCHER_OPTIONS... --] COMMAND [ARGS...]` from it, and they and the
# benchmark scripts (bench-parallel.sh, study-slow-link.sh) their malloc settings; tc's rate
# syntax is read here (rate_to_bits: emulate-network.sh; rate_mbit: the studies' --simulate).
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

# rate_to_bits RATE: bits per second of a tc rate with an explicit unit (integer), or fails.
rate_to_bits() {
  local r="${1,,}" num unit mult
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?i?)(bit|bps)$ ]] || return 1
  num="${BASH_REMATCH[1]}" unit="${BASH_REMATCH[3]}"
  case "$unit" in
    "") mult=1 ;; k) mult=1000 ;; m) mult=1000000 ;; g) mult=1000000000 ;; t) mult=1000000000000 ;;
    ki) mult=1024 ;; mi) mult=1048576 ;; gi) mult=1073741824 ;; ti) mult=1099511627776 ;;
    *) return 1 ;;
  esac
  [[ "${BASH_REMATCH[4]}" == bps ]] && mult=$((mult * 8))
  awk -v n="$num" -v m="$mult" 'BEGIN { printf "%.0f\n", n * m }'
}

# rate_mbit RATE: the same in Mbit/s (parallel.sim's unit), printed; fails on anything else.
rate_mbit() {
  local bits
  bits="$(rate_to_bits "$1")" || return 1
  awk -v b="$bits" 'BEGIN { printf "%.9g\n", b / 1e6 }'
}
