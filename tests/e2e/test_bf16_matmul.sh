# kernels.matmul_dtype = bf16 from the command line (docs/CUDA.md, "bf16 products"): GPT-2 and
# Llama train with bf16 products on the CPU (oneDNN's bf16 kernels where the CPU has bf16
# instructions, else emulated), the log says which, and the loss curve tracks the fp32 run's
# (close at every step, never equal: the products did change); an unknown dtype is refused by key.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
for family in gpt2 llama; do
  cfg="configs/test/$family-tiny-v512.json"
  for dtype in fp32 bf16; do
    "$G" train -c "$cfg" --set train.steps=20 --set train.eval_every=20 --set train.eval_batches=4 \
      --set train.log_every=1 --set train.checkpoint_every=0 --set "kernels.matmul_dtype=$dtype" \
      --out "$WORK/$family-$dtype" >"$WORK/$family-$dtype.log" 2>&1 \
      || { tail -n 20 "$WORK/$family-$dtype.log"; fail "$family $dtype: training failed"; }
  done
  grep -Eq 'matrix products in bf16 \(fp32 accumulation, fp32 master weights\); on the CPU (by oneDNN|emulated)' \
    "$WORK/$family-bf16.log" \
    && grep -q 'matrix products in fp32$' "$WORK/$family-fp32.log" \
    && pass "$family: the log names the products' dtype and the CPU path: $(grep -o 'on the CPU .*' "$WORK/$family-bf16.log")" \
    || fail "$family: no dtype in the log"
  node -e '
    const rd = (f) => require("fs").readFileSync(f, "utf8").split("\n").filter(Boolean).map(JSON.parse);
    const a = rd(process.argv[1]), b = rd(process.argv[2]);
    const la = a.filter((j) => "loss" in j), lb = b.filter((j) => "loss" in j);
    let worst = 0, equal = 0;
    for (let i = 0; i < la.length; ++i) {
      const d = Math.abs(la[i].loss - lb[i].loss) / la[i].loss;
      worst = Math.max(worst, d); equal += d === 0;
    }
    const va = a.find((j) => "val_loss" in j && j.step === 20).val_loss;
    const vb = b.find((j) => "val_loss" in j && j.step === 20).val_loss;
    const dv = Math.abs(va - vb) / va;
    console.log(`${la.length} steps, largest relative loss difference ${worst.toExponential(2)}, ` +
                `${equal} equal; validation ${va.toFixed(4)} (fp32) vs ${vb.toFixed(4)} (bf16)`);
    process.exit(la.length === 20 && lb.length === 20 && worst < 0.01 && equal === 0 && dv < 0.01 ? 0 : 1);' \
    "$WORK/$family-fp32/metrics.jsonl" "$WORK/$family-bf16/metrics.jsonl" >"$WORK/cmp" \
    && pass "$family: bf16 tracks fp32: $(cat "$WORK/cmp")" || fail "$family: bf16 vs fp32: $(cat "$WORK/cmp")"
done
# MFU against the peak of the products' own dtype: a bf16 run measures the bf16 product's rate.
"$G" train -c configs/test/gpt2-tiny-v512.json --set train.steps=1 --set train.eval_every=0 \
  --set kernels.matmul_dtype=bf16 --set metrics.mfu=true --out "$WORK/peak" >"$WORK/peak.log" 2>&1 \
  && grep -q 'MFU peak [0-9.]* GFLOP/s per rank (measured cpu bf16 matmul)' "$WORK/peak.log" \
  && pass "a bf16 run's MFU is against the bf16 product's measured rate: $(grep -o 'MFU peak [^;]*' "$WORK/peak.log")" \
  || fail "bf16 MFU peak: $(grep -o 'MFU peak [^;]*' "$WORK/peak.log")"
expect_error "unknown matmul dtype" 'kernels.matmul_dtype: expected a string, one of "fp32" or "bf16"' \
  "$G" train -c configs/test/gpt2-tiny-v512.json --set kernels.matmul_dtype=fp16 --out "$WORK/bad"
finish
