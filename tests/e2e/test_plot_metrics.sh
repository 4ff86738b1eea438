#!/usr/bin/env bash
# scripts/plot_metrics.py: the smoothed training curve does not lag (a straight line stays the
# same line, to its last point, on short and long runs), a run whose rank 0 sent no bytes gets
# a note with --x bytes, and the plot is written.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'import matplotlib' 2>/dev/null || { echo "FAIL: /usr/bin/python3 has no matplotlib (scripts/install-deps.sh)" >&2; exit 1; }
"$PY" - <<'PYEOF' && pass "centred smoothing: a line stays a line (10 to 5000 points); noise is reduced" || fail "smoothing"
import random, sys
sys.path.insert(0, "scripts")
import plot_metrics as p
for n in (10, 120, 5000):
    line = [3.0 - 0.001 * i for i in range(n)]
    out = p.smooth(line)
    assert max(abs(a - b) for a, b in zip(out, line)) < 1e-9, (n, out[-3:], line[-3:])
random.seed(1)
noisy = [random.gauss(0, 1) for _ in range(5000)]
out = p.smooth(noisy)
assert sum(v * v for v in out[100:-100]) < 0.1 * sum(v * v for v in noisy[100:-100])
PYEOF
for s in 1 2 3 4; do
  echo "{\"step\": $s, \"loss\": $((10 - s)), \"bytes_sent\": 0, \"time_s\": {\"total\": 0.1}}"
done >"$WORK/metrics.jsonl"
echo '{"step": 4, "val_loss": 6.5}' >>"$WORK/metrics.jsonl"
"$PY" scripts/plot_metrics.py --x bytes "$WORK/out.png" "$WORK" 2>"$WORK/err" >/dev/null \
  && [[ -s "$WORK/out.png" ]] && grep -q "rank 0 sent no bytes" "$WORK/err" \
  && pass "--x bytes on one rank: plotted with a note ($(cat "$WORK/err"))" || fail "--x bytes note: $(cat "$WORK/err")"
finish
