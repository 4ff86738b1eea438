// Several runs in one process: two trainings at once, each on its own thread, each bit-identical
// to the same run alone (metrics.jsonl without timings, checkpoints tensor for tensor). The
// state a run touches is per run, per thread or shared safely (docs/ARCHITECTURE.md, "State a
// run shares"). The two runs differ in family, optimizer and gemm backend, so that state leaking
// from one into the other changes the other's numbers (the gemm backend was process-wide: with
// it, this test fails). Also: a second run on the GPU while one holds it is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "device_run_harness.h"
#include "run/device_ops.h"
#include "test_util.h"
#include "train/interrupt.h"

namespace {

namespace fs = std::filesystem;
using gossamer::testing::Corpus;
using gossamer::testing::expect_error;
using gossamer::testing::expect_same_checkpoint;
using gossamer::testing::metrics_of;
using gossamer::testing::run_json;
using gossamer::testing::TempDir;
using gossamer::testing::train_with;
using gossamer::testing::write_corpus;
using json = nlohmann::json;

struct RunSpec {
  const char* family;
  const char* optimizer;
  const char* gemm;
};

json config_of(const Corpus& corpus, const RunSpec& r, const std::string& out) {
  json j = run_json(corpus, r.family, r.optimizer, /*zero_stage=*/0, out);
  j["kernels"]["gemm"] = r.gemm;
  // Long enough that the two runs overlap for most of their steps (a run sets its gemm backend
  // at its start, so a shared backend would switch the other run mid-way).
  j["train"]["steps"] = 40;
  j["train"]["eval_every"] = 20;
  j["train"]["checkpoint_every"] = 20;
  return j;
}

// train_with on a thread: its exit code, or the error it threw.
struct Outcome {
  int code = -1;
  std::string error;
};
Outcome train_catching(const json& config) {
  Outcome o;
  try {
    o.code = train_with(config, nullptr);
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

TEST(ConcurrentRuns, TwoRunsAtOnceEqualEachAlone) {
  gossamer::train::interrupt_install();  // before any thread: every thread inherits the mask
  TempDir dir;
  const Corpus corpus = write_corpus(dir.path(), 500);
  const RunSpec runs[2] = {{"gpt2", "adamw", "openblas"}, {"llama", "adams", "onednn"}};
  for (int i = 0; i < 2; ++i) {
    const Outcome alone =
        train_catching(config_of(corpus, runs[i], dir.file("alone" + std::to_string(i))));
    ASSERT_EQ(alone.code, 0) << alone.error;
  }
  Outcome both[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i)
    threads[i] = std::thread([&, i] {
      both[i] = train_catching(config_of(corpus, runs[i], dir.file("both" + std::to_string(i))));
    });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(std::string(runs[i].family) + " " + runs[i].optimizer + " " + runs[i].gemm);
    ASSERT_EQ(both[i].code, 0) << both[i].error;
    const std::string alone = dir.file("alone" + std::to_string(i)),
                      together = dir.file("both" + std::to_string(i));
    const auto a = metrics_of(alone), b = metrics_of(together);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_GT(a.size(), 40u);
    for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k], b[k]) << "metrics line " << k;
    for (const char* step : {"step_00000020", "step_00000040"})
      expect_same_checkpoint((fs::path(alone) / "checkpoints" / step).string(),
                             (fs::path(together) / "checkpoints" / step).string());
  }
  // The two runs' numbers differ from each other (else the comparison above proves nothing).
  EXPECT_NE(metrics_of(dir.file("alone0"))[1], metrics_of(dir.file("alone1"))[1]);
}

TEST(ConcurrentRuns, OneRunAtATimeOnTheGpu) {
  { const gossamer::run::GpuClaim cpu_a(false), cpu_b(false); }  // the CPU claims nothing
  {
    const gossamer::run::GpuClaim first(true);
    expect_error([] { gossamer::run::GpuClaim second(true); },
                 {"kernels.device = cuda", "another run of this process is using the GPU"});
    const gossamer::run::GpuClaim on_cpu(false);
  }
  const gossamer::run::GpuClaim after(true);  // released with the first
}

}  // namespace
