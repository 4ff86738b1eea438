#!/usr/bin/env bash
# The device script (issue 16, docs/CUDA.md). On a GPU machine that has the CUDA toolkit, a host
# compiler, CMake (and ninja) and nothing else, no network either: builds the GPU-only
# configuration (cmake/gpu_only.cmake: the CUDA kernels, their CPU reference ops, the gpu tests),
# runs the gpu tests, writes every log to OUT_DIR and prints a short table last. Exit status: 0
# when every test passed, 1 when one failed or nothing could be built, 2 for bad arguments.
#   scripts/gpu-check.sh --prepare          here, where the project's dependencies are installed:
#                                           copies GoogleTest's source tree to .gpu-check/ (ignored
#                                           by git; carry it to the device machine with the tree)
#   scripts/gpu-check.sh OUT_DIR [--dry-run]
# --dry-run: for a machine without a GPU: the same steps up to the first GPU call (configure,
# build, run the tests, which report SKIPPED); it fails if any test ran instead of skipping,
# except in the binaries of NEEDS_NO_GPU (below), which check things that need no GPU.
# Then the benchmarks: bench_cuda_ops (per-op time against the roofline) and bench_cuda_train
# (tokens/s and MFU of training steps of GPT-2 124M and Llama ~500M on one GPU), and bench_nccl
# (NCCL's collectives across the machine's GPUs from one process; SKIPPED with one GPU) when NCCL
# is found: the CUDA install's, or the nvidia-nccl Python package's.
set -euo pipefail
cd "$(dirname "$0")/.."
PROG=gpu-check
# Test binaries whose tests need no GPU (tests/gpu/test_cuda_op_table.cpp: the op table is
# complete): they pass or fail on any machine, --dry-run included.
NEEDS_NO_GPU=(test_cuda_op_table)
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

gtest_dir=.gpu-check/googletest
if [[ "${1:-}" == --prepare ]]; then
  [[ -f /usr/src/googletest/CMakeLists.txt ]] ||
    die "/usr/src/googletest not found (Debian's googletest package; scripts/install-deps.sh installs it)"
  rm -rf "$gtest_dir" && mkdir -p .gpu-check && cp -r /usr/src/googletest "$gtest_dir"
  echo "$PROG: copied /usr/src/googletest to $gtest_dir ($(du -sh "$gtest_dir" | cut -f1)); carry .gpu-check"
  exit 0
fi
[[ $# -ge 1 && "$1" != -* ]] || { usage >&2; exit 2; }
out="$1"; shift
dry_run=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$PROG: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
start=$(date +%s)

# ---- the machine ---------------------------------------------------------------------------
nvcc_bin="$(command -v nvcc || true)"
[[ -z "$nvcc_bin" && -x /usr/local/cuda/bin/nvcc ]] && nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc_bin" ]] || die "no nvcc on PATH or in /usr/local/cuda/bin"
command -v cmake >/dev/null || die "no cmake on PATH"
{ echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -a)"; "$nvcc_bin" --version | tail -n 2
  echo "cores: $(nproc)"; } >"$out/machine.txt"
arch=""
if command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')"
  [[ "$cap" =~ ^[0-9]+$ ]] && arch="$cap"
  echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)" >>"$out/machine.txt"
elif ((dry_run == 0)); then
  die "nvidia-smi finds no GPU (use --dry-run on a machine without one)"
fi
[[ -d "$gtest_dir" ]] || gtest_dir=/usr/src/googletest
[[ -f "$gtest_dir/CMakeLists.txt" ]] ||
  die "no GoogleTest source: run scripts/gpu-check.sh --prepare where the dependencies are, and carry .gpu-check"
echo "$PROG: $(grep -E '^(gpu|cores):' "$out/machine.txt" | paste -sd ' ' -)"

# ---- build ---------------------------------------------------------------------------------
build=build-gpu-check
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake_args=(-S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGOSSAMER_GPU_ONLY=ON
            -DGOSSAMER_GTEST_SOURCE="$(cd "$gtest_dir" && pwd)" -DCMAKE_CUDA_COMPILER="$nvcc_bin")
# NCCL from the nvidia-nccl Python package when there is one (the device machines' image).
nccl_root="$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
[[ -n "$nccl_root" && -d "$nccl_root/include" ]] && cmake_args+=(-DGOSSAMER_NCCL_ROOT="$nccl_root")
# Only the GPU's own architecture when one is visible (a faster build); sm_80 and sm_90 otherwise.
[[ -n "$arch" ]] && cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="$arch")
echo "$PROG: configuring ($build, architectures ${arch:-80;90})"
cmake "${cmake_args[@]}" >"$out/configure.log" 2>&1 || die "configure failed: $out/configure.log"
echo "$PROG: building"
build_start=$(date +%s)
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || die "build failed: $out/build.log"
build_s=$(( $(date +%s) - build_start ))

