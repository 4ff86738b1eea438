// Prints the time-to-loss table of the timed studies (scripts/study-time-to-loss.sh,
// scripts/study-gasloc-links.sh): per run directory, the training time (the sum of rank 0's
// logged step times, evaluation excluded) until its validation loss first reaches the target,
// which defaults to the final validation loss of the first run named. A run with simulated time
// (parallel.sim, `train --ranks N`) is timed by its simulated step times (time_s.sim) instead,
// and its label says "(simulated)".
// Usage: node scripts/time_to_loss_table.js TARGET|"" DIR:LABEL [DIR:LABEL ...]
"use strict";
const fs = require("fs");
const [targetArg, ...runsArg] = process.argv.slice(2);
const runs = runsArg.map((a) => {
  const i = a.lastIndexOf(":");
  const lines = fs.readFileSync(`${a.slice(0, i)}/metrics.jsonl`, "utf8").split("\n").filter(Boolean).map(JSON.parse);
  const simulated = lines.some((j) => j.time_s && "sim" in j.time_s);
  return {label: a.slice(i + 1) + (simulated ? " (simulated)" : ""), lines, simulated};
});
const vals = (r) => r.lines.filter((j) => "val_loss" in j && j.step > 0);
const final = (r) => vals(r)[vals(r).length - 1];
const target = targetArg ? Number(targetArg) : final(runs[0]).val_loss;
console.log(`target validation loss ${target.toFixed(4)}` + (targetArg ? "" : ` (the final one of ${runs[0].label})`));
console.log("| method | steps run | median step | final val | first eval at or below the target | training time to it |");
console.log("|---|--:|--:|--:|--:|--:|");
const med = (v) => { v = v.slice().sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
const times = [];
for (const r of runs) {
  const steps = r.lines.filter((j) => "loss" in j);
  const time = (j) => (r.simulated ? j.time_s.sim : j.time_s.total);
  const hit = vals(r).find((j) => j.val_loss <= target + 1e-12);
  const t = hit ? steps.filter((j) => j.step <= hit.step).reduce((s, j) => s + time(j), 0) : NaN;
  times.push(t);
  console.log(`| ${r.label} | ${steps.length} | ${(1e3 * med(steps.map(time))).toFixed(0)} ms | ` +
    `${final(r).val_loss.toFixed(4)} | ${hit ? "step " + hit.step : "not reached"} | ` +
    `${hit ? t.toFixed(1) + " s" : "-"} |`);
}
for (let i = 1; i < runs.length; ++i)
  if (isFinite(times[0]) && isFinite(times[i]))
    console.log(`${runs[i].label} / ${runs[0].label} time to the target: ${(times[i] / times[0]).toFixed(2)}x`);
