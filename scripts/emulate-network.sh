#!/usr/bin/env bash
# Slow-link emulation on one machine: runs an mpirun job with every rank in its own Linux network
# namespace, all namespaces joined by a bridge through veth pairs, and each rank's egress capped
# by a tc token-bucket filter (tbf) on its interface. mpirun stays in the root namespace (the
# bridge has an address in the job's subnet); each rank is started through a fork agent that
# execs the real program inside `ip netns exec` for OMPI_COMM_WORLD_RANK. MPI is forced onto
# TCP over the emulated links (no shared memory). Everything created is named after this
# script's PID and removed on exit, failure, Ctrl-C and SIGTERM. Exit status: mpirun's, 128+N
# after signal N, 2 for bad arguments, 1 when the emulated network cannot be set up.
# Only bandwidth is emulated: latency, jitter and loss need netem, which is not available here.
# See docs/NETWORK.md.
# shellcheck disable=SC2317  # cleanup and on_signal are reached through traps
set -euo pipefail

PROG=emulate-network
usage() {
  cat <<'EOF'
Usage: scripts/emulate-network.sh --rate RATE [--rate-rank R=RATE ...] [--np N] [options]
                                  -- MPIRUN_ARGS...

Runs `mpirun MPIRUN_ARGS...` with every rank in its own network namespace, ranks joined by a
bridge, and each rank's egress (what it sends) capped at RATE with tc tbf. Needs root, ip, tc,
mpirun. Everything it creates (namespaces, veths, bridge, qdiscs) is removed when it exits.

  --rate RATE          egress cap of every rank, as tc writes rates: 10mbit, 100mbit, 1gbit,
                       10gbit, 12.5mbps (bytes/s), 512kbit, 1gibit (binary prefixes)...
  --rate-rank R=RATE   overrides the cap of rank R (repeatable), e.g. --rate-rank 3=100mbit
                       for one rank 10x slower than --rate 1gbit
  --np N               number of ranks; added to mpirun as -np N when MPIRUN_ARGS has no
                       -np/-n/--np/-c (if it has one, it must agree)
  --burst BYTES        tbf bucket size (default: max(64 KiB, 1 ms at RATE), see docs/NETWORK.md)
  --queue TIME         tbf queue length as time at the rank's rate, at least 512 KiB
                       (default 50ms)
  --subnet A.B.C.0/24  the job's IPv4 subnet (default: a free /24 in 10.213.0.0/16,
                       172.29.0.0/16 or 192.168.213.0/24, checked against every route here)
  --cleanup-stale      remove namespaces/links left by runs that were killed with SIGKILL
                       (their PID no longer exists), then exit
  -h, --help           this text

Not emulated: latency, jitter, packet loss, reordering. They need the netem qdisc (sch_netem),
which this kernel does not have; --latency, --delay and --loss are refused for that reason.
Ingress is not capped separately: rank A's traffic to rank B is limited by A's egress cap only.

MPI settings added (do not override them in MPIRUN_ARGS): --allow-run-as-root --oversubscribe
--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include SUBNET --mca oob_tcp_if_include
SUBNET --mca osc ^sm,ucx --mca orte_fork_agent WRAPPER, and in the environment
PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=SUBNET.
All ranks run on this machine: -H/--host/--hostfile are refused.

Example:
  scripts/emulate-network.sh --rate 1gbit --rate-rank 3=100mbit -- -np 4 build/bin/gossamer \
      train -c configs/quickstart.json --out runs/slow
EOF
}

usage_error() {
  echo "$PROG: $*" >&2
  echo "Usage: scripts/emulate-network.sh --rate RATE [--rate-rank R=RATE ...] [--np N] [options] -- MPIRUN_ARGS... (--help: details)" >&2
  exit 2
}
die() {
  echo "$PROG: error: $*" >&2
  exit 1
}

# ---- rates ---------------------------------------------------------------------------------
# rate_to_bits (tc's rate syntax in bits per second) comes from launch-common.sh.
source "$(dirname "$0")/launch-common.sh"
check_rate() {  # WHAT RATE: validates RATE, usage error naming WHAT otherwise.
  local bits
  bits="$(rate_to_bits "$2")" || usage_error "$1: '$2' is not a rate: expected a number with a unit, e.g. 100mbit, 1gbit, 12.5mbps"
  ((bits >= 1000000)) || usage_error "$1: '$2' is below 1mbit"
  ((bits <= 100000000000)) || usage_error "$1: '$2' is above 100gbit"
}

