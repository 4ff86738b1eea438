# scripts/emulate-network.sh (docs/NETWORK.md): with --rate 100mbit the measured rank 0 -> 1
# throughput is within 60-110% of 100 Mbit/s; with --rate-rank 1=20mbit rank 1's egress is ~5x
# slower than rank 0's; every rank runs in its own network namespace; mpirun's exit status is
# passed through; after a successful run, a failing run, SIGINT, SIGTERM (and SIGKILL followed by
# --cleanup-stale) no namespace, veth, bridge or temporary directory of the run remains; bad
# arguments get a usage error and exit status 2. The MPI probe (mpi_link_probe.c) is compiled
# here with mpicc, outside the CMake build. Prints SKIPPED (exit 0) only without root or
# without network namespaces / tc tbf.
source "$(dirname "$0")/lib.sh"
EMU="$SRC/scripts/emulate-network.sh"
T="${TMPDIR:-/tmp}"

skip() { echo "SKIPPED: $*"; exit 0; }
[[ $EUID -eq 0 ]] || skip "not root: emulate-network.sh creates network namespaces"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip/tc (iproute2) not installed"
scratch="gossamer-e2e-netcheck-$$"
if ! out="$(ip netns add "$scratch" 2>&1)"; then skip "cannot create a network namespace: $out"; fi
tbf_ok=1
ip -n "$scratch" link add c0 type veth peer name c1 2>/dev/null &&
  tc -n "$scratch" qdisc add dev c0 root tbf rate 1mbit burst 65536 latency 50ms 2>/dev/null || tbf_ok=0
ip netns del "$scratch"
[[ $tbf_ok == 1 ]] || skip "veth or tc tbf not available in a network namespace"
for tool in mpicc mpirun; do
  command -v $tool >/dev/null || { fail "$tool not found (scripts/install-deps.sh installs Open MPI)"; finish; }
done

# Background runs of the script, stopped if this test ends early.
BG=()
trap 'for p in "${BG[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; rm -rf "$WORK"' EXIT

names() {  # every network namespace and link name on the machine, sorted
  { ip netns list | awk '{print $1}'; ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1; } | sort
}
BEFORE="$(names)"
# leftovers ID: what the run with script PID ID left behind (its names are documented in the script).
leftovers() {
  { ip netns list | awk '{print $1}' | grep -E "^gsnet-$1-r[0-9]+$"
    ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^gs$1(br|h[0-9]+)$"
    ls -d "$T/gossamer-netemu-$1."*; } 2>/dev/null || true
}
check_clean() {  # NAME ID
  local left; left="$(leftovers "$2")"
  [[ -z "$left" ]] && pass "$1: nothing left behind" || fail "$1: left behind: $(tr '\n' ' ' <<<"$left")"
}
run_id() { grep -oE 'namespace gsnet-[0-9]+-r' "$1" | head -1 | grep -oE '[0-9]+'; }
field() { grep "^link $2 " "$1" | grep -oE "$3=[0-9.]+" | cut -d= -f2; }
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }

mpicc -O2 -o "$WORK/probe" tests/e2e/mpi_link_probe.c || { fail "mpicc tests/e2e/mpi_link_probe.c"; finish; }

# ---- (a) the caps hold -------------------------------------------------------------------------
# A busy machine (ctest -j 2) can slow the probe below the cap's 60%: up to 3 tries while a link
# is slow and none is above the cap (a link above it fails at once).
slow_link() {
  local link m
  for link in "0->1" "1->0"; do
    m="$(field "$1" "$link" mbit_per_s)"
    awk -v x="${m:-0}" 'BEGIN { exit !(x < 60) }' && return 0
  done
  return 1
}
for try in 1 2 3; do
  rc=0
  bash "$EMU" --rate 100mbit -- -np 2 "$WORK/probe" 4 >"$WORK/a1.log" 2>&1 || rc=$?
  cat "$WORK/a1.log"
  [[ $rc -eq 0 ]] && slow_link "$WORK/a1.log" && [[ $try -lt 3 ]] || break
  echo "a link measured below 60 Mbit/s (try $try of 3): measuring again"
  check_clean "after --rate 100mbit, try $try" "$(run_id "$WORK/a1.log")"
