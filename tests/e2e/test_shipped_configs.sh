# Every config and sweep file shipped under configs/ resolves: run configs through a one-point
# sweep's --dry-run (strict JSON, known keys, types, invariants), sweep files through their own
# --dry-run (base, points, overrides). A file moved or a key renamed without updating the files
# that use it fails here, not in a researcher's run.
source "$(dirname "$0")/lib.sh"

# Data is prepared by scripts (prepare-data.sh), not shipped: a file whose shards are absent from
# this checkout resolves up to them, and only that one error is accepted.
resolved() {  # OUTPUT: 0 when it succeeded or failed only for an unprepared data directory
  local dir
  dir="$(grep -o "directory data/[^:]*: No such file or directory" <<<"$1" | head -1 | cut -d' ' -f2 | tr -d :)"
  [[ -n "$dir" && ! -e "$dir" && "$(grep -c '\[error\]' <<<"$1")" == 1 ]]
}
n=0
while IFS= read -r f; do
  n=$((n + 1))
  if node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.exit("points" in j || "grid" in j ? 0 : 1)' "$f"; then
    out="$("$GOSSAMER" sweep "$f" --dry-run --out "$WORK/sweep-$n" 2>&1)" || resolved "$out" \
      && pass "$f: sweep resolves ($(grep -c ': run\|: resume\|: skip\|: restart' <<<"$out") points)" \
      || fail "$f: $(tail -n 3 <<<"$out")"
  else
    echo "{\"base\": \"$SRC/$f\", \"points\": [{\"name\": \"p\"}]}" >"$WORK/one.json"
    out="$("$GOSSAMER" sweep "$WORK/one.json" --dry-run --out "$WORK/one-$n" 2>&1)" || resolved "$out" \
      && pass "$f: config resolves" || fail "$f: $(tail -n 3 <<<"$out")"
  fi
  [[ ! -e "$WORK/sweep-$n" && ! -e "$WORK/one-$n" ]] || fail "$f: --dry-run wrote its output directory"
done < <(git ls-files --cached --others --exclude-standard 'configs/*.json' 2>/dev/null || find configs -name '*.json' | sort)
[[ $n -ge 20 ]] && pass "$n shipped files checked" || fail "only $n files under configs/ found"
[[ $FAILURES -eq 0 ]]
