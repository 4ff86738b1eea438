# `gossamer bench codec`: on small synthetic sets and a tiny checkpoint it prints the header
# (CRC implementation, CPU, threads) and one row per data set (4 synthetic; parameters, each
# AdamW moment and one gradient, each as fp32 and bf16), every round trip bit-exact (exit 0);
# a missing checkpoint is an error. Throughput is not checked (a benchmark, not a test).
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
"$G" train -c configs/test/gpt2-tiny.json --set train.steps=5 --set train.eval_every=0 \
  --out "$WORK/run" >"$WORK/train.log" 2>&1 || { cat "$WORK/train.log"; fail "training failed"; finish; }

out="$WORK/bench.txt"
if "$G" bench codec --elements 100000 --iters 1 --warmup 0 --checkpoint "$WORK/run" \
  >"$out" 2>"$WORK/bench.log"; then
  pass "bench codec exits 0 (every round trip bit-exact)"
else
  cat "$out" "$WORK/bench.log"; fail "bench codec failed"
fi
grep -qE '^# .*CRC-32C on, implementation (sse4\.2|table)' "$out" && pass "logs the CRC implementation" || fail "no CRC line"
grep -qE '^# cpu: .+, [0-9]+ logical cores; zip threads: 1 and [0-9]+' "$out" && pass "logs CPU and threads" || fail "no cpu line"
rows() { grep -cE "^\| $1 " "$out" || true; }
[[ "$(rows synthetic)" == 4 ]] && pass "4 synthetic rows" || fail "synthetic rows: $(rows synthetic)"
[[ "$(rows 'params step_00000005')" == 2 ]] && pass "params: fp32 and bf16" || fail "params rows: $(rows 'params step_00000005')"
[[ "$(rows 'optimizer step_00000005 \| adamw\.m')" == 2 && "$(rows 'optimizer step_00000005 \| adamw\.v')" == 2 ]] \
  && pass "optimizer: adamw.m and adamw.v, fp32 and bf16" || fail "optimizer rows: $(rows 'optimizer step_00000005')"
[[ "$(rows 'gradient step_00000005')" == 2 ]] && pass "gradient: fp32 and bf16" || fail "gradient rows: $(rows 'gradient step_00000005')"

rc=0
"$G" bench codec --elements 1000 --iters 1 --checkpoint "$WORK/none" >/dev/null 2>"$WORK/err.log" || rc=$?
[[ $rc -ne 0 ]] && grep -q "$WORK/none" "$WORK/err.log" && pass "missing checkpoint: exit $rc naming it" \
  || fail "missing checkpoint: exit $rc, $(cat "$WORK/err.log")"
finish
