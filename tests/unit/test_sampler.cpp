// Sampling: greedy picks the argmax, top-k never leaves the k best, top-p keeps the nucleus,
// the empirical distribution follows the softmax, and a seed reproduces the draws.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "eval/sampler.h"

using namespace gossamer;

TEST(Sampler, GreedyIsArgmax) {
  const float logits[5] = {0.1f, 3.0f, -1.0f, 2.9f, 0.0f};
  Rng rng(1);
  EXPECT_EQ(eval::sample_token(logits, 5, {0.0, 0, 1.0}, rng), 1);
}

TEST(Sampler, TopKAndTopPRestrictTheCandidates) {
  const float logits[6] = {1.0f, 4.0f, 3.9f, 0.5f, 3.8f, -2.0f};
  Rng rng(2);
  for (int i = 0; i < 2000; ++i) {
    const int t = eval::sample_token(logits, 6, {1.0, 2, 1.0}, rng);
    ASSERT_TRUE(t == 1 || t == 2) << t;
  }
  // Probabilities ~ (0.02, 0.36, 0.33, 0.01, 0.30, 0.00): top_p 0.5 keeps tokens 1 and 2.
  for (int i = 0; i < 2000; ++i) {
    const int t = eval::sample_token(logits, 6, {1.0, 0, 0.5}, rng);
    ASSERT_TRUE(t == 1 || t == 2) << t;
  }
}

TEST(Sampler, FrequenciesFollowTheSoftmaxAndSeedsReproduce) {
  const float logits[3] = {0.0f, std::log(2.0f), std::log(5.0f)};  // p = 1/8, 2/8, 5/8
  Rng a(3), b(3);
  int counts[3] = {};
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const int t = eval::sample_token(logits, 3, {}, a);
    ASSERT_EQ(t, eval::sample_token(logits, 3, {}, b));
    ++counts[t];
  }
  EXPECT_NEAR(counts[0] / double(n), 0.125, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 0.25, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 0.625, 0.01);
}

TEST(Sampler, OptionsOutOfRangeAreNamed) {
  auto error_of = [](const eval::SamplingOptions& o) -> std::string {
    try {
      eval::check_sampling_options(o);
    } catch (const gossamer::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({0.8, 40, 0.9}), "");
  EXPECT_EQ(error_of({0, 0, 0}), "");
  EXPECT_NE(error_of({std::nan(""), 0, 1}).find("--temperature nan"), std::string::npos);
  EXPECT_NE(error_of({-1, 0, 1}).find("--temperature -1"), std::string::npos);
  EXPECT_NE(error_of({INFINITY, 0, 1}).find("--temperature inf"), std::string::npos);
  EXPECT_NE(error_of({1, -3, 1}).find("--top-k -3"), std::string::npos);
  EXPECT_NE(error_of({1, 0, 2}).find("--top-p 2"), std::string::npos);
  EXPECT_NE(error_of({1, 0, std::nan("")}).find("--top-p nan"), std::string::npos);
}
