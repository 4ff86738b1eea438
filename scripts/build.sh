#!/usr/bin/env bash
# Configures and builds gossamer into build/ (Release). Idempotent.
#   bash scripts/build.sh [--target NAME]... [CMAKE_ARGS...]
# --target: build only these targets (the quickstart builds `gossamer` alone: no tests, no
# benchmarks); the rest of the arguments go to CMake (e.g. -DGOSSAMER_WERROR=ON).
# The binary is build/bin/gossamer.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [[ "${1:-}" == --target ]]; do
  [[ -n "${2:-}" ]] || { echo "build.sh: --target needs a name" >&2; exit 2; }
  targets+=(--target "$2")
  shift 2
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif (($#)); then
  cmake -S . -B build "$@"
fi
cmake --build build -j "$(nproc)" "${targets[@]}"
