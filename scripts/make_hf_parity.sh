#!/usr/bin/env bash
# Regenerates the HF parity assets tests/assets/hf_parity_{gpt2,llama}.safetensors:
#   1. build/bin/test_hf in dump mode exports the parity models (the very exports the test
#      makes) and their tokens into a temporary directory;
#   2. scripts/hf_reference.py (independent float64 GPT2LMHeadModel / LlamaForCausalLM, run
#      with Debian's /usr/bin/python3 + python3-torch) computes the reference logits from
#      each exported directory and records the sha256 of its config.json and tensors.
# The test then proves, without torch, that its fresh export is that directory and that our
# logits match. Regenerate only when the export format changes on purpose.
# Usage: scripts/make_hf_parity.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
TEST_BIN="$BUILD/bin/test_hf"
[[ -x "$TEST_BIN" ]] || { echo "$TEST_BIN not built" >&2; exit 1; }
/usr/bin/python3 -c 'import torch, numpy' || { echo "/usr/bin/python3 needs torch and numpy" >&2; exit 1; }
TMP="$(mktemp -d /tmp/gossamer-hf-parity.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
GOSSAMER_HF_PARITY_EXPORT_DIR="$TMP" GOSSAMER_TEST_ASSETS="$PWD/tests/assets" \
  "$TEST_BIN" --gtest_filter='HfParity.*ExportMatchesCommittedReference' >/dev/null
for arch in gpt2 llama; do
  [[ -f "$TMP/$arch/config.json" ]] || { echo "no $arch export in $TMP" >&2; exit 1; }
  /usr/bin/python3 scripts/hf_reference.py "$TMP/$arch" --tokens-file "$TMP/$arch.tokens.safetensors" \
    --out "tests/assets/hf_parity_$arch.safetensors"
done
"$TEST_BIN" --gtest_filter='HfParity.*'
