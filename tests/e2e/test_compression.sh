# Compressed collectives end to end (parallel.compression, docs/COMM.md), at 4 ranks on the tiny
# model: training with compression on is bit-identical to the same run through the decorator's
# uncompressed path (plain): every logged loss and the final model, for replicated data parallel
# with bf16 gradients (all-reduce) and ZeRO-1 with fp32 (reduce-scatter + all-gather); the metrics
# count compressed calls and raw next to wire bytes; adaptive on shared memory measures the link
# and steps aside (the backend runs every collective directly), and on a configured slow link
# compresses; bad settings are refused naming the key.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(--set train.steps=8 --set train.eval_every=0 --set train.log_every=1
        --set train.checkpoint_every=0 --set data.micro_batch=2
        --set parallel.compression_min_bytes=0)
train4() {  # NAME ARGS... (4 ranks)
  local name="$1"; shift
  mpirun_np 4 "$G" train -c $TINY "${common[@]}" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 20 "$WORK/$name.log"; fail "$name: training failed"; return 1; }
}
metrics() { echo "$WORK/$1/metrics.jsonl"; }
final_model() { echo "$WORK/$1/checkpoints/step_00000008/model.safetensors"; }
# comm_totals FILE KIND: "calls compressed_calls bytes_sent raw_bytes_sent" summed over the run.
comm_totals() {
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)
      .map(JSON.parse).filter((j) => "loss" in j && j.comm && j.comm[process.argv[2]]);
    const t = [0, 0, 0, 0];
    for (const j of lines) { const c = j.comm[process.argv[2]];
      t[0] += c.calls; t[1] += c.compressed_calls; t[2] += c.bytes_sent; t[3] += c.raw_bytes_sent; }
    console.log(t.join(" "));' "$1" "$2"
}

# 1. Bit-identical to the plain path, and compressed on the wire.
# (dp-bf16: 50 kB buckets, so that the gradients of the small model travel in several)
for setup in "dp-bf16:all_reduce:--set parallel.comm_dtype=bf16 --set parallel.bucket_mb=0.05" \
             "zero1-fp32:reduce_scatter:--set parallel.zero_stage=1"; do
  name="${setup%%:*}"; rest="${setup#*:}"; kind="${rest%%:*}"; args="${rest#*:}"
  # shellcheck disable=SC2086  # args holds whole --set options
  train4 "$name-plain" $args --set parallel.compression=plain || continue
  # shellcheck disable=SC2086
  train4 "$name-on" $args --set parallel.compression=on || continue
  if diff <(losses "$(metrics "$name-plain")") <(losses "$(metrics "$name-on")") >/dev/null \
     && cmp -s "$(final_model "$name-plain")" "$(final_model "$name-on")"; then
    pass "$name: compression on = plain bit for bit ($(losses "$(metrics "$name-on")" | wc -l) losses, the final model)"
  else
    fail "$name: compression on differs from plain"
  fi
  read -r calls compressed sent raw <<<"$(comm_totals "$(metrics "$name-on")" "$kind")"
  read -r pcalls pcompressed psent praw <<<"$(comm_totals "$(metrics "$name-plain")" "$kind")"
  # (all_reduce: the gradient buckets compress; a step's small non-sum or integer reductions pass)
  if [[ "$compressed" -gt 0 && "$compressed" -ge $((calls * 3 / 4)) && "$sent" -lt "$raw" \
        && "$raw" == "$praw" \
        && "$pcompressed" == 0 && "$psent" == "$praw" && "$pcalls" == "$calls" ]]; then
    pass "$name: $kind $compressed of $calls calls compressed, $sent bytes on the wire for $raw raw ($(node -e 'console.log((process.argv[1] / process.argv[2]).toFixed(3))' "$raw" "$sent")x); plain: $psent = raw"
  else
    fail "$name: $kind accounting: on $calls calls, $compressed compressed, sent $sent raw $raw; plain $pcalls calls, $pcompressed compressed, sent $psent raw $praw"
  fi
done

# 2. Adaptive on shared memory: speeds measured and agreed, the fast link makes no call
# compressed: with parallel.sum_order = backend every one is the backend's own (the decorator
# steps aside), with fixed (the default) every one runs the plain algorithm.
for order in backend fixed; do
  train4 "adaptive-shm-$order" --set parallel.comm_dtype=bf16 --set parallel.compression=adaptive \
    --set parallel.compression_min_bytes=65536 --set parallel.sum_order=$order || continue
  log="$WORK/adaptive-shm-$order.log"
  read -r calls compressed _ _ <<<"$(comm_totals "$(metrics "adaptive-shm-$order")" all_reduce)"
  expected="runs every collective directly"
  [[ $order == fixed ]] && expected="every call runs the plain algorithm \(parallel.sum_order = fixed\)"
  if grep -q "zip: adaptive compression: link .* GB/s (measured, min over ranks)" "$log" \
     && grep -qE "cannot beat this link .* at any ratio.*$expected" "$log" \
     && [[ "$calls" -gt 0 && "$compressed" == 0 ]]; then
    pass "adaptive on shared memory, sum_order $order: $(grep -o 'link [0-9.]* GB/s' "$log"), 0 of $calls all_reduce calls compressed"
  else
    fail "adaptive on shared memory, sum_order $order: $compressed of $calls compressed; $(grep 'zip:' "$log" | head -n 3)"
  fi
done
train4 adaptive-slow --set parallel.comm_dtype=bf16 --set parallel.compression=adaptive \
  --set parallel.link_gbps=0.001 --set parallel.codec_gbps=1 && {
  read -r calls compressed _ _ <<<"$(comm_totals "$(metrics adaptive-slow)" all_reduce)"
  if [[ "$compressed" -gt 0 ]] && grep -q "zip: all_reduce bf16 .* -> compressed (model:" "$WORK/adaptive-slow.log"; then
    pass "adaptive on a configured 1 MB/s link: $compressed of $calls all_reduce calls compressed; $(grep -m1 -o 'all_reduce bf16 .* -> compressed (model[^)]*)' "$WORK/adaptive-slow.log")"
  else
    fail "adaptive on a slow link did not compress: $(grep 'zip:' "$WORK/adaptive-slow.log" | head -n 5)"
  fi
}

# 3. Refusals naming the key.
train1() { "$G" train -c $TINY --set train.steps=1 --out "$WORK/refused" "$@"; }
expect_error "unknown compression mode" 'parallel\.compression.*(off|adaptive)' \
  train1 --set parallel.compression=zstd
expect_error "negative link bandwidth" 'parallel\.link_gbps: must be >= 0' \
  train1 --set parallel.link_gbps=-1
expect_error "negative compression threshold" 'parallel\.compression_min_bytes: must be >= 0' \
  train1 --set parallel.compression_min_bytes=-5
finish
