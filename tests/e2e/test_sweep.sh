# gossamer sweep end to end on the tiny GPT-2 (4 steps per point): a 3-point sweep where one
# point diverges (lr 1e30: non-finite gradients at step 2, a real runtime failure) runs the
# others, exits non-zero naming it and still summarises; summary.csv agrees with every point's
# metrics.jsonl; a re-run skips finished points without touching them; a deleted point is
# re-run bit-identically; a point missing its final checkpoint resumes from the earlier one;
# a changed config is refused before anything runs; an mpirun sweep with 2 ranks; the Slurm
# launcher's script (bash -n, array range, one task executed with a stand-in srun); Ctrl-C
# (SIGINT to the sweep) stops the running point at a checkpoint and the sweep exits 130;
# parsing errors that name the JSON path or the point and key, before anything is written; and a
# copy of the binary run outside the source tree (its scripts/ hidden) still draws loss.png, or
# warns once, naming what to install, when python3 or matplotlib is missing.
source "$(dirname "$0")/lib.sh"
require_data

BASE="$SRC/configs/test/gpt2-tiny-v512.json"
# Sweep files are strict JSON (a key may appear once): LENGTH holds the keys some sweeps change.
LENGTH='"train.steps": 4, "train.eval_every": 2, "train.checkpoint_every": 2'
REST='"train.eval_batches": 2, "train.log_every": 1, "train.keep_checkpoints": 0,
      "metrics.peak_gflops": 1, "kernels.threads": 1, "schedule.warmup_steps": 0'
COMMON="$LENGTH, $REST"

# sweep_file FILE LAUNCHER_JSON: the 3-point sweep (a, b, diverge) with that launcher.
sweep_file() {
  cat >"$1" <<EOF
{
  "base": "$BASE",
  "set": {$COMMON},
  "points": [
    {"name": "a", "set": {"optimizer.lr": 0.001}},
    {"name": "b", "set": {"optimizer.lr": 0.003}},
    {"name": "diverge", "set": {"optimizer.lr": 1e30}}
  ],
  "reference": "a",
  "launcher": $2
}
EOF
}

# check_summary OUT [MIN_BYTES]: every row of OUT/summary.csv recomputed from its metrics.jsonl;
# with MIN_BYTES, finished rows must show a median of bytes_sent of at least that.
check_summary() {
  node -e '
    const fs = require("fs"), out = process.argv[1];
    const parse = (line) => { const cells = []; let cur = "", q = false;
      for (let i = 0; i < line.length; ++i) { const c = line[i];
        if (q) { if (c === "\"" && line[i + 1] === "\"") { cur += c; ++i; } else if (c === "\"") q = false; else cur += c; }
        else if (c === "\"") q = true; else if (c === ",") { cells.push(cur); cur = ""; } else cur += c; }
      cells.push(cur); return cells; };
    const lines = fs.readFileSync(out + "/summary.csv", "utf8").trim().split("\n");
    const head = parse(lines[0]); const rows = lines.slice(1).map(l => Object.fromEntries(parse(l).map((v, i) => [head[i], v])));
    const med = (v) => { v = [...v].sort((a, b) => a - b); const n = v.length; return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; };
    const close = (a, b) => Math.abs(a - b) <= 1e-7 * Math.max(1, Math.abs(b));
    let bad = 0, ref = null;
    const val = {};
    for (const r of rows) {
      const m = fs.readFileSync(`${out}/${r.name}/metrics.jsonl`, "utf8").trim().split("\n").map(JSON.parse);
      const tr = m.filter(j => "loss" in j), ev = m.filter(j => "val_loss" in j);
      const last10 = tr.slice(-10).map(j => j.loss);
      const expect = {
        steps: tr.length ? tr[tr.length - 1].step : 0,
        train_loss_last10: last10.reduce((a, b) => a + b, 0) / last10.length,
        val_loss: ev.length ? ev[ev.length - 1].val_loss : NaN,
        val_step: ev.length ? ev[ev.length - 1].step : NaN,
        tokens: tr.length ? tr[tr.length - 1].tokens : 0,
        time_s: tr.reduce((a, j) => a + j.time_s.total, 0),
        step_time_s_median: med(tr.map(j => j.time_s.total)),
        bytes_sent_median: med(tr.map(j => j.bytes_sent)),
      };
      for (const [k, e] of Object.entries(expect)) {
        if (Number.isNaN(e) && r[k] === "") continue;
        if (!close(Number(r[k]), e)) { console.log(`${r.name}.${k}: summary ${r[k]}, metrics ${e}`); ++bad; }
      }
      val[r.name] = expect.val_loss;
      console.log(`${r.name}: ${r.status}, ${expect.steps} steps, train ${r.train_loss_last10}, val ${r.val_loss}, bytes/step ${r.bytes_sent_median}`);
    }
    if ("val_gap_vs_reference" in rows[0]) for (const r of rows) {
      const g = (val[r.name] - val.a) / val.a;
      if (r.val_gap_vs_reference !== "" && !close(Number(r.val_gap_vs_reference), g)) { console.log(`${r.name}: gap ${r.val_gap_vs_reference}, expected ${g}`); ++bad; }
    }
    const minBytes = process.argv[2];
    if (minBytes !== undefined) for (const r of rows)
      if (r.status === "finished" && !(Number(r.bytes_sent_median) >= Number(minBytes))) { console.log(`${r.name}: bytes_sent_median ${r.bytes_sent_median}`); ++bad; }
    process.exit(bad ? 1 : 0);' "$@"
}