done
if [[ $rc -ne 0 ]]; then
  fail "--rate 100mbit probe exited $rc"
else
  grep -q "EMULATED network.*egress caps: ranks 0-1 100mbit" "$WORK/a1.log" && pass "banner says EMULATED with the caps" || fail "no EMULATED banner with the caps"
  ns0="$(grep '^rank 0 netns' "$WORK/a1.log" | cut -d' ' -f4)" ns1="$(grep '^rank 1 netns' "$WORK/a1.log" | cut -d' ' -f4)"
  [[ -n "$ns0" && "$ns0" != "$ns1" && "$ns0" != "$(readlink /proc/self/ns/net)" ]] && pass "ranks in their own namespaces ($ns0, $ns1)" || fail "ranks share a namespace: '$ns0' '$ns1'"
  for link in "0->1" "1->0"; do
    m="$(field "$WORK/a1.log" "$link" mbit_per_s)"
    within "${m:-0}" 60 110 && pass "--rate 100mbit: $link $m Mbit/s" || fail "--rate 100mbit: $link ${m:-?} Mbit/s, expected 60-110"
  done
fi
check_clean "after --rate 100mbit" "$(run_id "$WORK/a1.log")"

rc=0
bash "$EMU" --rate 100mbit --rate-rank 1=20mbit -- -np 2 "$WORK/probe" 4 >"$WORK/a2.log" 2>&1 || rc=$?
cat "$WORK/a2.log"
if [[ $rc -ne 0 ]]; then
  fail "--rate-rank 1=20mbit probe exited $rc"
else
  grep -q "egress caps: rank 0 100mbit, rank 1 20mbit" "$WORK/a2.log" && pass "banner shows rank 1 at 20mbit" || fail "banner lacks the per-rank caps"
  fast="$(field "$WORK/a2.log" "0->1" mbit_per_s)" slow="$(field "$WORK/a2.log" "1->0" mbit_per_s)"
  within "${slow:-0}" 12 22 && pass "--rate-rank 1=20mbit: 1->0 $slow Mbit/s" || fail "--rate-rank 1=20mbit: 1->0 ${slow:-?} Mbit/s, expected 12-22"
  # Rank 0 keeps its own cap, not rank 1's: its egress is well above 20 Mbit/s and within 100 (+10%).
  # (Not a fixed ratio: on a busy machine, ctest -j 2, the 100 Mbit/s link measured 69.)
  ratio="$(awk -v f="${fast:-0}" -v s="${slow:-0}" 'BEGIN { printf "%.2f", (s > 0 ? f / s : 0) }')"
  within "$ratio" 2.5 6 && within "${fast:-0}" 50 110 \
    && pass "rank 0's egress ($fast Mbit/s) is ${ratio}x rank 1's ($slow)" \
    || fail "rank 0's egress $fast Mbit/s, ${ratio}x rank 1's ($slow): expected 50-110 and 2.5-6x"
fi
check_clean "after --rate-rank" "$(run_id "$WORK/a2.log")"

# ---- (b) failures and signals clean up ---------------------------------------------------------
rc=0
bash "$EMU" --rate 1gbit -- -np 2 sh -c 'exit 3' >"$WORK/b1.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] && pass "failing program: exit status 3 passed through" || { cat "$WORK/b1.log"; fail "failing program: exit status $rc, expected 3"; }
check_clean "after a failing run" "$(run_id "$WORK/b1.log")"

