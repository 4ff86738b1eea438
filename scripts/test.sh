#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs dependencies, prepares the tokenizer and
# the default corpus (both needed by tokenizer and end-to-end tests), builds with warnings as
# errors, runs every ctest test, then builds the unit tests with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs them. Idempotent. Exit status is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each phase's start, with the seconds since this script began (CI's time budget: 25 minutes).
phase() { echo "== $1 ($(date -u +%T) UTC, ${SECONDS} s in) =="; }
trap 'echo "== test.sh ended with status $? after ${SECONDS} s =="' EXIT

phase "installing dependencies"
bash scripts/install-deps.sh

phase "formatting (clang-format, .clang-format)"
git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror
phase "building"
# The tests, and CUDA when nvcc is found, even where the quickstart configured build/ without.
bash scripts/build.sh -DGOSSAMER_WERROR=ON -DGOSSAMER_TESTS=ON -DGOSSAMER_CUDA=AUTO
phase "preparing the data"
bash scripts/prepare-data.sh web
bash scripts/prepare-data.sh web spm 512  # the tests' small-vocabulary models

phase "ctest (Release)"
ctest --test-dir build --output-on-failure -j 2 --timeout 1200
phase "docs/RELIABILITY.md against the cases the tests checked"
bash scripts/reliability-table.sh --check build

if [[ "${GOSSAMER_SKIP_SANITIZERS:-0}" != 1 ]]; then
  phase "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer: building"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # -O1 -g1 (line tables: stack traces keep file:line) compiles in half the time of -O2 -g:
  # 19 s against 38 s for src/run/run_config.cpp, and this build was 15 of CI's 37 minutes. The
  # test code itself at -O0: 21 s against 40 s for tests/unit/test_config.cpp.
  [[ -f build-asan/CMakeCache.txt ]] || cmake -S . -B build-asan "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DGOSSAMER_TEST_OPT=-O0 -DGOSSAMER_SANITIZE=ON -DGOSSAMER_CUDA=OFF -DGOSSAMER_WERROR=ON \
    >/dev/null
  # Only the unit tests run here: build their targets, not the CLI, benches and MPI tests.
  mapfile -t unit_targets < <(ctest --test-dir build-asan -N -L unit |
    sed -n 's/^ *Test *#[0-9]*: unit\.//p')
  ((${#unit_targets[@]} > 0)) || { echo "no unit tests found in build-asan" >&2; exit 1; }
  cmake --build build-asan -j "$(nproc)" --target "${unit_targets[@]}"
  phase "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer: running"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -L unit -j 2 --timeout 1800
fi
