// optimizer.safetensors at world size 1 (run/optimizer_state_file.h): every dtype and scope
// round-trips exactly; per-rank state saved at another world size is refused naming the tensor
// and both sizes; summed rows saved at several ranks load as their sum; files written before
// typed state (F32 everywhere) convert integer state exactly and refuse values that are not
// integers. The multi-rank paths run end to end in tests/e2e (test_replicas, test_scape).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/single_communicator.h"
#include "io/safetensors.h"
#include "optim/optimizer.h"
#include "run/optimizer_state_file.h"
#include "test_util.h"

namespace {

using namespace gossamer;
using gossamer::testing::expect_error;
using gossamer::testing::TempDir;
using optim::StateTensor;

// An optimizer that is only its state: one tensor of every dtype and scope.
class StateOnly : public optim::Optimizer {
 public:
  std::vector<float> m{1.5f, -2.0f, 3.25f, 0.0f};
  std::vector<uint8_t> mask{0, 1, 1, 0};
  std::vector<int32_t> blocks{7, -3, 2147483647};
  std::vector<uint16_t> half{0x3f80, 0xc000};  // bf16 1.0, -2.0
  std::vector<float> residual{0.5f, 0.25f, -1.0f, 4.0f};
  std::vector<float> replica{9.0f, 8.0f};
  int loaded = 0;

  const char* name() const override { return "state_only"; }
  optim::Replicas replicas() const override { return optim::Replicas::REPLICAS_INDEPENDENT; }
  optim::StepResult step(const optim::StepContext&) override { return {}; }
  size_t state_bytes() const override { return 0; }
  void state_loaded() override { ++loaded; }
  std::vector<StateTensor> state() override {
    StateTensor bf16 =
        StateTensor::replicated("t.half", reinterpret_cast<uint8_t*>(half.data()), half.size());
    bf16.dtype = optim::StateDType::STATE_DTYPE_BF16;
    return {StateTensor::replicated("t.m", m.data(), m.size()),
            StateTensor::replicated("t.mask", mask.data(), mask.size()),
            StateTensor::replicated("t.blocks", blocks.data(), blocks.size()),
            bf16,
            StateTensor::summed_rows("t.residual", residual.data(), residual.size()),
            StateTensor::per_rank("t.replica", replica.data(), replica.size())};
  }
};

TEST(OptimizerStateFile, EveryDtypeAndScopeRoundTripsExactly) {
  TempDir dir;
  const std::string path = dir.file("optimizer.safetensors");
  const auto single = comm::make_single_communicator();
  StateOnly a;
  run::write_optimizer_state(path, /*step=*/0, a, *single);
  const io::SafetensorsReader r(path);
  EXPECT_EQ(r.info("t.mask").dtype, io::DType::DTYPE_U8);
  EXPECT_EQ(r.info("t.blocks").dtype, io::DType::DTYPE_I32);
  EXPECT_EQ(r.info("t.half").dtype, io::DType::DTYPE_BF16);
  EXPECT_TRUE(r.contains("t.replica@rank0"));
  EXPECT_EQ(r.metadata("world_size"), "1");
  EXPECT_EQ(r.metadata("optimizer"), "state_only");

  StateOnly b;
  b.m.assign(4, 0), b.mask.assign(4, 9), b.blocks.assign(3, 0), b.half.assign(2, 0);
  b.residual.assign(4, 0), b.replica.assign(2, 0);
  run::load_optimizer_state(path, b, 0, 1);
  EXPECT_EQ(b.m, a.m);
  EXPECT_EQ(b.mask, a.mask);
  EXPECT_EQ(b.blocks, a.blocks);
  EXPECT_EQ(b.half, a.half);
  EXPECT_EQ(b.residual, a.residual);
  EXPECT_EQ(b.replica, a.replica);
  EXPECT_EQ(b.loaded, 1);

  // Per-rank state only at the world size it was saved at.
  expect_error([&] { run::load_optimizer_state(path, b, 0, 2); },
               {path, "t.replica", "per rank", "saved at 1 rank(s); this run has 2"});
}

// Files of another world size and files written before typed state, made by hand.
TEST(OptimizerStateFile, SummedRowsAndLegacyFloatState) {
  TempDir dir;
  const std::string path = dir.file("optimizer.safetensors");
  StateOnly a;
  // Two ranks' residual rows, and the integer tensors stored as floats (the legacy format).
  std::vector<float> rows = {1, 2, 3, 4, 10, 20, 30, 40};
  std::vector<float> mask = {1, 0, 0, 1}, blocks = {5, 6, -7};
  std::vector<float> m(4, 0.5f);
  std::vector<uint16_t> half = {0x3f80, 0x3f80};
  auto write = [&](const std::vector<float>& mask_values) {
    io::SafetensorsWriter w;
    w.set_metadata("optimizer", "state_only");
    w.add("t.m", io::DType::DTYPE_F32, {4}, m.data());
    w.add("t.mask", io::DType::DTYPE_F32, {4}, mask_values.data());
    w.add("t.blocks", io::DType::DTYPE_F32, {3}, blocks.data());
    w.add("t.half", io::DType::DTYPE_BF16, {2}, half.data());
    w.add("t.residual", io::DType::DTYPE_F32, {8}, rows.data());
    w.write(path);
  };
  write(mask);
  // No per-rank tensor in a legacy file: the per-rank state has no saved world size.
  expect_error([&] { run::load_optimizer_state(path, a, 0, 1); },
               {"t.replica", "written before per-rank state existed"});
  struct NoPerRank final : StateOnly {
    std::vector<StateTensor> state() override {
      auto s = StateOnly::state();
      s.pop_back();
      return s;
    }
  } b;
  run::load_optimizer_state(path, b, 0, 1);
  EXPECT_EQ(b.mask, (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(b.blocks, (std::vector<int32_t>{5, 6, -7}));
  EXPECT_EQ(b.residual, (std::vector<float>{11, 22, 33, 44}));  // two rows at one rank: the sum
  write({1, 0.5f, 0, 1});
  expect_error([&] { run::load_optimizer_state(path, b, 0, 1); },
               {"t.mask", "0.5", "not a U8 value"});
  write({1, 0, 256, 1});
  expect_error([&] { run::load_optimizer_state(path, b, 0, 1); }, {"t.mask", "256"});
}

}  // namespace
