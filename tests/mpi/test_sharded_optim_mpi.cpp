// ZeRO sharding per bucket across 2, 3 and 4 ranks (optim/data_parallel.h, ShardLayout): on a
// hand-made layout of 40 tensors of awkward sizes with buckets of 97 elements, every bucket's
// reduce-scatter and all-gather send the same bytes from every rank within one element, and
// after three AdamW / AdamS steps (ZeRO-1, and ZeRO-2 with two micro-batches) every rank's
// parameters equal, element for element, one process updating from the summed gradients. The
// gradients are multiples of 1/4 so their sums are exact in any order; clipping is off so no
// norm enters the update. Wrong elements are counted, not just flagged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"
#include "kernels/ops.h"
#include "model/param_layout.h"
#include "mpi_test_main.h"
#include "optim/optimizer.h"
#include "optim/registry.h"
#include "optim/shard_layout.h"

namespace gossamer::comm {
namespace {

using namespace test;

constexpr size_t kBucket = 97;

model::ParamLayout awkward_layout() {
  model::ParamLayout layout;
  const model::ParamKind kinds[] = {
      model::ParamKind::PARAM_KIND_WEIGHT, model::ParamKind::PARAM_KIND_BIAS,
      model::ParamKind::PARAM_KIND_WEIGHT, model::ParamKind::PARAM_KIND_NORM,
      model::ParamKind::PARAM_KIND_EMBEDDING};
  for (int i = 0; i < 40; ++i)
    layout.add(strprintf("t%d", i), {int64_t(1 + (i * 53) % 131)}, kinds[i % 5]);
  return layout;
}

// Rank r's gradient of element i in micro-batch m: a multiple of 1/4 in [-2, 2].
float grad_of(size_t i, int rank, int micro, int step) {
  return float(int((i * 7 + size_t(rank) * 3 + size_t(micro) * 5 + size_t(step) * 11) % 17) - 8) *
         0.25f;
}

struct Case {
  const char* method;
  int zero_stage;
  int micro_batches;
};

// Backward reports the buckets one by one; each launches its reduce-scatter, whose bytes sent
// must be equal on every rank within one element.
void report_buckets_checking_balance(optim::Optimizer& opt, const optim::ShardLayout& shards,
                                     const Case& c) {
  Communicator& comm = *g_mpi;
  const std::vector<size_t> ones(static_cast<size_t>(comm.size()), 1);
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  for (size_t b = 0; b < shards.num_buckets(); ++b) {
    const CommStats before = comm.stats();
    opt.grads_ready(shards.bucket_begin(b), shards.bucket_end(b));
    const int64_t sent = comm.stats().since(before)[Kind::REDUCE_SCATTER].bytes_sent;
    comm.all_gather(&sent, all.data(), ones, DType::I64).wait();
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    EXPECT_LE(*hi - *lo, int64_t(sizeof(float)))
        << c.method << " ZeRO-" << c.zero_stage << ": bucket " << b
        << " reduce-scatter bytes differ between ranks by more than one element";
    EXPECT_GT(*lo, 0) << "bucket " << b << ": some rank sent nothing";
  }
}

// Runs 3 steps of `c` on every rank and on one process, counting wrong elements.
void run_case(const Case& c) {
  Communicator& comm = *g_mpi;
  const int world = comm.size(), rank = comm.rank();
  const model::ParamLayout layout = awkward_layout();
  const size_t total = layout.total();
  optim::OptimizerConfig cfg;
  cfg.name = c.method;
  cfg.lr = 0.01;
  cfg.weight_decay = 0.1;
  cfg.grad_clip = 0;
  optim::ParallelConfig par;
  par.zero_stage = c.zero_stage;
  par.bucket_mb = double(kBucket * sizeof(float)) / 1e6;
  ASSERT_EQ(par.bucket_elements(), kBucket);
  const kernels::OpTable& ops = kernels::cpu_ops();
  auto opt = optim::make_optimizer({cfg, par, layout, ops, comm, comm});
  auto ref = optim::make_optimizer(cfg, layout, ops);
  std::vector<float> params(total), grads(total), ref_params(total), ref_grads(total);
  for (size_t i = 0; i < total; ++i) params[i] = ref_params[i] = float(i % 13) * 0.125f - 0.5f;
  opt->attach(params, grads);
  ref->attach(ref_params, ref_grads);
  const optim::ShardLayout shards(total, world, kBucket);
  const std::vector<size_t> ones(static_cast<size_t>(world), 1);
  std::vector<int64_t> all(static_cast<size_t>(world));
  for (int step = 1; step <= 3; ++step) {
    std::fill(ref_grads.begin(), ref_grads.end(), 0.0f);
    for (int m = 0; m < c.micro_batches; ++m) {
      opt->micro_batch_begin(m, c.micro_batches);
      for (size_t i = 0; i < total; ++i) {
        grads[i] += grad_of(i, rank, m, step);
        for (int r = 0; r < world; ++r) ref_grads[i] += grad_of(i, r, m, step);
      }
      report_buckets_checking_balance(*opt, shards, c);
      opt->micro_batch_end(m, c.micro_batches);
    }
    const CommStats before = comm.stats();
    opt->step({step, cfg.lr});
    ref->step({step, cfg.lr});
    // The parameter all-gather: one per bucket, each rank sending its part to N-1 ranks, the
    // parts equal within one element per bucket.
    const int64_t sent = comm.stats().since(before)[Kind::ALL_GATHER].bytes_sent;
    comm.all_gather(&sent, all.data(), ones, DType::I64).wait();
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    EXPECT_LE(*hi - *lo, int64_t((world - 1) * shards.num_buckets() * sizeof(float)))
        << "all-gather bytes";
    size_t wrong = 0;
    for (size_t i = 0; i < total; ++i)
      wrong += std::memcmp(&params[i], &ref_params[i], sizeof(float)) != 0;
    EXPECT_EQ(wrong, 0u) << c.method << " ZeRO-" << c.zero_stage << " x" << c.micro_batches
                         << ", step " << step << ", rank " << rank << ": " << wrong << " of "
                         << total << " parameters differ from one process";
    std::fill(grads.begin(), grads.end(), 0.0f);
  }
}

TEST(ShardedDataParallel, PerBucketBalancedAndEqualToOneProcess) {
  for (const Case& c :
       {Case{"adamw", 1, 1}, Case{"adams", 1, 1}, Case{"adamw", 2, 2}, Case{"adams", 2, 2}}) {
    SCOPED_TRACE(std::string(c.method) + " ZeRO-" + std::to_string(c.zero_stage));
    run_case(c);
  }
}

}  // namespace
}  // namespace gossamer::comm

int main(int argc, char** argv) {
  return gossamer::comm::test::run_all_ranks(argc, argv);
}
