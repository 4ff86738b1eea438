# scripts/scape-selection.py (docs/RESULTS.md, issue 12) on a real SCAPE checkpoint of the tiny
# model: one row per tensor group whose parameter and mask shares each sum to 100%, the "all" row
# selecting the mask's density (SCAPE-90: 10%; 3 sparse steps update 10% to 30%), and
# a clear error for a checkpoint without SCAPE state. Needs /usr/bin/python3 with numpy (Debian's).
source "$(dirname "$0")/lib.sh"
require_data
PY=/usr/bin/python3
"$PY" -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY with numpy not found (scripts/install-deps.sh installs python3-numpy)" >&2; exit 1; }

train_tiny() {  # NAME ARGS...
  local name="$1"; shift
  "$GOSSAMER" train -c configs/test/gpt2-tiny-v512.json --set train.steps=6 --set train.eval_every=0 \
    --set train.log_every=100 --set train.checkpoint_every=6 --out "$WORK/$name" "$@" \
    >"$WORK/$name.log" 2>&1 || { tail -n 20 "$WORK/$name.log"; fail "$name: training failed"; }
}
train_tiny s90 --set optimizer.name=scape --set optimizer.scape.sparsity=0.9 \
  --set optimizer.scape.dense_warmup_steps=3
out="$("$PY" scripts/scape-selection.py "$WORK/s90/checkpoints/step_00000006" --warmup 3 2>&1)" \
  || fail "scape-selection exited non-zero: $out"
sums="$(grep '^| ' <<<"$out" | grep -v '^| tensor\|^| all' | awk -F'|' '
  { gsub(/[ %]/, "", $4); gsub(/[ %]/, "", $5); p += $4; m += $5; n++ }
  END { printf "%d %.1f %.1f", n, p, m }')"
read -r rows params mask <<<"$sums"
[[ $rows -ge 10 ]] && node -e "process.exit(Math.abs($params - 100) < 0.6 && Math.abs($mask - 100) < 0.6 ? 0 : 1)" \
  && pass "$rows tensor groups, shares of the parameters and of the mask sum to 100% ($params, $mask)" \
  || fail "shares: $sums; $out"
all="$(grep '^| all |' <<<"$out")"
upd="$(awk -F'|' '{ gsub(/[ %]/, "", $7); print $7 }' <<<"$all")"
[[ "$all" == "| all | "*" | 100.0% | 100.0% | 10.00% | "* ]] \
  && node -e "process.exit($upd >= 10 && $upd <= 30 ? 0 : 1)" \
  && pass "all: 10.00% selected (SCAPE-90); $upd% updated in the 3 sparse steps (10% to 30%)" \
  || fail "all row: $all"

train_tiny adamw --set optimizer.name=adamw
expect_error "a checkpoint without SCAPE state" 'no scape.next_mask \(not a SCAPE checkpoint\?\)' \
  "$PY" scripts/scape-selection.py "$WORK/adamw/checkpoints/step_00000006" --warmup 3
finish