status_of() {  # OUT NAME: the status column of NAME's row
  node -e '
    const [f, name] = process.argv.slice(1);
    for (const l of require("fs").readFileSync(f, "utf8").trim().split("\n").slice(1)) {
      const c = l.split(","); if (c[0] === name) { console.log(c[c.findIndex(x => /^(finished|failed|interrupted|incomplete|not run)$/.test(x))]); process.exit(0); }
    }
    process.exit(1);' "$1/summary.csv" "$2"
}

snapshot() { find "$@" -printf '%p %s %T@\n' | sort; }

have_matplotlib=0
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && have_matplotlib=1

# ---- 1. a plain sweep with one diverging point ----------------------------------------------
S1="$WORK/s1.json" O1="$WORK/o1"
sweep_file "$S1" '{"kind": "plain"}'
rc=0
"$GOSSAMER" sweep "$S1" --out "$O1" >"$WORK/run1.out" 2>"$WORK/run1.log" || rc=$?
if [[ $rc -ne 0 ]] && grep -qE 'sweep: 1 of 3 point\(s\) failed: diverge' "$WORK/run1.log"; then
  pass "failing point: exit $rc, named: $(grep -E 'FAILED' "$WORK/run1.log" | head -1)"
else
  fail "failing point: exit $rc; log: $(tail -5 "$WORK/run1.log")"
fi
grep -q 'non-finite' "$WORK/run1.log" && pass "the failure's log tail is shown" || fail "no log tail"
for p in a b; do
  [[ "$(status_of "$O1" $p)" == finished ]] && pass "$p finished" || fail "$p: $(status_of "$O1" $p)"
done
[[ "$(status_of "$O1" diverge)" == failed ]] && pass "diverge reported as failed" \
  || fail "diverge: $(status_of "$O1" diverge)"
[[ "$(wc -l <"$O1/summary.csv")" == 4 ]] && pass "summary.csv: header + 3 rows" \
  || fail "summary.csv has $(wc -l <"$O1/summary.csv") lines"
head -1 "$O1/summary.csv" | grep -q '^name,optimizer.lr,status,steps,train_steps,train_loss_last10,val_loss,val_step,tokens,time_s,step_time_s_median,bytes_sent_median,val_gap_vs_reference$' \
  && pass "summary.csv columns" || fail "summary.csv header: $(head -1 "$O1/summary.csv")"
if out="$(check_summary "$O1")"; then pass "summary.csv agrees with metrics.jsonl: $(tr '\n' ';' <<<"$out")"
else fail "summary.csv disagrees with metrics.jsonl: $out"; fi
for p in a b diverge; do grep -q "^| $p |" "$O1/summary.md" || fail "summary.md lacks row $p"; done
grep -qE '^\| b \| 0\.003 \| finished \| 4 \|' "$O1/summary.md" \
  && pass "summary.md rows" || fail "summary.md: $(cat "$O1/summary.md")"
cmp -s <(node -e 'const c=require(process.argv[1]); delete c.train.out_dir; console.log(JSON.stringify(c))' "$O1/a/point.json") \
       <(node -e 'const c=require(process.argv[1]); delete c.train.out_dir; console.log(JSON.stringify(c))' "$O1/a/config.json") \
  && pass "point.json is the resolved config the run used" || fail "point.json differs from config.json"
