# Simulated time (parallel.sim; docs/NETWORK.md, "Simulated time") on `train --ranks N`: every
# step and evaluation line carries sim_time (rank 0's clock, never decreasing) and time_s.sim,
# every rank's clock is in "ranks"; the losses are those of the run without simulation, bit for
# bit; a network 100x slower makes each step at least the bytes rank 0 sent / its rate (its
# messages leave one after another) and at most that plus a generous multiple of the fast
# network's step; a slow rank slows the others' clocks too; plot_metrics.py --x sim_time and the
# time-to-loss table read it; at parallel.sim.gflops the compute is counted, not measured: the
# simulated times are the same in two runs, whatever kernels.threads, and halve at twice the rate
# on a network too fast to matter; bad settings are refused naming the key, nothing written.
source "$(dirname "$0")/lib.sh"
require_data
G="$GOSSAMER"
TINY=configs/test/gpt2-tiny-v512.json
common=(-c $TINY --set train.steps=8 --set train.eval_every=4 --set train.eval_batches=2
        --set train.log_every=1 --set data.micro_batch=2)
sim() {  # NAME N ARGS...
  local name="$1" n="$2"; shift 2
  "$G" train "${common[@]}" --ranks "$n" --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 \
    || { tail -n 5 "$WORK/$name.log"; fail "$name failed"; return 1; }
}
net() { echo --set parallel.sim.network="$1" --set parallel.sim.bandwidth_mbit="$2"; }

# shellcheck disable=SC2046  # net prints whole --set options
sim plain 2 && sim fast 2 $(net uniform 1000) && sim slow 2 $(net uniform 10) \
  && sim slowrank 3 $(net slow_rank 1000) --set parallel.sim.slow_rank=2 \
       --set parallel.sim.slow_bandwidth_mbit=10 && sim fast3 3 $(net uniform 1000)
[[ -s "$WORK/slow/metrics.jsonl" ]] || { finish; exit 1; }

diff <(losses "$WORK/plain/metrics.jsonl") <(losses "$WORK/slow/metrics.jsonl") >/dev/null \
  && diff <(grep -o '"val_loss":[^,}]*' "$WORK/plain/metrics.jsonl") \
          <(grep -o '"val_loss":[^,}]*' "$WORK/slow/metrics.jsonl") >/dev/null \
  && pass "simulated time leaves every loss as it is" || fail "simulation changed the losses"

grep -q "simulated time: uniform, every rank sends at 10 Mbit/s" "$WORK/slow.log" \
  && pass "the log names the simulated network" || fail "no network line in the log"

node - "$WORK" <<'JSEOF' && pass "sim_time on every line, per rank, never decreasing; slow network within bounds" || fail "simulated times"
const fs = require("fs");
const read = (n) => fs.readFileSync(`${process.argv[2]}/${n}/metrics.jsonl`, "utf8")
  .split("\n").filter(Boolean).map(JSON.parse);
const check = (c, m) => { if (!c) { console.error(m); process.exit(1); } };
const med = (v) => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];
const steps = (n) => read(n).filter((j) => "loss" in j);
for (const name of ["fast", "slow", "slowrank"]) {
  let last = -1;
  for (const j of read(name)) {
    check(typeof j.sim_time === "number" && j.sim_time >= last, `${name} step ${j.step}: sim_time ${j.sim_time} after ${last}`);
    last = j.sim_time;
    if ("loss" in j) {
      check(j.time_s.sim > 0, `${name} step ${j.step}: time_s.sim ${j.time_s.sim}`);
      check(j.ranks.every((r) => typeof r.sim_time === "number"), `${name} step ${j.step}: a rank without sim_time`);
    }
  }
}
check(!("sim_time" in read("plain")[1]), "sim_time without parallel.sim");
// 10 Mbit/s: rank 0's bytes must leave one after another (lower bound); the rest is compute.
const rate = 10e6 / 8;
const fastStep = med(steps("fast").map((j) => j.time_s.sim));
for (const j of steps("slow")) {
  const floor = j.bytes_sent / rate;
  check(j.time_s.sim >= floor * (1 - 1e-9), `step ${j.step}: ${j.time_s.sim} s < ${floor} s to send ${j.bytes_sent} bytes`);
  check(j.time_s.sim <= floor + 10 * fastStep + 0.05, `step ${j.step}: ${j.time_s.sim} s, more than ${floor} s of sending + 10 x ${fastStep}`);
}
// Rank 2 sends at 10 Mbit/s: every rank waits for its part of each all-reduce, so rank 0's
// clock after step s is at least the time rank 2 needs to send its bytes of steps 1..s (per
// step it need not be: rank 2 may start a step's sends before rank 0 starts the step). The
// telemetry of a step can leave after its line's clock: 1e-3 of slack covers its few bytes.
const slowSteps = steps("slowrank");
let rank2Bytes = 0;
for (const j of slowSteps) {
  rank2Bytes += j.ranks[2].bytes_sent;
  check(j.sim_time >= rank2Bytes / rate * (1 - 1e-3), `slow rank: step ${j.step} at ${j.sim_time} s, rank 2 sent ${rank2Bytes} bytes`);
}
check(med(slowSteps.map((j) => j.time_s.sim)) > 5 * med(steps("fast3").map((j) => j.time_s.sim)),
      "a slow rank did not slow rank 0's steps");
JSEOF

