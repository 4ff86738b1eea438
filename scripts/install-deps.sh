#!/usr/bin/env bash
# Installs every Debian package gossamer needs to build, test and run on the CPU.
# Idempotent: packages already present are skipped; apt-get update runs only when
# something is missing. Options (any order):
#   --train-only  only what building the `gossamer` binary and running the quickstart need
#            (scripts/quickstart.sh and the README's "Using it"): no GoogleTest, clang-format
#            or local Slurm
#   --dev    also the PyTorch reference used to regenerate golden test files (not needed to
#            build or test)
#   --study  also the sources of the study corpus (scripts/get-corpus.sh study, which runs this
#            on first use): linux-source-6.1 (a 140 MB download) and python3.11-doc, at the
#            versions pinned in scripts/study-corpus.manifest while the apt sources have them
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Building and running the trainer (the quickstart's set).
packages=(
  build-essential cmake pkg-config ninja-build
  libopenmpi-dev openmpi-bin
  libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev
  libsentencepiece-dev sentencepiece
  python3-matplotlib python3-numpy
  diatheke sword-text-web
  libzstd-dev liblz4-dev  # `gossamer bench codec` compares the zip codec with zstd and lz4
  iproute2  # ip and tc: scripts/emulate-network.sh
)
# Testing and the tools around it.
test_packages=(
  libgtest-dev libgmock-dev clang-format
  slurmd slurmctld slurm-client munge libpmix-dev  # local Slurm (scripts/slurm-local.sh); its mpi/pmix dlopens libpmix.so
)
study=0
train_only=0
for arg in "$@"; do
  case "$arg" in
    --train-only) train_only=1 ;;
    --dev) packages+=(python3-torch) ;;
    --study) study=1; packages+=(linux-source-6.1 python3.11-doc) ;;
    *) echo "usage: scripts/install-deps.sh [--train-only] [--dev] [--study]" >&2; exit 2 ;;
  esac
done
((train_only)) || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  specs=()
  for p in "${missing[@]}"; do
    # --study: a package the study manifest pins is installed at that version when available.
    want=""
    ((study)) && want="$(awk -v n="$p" '$1 == "deb" && $2 == n { print $3 }' "$root/scripts/study-corpus.manifest")"
    if [[ -z "$want" ]]; then
      specs+=("$p")
    elif apt-cache madison "$p" | awk -F' *[|] *' -v v="$want" '$2 == v { found = 1 } END { exit !found }'; then
      specs+=("$p=$want")
    else
      echo "install-deps: $p $want (pinned in scripts/study-corpus.manifest) is not in the apt" \
        "sources any more; installing the current version (scripts/get-corpus.sh study explains)" >&2
      specs+=("$p")
    fi
  done
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${specs[@]}" >/dev/null
else
  echo "install-deps: all ${#packages[@]} packages present"
fi

# node and npm ship with the machine image (nodesource); Debian's npm conflicts with it.
command -v node >/dev/null || { echo "install-deps: node not found; install Node.js >= 18" >&2; exit 1; }
