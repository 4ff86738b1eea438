# A rank that never joins a collective makes the others end the job within the communicator's
# timeout: exit status kExitPeerFailure (3) from mpirun, and a message naming the rank, the
# operation, its size, the timeout, the context and the rank that did not arrive (it sleeps,
# or is stopped with SIGSTOP) with the last operation completed before. Run by ctest as:
#   bash test_comm_timeout.sh DRIVER MPIRUN
set -uo pipefail
DRIVER="$1"
MPIRUN="$2"
FAILURES=0
fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
pass() { echo "ok: $*"; }
# Checked cases go to docs/RELIABILITY.md's table like the e2e tests' (tests/e2e/lib.sh).
LOG=""
if [[ -n "${GOSSAMER_RELIABILITY_DIR:-}" ]]; then
  mkdir -p "$GOSSAMER_RELIABILITY_DIR"
  LOG="$GOSSAMER_RELIABILITY_DIR/$(basename "$0" .sh).tsv"
  : >"$LOG"
fi

# expect_abort NAME NP MODE TIMEOUT PATTERN
expect_abort() {
  local name="$1" np="$2" mode="$3" timeout="$4" pattern="$5"
  local out rc=0 start end
  start=$(date +%s.%N)
  out="$("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader \
    -np "$np" "$DRIVER" "$mode" "$timeout" 2>&1)" || rc=$?
  end=$(date +%s.%N)
  local secs; secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  if [[ $rc -ne 3 ]]; then fail "$name: exit status $rc, expected 3 (kExitPeerFailure): $out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then fail "$name: no line matching /$pattern/ in: $out"; return; fi
  if awk -v s="$secs" 'BEGIN { exit !(s >= 10) }'; then fail "$name: took ${secs} s (limit 10 s)"; return; fi
  pass "$name: exit 3 after ${secs} s: $(grep -m1 -E -- "$pattern" <<<"$out")"
  [[ -z "$LOG" ]] || printf '%s\t3\t%s\tmpirun -np %s comm_timeout_driver %s %s\n' "$name" \
    "$(grep -m1 -E -- "$pattern" <<<"$out" | sed -e 's/^\[error rank [0-9]*\]/[error]/' \
      -e 's/rank [012]: /rank R: /')" "$np" "$mode" "$timeout" >>"$LOG"
}
# Every waiting rank times out; the others give rank 0 time to report first
# (kAbortGraceForRankZeroSeconds), so the line shown is rank 0's.
err='^\[error\]'

absent='did not answer a roll call within 0.5 s \(stopped, hung or dead\)'
expect_abort "all_reduce, 3 ranks" 3 all_reduce 1 \
  "$err rank 0: all_reduce of 4096 bytes did not complete within 1 s \\(step 7\\); rank 2 $absent; no operation had completed on this rank\$"
expect_abort "barrier, 2 ranks" 2 barrier 0.5 \
  "$err rank 0: barrier of 0 bytes did not complete within 0.5 s \\(step 7\\); rank 1 $absent; no operation had completed on this rank\$"
expect_abort "a rank stopped by SIGSTOP, 4 ranks" 4 stop 1 \
  "$err rank 0: all_reduce of 4096 bytes did not complete within 1 s \\(step 7\\); rank 3 $absent; the last operation completed on this rank was all_reduce \\(step 6\\)\$"

# Every rank fails alike, rank 0 a second after the others: its own message still ends the job.
out="$("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader \
  -np 3 "$DRIVER" every_rank_fails 5 2>&1)" && rc=0 || rc=$?
if [[ $rc -eq 1 ]] && grep -qx '\[error\] rank 0: the same error on every rank' <<<"$out"; then
  pass "every rank fails, rank 0 last: exit 1 with rank 0's message"
else
  fail "every rank fails, rank 0 last: exit $rc, expected 1 and rank 0's line in: $out"
fi
if [[ $FAILURES -ne 0 ]]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all checks passed"
