#!/usr/bin/env bash
# The device script (issues 16 and 38, docs/CUDA.md "The device script"). Runs the gpu tests and
# the GPU benchmarks on a machine that has the CUDA toolkit, a host compiler, CMake and nothing
# else (no network, none of the CPU dependencies), inside one global deadline, and leaves exactly
# two files in OUT_DIR: summary.md (everything the run printed) and logs.tar.gz (every log).
#   scripts/gpu-check.sh --prepare [--no-build]
#       here, where the dependencies are installed: copies GoogleTest's source tree to .gpu-check/
#       and (unless --no-build) builds the GPU-only configuration for sm_90 (H100, H200) into
#       .gpu-check/bin, stamped with a hash of the sources. Carry .gpu-check to the device.
#   scripts/gpu-check.sh OUT_DIR [--dry-run] [--deadline SECONDS] [--only REGEX] [--no-bench]
#       --deadline: the whole run's budget, 420 s by default (the device tool allows 600 s a
#         call and 900 s a session: a second, narrower run must still fit). Later steps get what
#         is left: a test or benchmark that cannot start before the deadline is "not run".
#       --only REGEX: only the test binaries and benchmarks whose names match (a second run).
#       --no-bench: the tests only.
#       --dry-run: on a machine without a GPU: every step as far as the GPU, tests must report
#         SKIPPED (except NEEDS_NO_GPU's), and skipped tests and benchmarks are allowed.
# Binaries come from .gpu-check/bin when its stamp matches the sources and their libraries
# resolve; otherwise the script builds them (tests first, then each benchmark on its own, so a
# benchmark that does not build cannot stop the tests). Which one was used is printed.
# Outside --dry-run a SKIPPED test or benchmark is a failure: a GPU machine whose runtime does
# not start must not pass. Exit status: 0 all passed; 1 a test failed, was skipped or not run,
# or nothing could be built; 3 every test passed but a benchmark failed, timed out, was skipped
# or not run; 2 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
PROG=gpu-check
# Test binaries whose tests need no GPU (tests/gpu/test_cuda_op_table.cpp: the op table is
# complete): they pass or fail on any machine, --dry-run included.
NEEDS_NO_GPU=(test_cuda_op_table)
PREP=.gpu-check
PREP_ARCH=90
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
say() { echo "$PROG: $*"; }

# The sources the GPU-only binaries are built from; a prepared build is used only when this
# hash matches the one it was stamped with (the device machine gets a copy without .git).
source_hash() {
  find CMakeLists.txt cmake kernels src tests/gpu tests/unit bench/cuda bench/op_bench.h \
    bench/op_bench.cpp -type f \
    ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-16
}
gpu_only_cmake_args() {  # BUILD_DIR GTEST_DIR NVCC ARCH
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  echo -S . -B "$1" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DGOSSAMER_GPU_ONLY=ON \
    -DGOSSAMER_GTEST_SOURCE="$(cd "$2" && pwd)" -DCMAKE_CUDA_COMPILER="$3" \
    ${4:+-DCMAKE_CUDA_ARCHITECTURES=$4}
}
find_nvcc() {
  local n
  n="$(command -v nvcc || true)"
  [[ -z "$n" && -x /usr/local/cuda/bin/nvcc ]] && n=/usr/local/cuda/bin/nvcc
  echo "$n"
}
# NCCL from the nvidia-nccl Python package (the device machines' image), else none given.
nccl_python_root() { python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true; }
test_names() { for f in tests/gpu/test_*.cpp; do basename "$f" .cpp; done; }
BENCHES=(bench_cuda_ops bench_cuda_train bench_nccl)

