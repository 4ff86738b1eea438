# The layer check (cmake/layers.cmake, cmake/check_layers.cmake): the source tree passes, and a
# copy with one include across the layers fails, naming the file, the line and the layer.
source "$(dirname "$0")/lib.sh"
RULES="$(dirname "$GOSSAMER")/../layers.txt"
[[ -f "$RULES" ]] || { fail "no $RULES (written by cmake/layers.cmake at configure time)"; exit 1; }
check() { cmake -DRULES="$RULES" -DSOURCE_DIR="$1" -P "$SRC/cmake/check_layers.cmake" 2>&1; }

out="$(check "$SRC")" && pass "the source tree: ${out##*layers: }" || fail "the source tree fails: $out"

# inject FILE LINE: a copy of the layered folders with LINE added at the top of FILE.
inject() {
  rm -rf "$WORK/tree" && mkdir -p "$WORK/tree"
  cp -r "$SRC/src" "$SRC/kernels" "$SRC/bench" "$WORK/tree/"
  sed -i "1i $2" "$WORK/tree/$1"
}
for c in "src/hf/hf_weights.cpp|#include \"train/trainer.h\"|train" \
         "kernels/cpu/gelu.cpp|#include \"comm/communicator.h\"|comm" \
         "src/run/checkpoint.h|#include \"eval/evaluate.h\"|eval" \
         "src/core/log.cpp|  #  include \"io/json_file.h\"|io"; do
  IFS='|' read -r file line layer <<<"$c"
  inject "$file" "$line"
  if out="$(check "$WORK/tree")"; then
    fail "$file including layer $layer passed the check"
  elif grep -q "$file:1: includes a header of layer '$layer'" <<<"$out"; then
    pass "$file including layer $layer is refused"
  else
    fail "$file including $layer: failed without naming it: $out"
  fi
done
((FAILURES == 0))
