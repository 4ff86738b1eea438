// The per-op benchmark over an op table (kernels/ops.h): every op at one model's training
// shapes, each next to its roofline, and the op-sum estimate of one training step. The rows are
// a table (op_bench_rows): each names its op, the call, the shape, the bytes the op must move
// (every buffer read or written once; a "+=" buffer read and written), its FLOPs, how often one
// training step calls it (0: not in the step, an informational row) and the call itself, through
// the table, on buffers of the table's memory. The same rows time the CPU table (`gossamer bench
// ops`) and the CUDA table (`bench_cuda_ops`, bench/cuda/), as ggml's perf mode reuses its op
// cases for every backend.
// Invariant: every entry of kernels::OpTable has a row or is in untimed_ops() with the reason;
// run_op_bench() refuses a table with an entry that has neither (tests/e2e/test_bench_ops.sh),
// so an op added to the table without a benchmark row fails the tests.
// Timing uses only the table's memory functions: a batch of calls ends with a 4-byte download,
// which returns after every op issued before it; a row reports the median over batches of the
// time per call.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "model/model_config.h"

namespace gossamer::run {
struct RunConfig;
}

namespace gossamer::bench {

// Buffers in one op table's memory, filled from one pool of Gaussian values (std 0.02, fixed
// seed); freed with the object.
class OpBuffers {
 public:
  explicit OpBuffers(const kernels::OpTable& ops);
  ~OpBuffers();
  OpBuffers(const OpBuffers&) = delete;
  OpBuffers& operator=(const OpBuffers&) = delete;

  float* floats(size_t n);  // Gaussian values
  void* zeros(size_t bytes);
  template <class T>
  T* copy(const std::vector<T>& host) {
    void* p = zeros(host.size() * sizeof(T));
    ops_.memory->upload(p, host.data(), host.size() * sizeof(T));
    return static_cast<T*>(p);
  }
  // Returns after every op issued before it has completed.
  void wait();
  const kernels::OpTable& ops() const { return ops_; }

 private:
  const kernels::OpTable& ops_;
  std::vector<std::pair<void*, size_t>> owned_;
  float* pool_ = nullptr;
  size_t pool_n_ = 0;
  float* fence_ = nullptr;
};

// One model's shapes: a validated model config, B sequences of T tokens.
struct OpShapes {
  model::ModelConfig model;
  int B = 0, T = 0;
};

struct OpRow {
  std::string op;    // the table's entry (kernels::OpTable::for_each_op's name)
  std::string call;  // which call of it, e.g. "qkv" (may be empty)
  std::string shape;
  double bytes = 0, flops = 0;
  double per_step = 0;  // calls in one training step (forward, backward, optimizer)
  bool scape = false;   // part of SCAPE's per-step optimizer work at one rank
  std::function<void()> run;
};

// The rows for `shapes` on `buffers`' table (GPT-2's or Llama's layer, head and optimizer ops
// per the model's family; the optimizers' ops over the model's parameter count).
std::vector<OpRow> op_bench_rows(const OpShapes& shapes, OpBuffers& buffers);

// The table entries that have no row, and why (sizes and descriptors, not work).
const std::vector<std::pair<std::string_view, std::string_view>>& untimed_ops();

// Entries of `ops` with neither a row in `rows` nor a place in untimed_ops().
std::vector<std::string> ops_without_rows(const kernels::OpTable& ops,
                                          const std::vector<OpRow>& rows);

struct OpBenchOptions {
  int iters = 10;               // timed batches per row (the median is reported)
  int warmup = 2;               // untimed calls first
  double batch_ms = 1.0;        // a batch repeats the call until it lasts about this long
  size_t copy_bytes = 1 << 28;  // the bandwidth peak: a device-to-device copy of this size
  int matmul_n = 2048;          // the FLOP peak: an n^3 product through matmul_forward
};

// Measures the peaks, prints the table (each row as it is measured) and the op-sum estimate of
// one step; `extra` rows (e.g. the zip codec's kernels) are timed after the table's. Returns 0,
// or 1 (before timing anything) when an entry of the table has no row.
int run_op_bench(const OpShapes& shapes, OpBuffers& buffers, std::vector<OpRow> extra,
                 const OpBenchOptions& options);

// `gossamer bench ops -c CONFIG`: the rows at the config's model, data.micro_batch and
// data.seq_len, on the table of its kernels.device.
int run_ops_command(const run::RunConfig& config, const OpBenchOptions& options);

}  // namespace gossamer::bench
