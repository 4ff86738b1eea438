#!/usr/bin/env bash
# Configures and builds gossamer into build/ (Release). Idempotent; extra arguments are passed
# to CMake (e.g. -DGOSSAMER_WERROR=ON). The binary is build/bin/gossamer.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif (($#)); then
  cmake -S . -B build "$@"
fi
cmake --build build -j "$(nproc)"
