// The per-op benchmark's table (bench/op_bench.h) on the CPU op table: every entry of the table
// has a row or a stated reason, a row naming an entry the table lacks cannot slip in, the check
// names an entry whose rows are removed, every row runs on the buffers it was given (with both
// families' shapes, awkward sizes included), and one training step's calls are counted per the
// model's family.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/op_bench.h"
#include "kernels/ops.h"

namespace {

using gossamer::bench::OpBuffers;
using gossamer::bench::OpRow;
using gossamer::bench::OpShapes;

OpShapes tiny(gossamer::model::ModelFamily family) {
  OpShapes s;
  s.model.family = family;
  s.model.n_layer = 2, s.model.n_head = 4, s.model.d_model = 48, s.model.vocab_size = 301;
  s.model.max_seq_len = 16;
  if (family == gossamer::model::ModelFamily::MODEL_FAMILY_LLAMA) s.model.n_kv_head = 2;
  s.model.validate();
  s.B = 3, s.T = 13;
  return s;
}

std::set<std::string> table_entries() {
  std::set<std::string> names;
  gossamer::kernels::cpu_ops().for_each_op(
      [&](const char* name, const auto&) { names.insert(name); });
  return names;
}

class OpBenchRows : public ::testing::TestWithParam<gossamer::model::ModelFamily> {};

TEST_P(OpBenchRows, CoverTheTableAndRun) {
  OpBuffers buffers(gossamer::kernels::cpu_ops());
  const std::vector<OpRow> rows = gossamer::bench::op_bench_rows(tiny(GetParam()), buffers);
  EXPECT_TRUE(gossamer::bench::ops_without_rows(gossamer::kernels::cpu_ops(), rows).empty());
  const std::set<std::string> entries = table_entries();
  for (const OpRow& r : rows) {
    EXPECT_TRUE(entries.count(r.op)) << r.op << " is not an entry of the op table";
    EXPECT_GT(r.bytes, 0) << r.op << " " << r.call;
    EXPECT_GE(r.per_step, 0) << r.op;
    r.run();  // on the buffers the rows were built with (AddressSanitizer checks the bounds)
  }
  for (const auto& [name, why] : gossamer::bench::untimed_ops())
    EXPECT_TRUE(entries.count(std::string(name))) << name << " is not an entry of the op table";
}

INSTANTIATE_TEST_SUITE_P(Families, OpBenchRows,
                         ::testing::Values(gossamer::model::ModelFamily::MODEL_FAMILY_GPT2,
                                           gossamer::model::ModelFamily::MODEL_FAMILY_LLAMA));

TEST(OpBench, NamesAnOpWithoutARow) {
  OpBuffers buffers(gossamer::kernels::cpu_ops());
  std::vector<OpRow> rows = gossamer::bench::op_bench_rows(
      tiny(gossamer::model::ModelFamily::MODEL_FAMILY_GPT2), buffers);
  std::erase_if(rows, [](const OpRow& r) { return r.op == "top_k_indices" || r.op == "sum"; });
  EXPECT_EQ(gossamer::bench::ops_without_rows(gossamer::kernels::cpu_ops(), rows),
            (std::vector<std::string>{"sum", "top_k_indices"}));
}

// One step's calls follow the family: GPT-2's LayerNorm and GELU, Llama's RMSNorm, RoPE and
// SwiGLU; two norms per layer and the final one; four products per layer and the LM head.
TEST(OpBench, CountsOneStepPerFamily) {
  for (const auto family : {gossamer::model::ModelFamily::MODEL_FAMILY_GPT2,
                            gossamer::model::ModelFamily::MODEL_FAMILY_LLAMA}) {
    const bool llama = family == gossamer::model::ModelFamily::MODEL_FAMILY_LLAMA;
    OpBuffers buffers(gossamer::kernels::cpu_ops());
    const std::vector<OpRow> rows = gossamer::bench::op_bench_rows(tiny(family), buffers);
    auto per_step = [&](const std::string& op) {
      double n = 0;
      for (const OpRow& r : rows)
        if (r.op == op) n += r.per_step;
      return n;
    };
    EXPECT_EQ(per_step(llama ? "rmsnorm_forward" : "layernorm_forward"), 5) << llama;
    EXPECT_EQ(per_step(llama ? "layernorm_forward" : "rmsnorm_forward"), 0) << llama;
    EXPECT_EQ(per_step("rope_forward"), llama ? 2 : 0);
    EXPECT_EQ(per_step("swiglu_forward"), llama ? 2 : 0);
    EXPECT_EQ(per_step("gelu_forward"), llama ? 0 : 2);
    EXPECT_EQ(per_step("matmul_forward"), 4 * 2 + 1);
    EXPECT_EQ(per_step("matmul_backward"), 4 * 2 + 1);
    EXPECT_EQ(per_step("adamw_update"), 1);
    EXPECT_EQ(per_step("adams_update"), 0);
  }
}

}  // namespace