if [[ $have_matplotlib == 1 ]]; then
  [[ -s "$O1/loss.png" ]] && pass "loss.png written" || fail "no loss.png"
else
  echo "note: python3-matplotlib missing; loss.png not checked"
fi

# ---- 2. re-run: finished points are skipped and untouched -----------------------------------
before="$(snapshot "$O1/a" "$O1/b")"
sleep 1.1  # mtimes have 1 s resolution on some file systems
rc=0
"$GOSSAMER" sweep "$S1" --out "$O1" >/dev/null 2>"$WORK/run2.log" || rc=$?
grep -q 'sweep: a: skipped (finished at step 4)' "$WORK/run2.log" \
  && grep -q 'sweep: b: skipped (finished at step 4)' "$WORK/run2.log" \
  && grep -q '\[1/1\] diverge: restart (unfinished, no checkpoint' "$WORK/run2.log" \
  && grep -q 'non-finite' "$WORK/run2.log" && ! grep -q 'already holds a run' "$WORK/run2.log" \
  && pass "re-run skips a and b, retries diverge from scratch (exit $rc)" || fail "re-run log: $(cat "$WORK/run2.log")"
[[ "$(snapshot "$O1/a" "$O1/b")" == "$before" ]] && pass "finished run directories untouched" \
  || fail "finished run directories changed: $(diff <(echo "$before") <(snapshot "$O1/a" "$O1/b"))"

# ---- 3. a deleted point is re-run (bit-identically) -----------------------------------------
losses "$O1/b/metrics.jsonl" >"$WORK/b.losses"
rm -rf "$O1/b"
"$GOSSAMER" sweep "$S1" --out "$O1" >/dev/null 2>"$WORK/run3.log" || true
grep -q '\[1/2\] b: run (new)' "$WORK/run3.log" && [[ "$(status_of "$O1" b)" == finished ]] \
  && pass "deleted point b re-run" || fail "deleted point: $(grep sweep: "$WORK/run3.log")"
cmp -s "$WORK/b.losses" <(losses "$O1/b/metrics.jsonl") && pass "re-run b has the same losses" \
  || fail "re-run b's losses differ"

# ---- 4. a point without its final checkpoint resumes from step 2 -----------------------------
losses "$O1/a/metrics.jsonl" >"$WORK/a.losses"
rm -rf "$O1/a/checkpoints/step_00000004"
dry="$("$GOSSAMER" sweep "$S1" --out "$O1" --dry-run 2>&1)"
grep -q '^a: resume (checkpoint at step 2 of 4)' <<<"$dry" && grep -q -- "--resume $O1/a" <<<"$dry" \
  && [[ ! -e "$O1/a/checkpoints/step_00000004" ]] && pass "dry run plans the resume, writes nothing" \
  || fail "dry run: $dry"
"$GOSSAMER" sweep "$S1" --out "$O1" >/dev/null 2>"$WORK/run4.log" || true
grep -q 'a: resume (checkpoint at step 2 of 4)' "$WORK/run4.log" && [[ "$(status_of "$O1" a)" == finished ]] \
  && cmp -s "$WORK/a.losses" <(losses "$O1/a/metrics.jsonl") \
  && pass "a resumed to step 4 with the same losses" || fail "resume: $(grep sweep: "$WORK/run4.log")"

# --set on the command line: joins the file's "set" (a dry run shows it in each point's config:
# the changed key makes the finished points stale), and is refused for a key the points vary.
expect_error "sweep --set changes every point" 'finished point\(s\) in .* another config: a \(schedule.warmup_steps: 0 in the run, 1 now\)' \
  "$GOSSAMER" sweep "$S1" --out "$O1" --set schedule.warmup_steps=1
expect_error "sweep --set of a key the points vary" '--set optimizer.lr=0.5: the sweep.s points vary optimizer.lr, which would override this value' \
  "$GOSSAMER" sweep "$S1" --out "$O1" --set optimizer.lr=0.5

