// Data parallel with the model, its gradients and the optimizer's state in device memory
// (kernels.device = cuda at several ranks), checked on the CPU at 2 and 4 ranks (at 3, the cases
// with uneven splits: tests/CMakeLists.txt): the guarded
// device table (tests/unit/guarded_device_ops.h) computes, and the guarded device communicator
// (tests/unit/guarded_device_comm.h) stands where NCCL stands, for the buffers only; the control
// values (loss, flags, norms, checkpoint state) take the run's own MPI communicator. A host
// value sent through the buffers' communicator, or a device buffer through MPI, ends the test
// with the guard's message (exit 86). Whole runs of `train` must equal the CPU runs at the same
// world size bit for bit (metrics.jsonl line for line without the timed fields, with each rank's
// bytes sent; both checkpoints tensor for tensor): DataParallel with AdamW (zero_stage 0, fp32,
// several buckets overlapped with backward), with AdamS (zero_stage 1, bf16 gradients) and with
// AdamW (zero_stage 2, bf16, two micro-batches, not overlapped); DiLoCo (rounds of 2 steps),
// GASLoC (accelerated with one peer, zij_literal on the ring) and gossip (the complete graph,
// not the exact average): the replicas evaluated apart at step 3, inside a round, and the average
// swapped into the model for the validation loss and the checkpoint; SCAPE sharded (reading A
// with its defaults, reading B, the stale moves) and unsharded (rank 0's mask): the mask
// exchange and the sparse collectives on the buffers' communicator; SMET (topology updates every
// 2 steps); and a device resume from
// the step-3 checkpoint ends in the same step-6 checkpoint. On GPUs (every rank of a node with
// its own GPU, as for the nccl tests; SKIPPED otherwise): kernels.device = cuda over NCCL tracks
// the CPU run at the same world size, which equals one rank (e2e.test_parallel_equivalence).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../unit/device_run_harness.h"
#include "../unit/guarded_device_comm.h"
#include "../unit/guarded_device_ops.h"
#include "../unit/test_util.h"
#include "comm/communicator.h"
#include "mpi_test_main.h"

