#!/usr/bin/env bash
# Prepares a training corpus end to end: GPT-2 tokenizer files (get-tokenizer.sh), the text
# corpus (get-corpus.sh), then token shards with `gossamer prep`:
#   data/<name>/train_000000.bin ...  from data/corpus/<name>/train.txt
#   data/<name>/val_000000.bin ...    from data/corpus/<name>/val.txt
# Usage: scripts/prepare-data.sh [web|brown]   (default web). Idempotent: every step skips
# what is already there (delete data/<name> to re-tokenise). The binary is build/bin/gossamer
# unless GOSSAMER_BIN names another.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-web}"
case "$name" in
  web | brown) ;;
  *) echo "usage: scripts/prepare-data.sh [web|brown]" >&2; exit 2 ;;
esac
cd "$root"
bin="${GOSSAMER_BIN:-build/bin/gossamer}"

bash scripts/get-tokenizer.sh
bash scripts/get-corpus.sh "$name"

for split in train val; do
  if [[ -f "data/$name/${split}_000000.bin" ]]; then
    echo "prepare-data: data/$name/${split}_*.bin already present"
    continue
  fi
  if [[ ! -x "$bin" ]]; then
    echo "prepare-data: ERROR: $bin not found; build first (scripts/build.sh)" >&2
    exit 1
  fi
  "$bin" prep --tokenizer data/tokenizers/gpt2 --output "data/$name/$split" \
    "data/corpus/$name/$split.txt"
done
