// The model's buffers go through its op table's memory (core/memory_ops.h). With a memory that
// is host memory but says it is not host-accessible, the model takes the paths it takes on a
// GPU (weights drawn into a staging buffer and uploaded view by view, tokens and targets
// uploaded, per-position losses read back, gradients zeroed through the memory), and every
// family must compute bit for bit what it computes on the CPU backend's memory, with every
// upload and read-back counted; routed gradients reach their hook in that memory, the same values.
// Buffer<T> itself: zero-filled, round trips at an offset, zero(), moves, copies outside the
// buffer rejected.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "kernels/cpu/memory.h"
#include "kernels/ops.h"
#include "model/family.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "model/model_config.h"

using namespace gossamer;

namespace {

// Host memory that claims not to be: the model must not touch it except through these.
struct Counts {
  size_t allocs = 0, zeros = 0, uploads = 0, downloads = 0, copies = 0;
} g_counts;

const MemoryOps kPretendDevice{
    .backend = "pretend-device",
    .host_accessible = false,
    .alloc = [](size_t bytes) { return ++g_counts.allocs, host_alloc(bytes); },
    .free = host_free,
    .zero = [](void* p, size_t bytes) { ++g_counts.zeros, std::memset(p, 0, bytes); },
    .upload = [](void* dst, const void* src,
                 size_t bytes) { ++g_counts.uploads, std::memcpy(dst, src, bytes); },
    .download = [](void* dst, const void* src,
                   size_t bytes) { ++g_counts.downloads, std::memcpy(dst, src, bytes); },
    .copy = [](void* dst, const void* src,
               size_t bytes) { ++g_counts.copies, std::memcpy(dst, src, bytes); },
};

TEST(Buffer, ZeroFilledRoundTripsAndMoves) {
  Buffer<float> b(1000, kernels::cpu::kMemory);
  ASSERT_EQ(b.size(), 1000u);
  size_t nonzero = 0;
  for (float x : b.span()) nonzero += x != 0.0f;
  EXPECT_EQ(nonzero, 0u);
  std::vector<float> in(10), out(10, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i) + 0.5f;
  b.upload(in.data(), in.size(), 990);
  b.download(out.data(), out.size(), 990);
  EXPECT_EQ(in, out);
  EXPECT_EQ(b.data()[995], 5.5f);
  Buffer<float> moved = std::move(b);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(moved.data()[990], 0.5f);
  moved.zero();
  EXPECT_EQ(moved.data()[999], 0.0f);
  EXPECT_STREQ(moved.memory().backend, "cpu");
  EXPECT_THROW(moved.upload(in.data(), 11, 990), Error);  // past the end
  EXPECT_THROW(moved.download(out.data(), 1, 1001), Error);
  Buffer<float> empty;
  empty.zero();  // nothing to zero, no memory to ask
  empty.download(out.data(), 0);
}

TEST(ModelMemory, DevicePathsEqualTheHostPathsBitForBit) {
  for (const model::ModelFamilyInfo& row : model::model_families()) {
    model::ModelConfig cfg;
    cfg.family = row.family;
    cfg.n_layer = 2, cfg.n_head = 2, cfg.d_model = 48, cfg.vocab_size = 61, cfg.max_seq_len = 8;
    const int B = 2, T = 8;
    kernels::OpTable pretend = kernels::cpu_ops();
    pretend.memory = &kPretendDevice;
    auto host = model::make_model(cfg, B, T, kernels::cpu_ops());
    g_counts = {};
    auto dev = model::make_model(cfg, B, T, pretend);
    EXPECT_GT(g_counts.allocs, 4u) << "every buffer from the table's memory";
    host->init_weights(7);
    dev->init_weights(7);
    EXPECT_EQ(g_counts.uploads, dev->layout().views().size()) << "one upload per tensor";
    const size_t n = host->params().size();
    ASSERT_EQ(dev->params().size(), n);
    EXPECT_EQ(std::memcmp(host->params().data(), dev->params().data(), n * sizeof(float)), 0)
        << model::family_name(row.family) << ": initial weights";

    std::vector<int32_t> tokens(B * T), targets(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 7) % 61, targets[i] = (i * 11 + 3) % 61;
    const Counts before = g_counts;
    const float loss_host = host->forward(tokens.data(), targets.data(), B, T);
    const float loss_dev = dev->forward(tokens.data(), targets.data(), B, T);
    EXPECT_EQ(loss_host, loss_dev) << model::family_name(row.family);
    EXPECT_EQ(g_counts.uploads - before.uploads, 2u) << "tokens and targets";
    EXPECT_EQ(g_counts.downloads - before.downloads, 1u) << "the per-position losses";
    host->zero_grad();
    dev->zero_grad();
    EXPECT_GT(g_counts.zeros, before.zeros);
    host->backward(1.0f);
    dev->backward(1.0f);
    EXPECT_EQ(std::memcmp(host->grads().data(), dev->grads().data(), n * sizeof(float)), 0)
        << model::family_name(row.family) << ": gradients";
    host->forward(tokens.data(), nullptr, B, T);
    dev->forward(tokens.data(), nullptr, B, T);
    const size_t nl = size_t(B) * T * cfg.padded_vocab_resolved();
    EXPECT_EQ(std::memcmp(host->logits(), dev->logits(), nl * sizeof(float)), 0)
        << model::family_name(row.family) << ": logits";
  }
}

// Routed block gradients (SMET's) on device memory: the hook gets each matrix's gradient in the
// model's memory (here readable, so the test can compare), the same bytes as on host memory.
TEST(ModelMemory, RoutedGradientsReachTheHookInTheModelsMemory) {
  model::ModelConfig cfg;
  cfg.n_layer = 2, cfg.n_head = 2, cfg.d_model = 32, cfg.vocab_size = 61, cfg.max_seq_len = 8;
  const int B = 2, T = 8;
  kernels::OpTable pretend = kernels::cpu_ops();
  pretend.memory = &kPretendDevice;
  std::map<size_t, std::vector<float>> seen[2];
  int side = 0;
  for (const kernels::OpTable* ops :
       {&kernels::cpu_ops(), static_cast<const kernels::OpTable*>(&pretend)}) {
    auto m = model::make_model(cfg, B, T, *ops);
    m->init_weights(5);
    auto& mine = seen[side++];
    m->route_block_weight_gradients([&mine, &m](size_t view, const float* grad) {
      const size_t n = m->layout().views()[view].numel;
      mine[view].assign(grad, grad + n);
    });
    std::vector<int32_t> tokens(B * T), targets(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 5) % 61, targets[i] = (i * 3 + 1) % 61;
    m->zero_grad();
    m->forward(tokens.data(), targets.data(), B, T);
    m->backward(1.0f);
  }
  ASSERT_FALSE(seen[0].empty());
  EXPECT_EQ(seen[0], seen[1]);
}

// copy_logits_to reads only what the last forward left as logits: the rows of a forward without
// targets, nothing after a forward with targets (its LM head keeps no logits) or a backward.
TEST(ModelMemory, LogitsAreReadableOnlyAsTheLastForwardLeftThem) {
  model::ModelConfig cfg;
  cfg.n_layer = 1, cfg.n_head = 2, cfg.d_model = 16, cfg.vocab_size = 61, cfg.max_seq_len = 8;
  auto m = model::make_model(cfg, 2, 8, kernels::cpu_ops());
  m->init_weights(3);
  const size_t Vp = size_t(cfg.padded_vocab_resolved());
  std::vector<int32_t> tokens(16, 5), targets(16, 7);
  std::vector<float> row(Vp);
  EXPECT_THROW(m->copy_logits_to(0, row), Error) << "before any forward";
  m->forward(tokens.data(), nullptr, 1, 3);  // 1 x 3 rows of logits
  m->copy_logits_to(2 * Vp, row);
  EXPECT_EQ(std::memcmp(row.data(), m->logits() + 2 * Vp, Vp * sizeof(float)), 0);
  EXPECT_THROW(m->copy_logits_to(3 * Vp, row), Error) << "past the last forward's rows";
  m->forward(tokens.data(), targets.data(), 2, 8);
  EXPECT_THROW(m->copy_logits_to(0, row), Error) << "no logits after a forward with targets";
  m->zero_grad();
  m->backward(1.0f);
  EXPECT_THROW(m->copy_logits_to(0, row), Error) << "none after backward";
  m->forward(tokens.data(), nullptr, 2, 8);
  m->copy_logits_to(15 * Vp, row);  // the last row of a full batch
}

// Host memory that tallies the bytes the model holds (alloc adds, free subtracts).
int64_t g_held = 0;
const MemoryOps kTallying{
    .backend = "cpu",
    .host_accessible = true,
    .alloc = [](size_t bytes) { return g_held += int64_t(bytes), host_alloc(bytes); },
    .free = [](void* p, size_t bytes) { g_held -= int64_t(bytes), host_free(p, bytes); },
    .zero = kernels::cpu::kMemory.zero,
    .upload = kernels::cpu::kMemory.upload,
    .download = kernels::cpu::kMemory.download,
    .copy = kernels::cpu::kMemory.copy,
};

// The memory check's estimate (model/memory_estimate.h) against what a model really holds after
// a training step (the LM head's buffers are made at the first forward with targets): a lower
// bound, short only by the small buffers it leaves out; the parameter count is the layout's.
TEST(ModelMemory, EstimateIsALowerBoundWithinTheSmallBuffers) {
  struct Case {
    model::ModelFamily family;
    int n_layer, n_head, n_kv_head, d_model, d_ff, vocab, seq, B;
    kernels::MatmulDtype dtype;
  };
  const auto fp32 = kernels::MatmulDtype::MATMUL_DTYPE_FP32,
             bf16 = kernels::MatmulDtype::MATMUL_DTYPE_BF16;
  for (const Case c :
       {Case{model::ModelFamily::MODEL_FAMILY_GPT2, 3, 4, 0, 64, 0, 1025, 32, 3, fp32},
        Case{model::ModelFamily::MODEL_FAMILY_GPT2, 2, 2, 0, 48, 0, 61, 16, 2, bf16},
        Case{model::ModelFamily::MODEL_FAMILY_LLAMA, 3, 4, 2, 64, 96, 1025, 32, 3, fp32},
        Case{model::ModelFamily::MODEL_FAMILY_LLAMA, 2, 4, 1, 32, 0, 300, 24, 1, bf16}}) {
    model::ModelConfig cfg;
    cfg.family = c.family, cfg.n_layer = c.n_layer, cfg.n_head = c.n_head;
    cfg.n_kv_head = c.n_kv_head, cfg.d_model = c.d_model, cfg.d_ff = c.d_ff;
    cfg.vocab_size = c.vocab, cfg.max_seq_len = c.seq;
    cfg.validate();
    kernels::OpTable ops = kernels::cpu_ops();
    ops.memory = &kTallying;
    const model::ModelMemory est = model::estimate_model_memory(cfg, c.B, c.seq, ops, c.dtype);
    g_held = 0;
    {
      auto m = model::make_model(cfg, c.B, c.seq, ops, c.dtype);
      EXPECT_EQ(est.parameter_count, m->layout().total()) << model::family_name(c.family);
      std::vector<int32_t> tokens(size_t(c.B) * c.seq);
      for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i * 7 % c.vocab);
      m->forward(tokens.data(), tokens.data(), c.B, c.seq);
      m->backward(1.0f);
      const int64_t held = g_held, estimate = int64_t(est.total());
      // Left out: tokens, targets, losses (3 x B x T x 4 bytes), the bf16 products' scratch,
      // the staging of the weights at set-up; a few percent of these small models at most.
      EXPECT_LE(estimate, held) << model::family_name(c.family);
      EXPECT_GE(double(estimate), 0.9 * double(held))
          << model::family_name(c.family) << ": " << estimate << " of " << held << " bytes";
    }
    EXPECT_EQ(g_held, 0) << "every byte given back";
  }
}

}  // namespace