namespace gossamer::comm {
namespace {

using namespace test;
using gossamer::testing::Corpus;
using gossamer::testing::guarded_device_ops;
using gossamer::testing::GuardedDeviceComm;
using gossamer::testing::json;
namespace fs = std::filesystem;

// Rank 0's temporary directory, its path known to every rank; removed after every rank is done.
class SharedDir {
 public:
  SharedDir() {
    char path[512] = {};
    if (g_mpi->rank() == 0) {
      dir_.emplace();
      std::snprintf(path, sizeof path, "%s", dir_->path().c_str());
    }
    g_mpi->broadcast(path, sizeof path, DType::U8, 0).wait();
    path_ = path;
  }
  ~SharedDir() { g_mpi->barrier(); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::optional<gossamer::testing::TempDir> dir_;
  std::string path_;
};

std::unique_ptr<Communicator> guarded_buffers(Communicator& control) {
  return std::make_unique<GuardedDeviceComm>(control);
}

struct Case {
  const char* family;
  const char* optimizer;
  int zero_stage;
  const char* comm_dtype;
  bool overlap;
  const char* method = "{}";  // merged into the optimizer section (JSON)
  const char* label = "";     // added to the test's name
};

json config_for(const Case& c, const Corpus& corpus, const std::string& out_dir) {
  json j = gossamer::testing::run_json(corpus, c.family, c.optimizer, c.zero_stage, out_dir,
                                       g_mpi->size());
  j["parallel"]["comm_dtype"] = c.comm_dtype;
  j["parallel"]["overlap"] = c.overlap;
  j["parallel"]["bucket_mb"] = 0.02;  // several buckets of the tiny model (about 0.2 MB)
  // The device run's buffers go through the stand-in for NCCL, which forwards to MPI's own
  // collectives: the host run sums in the same order only with MPI's own too.
  j["parallel"]["sum_order"] = "backend";
  j["optimizer"].update(json::parse(c.method));
  return j;
}

class DeviceDataParallel : public ::testing::TestWithParam<Case> {};

TEST_P(DeviceDataParallel, EqualsTheHostRunBitForBitAndResumes) {
  const Case c = GetParam();
  SharedDir dir;
  if (g_mpi->rank() == 0) gossamer::testing::write_corpus(dir.path(), 500);
  g_mpi->barrier();
  const Corpus corpus = gossamer::testing::corpus_in(dir.path());
  const std::string host_dir = dir.file("host"), dev_dir = dir.file("device"),
                    resumed_dir = dir.file("resumed");
  ASSERT_EQ(gossamer::testing::train_with(config_for(c, corpus, host_dir), nullptr), 0);
  ASSERT_EQ(gossamer::testing::train_with(config_for(c, corpus, dev_dir), &guarded_device_ops(), "",
                                          guarded_buffers),
            0);
  if (g_mpi->rank() == 0) {
    const std::vector<json> host = gossamer::testing::metrics_of(host_dir),
                            dev = gossamer::testing::metrics_of(dev_dir);
    ASSERT_EQ(host.size(), dev.size());
    ASSERT_GE(host.size(), 9u);  // 6 steps and 3 evaluations
    int64_t bytes = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      EXPECT_EQ(host[i], dev[i]) << "metrics line " << i;
      bytes += host[i].value("bytes_sent", int64_t{0});
    }
    EXPECT_GT(bytes, 0);  // the gradients did travel
    const std::string method = c.optimizer;
    if (method == "diloco" || method == "gasloc" || method == "gossip") {
      bool apart = false;  // step 3 is inside a round: each replica evaluated on its own
      for (const json& line : host) apart |= line.contains("val_loss_replicas");
      EXPECT_TRUE(apart) << "no evaluation of the replicas apart";
    }
    for (const char* step : {"step_00000003", "step_00000006"})
      gossamer::testing::expect_same_checkpoint(
          (fs::path(host_dir) / "checkpoints" / step).string(),
          (fs::path(dev_dir) / "checkpoints" / step).string());
    // The device resume starts from a copy of the step-3 checkpoint.
    fs::create_directories(resumed_dir + "/checkpoints");
    fs::copy(fs::path(dev_dir) / "checkpoints" / "step_00000003",
             fs::path(resumed_dir) / "checkpoints" / "step_00000003", fs::copy_options::recursive);
    fs::copy_file(fs::path(dev_dir) / "config.json", fs::path(resumed_dir) / "config.json");
  }
  g_mpi->barrier();
  ASSERT_EQ(gossamer::testing::train_with(config_for(c, corpus, resumed_dir), &guarded_device_ops(),
                                          resumed_dir, guarded_buffers),
            0);
  if (g_mpi->rank() == 0)
    gossamer::testing::expect_same_checkpoint(
        (fs::path(host_dir) / "checkpoints" / "step_00000006").string(),
        (fs::path(resumed_dir) / "checkpoints" / "step_00000006").string());
}

INSTANTIATE_TEST_SUITE_P(
    Methods, DeviceDataParallel,
    ::testing::Values(
        Case{"gpt2", "adamw", 0, "fp32", true}, Case{"llama", "adams", 1, "bf16", true},
        Case{"gpt2", "adamw", 2, "bf16", false}, Case{"gpt2", "diloco", 0, "fp32", true},
        Case{"llama", "gasloc", 0, "fp32", true,
             R"({"gasloc": {"local_steps": 2,
                                                    "topology": "one_peer"}})",
             "_one_peer"},
        Case{"gpt2", "gasloc", 0, "fp32", true,
             R"({"gasloc": {"local_steps": 2, "topology": "ring",
                                                    "mode": "zij_literal"}})",
             "_ring_zij"},
        Case{"gpt2", "gossip", 0, "fp32", true,
             R"({"gossip": {"local_steps": 1,
                                                    "topology": "complete", "gossip_weight": 0.2}})",
             "_complete"},
        // SCAPE sharded with its defaults (the mask exchange
        // overlapped, the sparse collectives), reading B,
        // the stale moves, and unsharded with rank 0's mask.
        Case{"gpt2", "scape", 1, "fp32", true},
        Case{"llama", "scape", 1, "fp32", true,
             R"({"scape": {"reading": "B",
                                                    "mask_encoding": "indices"}})",
             "_reading_b"},
        Case{"llama", "scape", 1, "fp32", true,
             R"({"scape": {"stale_momentum": true,
                                                    "sparsity": 0.9, "mask_encoding": "bitmap"}})",
             "_stale"},
        Case{"gpt2", "scape", 0, "fp32", true, "{}", "_mask_from_rank0"},
        // SMET: the compact gradients all-reduced view by
        // view, topology updates at steps 2, 4 and 6.
        Case{"llama", "smet", 0, "fp32", true, R"({"dst": {"update_interval": 2}})", "_topology"}),
    [](const ::testing::TestParamInfo<Case>& i) {
      return std::string(i.param.family) + "_" + i.param.optimizer + "_zero" +
             std::to_string(i.param.zero_stage) + "_" + i.param.comm_dtype + i.param.label;
    });

