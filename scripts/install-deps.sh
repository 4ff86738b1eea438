#!/usr/bin/env bash
# Installs every Debian package gossamer needs to build, test and run on the CPU.
# Idempotent: packages already present are skipped; apt-get update runs only when
# something is missing. Pass --dev to also install the PyTorch reference used to
# regenerate golden test files (not needed to build or test).
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libopenmpi-dev openmpi-bin
  libopenblas-dev libopenblas-openmp-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev
  libsentencepiece-dev sentencepiece
  libgtest-dev libgmock-dev clang-format
  python3-matplotlib python3-numpy
  diatheke sword-text-web
  slurmd slurmctld slurm-client munge libpmix-dev  # local Slurm (scripts/slurm-local.sh); its mpi/pmix dlopens libpmix.so

  iproute2
)
if [[ "${1:-}" == "--dev" ]]; then
  packages+=(python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all ${#packages[@]} packages present"
fi

# node and npm ship with the machine image (nodesource); Debian's npm conflicts with it.
command -v node >/dev/null || { echo "install-deps: node not found; install Node.js >= 18" >&2; exit 1; }
