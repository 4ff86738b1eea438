# `gossamer bench ops` (bench/op_bench.h) on the CPU op table, at the tiny GPT-2 and Llama
# shapes: exit 0 (the command refuses a table with an op it has no row for), the header with the
# measured peaks, a row for each call of the step with a positive time, the op-sum estimate; a
# config asking for the CUDA table on a machine without a GPU (or a build without CUDA) is refused
# naming kernels.device. Times are not checked (a benchmark, not a test).
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
small=(--iters 2 --warmup 1 --matmul-n 128 --copy-bytes 4194304)
for family in gpt2 llama; do
  out="$WORK/$family.txt"
  if "$G" bench ops -c "configs/test/$family-tiny-v512.json" "${small[@]}" >"$out" 2>"$WORK/$family.log"; then
    pass "$family: bench ops exits 0 (every op of the table has a row)"
  else
    cat "$out" "$WORK/$family.log"; fail "$family: bench ops failed"; continue
  fi
  grep -qE "^# bench ops: the cpu op table; $family L2 C64 NH4 V512, B = 4, T = 64$" "$out" \
    && grep -qE '^# measured peaks: memory [0-9.]+ GB/s .*fp32 matmul [0-9.]+ GFLOP/s' "$out" \
    && pass "$family: header names the table, the shapes and the measured peaks" \
    || fail "$family: header: $(head -n 2 "$out")"
  node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").split("\n")
      .filter((l) => /^\| [a-z]/.test(l) && !l.startsWith("| op |")).map((l) => l.split("|").map((c) => c.trim()));
    const bad = rows.filter((c) => !(Number(c[5]) > 0) || !(Number(c[4]) >= 0));
    const ops = new Set(rows.map((c) => c[1]));
    const want = process.argv[2] === "llama" ? ["rmsnorm_forward", "rope_backward", "swiglu_forward"] : ["layernorm_forward", "gelu_backward"];
    const missing = [...want, "attention_backward", "matmul_forward", "adamw_update", "top_k_indices", "memory"].filter((o) => !ops.has(o));
    console.log(`${rows.length} rows, ${ops.size} ops` + (bad.length ? `; bad times: ${bad.map((c) => c[1])}` : "") + (missing.length ? `; missing ${missing}` : ""));
    process.exit(rows.length >= 60 && !bad.length && !missing.length ? 0 : 1);' "$out" "$family" >"$WORK/cmp" \
    && pass "$family: $(cat "$WORK/cmp"), every time positive" || fail "$family: rows: $(cat "$WORK/cmp")"
  grep -qE '^op-sum estimate of one training step .*: [0-9.]+ ms, [0-9]+ tokens/s' "$out" \
    && pass "$family: the op-sum estimate of a step" || fail "$family: no op-sum line"
done
# The CUDA table: on a GPU machine it runs; elsewhere it is refused naming the key (the message
# depends on the build, so it is not a row of docs/RELIABILITY.md).
if out="$("$G" bench ops -c configs/test/gpt2-tiny-v512.json --set kernels.device=cuda "${small[@]}" 2>&1)"; then
  pass "bench ops on the CUDA table ran (a GPU machine)"
else
  grep -qE "kernels.device = cuda: (no GPU is visible|this build has no CUDA backend)" <<<"$out" \
    && pass "bench ops on the CUDA table without a GPU: refused, naming kernels.device" \
    || fail "bench ops on cuda without a GPU: $out"
fi
finish