// The real thing: the CUDA op table and NCCL (one GPU per rank). The same arithmetic on both
// sides (fp32 compute; the AdamS case sends bf16 gradients on both), so the first step agrees
// to 1e-4 and the others drift only by summation order: 5e-3, as in gpu.test_cuda_training.
// SCAPE's masks come from the drifting momentum, and SMET's pruned blocks from the drifting
// weights, so a coordinate or a block at the cut may differ; one of a hundred changes the loss
// far less than the tolerance.
TEST(DeviceDataParallelOnGpus, NcclRunsTrackTheCpuRuns) {
  if (g_nccl == nullptr) GTEST_SKIP() << "SKIPPED: no GPU per rank: " << g_nccl_skip;
  SharedDir dir;
  if (g_mpi->rank() == 0) gossamer::testing::write_corpus(dir.path(), 500);
  g_mpi->barrier();
  const Corpus corpus = gossamer::testing::corpus_in(dir.path());
  const Case cases[] = {{"gpt2", "adamw", 0, "fp32", true},
                        {"llama", "adams", 2, "bf16", false},
                        {"gpt2", "diloco", 0, "fp32", true},
                        {"gpt2", "scape", 1, "fp32", true},
                        {"gpt2", "smet", 0, "fp32", true, R"({"dst": {"update_interval": 2}})"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.family) + " " + c.optimizer);
    const std::string host_dir = dir.file(std::string("host-") + c.optimizer),
                      gpu_dir = dir.file(std::string("gpu-") + c.optimizer);
    ASSERT_EQ(gossamer::testing::train_with(config_for(c, corpus, host_dir), nullptr), 0);
    json gpu = config_for(c, corpus, gpu_dir);
    gpu["kernels"]["device"] = "cuda";
    gpu.erase("metrics");  // the MFU peak measured on the GPU
    ASSERT_EQ(gossamer::testing::train_with(gpu, nullptr), 0);
    if (g_mpi->rank() != 0) continue;
    const std::vector<json> a = gossamer::testing::metrics_of(host_dir),
                            b = gossamer::testing::metrics_of(gpu_dir);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].value("step", -1), b[i].value("step", -1)) << "metrics line " << i;
      for (const char* key : {"loss", "grad_norm", "val_loss"}) {
        ASSERT_EQ(a[i].contains(key), b[i].contains(key)) << "metrics line " << i << ": " << key;
        if (!a[i].contains(key)) continue;
        const double x = a[i][key].get<double>(), y = b[i][key].get<double>();
        const double tol = a[i].value("step", 0) <= 1 ? 1e-4 : 5e-3;
        EXPECT_LE(std::fabs(x - y), tol * std::max(1.0, std::fabs(x)))
            << "metrics line " << i << ": " << key << " " << x << " (CPU) vs " << y << " (GPU)";
      }
    }
  }
}

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
