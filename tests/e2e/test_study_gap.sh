# scripts/study-gap.py (docs/RESULTS.md, issue 12 part 3) on hand-written metrics: the gaps to
# the reference at the steps both evaluated, the tokens to reach the target's final loss by
# linear interpolation between evaluations ("not reached" when a run never gets there), and
# clear errors for a missing run or a run without evaluations. Needs /usr/bin/python3 (Debian's).
source "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[[ -x $PY ]] || { echo "FAIL: $PY not found (scripts/install-deps.sh installs python3)" >&2; exit 1; }

run_dir() {  # DIR "STEP:LOSS ..." : val_loss lines and step lines of 100 tokens per step
  mkdir -p "$1"
  : >"$1/metrics.jsonl"
  local last=0
  for sv in $2; do
    local s="${sv%%:*}" v="${sv##*:}"
    for ((t = last + 1; t <= s; t++)); do echo "{\"step\":$t,\"loss\":1,\"tokens\":$((100 * t))}" >>"$1/metrics.jsonl"; done
    echo "{\"step\":$s,\"val_loss\":$v}" >>"$1/metrics.jsonl"
    last=$s
  done
}
run_dir "$WORK/ref" "0:10 10:6 20:5"
run_dir "$WORK/tgt" "0:10 10:5 20:4"
run_dir "$WORK/slow" "0:10 10:5.5 20:4.5 30:3.5"
run_dir "$WORK/never" "0:10 10:7 20:6"
out="$("$PY" scripts/study-gap.py --ref ref="$WORK/ref" --target tgt="$WORK/tgt" \
  slow="$WORK/slow" never="$WORK/never" tgt="$WORK/tgt" 2>&1)" || fail "study-gap exited non-zero: $out"
row() { grep "^| $1 |" <<<"$out"; }
# slow: 5.5 / 6 - 1 = -8.33%, 4.5 / 5 - 1 = -10.00%; it reaches 4.0 halfway from step 20 to 30.
[[ "$(row slow)" == "| slow | 5.5000 (-8.33%) | 4.5000 (-10.00%) | -10.00% | "* ]] \
  && pass "gaps to the reference, step 30 (not in the reference) left out" || fail "slow row: $(row slow)"
[[ "$(row slow)" == *"(1.25x) |" ]] && pass "tokens to the target's final loss interpolated (2500 = 1.25 x 2000)" \
  || fail "slow row: $(row slow)"
[[ "$(row tgt)" == *"| -20.00% | 0.00 M (1.00x) |" ]] && pass "the target reaches its own loss at 1.00x" \
  || fail "target row: $(row tgt)"
[[ "$(row never)" == *"| +20.00% | not reached |" ]] && pass "a run that never gets there: not reached" \
  || fail "never row: $(row never)"
grep -q "val @10 | val @20 |" <<<"$out" && ! grep -q "val @30" <<<"$out" \
  && pass "columns: the steps evaluated in the reference" || fail "header: $(head -1 <<<"$out")"

mkdir -p "$WORK/empty" && echo '{"step":1,"loss":1,"tokens":100}' >"$WORK/empty/metrics.jsonl"
msg="$("$PY" scripts/study-gap.py --ref ref="$WORK/ref" --target tgt="$WORK/tgt" x="$WORK/empty" 2>&1)" \
  && fail "a run without evaluations accepted" \
  || { grep -q "empty/metrics.jsonl has no val_loss line" <<<"$msg" && pass "no evaluations: named" || fail "message: $msg"; }
msg="$("$PY" scripts/study-gap.py --ref ref="$WORK/ref" --target tgt="$WORK/nope" x="$WORK/ref" 2>&1)" \
  && fail "a missing run accepted" \
  || { grep -q "nope/metrics.jsonl not found" <<<"$msg" && pass "missing run: named" || fail "message: $msg"; }
[[ $FAILURES -eq 0 ]]