# start_sleeping LOG: starts a 2-rank job of `sleep 397` in the background, waits until both ranks
# run in their namespaces; sets PID. SIGINT is reset to default: a background job of a
# non-interactive shell starts with it ignored, and bash cannot trap a signal ignored at entry.
start_sleeping() {
  env --default-signal=INT bash "$EMU" --rate 1gbit -- -np 2 sleep 397 >"$1" 2>&1 &
  PID=$!
  BG+=("$PID")
  for _ in $(seq 1 200); do
    [[ -n "$(ip netns pids "gsnet-$PID-r1" 2>/dev/null)" && -n "$(ip netns pids "gsnet-$PID-r0" 2>/dev/null)" ]] && return 0
    sleep 0.1
  done
  cat "$1"
  fail "ranks did not start within 20 s"
}
for sig in INT TERM; do
  start_sleeping "$WORK/$sig.log"
  sleep 0.5
  t0=$SECONDS
  kill -$sig "$PID"
  rc=0
  wait "$PID" || rc=$?
  want=$((128 + $(kill -l "$sig")))
  [[ $rc -eq $want ]] && pass "SIG$sig: exit status $rc in $((SECONDS - t0)) s" || { cat "$WORK/$sig.log"; fail "SIG$sig: exit status $rc, expected $want"; }
  check_clean "after SIG$sig" "$PID"
  sleep 0.5
  pgrep -f '^sleep 397$' >/dev/null && fail "SIG$sig: ranks (sleep 397) still running" || pass "SIG$sig: ranks stopped"
done

# SIGKILL cannot be trapped: --cleanup-stale removes what the dead run left, its mpirun included.
start_sleeping "$WORK/kill.log"
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
[[ -n "$(leftovers "$PID")" ]] && pass "SIGKILL leaves the network behind (as expected)" || fail "SIGKILL: nothing left to clean (test did not exercise --cleanup-stale)"
bash "$EMU" --cleanup-stale >"$WORK/stale.log" 2>&1 && grep -q "leftovers of run $PID" "$WORK/stale.log" &&
  pass "--cleanup-stale: $(tail -1 "$WORK/stale.log")" || { cat "$WORK/stale.log"; fail "--cleanup-stale"; }
check_clean "after SIGKILL + --cleanup-stale" "$PID"
sleep 0.5
pgrep -f "gossamer-netemu-$PID\." >/dev/null && fail "--cleanup-stale: the dead run's mpirun still runs" || pass "--cleanup-stale: mpirun stopped"
pgrep -f '^sleep 397$' >/dev/null && fail "--cleanup-stale: ranks still running" || pass "--cleanup-stale: ranks stopped"

new="$(comm -13 <(echo "$BEFORE") <(names))"
[[ -z "$new" ]] && pass "no namespace or link added by this test remains" || fail "namespaces/links added and not removed: $(tr '\n' ' ' <<<"$new")"

# ---- (c) bad arguments: usage error, exit status 2, nothing created ---------------------------
usage_error() {  # NAME PATTERN ARGS...
  local name="$1" pattern="$2" rc=0; shift 2
  local err; err="$(bash "$EMU" "$@" 2>&1 >/dev/null)" || rc=$?
  if [[ $rc -eq 2 ]] && grep -q "^Usage: scripts/emulate-network.sh" <<<"$err" && grep -qE -- "$pattern" <<<"$err"; then
    pass "$name: exit 2: $(head -1 <<<"$err")"
  else
    fail "$name: exit $rc, expected 2 with usage and /$pattern/: $err"
  fi
}
usage_error "no --rate" "--rate is required" -- -np 2 true
usage_error "bad rate" "'fast' is not a rate" --rate fast -- -np 2 true
usage_error "bad --rate-rank" "expected R=RATE" --rate 1gbit --rate-rank 1:20mbit -- -np 2 true
usage_error "--rate-rank beyond the ranks" "only 2 rank" --rate 1gbit --rate-rank 2=20mbit -- -np 2 true
usage_error "unknown option" "unknown argument '--bogus'" --rate 1gbit --bogus -- -np 2 true
usage_error "no rank count" "number of ranks unknown" --rate 1gbit -- true
usage_error "--np disagrees" "disagrees" --rate 1gbit --np 3 -- -np 2 true
usage_error "--latency needs netem" "netem" --rate 1gbit --latency 10ms -- -np 2 true
usage_error "overriding btl" "set by this script" --rate 1gbit -- --mca btl self,vader -np 2 true
usage_error "no mpirun arguments" "no mpirun arguments" --rate 1gbit
[[ -z "$(comm -13 <(echo "$BEFORE") <(names))" ]] && pass "usage errors created nothing" || fail "usage errors created namespaces/links"
finish
