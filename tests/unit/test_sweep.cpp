// Sweep files: grid product order (first key slowest), points x grid, derived and given names,
// precedence of set / points / grid, strict errors naming the JSON path or the point and key,
// base paths relative to the sweep file; point state (finished, resume, restart) and the
// summary computed from hand-written metrics.jsonl files; the Slurm script's array range; the
// plot script compiled into the binary is scripts/plot_metrics.py byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "sweep/plot_script.h"
#include "sweep/runner.h"
#include "sweep/spec.h"
#include "sweep/summary.h"
#include "test_util.h"

using namespace gossamer;
using gossamer::testing::expect_error;
using gossamer::testing::TempDir;
using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// A sweep over an inline base config (4 steps) from JSON text; `out` defaults to "o".
sweep::SweepSpec make_sweep(const std::string& text, const std::string& out = "o") {
  ordered_json j = ordered_json::parse(text);
  if (!j.contains("base")) j["base"] = {{"train", {{"steps", 4}}}};
  return sweep::parse_sweep(j, "s.json", ".", "s", out);
}

std::vector<std::string> names(const sweep::SweepSpec& s) {
  std::vector<std::string> out;
  for (const auto& p : s.points) out.push_back(p.name);
  return out;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string metrics_line(int step, double loss, int64_t bytes, double t) {
  return json({{"step", step},
               {"loss", loss},
               {"bytes_sent", bytes},
               {"tokens", 256 * step},
               {"time_s", {{"total", t}, {"fwd", t / 2}}}})
             .dump() +
         "\n";
}

}  // namespace

TEST(Sweep, GridIsACartesianProductFirstKeySlowest) {
  auto s = make_sweep(R"({"grid": {"optimizer.lr": [1e-3, 3e-3], "train.seed": [1, 2, 3]}})");
  EXPECT_EQ(names(s),
            (std::vector<std::string>{"lr=0.001,seed=1", "lr=0.001,seed=2", "lr=0.001,seed=3",
                                      "lr=0.003,seed=1", "lr=0.003,seed=2", "lr=0.003,seed=3"}));
  EXPECT_EQ(s.varied_keys, (std::vector<std::string>{"optimizer.lr", "train.seed"}));
  const auto& p = s.points[4];
  EXPECT_DOUBLE_EQ(p.config["optimizer"]["lr"].get<double>(), 3e-3);
  EXPECT_EQ(p.config["train"]["seed"].get<int>(), 2);
  EXPECT_EQ(p.config["train"]["out_dir"].get<std::string>(), "o/lr=0.003,seed=2");
  EXPECT_EQ(p.dir, "o/lr=0.003,seed=2");
  EXPECT_EQ(p.steps, 4);
  ASSERT_EQ(p.overrides.size(), 2u);
  EXPECT_EQ(p.overrides[0].first, "optimizer.lr");
}

TEST(Sweep, PointsAreOuterGridInnerAndNamesAreGivenOrDerived) {
  auto s = make_sweep(R"({"points": [{"name": "base"}, {"set": {"optimizer.name": "adams"}}],
                     "grid": {"optimizer.lr": [1e-3, 2e-3]}})");
  EXPECT_EQ(names(s), (std::vector<std::string>{"base,lr=0.001", "base,lr=0.002",
                                                "name=adams,lr=0.001", "name=adams,lr=0.002"}));
  EXPECT_EQ(s.varied_keys, (std::vector<std::string>{"optimizer.name", "optimizer.lr"}));
  EXPECT_EQ(s.points[0].config["optimizer"]["name"], "adamw");  // the base's default
  EXPECT_EQ(s.points[3].config["optimizer"]["name"], "adams");
  // Without grid and points there is one point, "base".
  EXPECT_EQ(names(make_sweep("{}")), (std::vector<std::string>{"base"}));
}

TEST(Sweep, SetAppliesToAllPointsAndPointsOverrideIt) {
  auto s = make_sweep(R"({"set": {"train.steps": 7, "optimizer.lr": 0.5},
                     "points": [{"name": "a"}, {"name": "b", "set": {"optimizer.lr": 0.25}}]})");
  EXPECT_EQ(s.points[0].steps, 7);
  EXPECT_DOUBLE_EQ(s.points[0].config["optimizer"]["lr"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s.points[1].config["optimizer"]["lr"].get<double>(), 0.25);
}