# ---- stale resources -------------------------------------------------------------------------
# Every run names its namespaces gsnet-<pid>-r<rank> and its links gs<pid>br / gs<pid>h<rank>.
remove_run_resources() {  # PID: removes what the run with that PID created (best effort).
  local id="$1" ns pids link
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^gsnet-$id-r[0-9]+$" || true); do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [[ -z "$pids" ]] || kill -KILL $pids 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
    grep -E "^gs${id}(br|h[0-9]+)$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^gsnet-$id-r[0-9]+$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}
# IDs (PIDs) of runs that left something behind and whose script is no longer running.
stale_ids() {
  local id
  for id in $( { ip netns list 2>/dev/null | awk '{print $1}' | sed -nE 's/^gsnet-([0-9]+)-r[0-9]+$/\1/p'
                 ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
                   sed -nE 's/^gs([0-9]+)(br|h[0-9]+)$/\1/p'
                 find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'gossamer-netemu-*.*' -printf '%f\n' 2>/dev/null |
                   sed -nE 's/^gossamer-netemu-([0-9]+)\..*$/\1/p'; } | sort -u); do
    if kill -0 "$id" 2>/dev/null && grep -q emulate-network "/proc/$id/cmdline" 2>/dev/null; then continue; fi
    echo "$id"
  done
}
cleanup_stale() {
  local id n=0 pid
  for id in $(stale_ids); do
    echo "$PROG: removing leftovers of run $id"
    # Its mpirun (found by the fork agent path on its command line), then its ranks and links.
    # The pattern "...-ID[.]" does not match grep's own command line (which holds "[.]"), so
    # grep never finds, and kills, itself.
    { grep -l -E "gossamer-netemu-${id}[.]" /proc/[0-9]*/cmdline 2>/dev/null || true; } | cut -d/ -f3 |
      while read -r pid; do
        [[ "$pid" == "$$" ]] || kill -KILL "$pid" 2>/dev/null || true
      done
    remove_run_resources "$id"
    rm -rf "${TMPDIR:-/tmp}/gossamer-netemu-$id."*
    n=$((n + 1))
  done
  echo "$PROG: $n stale run(s) cleaned up"
}

# ---- arguments -------------------------------------------------------------------------------
RATE="" NP="" BURST="" QUEUE=50ms SUBNET="" CLEANUP_STALE=0
declare -A RANK_RATE=()
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --rate) [[ $# -ge 2 ]] || usage_error "--rate needs a value"; RATE="$2"; shift 2 ;;
    --rate=*) RATE="${1#*=}"; shift ;;
    --rate-rank | --rate-rank=*)
      if [[ "$1" == --rate-rank=* ]]; then v="${1#--rate-rank=}"; shift
      else [[ $# -ge 2 ]] || usage_error "--rate-rank needs R=RATE"; v="$2"; shift 2; fi
      [[ "$v" =~ ^([0-9]+)=(.+)$ ]] || usage_error "--rate-rank '$v': expected R=RATE, e.g. 1=20mbit"
      r=$((10#${BASH_REMATCH[1]}))
      check_rate "--rate-rank $r" "${BASH_REMATCH[2]}"
      RANK_RATE[$r]="${BASH_REMATCH[2]}" ;;
    --np) [[ $# -ge 2 ]] || usage_error "--np needs a value"; NP="$2"; shift 2 ;;
    --np=*) NP="${1#*=}"; shift ;;
    --burst) [[ $# -ge 2 ]] || usage_error "--burst needs a value"; BURST="$2"; shift 2 ;;
    --queue) [[ $# -ge 2 ]] || usage_error "--queue needs a value"; QUEUE="$2"; shift 2 ;;
    --subnet) [[ $# -ge 2 ]] || usage_error "--subnet needs a value"; SUBNET="$2"; shift 2 ;;
    --cleanup-stale) CLEANUP_STALE=1; shift ;;
    --latency | --latency=* | --delay | --delay=* | --loss | --loss=* | --jitter | --jitter=*)
      usage_error "${1%%=*}: not available: latency, jitter and loss need the netem qdisc" \
        "(sch_netem), which this kernel does not have; only bandwidth is emulated" ;;
    --) shift; break ;;
    *) usage_error "unknown argument '$1' (the mpirun arguments go after --)" ;;
  esac
done
MPI_ARGS=("$@")

if [[ $CLEANUP_STALE == 1 ]]; then
  [[ $EUID -eq 0 ]] || die "must run as root (network namespaces); try: sudo $0 --cleanup-stale"
  cleanup_stale
  exit 0
fi

[[ -n "$RATE" ]] || usage_error "--rate is required (e.g. --rate 1gbit)"
check_rate --rate "$RATE"
[[ -z "$NP" || "$NP" =~ ^[1-9][0-9]*$ ]] || usage_error "--np '$NP': expected a positive integer"
[[ -z "$BURST" || "$BURST" =~ ^[0-9]+([kKmM]?[bB]?)?$ ]] || usage_error "--burst '$BURST': expected bytes, e.g. 65536 or 64kb"
[[ "$QUEUE" =~ ^[0-9]+(\.[0-9]+)?(s|ms|us)$ ]] || usage_error "--queue '$QUEUE': expected a time, e.g. 50ms"
[[ -z "$SUBNET" || "$SUBNET" =~ ^([0-9]{1,3}\.){3}0/24$ ]] || usage_error "--subnet '$SUBNET': expected A.B.C.0/24"
[[ ${#MPI_ARGS[@]} -gt 0 ]] || usage_error "no mpirun arguments: put them after --, e.g. -- -np 2 ./prog"
# Tolerate "-- mpirun -np 2 prog" as well as "-- -np 2 prog".
case "$(basename -- "${MPI_ARGS[0]}")" in mpirun | mpiexec | orterun) MPI_ARGS=("${MPI_ARGS[@]:1}") ;; esac
[[ ${#MPI_ARGS[@]} -gt 0 ]] || usage_error "no program to run after --"

# Ranks: the -np/-n/--np/-c values in MPIRUN_ARGS, summed over MPMD contexts (': ').
# mpirun's own options end at the program name; a ':' starts the next context's options.
# Arity of Open MPI 4.1's options (mpirun --help all): two values for --mca/--gmca, none for the
# flags below, one for every other option.
MPIRUN_FLAGS=" allow-run-as-root bind-to-core bind-to-socket bycore bynode byslot continuous d debug
  debug-daemons debug-daemons-file debug-devel disable-recovery display-allocation
  display-devel-allocation display-devel-map display-diffable-map display-map display-topo
  do-not-launch do-not-resolve dvm enable-instant-on-support enable-recovery fwd-mpirun-port
  get-stack-traces h help index-argv-by-rank leave-session-attached merge-stderr-to-stdout nolocal
  nooversubscribe noprefix novm output-proctable oversubscribe pernode preload-binary q quiet
  report-bindings report-child-jobs-separately report-state-on-timeout s set-cwd-to-session-dir
  show-progress tag-output timestamp-output tv use-hwthread-cpus use-regexp v V verbose version xml "
# MCA parameters this script sets; overriding them would route MPI around the emulated links.
OWN_MCA=" pml btl btl_tcp_if_include btl_tcp_if_exclude oob_tcp_if_include oob_tcp_if_exclude osc orte_fork_agent "
args_np=0 found_np=0 in_options=1
for ((i = 0; i < ${#MPI_ARGS[@]}; i++)); do
  a="${MPI_ARGS[i]}"
  if [[ "$a" == ":" ]]; then in_options=1; continue; fi
  [[ $in_options == 1 ]] || continue
  if [[ "$a" != -* ]]; then in_options=0; continue; fi  # the program of this context
  name="${a#-}" name="${name#-}"
  case "$name" in
    np | n | c)
      v="${MPI_ARGS[i + 1]:-}"
      [[ "$v" =~ ^[1-9][0-9]*$ ]] || usage_error "mpirun argument $a '$v': expected a positive integer"
      args_np=$((args_np + v)) found_np=1 ;;
    H | host | hostfile | machinefile | default-hostfile)
      usage_error "mpirun argument $a: all ranks run on this machine, host lists are not supported" ;;
    app) usage_error "mpirun argument $a: appfiles are not supported (give the ranks on the command line)" ;;
    mca | gmca)
      [[ "$OWN_MCA" != *" ${MPI_ARGS[i + 1]:-} "* ]] ||
        usage_error "mpirun argument $a ${MPI_ARGS[i + 1]}: set by this script (see --help), do not override it" ;;
  esac
  if [[ "$name" == mca || "$name" == gmca ]]; then i=$((i + 2))
  elif [[ "$MPIRUN_FLAGS" != *" $name "* ]]; then i=$((i + 1)); fi
done
if [[ $found_np == 1 ]]; then
  [[ -z "$NP" || "$NP" == "$args_np" ]] || usage_error "--np $NP disagrees with the mpirun arguments' $args_np rank(s)"
  NP=$args_np
elif [[ -n "$NP" ]]; then
  MPI_ARGS=(-np "$NP" "${MPI_ARGS[@]}")
else
  usage_error "number of ranks unknown: give --np N or -np N in the mpirun arguments"
fi
((NP <= 250)) || usage_error "$NP ranks: at most 250 fit the /24 subnet"
for r in "${!RANK_RATE[@]}"; do
  ((r < NP)) || usage_error "--rate-rank $r=${RANK_RATE[$r]}: there are only $NP rank(s) (0..$((NP - 1)))"
done

# ---- environment -----------------------------------------------------------------------------
[[ $EUID -eq 0 ]] || die "must run as root: it creates network namespaces, veths and a bridge (try sudo)"
for tool in ip tc "${MPIRUN:-mpirun}" flock setsid; do
  command -v "$tool" >/dev/null || die "'$tool' not found (ip and tc: apt-get install iproute2; mpirun: openmpi-bin)"
done
MPIRUN_BIN="$(command -v "${MPIRUN:-mpirun}")"
mpi_version="$("$MPIRUN_BIN" --version 2>&1 | head -1)" || true
[[ "$mpi_version" =~ Open\ MPI\)\ [34]\. ]] ||
  die "$MPIRUN_BIN is not Open MPI 3.x/4.x ('$mpi_version'): ranks are started through ORTE's orte_fork_agent"

# tbf parameters (docs/NETWORK.md has the measurements behind them). The bucket (burst) holds a
# whole 64 KiB GSO segment (else tbf splits every one) and 1 ms of traffic (the qdisc watchdog
# may fire that late on a busy machine; a smaller bucket caps 1gbit and up below RATE). The
# queue (limit) holds QUEUE of traffic but at least 512 KiB: with less, TCP's start-up bursts
# overflow it at <= 20mbit (drops; with 64 KiB, retransmission timeouts cost up to 15% of the rate).
tbf_burst() {  # RATE -> bytes
  if [[ -n "$BURST" ]]; then echo "$BURST"; return; fi
  local bits; bits="$(rate_to_bits "$1")"
  local b=$((bits / 8 / 1000))
  ((b > 65536)) || b=65536
  echo "$b"
}
tbf_limit() {  # RATE -> bytes
  awk -v bits="$(rate_to_bits "$1")" -v q="$QUEUE" 'BEGIN {
    s = q + 0; if (q ~ /us$/) s /= 1e6; else if (q ~ /ms$/) s /= 1e3
    b = bits / 8 * s; if (b < 524288) b = 524288; printf "%.0f\n", b }'
}
rate_of() { echo "${RANK_RATE[$1]:-$RATE}"; }

# ---- setup -----------------------------------------------------------------------------------
ID=$$
BR="gs${ID}br"
NS_PREFIX="gsnet-${ID}-r"
MPIRUN_PID=""
WORKDIR=""
CLEANED=0

SIGNALLED=0
cleanup() {
  [[ $CLEANED == 0 ]] || return 0
  CLEANED=1
  set +e
  if [[ -n "$MPIRUN_PID" ]] && kill -0 "$MPIRUN_PID" 2>/dev/null; then
    # Only after a signal, which was forwarded: give mpirun 15 s to stop its ranks.
    for _ in $(seq 1 150); do kill -0 "$MPIRUN_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$MPIRUN_PID" 2>/dev/null; then
      echo "$PROG: mpirun still running after 15 s: killing it and its ranks" >&2
      kill -KILL "$MPIRUN_PID" 2>/dev/null
    fi
    wait "$MPIRUN_PID" 2>/dev/null
  fi
  remove_run_resources "$ID"
  [[ -z "$WORKDIR" ]] || rm -rf "$WORKDIR"
  local left
  left="$( { ip netns list | awk '{print $1}' | grep -E "^${NS_PREFIX}[0-9]+$"
             ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^gs${ID}(br|h[0-9]+)$"; } 2>/dev/null)"
  if [[ -n "$left" ]]; then
    echo "$PROG: warning: could not remove: $(tr '\n' ' ' <<<"$left")(run: $0 --cleanup-stale)" >&2
  fi
}
# A signal is forwarded to mpirun (which runs in its own session, so a terminal's Ctrl-C reaches
# it once, through here); the first one also ends this script, whose EXIT trap waits for mpirun.
on_signal() {  # NAME NUMBER
  if [[ -n "$MPIRUN_PID" ]] && kill -0 "$MPIRUN_PID" 2>/dev/null; then
    kill -"$1" "$MPIRUN_PID" 2>/dev/null || true
  fi
  if [[ $SIGNALLED != 0 ]]; then
    echo "$PROG: SIG$1 again: forwarded to mpirun" >&2
    return 0
  fi
  SIGNALLED=$2
  echo "$PROG: SIG$1 received: stopping the job and removing the emulated network" >&2
  exit $((128 + $2))
}
trap cleanup EXIT
trap 'on_signal INT 2' INT
trap 'on_signal TERM 15' TERM
trap 'on_signal HUP 1' HUP

# ip2int / overlaps: is SUBNET (a /24) disjoint from every route and address on this machine?
ip2int() { local IFS=.; read -r a b c d <<<"$1"; echo $(((a << 24) | (b << 16) | (c << 8) | d)); }
subnet_free() {  # A.B.C.0/24
  local net len prefix plen mask other line
  net="$(ip2int "${1%/*}")" len="${1#*/}"
  while read -r line; do
    prefix="$line"
    [[ "$prefix" == */* ]] && plen="${prefix#*/}" || plen=32
    [[ "${prefix%/*}" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || continue
    other="$(ip2int "${prefix%/*}")"
    ((plen < len)) && mask=$(((0xffffffff << (32 - plen)) & 0xffffffff)) || mask=$(((0xffffffff << (32 - len)) & 0xffffffff))
    (((net & mask) == (other & mask))) && return 1
  done < <(ip -4 -o route show table all 2>/dev/null | awk '
             $1 ~ /^(local|broadcast|unicast|multicast|anycast|blackhole|unreachable|prohibit|throw|nat)$/ { print $2; next }
             $1 != "default" { print $1 }'
           ip -4 -o addr show 2>/dev/null | awk '{ print $4 }')
  return 0
}

# Choose the subnet and create the bridge under a lock, so concurrent runs never pick the same one.
WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/gossamer-netemu-$ID.XXXXXX")"
LOCK=/run/lock/gossamer-emulate-network.lock
[[ -d /run/lock ]] || LOCK=/tmp/gossamer-emulate-network.lock
exec 9>"$LOCK"
flock -w 30 9 || die "timed out waiting for another emulate-network setup (lock $LOCK)"
if [[ -n "$SUBNET" ]]; then
  subnet_free "$SUBNET" || die "--subnet $SUBNET overlaps a route or address on this machine (ip -4 route show table all)"
else
  for cand in $(for x in $(seq 0 255); do echo "10.213.$(((ID + x) % 256)).0/24"; done) \
    $(for x in $(seq 0 255); do echo "172.29.$(((ID + x) % 256)).0/24"; done) 192.168.213.0/24; do
    if subnet_free "$cand"; then SUBNET="$cand"; break; fi
  done
  [[ -n "$SUBNET" ]] || die "no free /24 in 10.213.0.0/16, 172.29.0.0/16, 192.168.213.0/24: give --subnet"
fi
BASE="${SUBNET%.0/24}"
stale="$(stale_ids | tr '\n' ' ')"
[[ -z "$stale" ]] || echo "$PROG: note: runs ${stale}were killed without cleaning up; remove their leftovers with: $0 --cleanup-stale" >&2

step() {  # DESCRIPTION CMD...: runs CMD, dies with its message if it fails.
  local what="$1" out; shift
  out="$("$@" 2>&1)" || die "$what failed: $* : $out"
}
step "creating the bridge" ip link add "$BR" type bridge
step "addressing the bridge" ip addr add "$BASE.1/24" dev "$BR"
step "bringing up the bridge" ip link set "$BR" up
flock -u 9
exec 9>&-

for ((r = 0; r < NP; r++)); do
  ns="$NS_PREFIX$r" host="gs${ID}h$r" rate="$(rate_of "$r")"
  out="$(ip netns add "$ns" 2>&1)" || die "cannot create network namespace $ns: $out (is this a container without CAP_SYS_ADMIN?)"
  step "creating veth $host" ip link add "$host" type veth peer name eth0 netns "$ns"
  step "attaching $host to $BR" ip link set "$host" master "$BR" up
  step "addressing rank $r" ip -n "$ns" addr add "$BASE.$((r + 2))/24" dev eth0
  step "bringing up rank $r's eth0" ip -n "$ns" link set eth0 up
  step "bringing up rank $r's lo" ip -n "$ns" link set lo up
  step "capping rank $r at $rate (tc tbf; is sch_tbf available?)" \
    tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$(tbf_burst "$rate")" limit "$(tbf_limit "$rate")"
done

# The fork agent: mpirun execs it with the rank's command line and environment.
cat >"$WORKDIR/rank-in-netns" <<EOF
#!/bin/sh
# Started by mpirun (orte_fork_agent) for each rank: runs the rank in its network namespace.
rank="\${OMPI_COMM_WORLD_RANK:?emulate-network: OMPI_COMM_WORLD_RANK not set (not Open MPI?)}"
exec $(command -v ip) netns exec "$NS_PREFIX\$rank" "\$@"
EOF
chmod 755 "$WORKDIR/rank-in-netns"

# The banner: per-rank caps, runs of equal ranks folded ("ranks 0-2 1gbit, rank 3 100mbit").
caps="" first=0
for ((r = 1; r <= NP; r++)); do
  if ((r == NP)) || [[ "$(rate_of "$r")" != "$(rate_of "$first")" ]]; then
    ((first == r - 1)) && span="rank $first" || span="ranks $first-$((r - 1))"
    caps+="${caps:+, }$span $(rate_of "$first")"
    first=$r
  fi
done
echo "$PROG: EMULATED network (one machine, not real links): $NP rank(s), egress caps: $caps"
echo "$PROG:   rank R runs in namespace ${NS_PREFIX}R at $BASE.(R+2) on bridge $BR ($SUBNET); tc tbf at $RATE: burst $(tbf_burst "$RATE") B, queue limit $(tbf_limit "$RATE") B"
echo "$PROG:   not emulated: latency, jitter, loss (no netem); traffic into a rank is limited only by its senders' caps"

export PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$SUBNET"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2054  # "self,tcp" is one value
mpi_cmd=("$MPIRUN_BIN" --allow-run-as-root --oversubscribe
  --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "$SUBNET"
  --mca oob_tcp_if_include "$SUBNET" --mca osc '^sm,ucx'
  --mca orte_fork_agent "$WORKDIR/rank-in-netns" "${MPI_ARGS[@]}")
shown=""
for a in "${mpi_cmd[@]}"; do
  if [[ "$a" =~ ^[][A-Za-z0-9_./:=,^@%+-]+$ ]]; then shown+=" $a"; else shown+=" $(printf %q "$a")"; fi
done
echo "$PROG: running:$shown"
# In the background so a signal to this script runs its trap at once; in its own session so that
# a terminal's signals reach mpirun only as forwarded by on_signal; stdin stays the caller's.
setsid "${mpi_cmd[@]}" <&0 &
MPIRUN_PID=$!
rc=0
wait "$MPIRUN_PID" || rc=$?
MPIRUN_PID=""
echo "$PROG: mpirun exited with status $rc; removing the emulated network" >&2
exit "$rc"
