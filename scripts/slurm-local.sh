#!/usr/bin/env bash
# A throwaway single-node Slurm "cluster" on this machine, for testing `srun` launches:
#   scripts/slurm-local.sh start    munged + slurmctld + slurmd, waits until the node is idle
#   scripts/slurm-local.sh status   what runs; exit 0 only when the node takes jobs
#   scripts/slurm-local.sh env      prints `export SLURM_CONF=...` (eval it to use srun/sinfo)
#   scripts/slurm-local.sh stop     stops the three daemons (by their pid files), removes the dir
# Everything (slurm.conf, a private munge key and socket, state, logs, pid files) lives in
# $GOSSAMER_SLURM_DIR (default /tmp/gossamer-slurm); nothing under /etc is read or written, and
# the daemons listen on ports $GOSSAMER_SLURM_PORT and +1 (default 16817, 16818) so a real Slurm
# on the machine is left alone. Needs root (SlurmUser=root) and the Debian packages slurmd,
# slurmctld, slurm-client and munge (scripts/install-deps.sh installs them when missing).
# The node has max(nproc, 8) CPUs (SlurmdParameters=config_overrides), so `srun -n 4` runs on
# a 2-core machine; no cgroups (proctrack/linuxproc, task/none); MpiDefault=pmix (Slurm's
# mpi/pmix_v4 plugin serves Open MPI's PMIx client under srun direct launch).
# start and stop are idempotent.
set -euo pipefail

DIR="${GOSSAMER_SLURM_DIR:-/tmp/gossamer-slurm}"
PORT="${GOSSAMER_SLURM_PORT:-16817}"
CONF="$DIR/slurm.conf"
HERE="$(cd "$(dirname "$0")" && pwd)"
export SLURM_CONF="$CONF"
export PATH="$PATH:/usr/sbin:/sbin"  # the daemons, for shells whose PATH lacks them

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: $*" >&2; exit 1; }

pid_alive() {  # PIDFILE
  [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

node_state() {  # the node's state as sinfo prints it ("idle", "mix", "down*", ...), or nothing
  timeout 10 sinfo -h -N -o %t 2>/dev/null | head -n 1 || true
}

all_up() {
  pid_alive "$DIR/munged.pid" && pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid" \
    && [[ "$(node_state)" =~ ^(idle|mix|alloc) ]]
}

stop_pidfile() {  # NAME PIDFILE: TERM, wait up to 10 s, then KILL
  local name="$1" f="$2" pid
  [[ -s "$f" ]] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { say "$name ($pid) ignored SIGTERM; killing"; kill -9 "$pid" 2>/dev/null || true; }
    say "stopped $name ($pid)"
  fi
  rm -f "$f"
}

cmd_stop() {
  [[ -d "$DIR" ]] || { say "not running ($DIR absent)"; return 0; }
  # Jobs first, so no slurmstepd outlives its slurmd.
  pid_alive "$DIR/slurmctld.pid" && timeout 10 scancel --quiet --full -u root 2>/dev/null || true
  stop_pidfile slurmd "$DIR/slurmd.pid"
  stop_pidfile slurmctld "$DIR/slurmctld.pid"
  stop_pidfile munged "$DIR/munged.pid"
  rm -rf "$DIR"
  say "removed $DIR"
}

write_conf() {
  local host cpus
  host="$(hostname -s)"
  cpus="$(nproc)"
  ((cpus < 8)) && cpus=8
  cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh: a single-node test cluster. Do not edit; stop and start.
ClusterName=gossamer-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
PlugStackConfig=$DIR/plugstack.conf
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  : >"$DIR/plugstack.conf"
}

cmd_start() {
  [[ "$(id -u)" == 0 ]] || die "needs root (the test cluster runs with SlurmUser=root)"
  if [[ -d "$DIR" ]] && all_up; then say "already running ($CONF)"; return 0; fi
  [[ -d "$DIR" ]] && { say "stale or partial instance in $DIR: stopping it first"; cmd_stop; }
  if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v srun >/dev/null || ! command -v munged >/dev/null; then
    say "Slurm or munge missing: running scripts/install-deps.sh"
    "$HERE/install-deps.sh" >&2 || die "could not install slurmd slurmctld slurm-client munge"
  fi
  mkdir -p "$DIR"/{munge,ctld,slurmd}
  chmod 700 "$DIR" "$DIR/munge"
  write_conf

  # munge: a private key and socket, so a system munged (if any) is neither needed nor touched.
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$DIR/munge/munge.key"
  munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" --seed-file="$DIR/munge/seed" \
    || die "munged did not start: $(tail -n 5 "$DIR/munged.log" 2>/dev/null)"

  slurmctld -f "$CONF" || die "slurmctld did not start: $(tail -n 5 "$DIR/slurmctld.log" 2>/dev/null)"
  slurmd -f "$CONF" || die "slurmd did not start: $(tail -n 5 "$DIR/slurmd.log" 2>/dev/null)"

  local state=""
  for _ in $(seq 60); do
    state="$(node_state)"
    [[ "$state" =~ ^(idle|mix|alloc)$ ]] && break
    # A node still "down" after registering (e.g. an earlier instance's state): bring it back.
    [[ "$state" =~ ^(down|drain) ]] && scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
    sleep 0.5
  done
  if ! [[ "$state" =~ ^(idle|mix|alloc)$ ]]; then
    echo "--- slurmctld.log" >&2; tail -n 20 "$DIR/slurmctld.log" >&2 || true
    echo "--- slurmd.log" >&2; tail -n 20 "$DIR/slurmd.log" >&2 || true
    cmd_stop >&2
    die "the node did not become idle within 30 s (state '${state:-none}')"
  fi
  say "running: node $(hostname -s) $state; use it with: export SLURM_CONF=$CONF"
}

cmd_status() {
  [[ -d "$DIR" ]] || { say "not running ($DIR absent)"; return 1; }
  local d
  for d in munged slurmctld slurmd; do
    if pid_alive "$DIR/$d.pid"; then say "$d running (pid $(cat "$DIR/$d.pid"))"; else say "$d not running"; fi
  done
  if all_up; then
    timeout 10 sinfo || true
    say "SLURM_CONF=$CONF"
    return 0
  fi
  return 1
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: scripts/slurm-local.sh start|stop|status|env" >&2; exit 2 ;;
esac