if [[ "${1:-}" == --prepare ]]; then
  shift
  no_build=0
  for arg in "$@"; do
    case "$arg" in
      --no-build) no_build=1 ;;
      *) echo "$PROG: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
  done
  [[ -f /usr/src/googletest/CMakeLists.txt ]] || {
    echo "$PROG: error: /usr/src/googletest not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
  rm -rf "$PREP" && mkdir -p "$PREP" && cp -r /usr/src/googletest "$PREP/googletest"
  say "copied /usr/src/googletest to $PREP/googletest"
  if ((no_build == 0)); then
    nvcc_bin="$(find_nvcc)"
    [[ -n "$nvcc_bin" ]] || { echo "$PROG: error: no nvcc: prepare with --no-build" >&2; exit 1; }
    nccl_root="$(nccl_python_root)"
    # shellcheck disable=SC2046
    cmake $(gpu_only_cmake_args build-gpu-check-prep "$PREP/googletest" "$nvcc_bin" "$PREP_ARCH") \
      ${nccl_root:+-DGOSSAMER_NCCL_ROOT=$nccl_root} >/dev/null
    say "building the GPU-only configuration for sm_$PREP_ARCH (build-gpu-check-prep)"
    cmake --build build-gpu-check-prep -j "$(nproc)" >/dev/null
    mkdir -p "$PREP/bin"
    for b in $(test_names) "${BENCHES[@]}"; do
      [[ -x "build-gpu-check-prep/bin/$b" ]] && cp "build-gpu-check-prep/bin/$b" "$PREP/bin/"
    done
    strip --strip-debug "$PREP"/bin/* 2>/dev/null || true
    echo "$(source_hash) sm_$PREP_ARCH $(date -u +%FT%TZ)" >"$PREP/bin/STAMP"
    say "prepared $(ls "$PREP/bin" | grep -vc STAMP) binaries in $PREP/bin (stamp $(cut -d' ' -f1 "$PREP/bin/STAMP"))"
  fi
  say "$PREP holds $(du -sh "$PREP" | cut -f1) (the device tool carries 64 MiB in all); carry .gpu-check"
  exit 0
fi

[[ $# -ge 1 && "$1" != -* ]] || { usage >&2; exit 2; }
out="$1"; shift
dry_run=0 deadline=420 only="" no_bench=0
while (($#)); do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --deadline) [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "$PROG: --deadline needs seconds" >&2; exit 2; }
                deadline="$2"; shift ;;
    --only) [[ -n "${2:-}" ]] || { echo "$PROG: --only needs a regular expression" >&2; exit 2; }
            only="$2"; shift ;;
    --no-bench) no_bench=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$PROG: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
start=$(date +%s)
build=build-gpu-check
logs="$build/logs"
rm -rf "$logs" "$out/summary.md" "$out/logs.tar.gz"
mkdir -p "$logs"
bin_dir="$build/bin"
elapsed() { echo $(( $(date +%s) - start )); }
# cap WANT: seconds a step may take, the deadline less 15 s kept for the summary and archive.
cap() { local left=$(( deadline - 15 - $(elapsed) )); echo $(( left < $1 ? left : $1 )); }
selected() { [[ -z "$only" || "$1" =~ $only ]]; }

test_rows=() bench_rows=() excerpts=() fatal="" test_status=0 bench_status=0
preflight=""

# ---- the summary: written however the run ends --------------------------------------------
excerpt_of() {  # LOG: gtest's failure reports, else its SKIPPED lines, else the log's end
  if grep -q ': Failure$' "$1"; then grep -A8 ': Failure$' "$1" | head -n 40
  elif grep -q '^\[  SKIPPED \] [A-Za-z]' "$1"; then grep -m1 -B2 '^\[  SKIPPED \] [A-Za-z]' "$1"
  else tail -n 20 "$1"
  fi
}
summary() {
  echo "# gpu-check summary"
  echo
  echo "$preflight"
  [[ -n "$binaries_used" ]] && echo "binaries: $binaries_used"
  for b in "${BENCHES[@]}"; do
    [[ -f "$logs/$b.txt" ]] || continue
    echo
    echo "## $b"
    echo
    cat "$logs/$b.txt"
  done
  echo
  echo "## benchmarks"
  echo
  echo "| benchmark | result | seconds |"
  echo "|---|---|--:|"
  for r in "${bench_rows[@]}"; do echo "| ${r//|/ | } |"; done
  echo
  echo "## tests"
  echo
  echo "| test binary | passed | failed | skipped | seconds | note |"
  echo "|---|--:|--:|--:|--:|---|"
  for r in "${test_rows[@]}"; do echo "| ${r//|/ | } |"; done
  # What failed, last (the device tool returns the output's last 12,000 characters): at most
  # 2,000 characters of each binary, 7,000 in all; the whole logs are in logs.tar.gz.
  for e in "${excerpts[@]}"; do
    echo
    echo "### ${e%%|*}"
    echo '```'
    excerpt_of "${e#*|}" | head -c 2000
    echo '```'
  done | head -c 7000
  echo
  [[ -n "$fatal" ]] && echo "FATAL: $fatal"
  local verdict="PASS"
  ((test_status != 0)) && verdict="FAIL (tests)"
  ((test_status == 0 && bench_status != 0)) && verdict="FAIL (benchmarks only; the tests passed)"
  ((dry_run == 1)) && verdict="$verdict, dry run: no GPU; skipped tests and benchmarks allowed, except that tests outside ${NEEDS_NO_GPU[*]} must skip"
  echo "gpu-check: $verdict; $(elapsed) s of a $deadline s deadline; every log in logs.tar.gz"
}
binaries_used=""
finish() {
  local rc
  summary >"$out/summary.md" 2>&1 || true
  cat "$out/summary.md"
  tar -czf "$out/logs.tar.gz" -C "$build" logs 2>/dev/null || echo "$PROG: could not archive $logs" >&2
  if [[ -n "$fatal" || $test_status != 0 ]]; then rc=1; elif ((bench_status != 0)); then rc=3; else rc=0; fi
  exit "$rc"
}
die() { fatal="$*"; test_status=1; finish; }

# ---- pre-flight ----------------------------------------------------------------------------
nvcc_bin="$(find_nvcc)"
[[ -n "$nvcc_bin" ]] || die "no nvcc on PATH or in /usr/local/cuda/bin"
command -v cmake >/dev/null || die "no cmake on PATH"
cuda_root="$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")"
nccl_root="$(nccl_python_root)"
lib_in() {  # NAME DIR...: the first DIR/NAME* found
  local n="$1" d; shift
  for d in "$@"; do compgen -G "$d/$n*" >/dev/null && { compgen -G "$d/$n*" | head -n 1; return; }; done
  echo "NOT FOUND"
}
cublaslt="$(lib_in libcublasLt.so "$cuda_root/lib64" "$cuda_root/targets/x86_64-linux/lib" /usr/local/cuda/lib64)"
nccl_lib="$(lib_in libnccl.so ${nccl_root:+"$nccl_root/lib"} "$cuda_root/lib64" /usr/local/cuda/lib64)"
gpu="none visible" gpus=0 arch=""
if command -v nvidia-smi >/dev/null && nvidia-smi >"$logs/nvidia-smi.txt" 2>&1; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
  cap_="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')"
  [[ "$cap_" =~ ^[0-9]+$ ]] && arch="$cap_"
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
preflight="pre-flight: nvcc $("$nvcc_bin" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), cmake $(cmake --version | head -n 1 | awk '{print $3}'), cuBLASLt $cublaslt, NCCL $nccl_lib, OMP_NUM_THREADS=$OMP_NUM_THREADS, $(nproc) cores, GPU: $gpu ($gpus visible, sm_${arch:-?}); deadline $deadline s"
say "$preflight"
{ echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -a)"; echo "$preflight"; } >"$logs/machine.txt"
((gpus > 0 || dry_run == 1)) || die "nvidia-smi finds no GPU (use --dry-run on a machine without one)"

# ---- binaries: prepared here, or built ------------------------------------------------------
gtest_dir="$PREP/googletest"
[[ -f "$gtest_dir/CMakeLists.txt" ]] || gtest_dir=/usr/src/googletest
prepared_ok() {  # why the prepared binaries cannot be used, or nothing
  [[ -f "$PREP/bin/STAMP" ]] || { echo "no $PREP/bin (scripts/gpu-check.sh --prepare builds it)"; return; }
  local stamp; stamp="$(cut -d' ' -f1 "$PREP/bin/STAMP")"
  [[ "$stamp" == "$(source_hash)" ]] || { echo "$PREP/bin was built from other sources (stamp $stamp)"; return; }
  [[ -z "$arch" || "$arch" == "$PREP_ARCH" ]] || { echo "$PREP/bin is for sm_$PREP_ARCH, this GPU is sm_$arch"; return; }
  local missing
  missing="$(for f in "$PREP"/bin/test_* "$PREP"/bin/bench_*; do ldd "$f" 2>&1 | grep 'not found' || true; done | sort -u | head -n 3)"
  if [[ -n "$missing" && -n "$nccl_root" ]]; then  # the image's NCCL, from its Python package
    export LD_LIBRARY_PATH="$nccl_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    missing="$(for f in "$PREP"/bin/test_* "$PREP"/bin/bench_*; do ldd "$f" 2>&1 | grep 'not found' || true; done | sort -u | head -n 3)"
  fi
  [[ -z "$missing" ]] || echo "libraries missing: $(echo $missing)"
}
why_not="$(prepared_ok)"
build_target() {  # NAME LIMIT: builds one target into $build; logs to $logs/build.log
  local t
  t="$(cap "$2")"
  ((t > 5)) || return 124
  timeout "$t" cmake --build "$build" -j "$(nproc)" --target "$1" >>"$logs/build.log" 2>&1
}
if [[ -z "$why_not" ]]; then
  bin_dir="$PREP/bin"
  binaries_used="prepared here ($(cat "$PREP/bin/STAMP"))"
else
  binaries_used="built on this machine ($why_not)"
  say "building: $why_not"
  [[ -f "$gtest_dir/CMakeLists.txt" ]] ||
    die "no GoogleTest source: run scripts/gpu-check.sh --prepare where the dependencies are, and carry .gpu-check"
  # shellcheck disable=SC2046
  timeout "$(cap 120)" cmake $(gpu_only_cmake_args "$build" "$gtest_dir" "$nvcc_bin" "$arch") \
    ${nccl_root:+-DGOSSAMER_NCCL_ROOT=$nccl_root} >"$logs/configure.log" 2>&1 ||
    die "configure failed: $(tail -n 5 "$logs/configure.log" | tr '\n' ' ')"
  t0=$(date +%s)
  wanted=()
  for n in $(test_names); do selected "$n" && wanted+=("$n"); done
  ((${#wanted[@]} > 0)) || die "--only '$only' matches no test binary"
  rc=0
  for n in "${wanted[@]}"; do build_target "$n" 600 || { rc=$?; break; }; done
  ((rc != 124)) || die "building the tests ran into the deadline ($n; --deadline $deadline)"
  ((rc == 0)) || die "building the tests failed (status $rc, $n): $(grep -m3 -E 'error|Error' "$logs/build.log" | tr '\n' ' ')"
  say "built ${#wanted[@]} test binaries in $(( $(date +%s) - t0 )) s"
fi
say "binaries: $binaries_used"

# ---- the gpu tests: a row printed as each binary finishes -----------------------------------
count() {  # PATTERN LOG: distinct test names on lines that match (gtest prints them twice)
  { grep "$1" "$2" || true; } | awk '{print $4}' | sort -u | wc -l
}
for n in $(test_names); do
  selected "$n" || continue
  bin="$bin_dir/$n"
  limit=120
  [[ "$n" == test_cuda_ops ]] && limit=300  # the op test: every op over its shape grid
  t="$(cap "$limit")"
  if ((t < 10)); then
    test_rows+=("$n|0|0|0|0|not run: deadline"); test_status=1
    say "$n: not run (the deadline leaves ${t} s)"; continue
  fi
  [[ -x "$bin" ]] || { test_rows+=("$n|0|0|0|0|not built"); test_status=1; continue; }
  log="$logs/$n.log"
  t0=$(date +%s) rc=0
  # The op test's double reference skips its finite-difference probes (the unit tests run them).
  GOSSAMER_SKIP_FD_CHECK=1 timeout "$t" "$bin" --gtest_output="xml:$logs/$n.xml" >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  passed="$(count '^\[       OK \] [A-Za-z]' "$log")"
  failed="$(count '^\[  FAILED  \] [A-Za-z]' "$log")"
  skipped="$(count '^\[  SKIPPED \] [A-Za-z]' "$log")"
  notes=()
  if ((rc == 124)); then notes+=("timed out after $t s")
  elif ((rc != 0)); then notes+=("exit status $rc")
  fi
  if ((dry_run == 0 && skipped > 0)); then
    notes+=("SKIPPED outside --dry-run")
  elif ((dry_run == 1 && passed > 0)) && [[ " ${NEEDS_NO_GPU[*]} " != *" $n "* ]]; then
    notes+=("ran $passed test(s) in --dry-run instead of skipping")
  fi
  note="ok"
  if ((${#notes[@]} > 0)); then
    note="$(IFS=';'; echo "${notes[*]}" | sed 's/;/; /g')"
    test_status=1; excerpts+=("$n ($note)|$log")
  fi
  test_rows+=("$n|$passed|$failed|$skipped|$secs|$note")
  say "$n: $passed passed, $failed failed, $skipped skipped, $secs s: $note"
done
((${#test_rows[@]} > 0)) || die "--only '$only' matches no test binary"

# The zip decoder's damage test again under compute-sanitizer's memcheck (fewer damaged
# messages): the guard bands catch stray writes, memcheck the out-of-bounds reads.
memcheck="$(command -v compute-sanitizer || true)"
for c in "$(dirname "$nvcc_bin")/compute-sanitizer" "$cuda_root/compute-sanitizer/compute-sanitizer"; do
  [[ -z "$memcheck" && -x "$c" ]] && memcheck="$c"
done
if ((dry_run == 0)) && selected memcheck_zip; then
  n="memcheck: zip damage test"
  t="$(cap 60)"
  if [[ -z "$memcheck" ]]; then
    test_rows+=("$n|0|0|1|0|no compute-sanitizer found"); test_status=1
  elif ((t < 10)); then
    test_rows+=("$n|0|0|0|0|not run: deadline"); test_status=1
  else
    t0=$(date +%s) rc=0 log="$logs/memcheck_zip.log"
    GOSSAMER_ZIP_DAMAGE_TRIALS=40 timeout "$t" "$memcheck" --tool memcheck --error-exitcode 3 \
      "$bin_dir/test_cuda_zip_codec" --gtest_filter='CudaZipCodec.GivesTheCpuCodecsVerdictOnDamage' \
      >"$log" 2>&1 || rc=$?
    secs=$(( $(date +%s) - t0 ))
    ok="$({ grep '^\[       OK \] CudaZipCodec' "$log" || true; } | wc -l)"
    # A timeout, or a sanitizer that cannot run here (no test output), is not a memory error but
    # not a pass either; a memory error (status 3) or a failed test is a failure.
    if ((rc == 124)); then note="timed out after $t s"
    elif ! grep -q '^\[==========\]' "$log"; then note="compute-sanitizer did not run it (status $rc)"
    elif ((rc == 0 && ok == 1)); then note="ok"
    else note="memory error or failure (status $rc)"
    fi
    [[ "$note" == ok ]] && test_rows+=("$n|1|0|0|$secs|ok") ||
      { test_rows+=("$n|0|1|0|$secs|$note"); test_status=1; excerpts+=("$n ($note)|$log"); }
    say "$n: $note, $secs s"
  fi
fi

# ---- the benchmarks: per-op time against the roofline, training steps, NCCL ----------------
# bench_cuda_ops (the rows of bench/op_bench.cpp on the CUDA table, and the zip codec's
# kernels; `gossamer bench ops` runs the same rows on the CPU), bench_cuda_train (GPT-2 124M
# and Llama ~500M training steps on one GPU; a dry run also runs it on the CPU table with tiny
# models, --cpu-smoke), bench_nccl (collectives across the machine's GPUs: needs two; on a one-GPU
# machine it is not applicable, which is neither a pass nor a failure). A benchmark that does
# not build, fails, times out or prints SKIPPED outside --dry-run fails the run (status 3).
bench() {  # NAME LIMIT [ARGS...]
  local n="$1" limit="$2"; shift 2
  local label="$n${1:+ $*}" t rc=0 t0 secs note
  if [[ ! -x "$bin_dir/$n" ]] && [[ "$bin_dir" == "$build/bin" ]]; then
    if ! build_target "$n" 300; then
      bench_rows+=("$n|not built (see build.log in logs.tar.gz)|0"); bench_status=1
      echo "$n: not built" >"$logs/$n.txt"; return
    fi
  fi
  [[ -x "$bin_dir/$n" ]] || { bench_rows+=("$n|not built|0"); bench_status=1; return; }
  t="$(cap "$limit")"
  if ((t < 10)); then bench_rows+=("$label|not run: deadline|0"); bench_status=1; return; fi
  t0=$(date +%s)
  timeout "$t" "$bin_dir/$n" "$@" >>"$logs/$n.txt" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  if ((rc == 124)); then note="TIMED OUT after $t s"
  elif ((rc != 0)); then note="failed (status $rc)"
  elif ((dry_run == 0)) && grep -q SKIPPED "$logs/$n.txt"; then note="SKIPPED outside --dry-run"
  else note="ok"
  fi
  [[ "$note" == ok ]] || bench_status=1
  bench_rows+=("$label|$note|$secs")
  say "$label: $note, $secs s"
}
if ((no_bench == 0)); then
  say "benchmarking the kernels and the training step"
  selected bench_cuda_ops && bench bench_cuda_ops 240
  selected bench_cuda_train && bench bench_cuda_train 120
  selected bench_cuda_train && ((dry_run == 1)) && bench bench_cuda_train 120 --cpu-smoke
  if selected bench_nccl; then
    if ((gpus >= 2 || dry_run == 1)); then
      bench bench_nccl 60
    else
      bench_rows+=("bench_nccl|not applicable: $gpus GPU (NCCL's collectives need 2)|0")
    fi
  fi
fi
finish