# ---- 5. a changed config is refused before anything runs ------------------------------------
sed 's/"schedule.warmup_steps": 0/"schedule.warmup_steps": 1/' "$S1" >"$WORK/s1b.json"
before="$(snapshot "$O1")"
expect_error "changed config refused" 'finished point\(s\) in .* another config: a \(schedule.warmup_steps: 0 in the run, 1 now\)' \
  "$GOSSAMER" sweep "$WORK/s1b.json" --out "$O1"
[[ "$(snapshot "$O1")" == "$before" ]] && pass "nothing written after the refusal" || fail "files changed"

# A run made by an older binary lacks the keys added since: such a key compares as the behaviour
# the run had (run/resume_check.cpp), here unrecorded, so the finished point is still skipped.
cp "$O1/a/config.json" "$WORK/a-config.json"
node -e 'const f = process.argv[1], fs = require("fs"); const j = JSON.parse(fs.readFileSync(f));
  delete j.train.sample_tokens; fs.writeFileSync(f, JSON.stringify(j));' "$O1/a/config.json"
"$GOSSAMER" sweep "$S1" --out "$O1" --dry-run 2>&1 | grep -q '^a: skip' \
  && pass "a key the run predates does not make a finished point stale" \
  || fail "plan with a key missing from the run: $("$GOSSAMER" sweep "$S1" --out "$O1" --dry-run 2>&1 | head -3)"
cp "$WORK/a-config.json" "$O1/a/config.json"

# ---- 6. mpirun with 2 ranks (grid of two ZeRO stages) ----------------------------------------
cat >"$WORK/s2.json" <<EOF
{"base": "$BASE", "set": {$COMMON}, "grid": {"parallel.zero_stage": [0, 1]},
 "launcher": {"kind": "mpirun", "ranks": 2}}
EOF
if "$GOSSAMER" sweep "$WORK/s2.json" --out "$WORK/o2" >/dev/null 2>"$WORK/run6.log"; then
  pass "mpirun sweep exit 0"
else
  fail "mpirun sweep failed: $(tail -20 "$WORK/run6.log")"
fi
grep -q 'parallel: 2 rank(s)' "$WORK/o2/zero_stage=1/train.log" && pass "points ran on 2 ranks" \
  || fail "train.log: $(head -20 "$WORK/o2/zero_stage=1/train.log")"
if out="$(check_summary "$WORK/o2" 1000)"; then
  pass "mpirun summary agrees with metrics.jsonl, bytes sent > 0: $(tr '\n' ';' <<<"$out")"
else
  fail "mpirun summary: $out $(cat "$WORK/o2/summary.csv")"
fi

# ---- 7. slurm: the array script for the points still to run ---------------------------------
O3="$WORK/o3"
cp -a "$O1" "$O3"
rm -rf "$O3/b"
sweep_file "$WORK/s3.json" '{"kind": "slurm", "ranks": 2, "sbatch": ["--time=00:10:00"]}'
"$GOSSAMER" sweep "$WORK/s3.json" --out "$O3" >/dev/null 2>"$WORK/run7.log" \
  && pass "slurm launcher exit 0" || fail "slurm launcher: $(cat "$WORK/run7.log")"
bash -n "$O3/sweep.sbatch" && pass "sweep.sbatch is valid bash" || fail "sweep.sbatch: bash -n failed"
grep -qx '#SBATCH --array=0-1' "$O3/sweep.sbatch" && grep -qx '#SBATCH --ntasks=2' "$O3/sweep.sbatch" \
  && grep -qx '#SBATCH --time=00:10:00' "$O3/sweep.sbatch" \
  && pass "array 0-1 (b and diverge; a is finished), 2 tasks" || fail "sweep.sbatch: $(grep SBATCH "$O3/sweep.sbatch")"
[[ "$(cut -d' ' -f1 "$O3/points.txt" | tr '\n' ' ')" == "b diverge " ]] && grep -q "train -c $O3/b/point.json --out $O3/b\$" "$O3/points.txt" \
  && pass "points.txt: one command per task" || fail "points.txt: $(cat "$O3/points.txt")"
