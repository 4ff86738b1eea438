// Autoregressive sampling from any Model (GPT-2, Llama): temperature, top-k and top-p (nucleus)
// filtering, driven by a gossamer::Rng so a seed reproduces a sample exactly. The context is the
// last model.max_seq() tokens (sliding window); each new token re-runs the forward pass.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "model/model.h"

namespace gossamer::eval {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax)
  int top_k = 0;             // 0: no top-k filtering
  double top_p = 1.0;        // 1: no nucleus filtering
};

// Throws gossamer::Error naming the option (as the `generate` flag) that is out of range:
// temperature must be finite and >= 0, top_k >= 0, top_p in [0, 1].
void check_sampling_options(const SamplingOptions& opt);

// Samples one token id from logits[0, V) (V real columns).
int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Rng& rng);

// Appends n_new sampled tokens to `prompt` (non-empty) and returns the new tokens; checks `opt`
// first. on_token
// (optional) sees each token as it is produced, for streaming output.
std::vector<int32_t> generate(model::Model& model, std::vector<int32_t> prompt, int n_new,
                              const SamplingOptions& opt, Rng& rng,
                              const std::function<void(int32_t)>& on_token = {});

}  // namespace gossamer::eval
