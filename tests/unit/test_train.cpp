// Pieces of the training loop that need no run: the MFU meter (never above 1, the peak raised
// when a step proves it too low) and the parsing of GOSSAMER_FAULT.
#include <gtest/gtest.h>

#include "test_util.h"
#include "train/fault_injection.h"
#include "train/mfu.h"

namespace {

using gossamer::testing::expect_error;
using gossamer::train::MfuMeter;
using gossamer::train::parse_fault_plan;

TEST(MfuMeter, RatioOfAchievedToThePeakOfAllRanks) {
  MfuMeter m(100.0, 4, "measured sgemm");  // 100 GFLOP/s per rank, 400 in all
  EXPECT_DOUBLE_EQ(m.mfu(100e9), 0.25);
  EXPECT_DOUBLE_EQ(m.mfu(0), 0.0);
  EXPECT_DOUBLE_EQ(m.peak_gflops(), 100.0);
  EXPECT_EQ(m.source(), "measured sgemm");
}

TEST(MfuMeter, NeverAboveOneAStepAboveThePeakRaisesIt) {
  // A peak measured on a busy machine: the run later achieves more than it.
  MfuMeter m(50.0, 2, "measured sgemm");
  EXPECT_DOUBLE_EQ(m.mfu(134e9), 1.0);  // 67 GFLOP/s per rank > 50: the peak becomes 67
  EXPECT_DOUBLE_EQ(m.peak_gflops(), 67.0);
  EXPECT_EQ(m.source(), "raised to an achieved step");
  EXPECT_DOUBLE_EQ(m.mfu(67e9), 0.5);
  for (double f : {1e9, 1e11, 1e12, 1e15}) EXPECT_LE(m.mfu(f), 1.0) << f;
  expect_error([] { MfuMeter(0.0, 1, "metrics.peak_gflops"); }, {"MFU", "metrics.peak_gflops"});
}

TEST(FaultPlan, KindsAndTheDelay) {
  const auto delay = parse_fault_plan("delay:1:3:250");
  EXPECT_EQ(delay.kind, "delay");
  EXPECT_EQ(delay.rank, 1);
  EXPECT_EQ(delay.step, 3);
  EXPECT_EQ(delay.delay_ms, 250);
  EXPECT_TRUE(delay.at("delay", 1, 3));
  EXPECT_FALSE(delay.at("delay", 0, 3));
  EXPECT_TRUE(delay.delays(1, 3));
  EXPECT_FALSE(delay.delays(1, 4));  // one step by default
  EXPECT_EQ(parse_fault_plan("nan:0:2").kind, "nan");
  EXPECT_EQ(parse_fault_plan("exit:2:9").step, 9);
  // delay:RANK:STEP:MS:COUNT: COUNT steps from STEP on, 0 to the end.
  const auto slow = parse_fault_plan("delay:2:5:40:3");
  EXPECT_EQ(slow.count, 3);
  EXPECT_FALSE(slow.delays(2, 4));
  EXPECT_TRUE(slow.delays(2, 5) && slow.delays(2, 7));
  EXPECT_FALSE(slow.delays(2, 8));
  EXPECT_FALSE(slow.delays(1, 6));
  const auto always = parse_fault_plan("delay:0:2:10:0");
  EXPECT_TRUE(always.delays(0, 2) && always.delays(0, 1000000));
  EXPECT_FALSE(always.delays(0, 1));
  for (const char* bad :
       {"delay:1:3", "nan:0:2:5", "boom:0:1", "hang:-1:2", "exit:0:0", "delay:0:1:-5",
        "delay:0:1:5x", "delay:0:1:5:-1", "delay:0:1:5:2x", "delay:0:1:5:2:1", "exit:0:1x"})
    expect_error([&] { parse_fault_plan(bad); }, {bad, "KIND:RANK:STEP"});
}

}  // namespace