# Run task 0 as Slurm would, with a stand-in srun that drops its options.
mkdir -p "$WORK/fakebin"
cat >"$WORK/fakebin/srun" <<'EOF'
#!/bin/bash
while [[ $# -gt 0 ]]; do case "$1" in -n) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec "$@"
EOF
chmod +x "$WORK/fakebin/srun"
PATH="$WORK/fakebin:$PATH" SLURM_ARRAY_TASK_ID=0 bash "$O3/sweep.sbatch" >/dev/null 2>&1 \
  && "$GOSSAMER" sweep "$WORK/s3.json" --out "$O3" --summarize-only 2>/dev/null \
  && [[ "$(status_of "$O3" b)" == finished ]] && pass "array task 0 trained b; --summarize-only sees it" \
  || fail "array task 0: $(tail -5 "$O3/b/train.log" 2>&1)"

# ---- 8. SIGINT to the sweep: the point checkpoints, the sweep exits 130 ----------------------
cat >"$WORK/s4.json" <<EOF
{"base": "$BASE", "set": {$REST, "train.steps": 400, "train.eval_every": 0, "train.checkpoint_every": 0},
 "points": [{"name": "long"}, {"name": "next"}]}
EOF
"$GOSSAMER" sweep "$WORK/s4.json" --out "$WORK/o4" >/dev/null 2>"$WORK/run8.log" &
pid=$!
for _ in $(seq 200); do grep -q '"step":2,' "$WORK/o4/long/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
if [[ $rc -eq 130 ]] && [[ "$(status_of "$WORK/o4" long)" == interrupted ]] \
  && ls "$WORK/o4/long/checkpoints" | grep -q step_ && [[ ! -e "$WORK/o4/next/metrics.jsonl" ]]; then
  pass "SIGINT: exit 130, long interrupted at $(ls "$WORK/o4/long/checkpoints"), next not started"
else
  fail "SIGINT: exit $rc; $(tail -5 "$WORK/run8.log")"
fi
"$GOSSAMER" sweep "$WORK/s4.json" --out "$WORK/o4" --dry-run | grep -q '^long: resume (checkpoint at step' \
  && pass "the interrupted point would resume" || fail "no resume planned after SIGINT"

# ---- 8b. a point killed before its first checkpoint restarts from scratch ---------------------
# 100 steps: time to kill it after step 2, and a short re-run.
cat >"$WORK/s8b.json" <<EOF
{"base": "$BASE", "set": {$REST, "train.steps": 100, "train.eval_every": 0, "train.checkpoint_every": 0},
 "points": [{"name": "killed"}]}
EOF
"$GOSSAMER" sweep "$WORK/s8b.json" --out "$WORK/o8b" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q '"step":2,' "$WORK/o8b/killed/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -KILL "$pid"
pkill -KILL -f "$WORK/o8b/killed/point.json" || true
wait "$pid" 2>/dev/null || true
"$GOSSAMER" sweep "$WORK/s8b.json" --out "$WORK/o8b" --dry-run | grep -q '^killed: restart (unfinished, no checkpoint' \
  && pass "a point killed before its first checkpoint would restart" \
  || fail "plan after kill -9: $("$GOSSAMER" sweep "$WORK/s8b.json" --out "$WORK/o8b" --dry-run 2>&1 | head -3)"
"$GOSSAMER" sweep "$WORK/s8b.json" --out "$WORK/o8b" >"$WORK/run8b.log" 2>&1 \
  && [[ "$(status_of "$WORK/o8b" killed)" == finished ]] \
  && pass "... and finishes when the sweep is run again" || fail "rerun after kill -9: $(tail -5 "$WORK/run8b.log")"

# ---- 8c. a sweep made longer resumes its finished points from their last checkpoints ------------
cat >"$WORK/s8c.json" <<EOF
{"base": "$BASE", "set": {$REST, "train.steps": 3, "train.eval_every": 0, "train.checkpoint_every": 3},
 "points": [{"name": "grow"}]}
EOF
"$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" >/dev/null 2>&1 || fail "8c: first sweep failed"
sed -i 's/"train.steps": 3,/"train.steps": 6,/' "$WORK/s8c.json"
"$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" --dry-run \
  | grep -q '^grow: resume (checkpoint at step 3 of 6; changed, a resume may: train.steps: 3 in the run, 6 now)' \
  && pass "train.steps raised: the point would resume from step 3" \
  || fail "plan after raising train.steps: $("$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" --dry-run 2>&1 | head -3)"
"$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" >"$WORK/run8c.log" 2>&1 \
  && [[ "$(status_of "$WORK/o8c" grow)" == finished ]] \
  && [[ "$(grep -o '"step":[0-9]*,"time_s"\|"loss"' "$WORK/o8c/grow/metrics.jsonl" | grep -c loss)" == 6 ]] \
  && pass "... and continues to step 6, every step logged once" || fail "8c rerun: $(tail -5 "$WORK/run8c.log")"
# Lowering train.steps below the newest checkpoint must not restart (and so delete) the longer run.
sed 's/"train.steps": 6,/"train.steps": 4,/' "$WORK/s8c.json" >"$WORK/s8c-short.json"
expect_error "train.steps lowered below the newest checkpoint" \
  'have run past the train.steps asked for now: grow \(checkpoint at step 6, train.steps 4 now\)' \
  "$GOSSAMER" sweep "$WORK/s8c-short.json" --out "$WORK/o8c"
[[ -d "$WORK/o8c/grow/checkpoints/step_00000006" ]] && pass "... and the longer run is kept" \
  || fail "the 6-step run was deleted"
sed -i 's/"points": \[{"name": "grow"}\]/"points": [{"name": "grow", "set": {"optimizer.lr": 0.0005}}]/' "$WORK/s8c.json"
sed -i 's/"train.steps": 6,/"train.steps": 9,/' "$WORK/s8c.json"
"$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" --dry-run | grep -q '^grow: restart (unfinished run of another config, optimizer.lr' \
  && pass "a changed definition key still restarts" \
  || fail "plan after changing optimizer.lr: $("$GOSSAMER" sweep "$WORK/s8c.json" --out "$WORK/o8c" --dry-run 2>&1 | head -3)"

# ---- 9. errors name the JSON path or the point and key; nothing is written -------------------
bad() {  # NAME PATTERN JSON
  echo "$3" >"$WORK/bad.json"
  expect_error "$1" "$2" "$GOSSAMER" sweep "$WORK/bad.json" --out "$WORK/bad"
  [[ ! -e "$WORK/bad" ]] || fail "$1: wrote $WORK/bad"
}
bad "unknown sweep key" 'bad.json: grdi: unknown key' "{\"base\": \"$BASE\", \"grdi\": {}}"
bad "unknown config key in grid" 'bad.json: grid.optimizer.lrr: unknown config key \(keys of optimizer' \
  "{\"base\": \"$BASE\", \"grid\": {\"optimizer.lrr\": [1]}}"
bad "wrong type, naming point and key" 'bad.json: point lr=fast: optimizer.lr: expected a number' \
  "{\"base\": \"$BASE\", \"grid\": {\"optimizer.lr\": [0.001, \"fast\"]}}"
bad "invalid value, naming point and key" 'bad.json: point x: data.seq_len: must lie in' \
  "{\"base\": \"$BASE\", \"points\": [{\"name\": \"x\", \"set\": {\"data.seq_len\": 1000}}]}"
bad "duplicate names" 'points\[1\]: point name "x" is already used by points\[0\]' \
  "{\"base\": \"$BASE\", \"points\": [{\"name\": \"x\"}, {\"name\": \"x\"}]}"
bad "unknown launcher" 'launcher.kind: expected "plain", "mpirun" or "slurm"' \
  "{\"base\": \"$BASE\", \"launcher\": {\"kind\": \"pbs\"}}"
bad "missing shards" 'point base: data.train: shard pattern .nope/\*.bin.' \
  "{\"base\": \"$BASE\", \"set\": {\"data.train\": \"nope/*.bin\"}}"

# ---- 10. a copied binary outside the source tree still plots ---------------------------------
# The plot script is compiled in. The copy runs from another directory with an absolute sweep
# file and absolute data paths; where a private mount namespace is allowed, the source tree's
# scripts/ is hidden under an empty tmpfs, so a plot that still needs the source tree fails here.
E="$WORK/elsewhere"
mkdir -p "$E/bin" "$E/cwd"
cp "$GOSSAMER" "$E/bin/gossamer"
cat >"$E/s5.json" <<EOF
{"base": "$BASE", "set": {$REST, "train.eval_every": 2, "train.checkpoint_every": 2, "train.steps": 2,
 "data.train": "$SRC/data/web-spm512/train_*.bin", "data.val": "$SRC/data/web-spm512/val_*.bin",
 "data.tokenizer": "spm:$SRC/data/web-spm512/tokenizer.model"}, "points": [{"name": "copy"}]}
EOF
hidden=0
unshare -rm true 2>/dev/null && hidden=1
# in_sandbox DIR CMD...: CMD run from DIR; with hidden=1 in a mount namespace where $SRC/scripts
# is an empty tmpfs, and /usr/bin too when HIDE_USR_BIN=1.
in_sandbox() {
  local dir="$1"; shift
  if [[ $hidden == 1 ]]; then
    (cd "$dir" && unshare -rm bash -c 'mount -t tmpfs none "$1/scripts" || exit 97
      if [[ "$2" == 1 ]]; then mount -t tmpfs none /usr/bin || exit 97; fi
      shift 2; exec "$@"' _ "$SRC" "${HIDE_USR_BIN:-0}" "$@")
  else
    (cd "$dir" && "$@")
  fi
}
where="scripts/ hidden"
[[ $hidden == 1 ]] || where="scripts/ not hidden: unshare -rm unavailable"
rc=0
in_sandbox "$E/cwd" "$E/bin/gossamer" sweep "$E/s5.json" --out "$E/o5" >/dev/null \
  2>"$WORK/run10.log" || rc=$?
if [[ $rc -ne 0 ]]; then
  fail "copied binary: sweep exit $rc: $(tail -5 "$WORK/run10.log")"
elif [[ $have_matplotlib == 1 ]]; then
  [[ -s "$E/o5/loss.png" ]] && ! grep -q 'no loss plot' "$WORK/run10.log" \
    && pass "copied binary run from elsewhere ($where) wrote loss.png" \
    || fail "copied binary ($where) wrote no loss.png: $(grep -E 'plot|warn' "$WORK/run10.log")"
else
  grep -q 'no loss plot: python3 with matplotlib not found (.*apt install python3-matplotlib)' \
    "$WORK/run10.log" && pass "copied binary, no matplotlib: $(grep 'no loss plot' "$WORK/run10.log")" \
    || fail "copied binary: no clear matplotlib warning: $(grep -E 'plot|warn' "$WORK/run10.log")"
fi
[[ ! -e "$E/o5/.loss.png.log" ]] && pass "no plot log left behind" || fail ".loss.png.log left behind"

# Without matplotlib (a package on PYTHONPATH fails to import the way a missing one does): exit
# 0, the tables written, no loss.png, one warning saying what is missing and how to get it.
mkdir -p "$E/nompl/matplotlib"
echo "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')" \
  >"$E/nompl/matplotlib/__init__.py"
want='python3 with matplotlib not found (/usr/bin/python3 cannot import it; apt install python3-matplotlib)'
[[ -x /usr/bin/python3 ]] || want='python3 with matplotlib not found (no /usr/bin/python3; apt install python3-matplotlib)'
rc=0
(cd "$E/cwd" && PYTHONPATH="$E/nompl" "$E/bin/gossamer" sweep "$E/s5.json" --out "$E/o5" \
  --summarize-only) >/dev/null 2>"$WORK/run10b.log" || rc=$?
if [[ $rc -eq 0 && ! -e "$E/o5/loss.png" && -s "$E/o5/summary.csv" ]] \
  && [[ "$(grep -c 'no loss plot' "$WORK/run10b.log")" == 1 ]] && grep -qF "$want" "$WORK/run10b.log"; then
  pass "matplotlib missing: exit 0, $(grep 'no loss plot' "$WORK/run10b.log")"
else
  fail "matplotlib missing: exit $rc; log: $(cat "$WORK/run10b.log")"
fi
# Without python3 (/usr/bin hidden in the namespace): the same, naming the interpreter.
if [[ $hidden == 1 ]]; then
  rc=0
  HIDE_USR_BIN=1 in_sandbox "$E/cwd" "$E/bin/gossamer" sweep "$E/s5.json" --out "$E/o5" \
    --summarize-only >/dev/null 2>"$WORK/run10c.log" || rc=$?
  [[ $rc -eq 0 && ! -e "$E/o5/loss.png" ]] && grep -qF \
    'python3 with matplotlib not found (no /usr/bin/python3; apt install python3-matplotlib)' \
    "$WORK/run10c.log" && pass "python3 missing: exit 0, $(grep 'no loss plot' "$WORK/run10c.log")" \
    || fail "python3 missing: exit $rc; log: $(cat "$WORK/run10c.log")"
else
  echo "note: unshare -rm unavailable: the source tree was not hidden, python3-missing not checked"
fi

finish
