// Optimizer interface and registry. An optimizer updates the flat parameter buffer from the
// flat gradient buffer (same ParamLayout) and owns its state as named flat tensors, laid out
// like the parameters, so checkpoints do not depend on how the state was computed or sharded.
// The training loop knows no optimizer by name: it builds one through make_optimizer().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/param_layout.h"

namespace gossamer::optim {

struct OptimizerConfig {
  std::string name = "adamw";
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;

  template <class V>
  void visit(V& v) {
    v("name", name, "optimizer: \"adamw\"");
    v("lr", lr, "peak learning rate (after warm-up)");
    v("beta1", beta1, "first-moment decay");
    v("beta2", beta2, "second-moment decay");
    v("eps", eps, "denominator epsilon");
    v("weight_decay", weight_decay,
      "decoupled weight decay, applied to linear-layer matrices only (not to biases, norms or "
      "embeddings)");
    v("grad_clip", grad_clip, "clip the global gradient norm to this value (0: no clipping)");
  }
  void validate(const std::string& path = "optimizer.") const;
};

// One named state tensor in the flat parameter layout (numel == layout.total()).
struct StateTensor {
  std::string name;
  float* data;
  size_t numel;
};

struct StepContext {
  int64_t t;  // 1-based index of this update
  double lr;  // learning rate for this update (schedule applied)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;
  virtual void step(std::span<float> params, std::span<const float> grads,
                    const StepContext& ctx) = 0;
  virtual std::vector<StateTensor> state() = 0;
  virtual size_t state_bytes() const = 0;
};

// Throws gossamer::Error naming optimizer.name when the name is unknown.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config,
                                          const model::ParamLayout& layout,
                                          const kernels::OpTable& ops);

// Names accepted by make_optimizer, for help texts and errors.
std::vector<std::string> optimizer_names();

}  // namespace gossamer::optim
