#!/usr/bin/env bash
# Prepares a training corpus end to end: GPT-2 tokenizer files (get-tokenizer.sh), the text
# corpus (get-corpus.sh), then token shards with `gossamer prep`:
#   data/<name>/train_000000.bin ...  from data/corpus/<name>/train.txt
#   data/<name>/val_000000.bin ...    from data/corpus/<name>/val.txt
# Usage: scripts/prepare-data.sh [web|brown|study] [spm [PIECES]]   (default web, GPT-2 tokens).
# With `spm`, a SentencePiece model (BPE, PIECES pieces, default 8000, byte fallback) is first
# trained on train.txt only:
#   data/<name>-spm/tokenizer.model, tokenizer.vocab, train_000000.bin, val_000000.bin
# (data/<name>-spm<PIECES>/ for another size; a run on them needs model.vocab_size PIECES and
# data.tokenizer "spm:<that directory>/tokenizer.model"). The tests' small models use
# `web spm 512` (configs/test/*-v512.json): a 512-row LM head instead of GPT-2's 50,257.
# Idempotent: every step skips what is already there (delete data/<name> or data/<name>-spm to
# re-tokenise). The binary is build/bin/gossamer unless GOSSAMER_BIN names another.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: scripts/prepare-data.sh [web|brown|study] [spm [PIECES]]"
name="${1:-web}"
kind="${2:-gpt2}"
pieces="${3:-8000}"
case "$name" in
  web | brown | study) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
case "$kind" in
  gpt2 | spm) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
if [[ ! "$pieces" =~ ^[1-9][0-9]*$ || ( "$kind" == gpt2 && $# -ge 3 ) ]]; then
  echo "$usage" >&2; exit 2
fi
cd "$root"
bin="${GOSSAMER_BIN:-build/bin/gossamer}"

[[ "$kind" == gpt2 ]] && bash scripts/get-tokenizer.sh
bash scripts/get-corpus.sh "$name"

out="data/$name"
[[ "$kind" == spm ]] && out="data/$name-spm"
[[ "$kind" == spm && "$pieces" != 8000 ]] && out="data/$name-spm$pieces"
model="$out/tokenizer.model"
for split in train val; do
  if [[ -f "$out/${split}_000000.bin" ]]; then
    echo "prepare-data: $out/${split}_*.bin already present"
    continue
  fi
  if [[ ! -x "$bin" ]]; then
    echo "prepare-data: ERROR: $bin not found; build first (scripts/build.sh)" >&2
    exit 1
  fi
  if [[ "$kind" == gpt2 ]]; then
    tok=(--tokenizer data/tokenizers/gpt2)
  elif [[ -f "$model" ]]; then
    tok=(--tokenizer "spm:$model")
  else  # only train.txt reaches here first: the model never sees the validation text
    tok=(--train-spm "$out/tokenizer" --spm-vocab-size "$pieces" --spm-type bpe --spm-byte-fallback)
  fi
  "$bin" prep "${tok[@]}" --output "$out/$split" "data/corpus/$name/$split.txt"
done