# ---- the gpu tests -------------------------------------------------------------------------
status=0
rows=()
for bin in "$build"/bin/test_*; do
  name="$(basename "$bin")"
  t0=$(date +%s)
  rc=0
  # A hung kernel must not eat the device call: each binary has a cap (the op test the most).
  # The op test's double reference skips its finite-difference probes (the unit tests run them).
  limit=120
  [[ "$name" == test_cuda_ops ]] && limit=300
  GOSSAMER_SKIP_FD_CHECK=1 timeout "$limit" "$bin" --gtest_output="xml:$out/$name.xml" \
    >"$out/$name.log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  # gtest names failed and skipped tests twice (as they run, and in the closing list).
  count() { { grep "$1" "$out/$name.log" || true; } | awk '{print $4}' | sort -u | wc -l; }
  passed=$(count '^\[       OK \] [A-Za-z]')
  failed=$(count '^\[  FAILED  \] [A-Za-z]')
  skipped=$(count '^\[  SKIPPED \] [A-Za-z]')
  if ((rc == 124)); then
    rows+=("$name (timed out after $limit s)|$passed|$failed|$skipped|$secs")
  else
    rows+=("$name|$passed|$failed|$skipped|$secs")
  fi
  if ((rc != 0)); then status=1; fi
  if ((dry_run == 1 && passed > 0)) && [[ " ${NEEDS_NO_GPU[*]} " != *" $name "* ]]; then
    echo "$PROG: --dry-run, but $name ran $passed test(s) instead of skipping" >&2; status=1
  fi
done
((${#rows[@]} > 0)) || die "no test binary in $build/bin"

# The zip decoder's damage test again under compute-sanitizer's memcheck (fewer damaged
# messages): the guard bands catch stray writes, memcheck the out-of-bounds reads.
memcheck="$(command -v compute-sanitizer || true)"
[[ -z "$memcheck" && -x "$(dirname "$nvcc_bin")/compute-sanitizer" ]] && memcheck="$(dirname "$nvcc_bin")/compute-sanitizer"
if ((dry_run == 0)) && [[ -n "$memcheck" ]]; then
  t0=$(date +%s)
  rc=0
  log="$out/memcheck_zip.log"
  GOSSAMER_ZIP_DAMAGE_TRIALS=40 timeout 60 "$memcheck" --tool memcheck --error-exitcode 3 \
    "$build/bin/test_cuda_zip_codec" --gtest_filter='CudaZipCodec.GivesTheCpuCodecsVerdictOnDamage' \
    >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  mc_passed=$({ grep '^\[       OK \] CudaZipCodec' "$log" || true; } | wc -l)
  # A timeout, or a sanitizer that cannot run here (no test output: some sandboxed GPUs refuse
  # it), is reported as skipped; a memory error (status 3) or a failed test fails the run.
  if ((rc == 124)); then
    rows+=("memcheck: zip damage test (timed out after 60 s)|0|0|1|$secs")
  elif ! grep -q '^\[==========\]' "$log"; then
    rows+=("memcheck: zip damage test (compute-sanitizer did not run it, status $rc)|0|0|1|$secs")
  elif ((rc == 0 && mc_passed == 1)); then
    rows+=("memcheck: zip damage test|1|0|0|$secs")
  else
    rows+=("memcheck: zip damage test (status $rc)|0|1|0|$secs")
    status=1
  fi
elif ((dry_run == 0)); then
  rows+=("memcheck: no compute-sanitizer found|0|0|1|0")
fi

# ---- the benchmarks ------------------------------------------------------------------------
# Per-op time against the roofline at GPT-2 124M's shapes (bench/cuda/bench_cuda_ops.cpp), then
# tokens/s and MFU of real training steps of GPT-2 124M and Llama ~500M
# (bench/cuda/bench_cuda_train.cpp); both print SKIPPED without a GPU. A dry run also runs the
# training benchmark on the CPU table with tiny models (--cpu-smoke), so that its code has run.
echo "$PROG: benchmarking the kernels and the training step"
bench_rc=0
timeout 240 "$build/bin/bench_cuda_ops" >"$out/bench_cuda_ops.txt" 2>&1 || bench_rc=$?
((bench_rc == 0)) || { echo "$PROG: bench_cuda_ops failed (status $bench_rc): $out/bench_cuda_ops.txt" >&2; status=1; }
train_rc=0
timeout 120 "$build/bin/bench_cuda_train" >"$out/bench_cuda_train.txt" 2>&1 || train_rc=$?
if ((dry_run == 1 && train_rc == 0)); then
  timeout 120 "$build/bin/bench_cuda_train" --cpu-smoke >>"$out/bench_cuda_train.txt" 2>&1 || train_rc=$?
fi
((train_rc == 0)) || { echo "$PROG: bench_cuda_train failed (status $train_rc): $out/bench_cuda_train.txt" >&2; status=1; }
if [[ -x "$build/bin/bench_nccl" ]]; then
  nccl_rc=0
  timeout 60 "$build/bin/bench_nccl" >"$out/bench_nccl.txt" 2>&1 || nccl_rc=$?
  ((nccl_rc == 0)) || { echo "$PROG: bench_nccl failed (status $nccl_rc): $out/bench_nccl.txt" >&2; status=1; }
else
  echo "bench_nccl: not built (no NCCL found; see $out/configure.log)" >"$out/bench_nccl.txt"
fi

total_s=$(( $(date +%s) - start ))
{
  echo
  echo "| test binary | passed | failed | skipped | seconds |"
  echo "|---|--:|--:|--:|--:|"
  for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
  echo
  cat "$out/bench_cuda_ops.txt"
  echo
  cat "$out/bench_cuda_train.txt"
  echo
  cat "$out/bench_nccl.txt"
  echo
  echo "build ${build_s} s, total ${total_s} s; logs in $out"
  if ((dry_run == 1)); then
    echo "(dry run: no GPU; every test must report SKIPPED, except those of ${NEEDS_NO_GPU[*]})"
  fi
} | tee "$out/summary.md"
exit "$status"
