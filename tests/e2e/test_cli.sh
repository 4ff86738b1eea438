# The command line is an interface scripts rely on: its subcommands and flags are frozen here
# (adding one means changing this list on purpose), and docs/CONFIG.md is exactly what
# `gossamer config-reference` prints (the reference cannot drift from the parser).
source "$(dirname "$0")/lib.sh"

flags_of() { "$GOSSAMER" "$@" --help | grep -oE '^\s+(-[a-z],)?--[a-z-]+|^\s+[a-z-]+ ' | tr -d ' ' | sort | tr '\n' ' '; }

check() {
  local name="$1" expected="$2"; shift 2
  local got; got="$(flags_of "$@")"
  [[ "$got" == "$expected" ]] && pass "$name flags: $got" || fail "$name flags changed: got [$got], expected [$expected]"
}
check "top level" "--version -h,--help bench config-reference eval export-hf generate import-hf prep sweep train " 
check "train" "--allow-change --init-from --out --overwrite --ranks --resume --set -c,--config -h,--help " train
check "prep" "--allow-binary --docs --output --shard-tokens --spm-byte-fallback --spm-type --spm-vocab-size --tokenizer --train-spm -h,--help inputs " prep
check "eval" "--checkpoint --data --hellaswag --json --limit --set -c,--config -h,--help " eval
check "generate" "--checkpoint --device --prompt --seed --temperature --tokenizer --tokens --top-k --top-p -h,--help " generate
check "bench" "--set --steps --warmup -c,--config -h,--help codec comm ops " bench
check "bench codec" "--checkpoint --checksum --chunk-elems --elements --iters --threads --warmup -h,--help " bench codec
check "bench comm" "--backend --check --codec-gbps --compression --compression-min-bytes --dtype --iters --link-gbps --max-bytes --min-bytes --ops --step-factor --warmup -h,--help " bench comm
check "export-hf" "--force --no-tokenizer --tokenizer -h,--help checkpoint hf-dir " export-hf
check "import-hf" "--force -h,--help checkpoint hf-dir " import-hf
check "sweep" "--dry-run --out --set --summarize-only -h,--help sweep-file " sweep

if diff <("$GOSSAMER" config-reference) docs/CONFIG.md >/dev/null; then
  pass "docs/CONFIG.md matches config-reference"
else
  fail "docs/CONFIG.md is stale: regenerate with build/bin/gossamer config-reference > docs/CONFIG.md"
fi
"$GOSSAMER" --version | grep -qE '^[0-9]+\.[0-9]+\.[0-9]+' && pass "version" || fail "--version"
finish
