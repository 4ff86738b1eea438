# Shared helpers for end-to-end tests. Each test is run as: bash test_x.sh GOSSAMER_BIN SRC_DIR
# It gets a fresh temporary directory in $WORK (removed on exit) and runs from SRC_DIR.
set -euo pipefail
GOSSAMER="$(realpath "$1")"
SRC="$(realpath "$2")"
WORK="$(mktemp -d /tmp/gossamer-e2e.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# A command that fails outside a condition ends the test (set -e): say which, instead of ending
# silently after the last "ok" line.
trap '_status=$?; echo "FAIL: $(basename "$0") line $LINENO: \"$BASH_COMMAND\" failed (status $_status); set -e ends the test" >&2' ERR
cd "$SRC"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
FAILURES=0

fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
pass() { echo "ok: $*"; }

# docs/RELIABILITY.md is generated from what the tests record (scripts/reliability-table.sh):
# with GOSSAMER_RELIABILITY_DIR set (ctest sets it), every checked case appends one line
# "NAME<TAB>EXIT<TAB>MESSAGE<TAB>COMMAND" to DIR/<this test>.tsv, which starts empty.
RELIABILITY_LOG=""
if [[ -n "${GOSSAMER_RELIABILITY_DIR:-}" && "$0" == *.sh ]]; then
  mkdir -p "$GOSSAMER_RELIABILITY_DIR"
  RELIABILITY_LOG="$GOSSAMER_RELIABILITY_DIR/$(basename "$0" .sh).tsv"
  : >"$RELIABILITY_LOG"
fi
# record_case NAME EXIT MESSAGE CMD...: adds a checked case to the table (paths under $WORK,
# the source directory and the binary are written as $WORK, . and gossamer).
record_case() {
  [[ -n "$RELIABILITY_LOG" ]] || return 0
  local name="$1" code="$2" message="$3"; shift 3
  # The tests' wrappers for the binary: run ARGS, or a function named after the subcommand
  # (e.g. train, which adds the test's config flags).
  [[ "${1:-}" == run ]] && shift && set -- gossamer "$@"
  case "${1:-}" in train | eval | generate | prep | sweep) declare -F "$1" >/dev/null && set -- gossamer "$@" ;; esac
  local cmd="$*"
  cmd="${cmd//$GOSSAMER/gossamer}"
  printf '%s\t%s\t%s\t%s\n' "$name" "$code" "${message//$'\t'/ }" "${cmd//$'\t'/ }" \
    | sed -e "s|$WORK|\$WORK|g" -e "s|$SRC/||g" -e "s|$SRC|.|g" >>"$RELIABILITY_LOG"
}

# expect_error NAME PATTERN CMD...: CMD must exit non-zero and print PATTERN (grep -E) to stderr.
expect_error() {
  local name="$1" pattern="$2"; shift 2
  local out rc=0
  out="$("$@" 2>&1 >/dev/null)" || rc=$?
  if [[ $rc -eq 0 ]]; then fail "$name: exit status 0, expected an error"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then
    fail "$name: exit $rc but message does not match /$pattern/: $out"; return
  fi
  pass "$name (exit $rc): $(head -c 200 <<<"$out" | tr '\n' ' ')"
  record_case "$name" "$rc" "$(grep -m1 -E -- "$pattern" <<<"$out")" "$@"
}

# json_field FILE STEP KEY: the value of KEY in the metrics line of step STEP that has KEY.
json_field() {
  node -e '
    const [file, step, key] = process.argv.slice(1);
    for (const l of require("fs").readFileSync(file, "utf8").split("\n")) {
      if (!l) continue; const j = JSON.parse(l);
      if (j.step == step && key in j) { console.log(JSON.stringify(j[key])); process.exit(0); }
    }
    process.exit(1);' "$1" "$2" "$3"
}

# losses FILE: the "loss" values of every training line, one per line, exactly as written.
losses() { grep -o '"loss":[^,}]*' "$1" | cut -d: -f2; }

finish() {
  if [[ $FAILURES -ne 0 ]]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}

# The GPT-2-token corpus and the 512-piece one of the configs/test/*-v512.json models (most tests:
# mechanics, not language, so a 512-row LM head instead of 50,257 makes their steps 18x cheaper).
require_data() {
  for f in data/web/train_000000.bin data/web/val_000000.bin data/tokenizers/gpt2/encoder.json \
    data/web-spm512/train_000000.bin data/web-spm512/val_000000.bin data/web-spm512/tokenizer.model; do
    [[ -f "$f" ]] || { echo "FAIL: $f missing: run scripts/prepare-data.sh web and scripts/prepare-data.sh web spm 512 first" >&2; exit 1; }
  done
}

# mpirun_np N ARGS...: mpirun with the flags that make Open MPI quiet and reliable here (root,
# more ranks than cores, shared-memory transport).
mpirun_np() {
  local np="$1"; shift
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    mpirun -np "$np" --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1 "$@"
}

# st_same_tensors A B: succeeds when two safetensors files hold the same tensors (names, dtypes,
# shapes, offsets) and the same data bytes; their metadata may differ (a checkpoint's step).
st_same_tensors() {
  node -e '
    const fs = require("fs");
    const load = (f) => { const b = fs.readFileSync(f); const n = Number(b.readBigUInt64LE(0));
      const h = JSON.parse(b.subarray(8, 8 + n).toString()); delete h.__metadata__;
      return {h: JSON.stringify(Object.entries(h).sort()), d: b.subarray(8 + n)}; };
    const [a, b] = process.argv.slice(1).map(load);
    process.exit(a.h === b.h && a.d.equals(b.d) ? 0 : 1);' "$1" "$2"
}

# st_maxdiff A B: the largest |a - b| over every F32 tensor two safetensors files share by name
# (prints "inf" when a tensor is missing from B or has another shape).
st_maxdiff() {
  node -e '
    const fs = require("fs");
    const load = (f) => { const b = fs.readFileSync(f); const n = Number(b.readBigUInt64LE(0));
      return {h: JSON.parse(b.subarray(8, 8 + n).toString()), d: b.subarray(8 + n)}; };
    const [a, b] = process.argv.slice(1).map(load);
    let worst = 0;
    for (const [name, t] of Object.entries(a.h)) {
      if (name === "__metadata__") continue;
      const u = b.h[name];
      if (!u || JSON.stringify(u.shape) !== JSON.stringify(t.shape)) { console.log("inf"); process.exit(0); }
      const x = new Float32Array(a.d.buffer.slice(a.d.byteOffset + t.data_offsets[0], a.d.byteOffset + t.data_offsets[1]));
      const y = new Float32Array(b.d.buffer.slice(b.d.byteOffset + u.data_offsets[0], b.d.byteOffset + u.data_offsets[1]));
      for (let i = 0; i < x.length; ++i) { const e = Math.abs(x[i] - y[i]); if (!(e <= worst)) worst = e; }
    }
    console.log(worst);' "$1" "$2"
}
