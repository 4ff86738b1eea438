#!/usr/bin/env bash
# The README's "Using it" block, run line by line as a newcomer pastes it, in a scratch directory
# that sees the repository's build, configs, scripts, test assets and prepared data. The lines
# are taken from README.md itself, so a change there that breaks a line fails here. Only the
# lengths change, so that the block runs in under two minutes: trainings take 6 steps (the
# resume line 12), the sweep's points 4, the benchmark 1 step, bench comm small sizes, bench
# codec a small data set, bench ops one batch per op and small peaks, eval's validation loss a
# shard of 9,950 tokens. A line of a kind shorten() does not know fails (it must learn it, not
# run it at full length). Each line must exit 0; then the files the block promises are checked.
source "$(dirname "$0")/lib.sh"

block="$(awk '/^## Using it/ {u = 1} u && /^```bash/ {b = 1; next} b && /^```/ {exit} b' README.md)"
[[ -n "$block" ]] || { echo "FAIL: README.md has no bash block under '## Using it'" >&2; exit 1; }

# The scratch root: links to what the lines read, real directories for what they write.
mkdir -p "$WORK/root/data" "$WORK/root/build" "$WORK/root/tests"
ln -s "$SRC/configs" "$WORK/root/configs"
ln -s "$SRC/scripts" "$WORK/root/scripts"
ln -s "$SRC/tests/assets" "$WORK/root/tests/assets"
mkdir -p "$WORK/root/build/bin" && ln -s "$GOSSAMER" "$WORK/root/build/bin/gossamer"
for d in "$SRC"/data/*; do ln -s "$d" "$WORK/root/data/$(basename "$d")"; done
[[ -f data/corpus/web/val.txt && -f data/web/val_000000.bin ]] \
  || { echo "FAIL: prepared data missing (scripts/prepare-data.sh web)" >&2; exit 1; }

shorten() {  # one README line -> the same command with fewer steps
  local line="$1"
  line="${line%%  #*}"  # a trailing comment (two spaces, then #)
  case "$line" in
    *" train "*)
      if [[ "$line" == *"train.steps="* ]]; then
        line="$(sed -E 's/train\.steps=[0-9]+/train.steps=12/' <<<"$line")"
      else
        line+=" --set train.steps=6"
      fi
      line+=" --set train.eval_every=3 --set train.eval_batches=2 --set train.log_every=3" ;;
    *" sweep "*) line+=" --set train.steps=4 --set train.eval_every=2" ;;
    *" bench -c "*) line+=" --steps 1 --warmup 0" ;;
    *" bench comm"*) line+=" --max-bytes 65536 --iters 2 --warmup 1" ;;
    *" bench codec"*) line+=" --elements 65536 --iters 1 --warmup 0" ;;
    *" bench ops"*) line+=" --iters 1 --warmup 0 --matmul-n 128 --copy-bytes 4194304" ;;
    # The validation loss over a shard of the corpus's first 9,950 tokens, not all of them.
    *" eval "*" --json"*) [[ "$line" == *--hellaswag* ]] || line+=" --data $WORK/small.bin" ;;
    # Commands that take seconds as written.
    *" generate "* | *" eval "* | *" export-hf "* | *" import-hf "* | *" prep "* | \
      *" config-reference"*) ;;
    *) return 1 ;;  # a kind of line this test does not know: it must learn it, not run it long
  esac
  printf '%s' "$line"
}

node -e '
  const fs = require("fs"), b = fs.readFileSync(process.argv[1]), n = 9950;
  const out = Buffer.from(b.subarray(0, 1024 + 2 * n)); out.writeInt32LE(n, 8);
  fs.writeFileSync(process.argv[2], out);' data/web/val_000000.bin "$WORK/small.bin"

cd "$WORK/root"
n=0
while IFS= read -r line; do
  [[ -z "${line// /}" || "$line" =~ ^[[:space:]]*# ]] && continue
  n=$((n + 1))
  if ! cmd="$(shorten "$line")"; then
    fail "line $n: no rule in shorten() for this kind of command: $line"
    continue
  fi
  start=$SECONDS
  if bash -c "$cmd" </dev/null >"$WORK/line$n.log" 2>&1; then
    pass "line $n ($((SECONDS - start)) s): $line"
  else
    rc=$?
    tail -n 15 "$WORK/line$n.log" >&2
    fail "line $n exited $rc: $cmd"
  fi
done <<<"$block"
[[ $n -ge 20 ]] && pass "$n command lines run" || fail "only $n command lines in the block"

# What the lines promise.
last_step() { ls "$1/checkpoints" 2>/dev/null | sed -n 's/^step_0*//p' | sort -n | tail -n 1; }
[[ "$(last_step runs/tiny)" == 6 ]] && pass "--overwrite started runs/tiny over" \
  || fail "runs/tiny: newest checkpoint $(last_step runs/tiny), expected 6 after --overwrite"
aside=(runs/tiny.*); [[ -d "${aside[0]}" && "$(last_step "${aside[0]}")" == 12 ]] \
  && pass "the resumed run (step 12) was moved aside to ${aside[0]}" \
  || fail "no run moved aside with step 12: ${aside[*]}"
for f in hf/tiny/config.json hf/tiny/model.safetensors ckpt/tiny/model.safetensors \
  data/mine/val_000000.bin data/mine-spm/spm.model data/mine-spm/val_000000.bin \
  runs/from-hf/metrics.jsonl runs/zero1/metrics.jsonl runs/scape/metrics.jsonl \
  runs/slow-link/metrics.jsonl runs/llama-tiny/metrics.jsonl runs/tiny-bf16/metrics.jsonl; do
  [[ -s "$f" ]] && pass "$f written" || fail "$f missing"
done
exit $((FAILURES > 0))
