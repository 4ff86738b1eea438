// Sampling: softmax in double over the filtered candidates, inverse-CDF draw.
#include "eval/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace gossamer::eval {

int32_t sample_token(const float* logits, int V, const SamplingOptions& opt, Rng& rng) {
  if (opt.temperature <= 0) return int32_t(std::max_element(logits, logits + V) - logits);
  std::vector<int32_t> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  // Candidates sorted by logit, descending (ties by id, so the order is deterministic).
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  size_t keep = idx.size();
  if (opt.top_k > 0) keep = std::min(keep, size_t(opt.top_k));
  std::vector<double> p(keep);
  const double mx = logits[idx[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp((logits[idx[i]] - mx) / opt.temperature);
  if (opt.top_p < 1.0) {
    double cum = 0;
    size_t k = 0;
    while (k < keep && cum < opt.top_p * sum) cum += p[k++];
    keep = std::max<size_t>(1, k);
    sum = cum;
  }
  double r = rng.uniform() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0) return idx[i];
  }
  return idx[keep - 1];
}

void check_sampling_options(const SamplingOptions& opt) {
  GOSSAMER_CHECK(std::isfinite(opt.temperature) && opt.temperature >= 0,
                 "--temperature %g: expected a finite number >= 0 (0: greedy)", opt.temperature);
  GOSSAMER_CHECK(opt.top_k >= 0, "--top-k %d: expected an integer >= 0 (0: off)", opt.top_k);
  GOSSAMER_CHECK(opt.top_p >= 0 && opt.top_p <= 1,
                 "--top-p %g: expected a number in [0, 1] (1: off)", opt.top_p);
}

std::vector<int32_t> generate(model::Model& model, std::vector<int32_t> prompt, int n_new,
                              const SamplingOptions& opt, Rng& rng,
                              const std::function<void(int32_t)>& on_token) {
  GOSSAMER_CHECK(!prompt.empty(), "generate: the prompt must hold at least one token");
  check_sampling_options(opt);
  const int V = model.config().vocab_size, Vp = model.config().padded_vocab_resolved();
  const int window = model.max_seq();
  std::vector<int32_t> out;
  std::vector<float> last(static_cast<size_t>(V));  // the last position's logits, read back
  for (int i = 0; i < n_new; ++i) {
    const int T = std::min<int>(window, int(prompt.size()));
    const int32_t* ctx = prompt.data() + prompt.size() - T;
    model.forward(ctx, nullptr, 1, T);
    model.copy_logits_to(size_t(T - 1) * Vp, last);
    const int32_t next = sample_token(last.data(), V, opt, rng);
    prompt.push_back(next);
    out.push_back(next);
    if (on_token) on_token(next);
  }
  return out;
}

}  // namespace gossamer::eval