# Counted compute (parallel.sim.gflops): deterministic; a 10^9 Mbit/s network leaves compute.
# shellcheck disable=SC2046
sim count 2 $(net uniform 1000) --set parallel.sim.gflops=1 \
  && sim count2threads 2 $(net uniform 1000) --set parallel.sim.gflops=1 --set kernels.threads=2 \
  && sim count1 2 $(net uniform 1e9) --set parallel.sim.gflops=1 \
  && sim count2 2 $(net uniform 1e9) --set parallel.sim.gflops=2
simtimes() { grep -o '"sim_time":[^,}]*' "$1"; }
[[ -s "$WORK/count.log" ]] && grep -q "compute = each rank's matrix-product and attention FLOPs at 1 GFLOP/s" "$WORK/count.log" \
  && diff <(simtimes "$WORK/count/metrics.jsonl") <(simtimes "$WORK/count2threads/metrics.jsonl") >/dev/null \
  && diff <(losses "$WORK/plain/metrics.jsonl") <(losses "$WORK/count/metrics.jsonl") >/dev/null \
  && pass "gflops: the same simulated times in two runs (1 and 2 threads per rank), losses unchanged" \
  || fail "gflops: simulated times differ between two runs, or the losses changed"
node - "$WORK" <<'JSEOF' && pass "gflops: twice the rate, half the step" || fail "gflops: steps at 1 and 2 GFLOP/s"
const fs = require("fs");
const steps = (n) => fs.readFileSync(`${process.argv[2]}/${n}/metrics.jsonl`, "utf8")
  .split("\n").filter(Boolean).map(JSON.parse).filter((j) => "loss" in j);
const a = steps("count1"), b = steps("count2");
if (a.length !== 8 || b.length !== 8) { console.error("8 steps expected"); process.exit(1); }
for (let i = 0; i < 8; ++i) {
  const r = a[i].time_s.sim / b[i].time_s.sim;
  if (!(a[i].time_s.sim > 0.01 && Math.abs(r - 2) < 1e-5)) {
    console.error(`step ${a[i].step}: ${a[i].time_s.sim} s at 1 GFLOP/s, ${b[i].time_s.sim} s at 2`);
    process.exit(1);
  }
}
JSEOF

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 scripts/plot_metrics.py --x sim_time "$WORK/sim.png" "$WORK/fast" "$WORK/slow" >/dev/null \
    && [[ -s "$WORK/sim.png" ]] && pass "plot_metrics.py --x sim_time" || fail "plot_metrics.py --x sim_time"
  expect_error "plot_metrics.py --x sim_time of a run without simulated time" "no simulated time" \
    /usr/bin/python3 scripts/plot_metrics.py --x sim_time "$WORK/no.png" "$WORK/plain"
else
  fail "/usr/bin/python3 has no matplotlib (scripts/install-deps.sh)"
fi
node scripts/time_to_loss_table.js "" "$WORK/slow:slow" "$WORK/plain:plain" >"$WORK/table" \
  && grep -q "| slow (simulated) | 8 |" "$WORK/table" && grep -q "| plain | 8 |" "$WORK/table" \
  && pass "time_to_loss_table.js times a simulated run by its simulated steps" \
  || fail "time_to_loss_table.js: $(cat "$WORK/table")"

# Bad settings: refused before anything is written.
refused() {  # NAME PATTERN ARGS...
  local name="$1" pattern="$2"; shift 2
  expect_error "$name" "$pattern" "$G" train "${common[@]}" --out "$WORK/bad" "$@"
  [[ ! -e "$WORK/bad" ]] || { fail "$name: $WORK/bad was written"; rm -rf "$WORK/bad"; }
}
refused "simulated time without --ranks" "parallel.sim.network = uniform: simulated time runs with the ranks in one process" \
  --set parallel.sim.network=uniform
refused "a slow rank that does not exist" "parallel.sim.slow_rank: rank 2 does not exist in a world of 2 ranks" \
  --ranks 2 --set parallel.sim.network=slow_rank --set parallel.sim.slow_rank=2
refused "a bandwidth of 0" "parallel.sim.bandwidth_mbit: a send rate must be a positive" \
  --ranks 2 --set parallel.sim.network=uniform --set parallel.sim.bandwidth_mbit=0
refused "per-rank rates for another world size" "parallel.sim.rank_mbit: 3 rates for 2 ranks" \
  --ranks 2 --set parallel.sim.network=per_rank --set 'parallel.sim.rank_mbit=[10,10,10]'
refused "a negative per-rank rate" "parallel.sim.rank_mbit\[1\]" \
  --ranks 2 --set parallel.sim.network=per_rank --set 'parallel.sim.rank_mbit=[10,-1]'
refused "more clusters than ranks" "parallel.sim.clusters: 3 clusters of 2 ranks" \
  --ranks 2 --set parallel.sim.network=clusters --set parallel.sim.clusters=3
refused "counted and scaled compute together" "parallel.sim.gflops = 5 and parallel.sim.compute_scale = 2" \
  --ranks 2 --set parallel.sim.network=uniform --set parallel.sim.gflops=5 --set parallel.sim.compute_scale=2
refused "a negative FLOP rate" "parallel.sim.gflops: must be >= 0" \
  --ranks 2 --set parallel.sim.network=uniform --set parallel.sim.gflops=-1
refused "simulated time with several threads per rank" "kernels.threads = 2 with parallel.sim.network" \
  --ranks 2 --set parallel.sim.network=uniform --set kernels.threads=2
finish