TEST(Sweep, NamesAreSanitisedDirectoryNames) {
  EXPECT_EQ(sweep::sanitize_point_name("data/web/x_*.bin"), "data_web_x__.bin");
  EXPECT_EQ(sweep::sanitize_point_name("lr=1e-05,name=a b"), "lr=1e-05,name=a_b");
  auto s = make_sweep(R"({"grid": {"data.val": ["", "v/*.bin"]}})");
  EXPECT_EQ(names(s), (std::vector<std::string>{"val=", "val=v__.bin"}));
  expect_error([] { make_sweep(R"({"points": [{"name": "a/b"}]})"); },
               {"s.json: points[0].name: \"a/b\" is not a directory name"});
  expect_error([] { make_sweep(R"({"points": [{"name": "summary.csv"}]})"); },
               {"points[0].name", "a file the sweep writes"});
  expect_error([] { make_sweep(R"({"points": [{"name": "x"}, {"name": "x"}]})"); },
               {"s.json: points[1]: point name \"x\" is already used by points[0]"});
  expect_error([] { make_sweep(R"({"grid": {"optimizer.lr": [1e-3, 0.001]}})"); },
               {"grid lr=0.001: point name \"lr=0.001\" is already used by grid lr=0.001"});
}

TEST(Sweep, UnknownKeysAreErrorsNamingThePath) {
  expect_error([] { make_sweep(R"({"grdi": {}})"); },
               {"s.json: grdi: unknown key (keys: name, base"});
  expect_error([] { make_sweep(R"({"points": [{"name": "a", "sett": {}}]})"); },
               {"s.json: points[0].sett: unknown key (keys of points[0]: name, set)"});
  expect_error([] { make_sweep(R"({"launcher": {"kind": "mpirun", "np": 2}})"); },
               {"launcher.np: unknown key"});
  expect_error([] { make_sweep(R"({"set": {"optimizer.lrr": 1}})"); },
               {"s.json: set.optimizer.lrr: unknown config key (keys of optimizer:", "lr"});
  expect_error([] { make_sweep(R"({"grid": {"optimzer.lr": [1]}})"); },
               {"s.json: grid.optimzer.lr: unknown config section \"optimzer\""});
  expect_error([] { make_sweep(R"({"points": [{"set": {"lr": 1}}]})"); },
               {"points[0].set.lr: expected a config key SECTION.KEY"});
  expect_error([] { make_sweep(R"({"set": {"train.out_dir": "x"}})"); },
               {"set.train.out_dir: the sweep sets train.out_dir itself"});
}

TEST(Sweep, BadValuesNameThePointAndKey) {
  expect_error([] { make_sweep(R"({"grid": {"optimizer.lr": [1e-3, "fast"]}})"); },
               {"s.json: point lr=fast: optimizer.lr: expected a number, found string"});
  expect_error(
      [] { make_sweep(R"({"points": [{"name": "x", "set": {"data.seq_len": 100000}}]})"); },
      {"s.json: point x: data.seq_len: must lie in"});
  expect_error([] { make_sweep(R"({"grid": {"optimizer.lr": []}})"); },
               {"grid.optimizer.lr: expected a non-empty array"});
  expect_error([] { make_sweep(R"({"grid": {"optimizer.lr": [[1]]}})"); },
               {"grid.optimizer.lr[0]: expected a value"});
  expect_error([] { make_sweep(R"({"set": {"optimizer.lr": {"a": 1}}})"); },
               {"set.optimizer.lr: expected a value"});
  expect_error(
      [] {
        make_sweep(R"({"points": [{"set": {"optimizer.lr": 1}}], "grid": {"optimizer.lr": [2]}})");
      },
      {"points[0].set.optimizer.lr: also a grid key"});
  expect_error([] { make_sweep(R"({"points": [{"name": "a"}], "reference": "b"})"); },
               {"reference: no point is named \"b\" (points: a)"});
  // The base itself is parsed strictly, naming it.
  expect_error([] { make_sweep(R"({"base": {"trian": {}}})"); },
               {"s.json: base: trian: unknown section"});
}

TEST(Sweep, LauncherIsValidatedAndRanksReachValidation) {
  auto s = make_sweep(R"({"launcher": {"kind": "mpirun", "ranks": 2, "args": ["-x", "A=1"]}})");
  EXPECT_EQ(s.launcher.kind, sweep::SweepLauncherKind::MPIRUN);
  EXPECT_EQ(s.launcher.ranks, 2);
  EXPECT_EQ(s.launcher.args, (std::vector<std::string>{"-x", "A=1"}));
  expect_error([] { make_sweep(R"({"launcher": {"kind": "pbs"}})"); },
               {"launcher.kind: expected \"plain\", \"mpirun\" or \"slurm\""});
  expect_error([] { make_sweep(R"({"launcher": {"ranks": 2}})"); }, {"launcher: kind \"plain\""});
  expect_error([] { make_sweep(R"({"launcher": 3})"); },
               {"launcher: expected an object, found integer 3"});
  expect_error([] { make_sweep(R"({"launcher": ["mpirun"]})"); },
               {"launcher: expected an object, found an array"});
  expect_error([] { make_sweep(R"({"launcher": {"kind": "mpirun", "ranks": 0}})"); },
               {"launcher.ranks: expected an integer >= 1"});
  expect_error([] { make_sweep(R"({"launcher": {"kind": "mpirun", "sbatch": ["-p x"]}})"); },
               {"launcher.sbatch: only for kind \"slurm\""});
  // 256 tokens per micro-batch: 512 is a multiple for 2 ranks, not for 3.
  const std::string gbt =
      R"({"set": {"data.micro_batch": 4, "data.seq_len": 64, "train.global_batch_tokens": 512},
          "launcher": {"kind": "mpirun", "ranks": %d}})";
  char buf[512];
  std::snprintf(buf, sizeof buf, gbt.c_str(), 2);
  EXPECT_NO_THROW(make_sweep(buf));
  std::snprintf(buf, sizeof buf, gbt.c_str(), 3);
  expect_error([&] { make_sweep(buf); }, {"point base: train.global_batch_tokens", "* 3"});
}

TEST(Sweep, BaseIsRelativeToTheSweepFileAndOutDefaultsToItsName) {
  TempDir dir;
  write(fs::path(dir.path()) / "cfg" / "base.json", R"({"train": {"steps": 3}})");
  write(fs::path(dir.path()) / "cfg" / "my-sweep.json",
        R"({"base": "base.json", "grid": {"train.seed": [1, 2]}})");
  auto s = sweep::load_sweep(dir.file("cfg/my-sweep.json"), "");
  EXPECT_EQ(s.name, "my-sweep");
  EXPECT_EQ(s.out, "runs/sweeps/my-sweep");
  EXPECT_EQ(s.points[1].dir, "runs/sweeps/my-sweep/seed=2");
  EXPECT_EQ(s.points[1].steps, 3);
  EXPECT_EQ(sweep::load_sweep(dir.file("cfg/my-sweep.json"), "x/y").points[0].dir, "x/y/seed=1");
  write(fs::path(dir.path()) / "cfg" / "missing.json", R"({"base": "nope.json"})");
  expect_error([&] { sweep::load_sweep(dir.file("cfg/missing.json"), ""); },
               {"missing.json: base: ", "cfg/nope.json: cannot open config file"});
  write(fs::path(dir.path()) / "cfg" / "broken.json", R"({"base": )");
  expect_error([&] { sweep::load_sweep(dir.file("cfg/broken.json"), ""); },
               {"broken.json: not valid JSON"});
  write(fs::path(dir.path()) / "cfg" / "twice.json",
        R"({"base": "base.json", "grid": {"train.seed": [1]}, "base": "other.json"})");
  expect_error([&] { sweep::load_sweep(dir.file("cfg/twice.json"), ""); },
               {"twice.json: duplicate key base"});
}

TEST(Sweep, MedianAndPointMetrics) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
  TempDir dir;
  write(fs::path(dir.path()) / "metrics.jsonl", R"({"step":0,"val_loss":11.0,"val_tokens":512})"
                                                "\n" +
                                                    metrics_line(1, 10.5, 100, 0.5) + "not json\n" +
                                                    metrics_line(2, 10.0, 300, 0.25) +
                                                    R"({"step":2,"val_loss":9.5,"val_tokens":512})"
                                                    "\n");
  auto m = sweep::read_point_metrics(dir.path(), {"time_s.total"});
  EXPECT_TRUE(m.exists);
  EXPECT_EQ(m.steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.losses, (std::vector<double>{10.5, 10.0}));
  EXPECT_DOUBLE_EQ(m.val_loss, 9.5);
  EXPECT_EQ(m.val_step, 2);
  EXPECT_EQ(m.tokens, 512);
  EXPECT_EQ(m.numeric["bytes_sent"], (std::vector<double>{100, 300}));
  EXPECT_EQ(m.numeric["time_s.total"], (std::vector<double>{0.5, 0.25}));
}

TEST(Sweep, PlanSkipsFinishedResumesCheckpointedAndRestartsChangedConfigs) {
  TempDir dir;
  auto s = make_sweep(R"({"points": [{"name": "done"}, {"name": "half"}, {"name": "new"},
                                {"name": "changed"}]})",
                      dir.path());
  auto run_dir = [&](const char* name) { return fs::path(dir.path()) / name; };
  auto finish = [&](const char* name, int steps) {
    std::string lines;
    for (int i = 1; i <= steps; ++i) lines += metrics_line(i, 10, 0, 0.1);
    write(run_dir(name) / "metrics.jsonl", lines);
    fs::create_directories(run_dir(name) / "checkpoints" /
                           (steps == 4 ? "step_00000004" : "step_00000002"));
  };
  finish("done", 4);
  finish("half", 2);
  finish("changed", 2);
  json other = s.points[3].config;
  other["optimizer"]["lr"] = 1.0;
  write(run_dir("changed") / "config.json", other.dump());
  write(run_dir("done") / "config.json", s.points[0].config.dump());

  const auto plan = sweep::plan_sweep(s, "/bin/gossamer");
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].action, sweep::SweepAction::SKIP);
  EXPECT_EQ(plan[1].action, sweep::SweepAction::RESUME);
  EXPECT_EQ(plan[1].reason, "checkpoint at step 2 of 4");
  EXPECT_EQ(plan[1].argv.back(), s.points[1].dir);
  EXPECT_EQ(plan[1].argv[plan[1].argv.size() - 2], "--resume");
  EXPECT_EQ(plan[2].action, sweep::SweepAction::RUN);
  EXPECT_EQ(plan[2].argv,
            (std::vector<std::string>{"/bin/gossamer", "train", "-c",
                                      s.points[2].dir + "/point.json", "--out", s.points[2].dir}));
  EXPECT_EQ(plan[3].action, sweep::SweepAction::RESTART);
  EXPECT_NE(plan[3].reason.find("optimizer.lr: 1.0 in the run"), std::string::npos)
      << plan[3].reason;

  // A finished run of another config is refused before anything runs.
  write(run_dir("done") / "config.json", other.dump());
  expect_error([&] { sweep::plan_sweep(s, "/bin/gossamer"); },
               {"finished point(s)", "done (optimizer.lr: 1.0 in the run"});
}

// Sections nest (optimizer.scape.*): a finished run is compared key by key at the leaves, so a
// key inside a nested section that the run predates compares as the behaviour it ran with
// (run/resume_check.h) and a changed one is named by its full path.
TEST(Sweep, NestedKeysAreComparedOneByOne) {
  TempDir dir;
  auto s = make_sweep(R"({"base": {"train": {"steps": 4}, "optimizer": {"name": "scape"}},
                          "points": [{"name": "old"}, {"name": "changed"}]})",
                      dir.path());
  ASSERT_TRUE(s.points[0].config["optimizer"]["scape"].contains("mask_per_tensor"));
  for (const char* name : {"old", "changed"}) {
    const fs::path run = fs::path(dir.path()) / name;
    std::string lines;
    for (int i = 1; i <= 4; ++i) lines += metrics_line(i, 10, 0, 0.1);
    write(run / "metrics.jsonl", lines);
    fs::create_directories(run / "checkpoints" / "step_00000004");
  }
  json old = s.points[0].config;
  old["optimizer"]["scape"].erase("mask_per_tensor");  // a run made before the key existed
  write(fs::path(dir.path()) / "old" / "config.json", old.dump());
  json changed = s.points[1].config;
  changed["optimizer"]["scape"]["sparsity"] = 0.5;
  write(fs::path(dir.path()) / "changed" / "config.json", changed.dump());

  EXPECT_EQ(sweep::inspect_point(s.points[0], {}).definition_diff, "");
  const auto state = sweep::inspect_point(s.points[1], {});
  EXPECT_NE(state.definition_diff.find("optimizer.scape.sparsity: 0.5 in the run"),
            std::string::npos)
      << state.definition_diff;
}

TEST(Sweep, MpirunLaunchWrapsTheTrainCommand) {
  auto s =
      make_sweep(R"({"launcher": {"kind": "mpirun", "ranks": 3, "args": ["--mca", "x", "y"]}})");
  const auto plan = sweep::plan_sweep(s, "/bin/gossamer");
  const auto& a = plan[0].argv;
  EXPECT_EQ(a[0], "mpirun");
  const auto np = std::find(a.begin(), a.end(), "-np");
  ASSERT_NE(np, a.end());
  EXPECT_EQ(*(np + 1), "3");
  EXPECT_EQ(*(np + 2), "--mca");
  EXPECT_EQ(*(np + 5), "/bin/gossamer");
  EXPECT_NE(std::find(a.begin(), a.end(), "self,vader"), a.end());
}

TEST(Sweep, SummaryRowsComeFromMetrics) {
  TempDir dir;
  auto s = make_sweep(R"({"points": [{"name": "a", "set": {"optimizer.lr": 0.5}},
                                {"name": "b", "set": {"optimizer.lr": 0.25}}, {"name": "c"}],
                     "reference": "a"})",
                      dir.path());
  std::string a, b;
  for (int i = 1; i <= 4; ++i) a += metrics_line(i, 10 - i, 100 * i, 0.1 * i);
  a += R"({"step":4,"val_loss":8.0,"val_tokens":512})"
       "\n";
  for (int i = 1; i <= 2; ++i) b += metrics_line(i, 9, 0, 1);
  b += R"({"step":2,"val_loss":9.0,"val_tokens":512})"
       "\n";
  write(fs::path(dir.path()) / "a" / "metrics.jsonl", a);
  fs::create_directories(fs::path(dir.path()) / "a" / "checkpoints" / "step_00000004");
  write(fs::path(dir.path()) / "b" / "metrics.jsonl", b);
  write(fs::path(dir.path()) / "b" / "sweep_status.json", R"({"status": "failed"})");

  const auto sum = sweep::summarize_sweep(s);
  ASSERT_EQ(sum.rows.size(), 3u);
  const auto& ra = sum.rows[0];
  EXPECT_EQ(ra.status, "finished");
  EXPECT_EQ(ra.values, (std::vector<std::string>{"0.5"}));
  EXPECT_EQ(ra.steps, 4);
  EXPECT_DOUBLE_EQ(ra.train_loss, (9 + 8 + 7 + 6) / 4.0);
  EXPECT_DOUBLE_EQ(ra.val_loss, 8.0);
  EXPECT_EQ(ra.tokens, 1024);
  EXPECT_NEAR(ra.time_s, 1.0, 1e-12);
  EXPECT_NEAR(ra.step_time_s, 0.25, 1e-12);
  EXPECT_EQ(sum.median_fields, (std::vector<std::string>{"bytes_sent"}));
  EXPECT_DOUBLE_EQ(ra.medians[0], 250);
  EXPECT_DOUBLE_EQ(ra.val_gap, 0);
  EXPECT_EQ(sum.rows[1].status, "failed");
  EXPECT_DOUBLE_EQ(sum.rows[1].val_gap, (9.0 - 8.0) / 8.0);
  EXPECT_EQ(sum.rows[2].status, "not run");
  EXPECT_TRUE(std::isnan(sum.rows[2].val_loss));

  const std::string csv = sweep::summary_csv(s, sum);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "name,optimizer.lr,status,steps,train_steps,train_loss_last10,val_loss,val_step,tokens,"
            "time_s,step_time_s_median,bytes_sent_median,val_gap_vs_reference");
  EXPECT_NE(csv.find("\na,0.5,finished,4,4,7.5,8,4,1024,1,0.25,250,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nc,0.0006,not run,0,4,,,,0,,,,\n"), std::string::npos) << csv;
  const std::string md = sweep::summary_markdown(s, sum);
  EXPECT_NE(md.find("| b | 0.25 | failed | 2/4 | 9.0000 | 9.0000 (step 2) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("+12.50%"), std::string::npos) << md;
}

TEST(Sweep, SlurmScriptHasOneArrayTaskPerPointToRun) {
  auto s = make_sweep(R"({"launcher": {"kind": "slurm", "ranks": 4, "sbatch": ["--partition=gpu"]},
                     "grid": {"train.seed": [1, 2, 3]}})",
                      "/abs/out");
  const std::string script = sweep::sweep_sbatch_script(s, "/abs/out/points.txt", 2, "/work");
  for (const char* line :
       {"#SBATCH --array=0-1\n", "#SBATCH --ntasks=4\n", "#SBATCH --chdir=/work\n",
        "#SBATCH --partition=gpu\n", "#SBATCH --job-name=gossamer-sweep-s\n",
        "srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=none -n 4 $cmd"})
    EXPECT_NE(script.find(line), std::string::npos) << line << " not in\n" << script;
}

TEST(Sweep, EmbeddedPlotScriptIsScriptsPlotMetrics) {
  std::ifstream in(std::string(GOSSAMER_SOURCE_DIR) + "/scripts/plot_metrics.py", std::ios::binary);
  ASSERT_TRUE(in.good());
  const std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(std::string(sweep::plot_metrics_script()), want);
}
