// Codebooks of exponent_model.h: model probabilities, length-limited Huffman code lengths,
// canonical bit-reversed codes and the decode tables.
#include "comm/zip/exponent_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/zip/crc32c.h"
#include "core/error.h"
#include "kernels/zip/portable_chunk.h"

namespace gossamer::comm::zip {

namespace {

// Probability of the exponent-0 symbol at each zero level, and the share of exponent-0 values
// below which a level is chosen.
constexpr double kZeroLevelP[kZeroLevels] = {1.0 / 4096, 1.0 / 362, 1.0 / 64, 1.0 / 16, 1.0 / 4};
constexpr double kZeroLevelBelow[kZeroLevels - 1] = {1.0 / 1024, 1.0 / 128, 1.0 / 32, 1.0 / 8};
constexpr double kSpreadStep = 1.3;  // each log-normal spread level is 1.3x wider
constexpr double kEscapeFloor = 1.0 / 1024;

double phi(double x) {  // standard normal CDF
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// P(binade k) of |X| for X ~ N(0, sigma^2): 2[Phi(2^(k+1)/sigma) - Phi(2^k/sigma)].
double gaussian_binade(int k, double sigma) {
  const double a = std::ldexp(1.0, k) / sigma, b = std::ldexp(1.0, k + 1) / sigma;
  return std::erf(b / std::sqrt(2.0)) - std::erf(a / std::sqrt(2.0));
}

struct GaussianShape {
  double mean = 0, std = 0;  // of the binade index for sigma = 1
};

const GaussianShape& gaussian_shape() {
  static const GaussianShape shape = [] {
    double m = 0, m2 = 0, total = 0;
    for (int k = -200; k <= 12; ++k) {
      const double p = gaussian_binade(k, 1.0);
      m += p * k;
      m2 += p * k * k;
      total += p;
    }
    m /= total;
    return GaussianShape{m, std::sqrt(m2 / total - m * m)};
  }();
  return shape;
}

// Huffman code lengths (deterministic tie-breaks) for integer weights.
std::vector<int> huffman_lengths(const std::vector<uint64_t>& weights) {
  const int n = int(weights.size());
  struct Node {
    uint64_t weight;
    int order;  // creation order: ties resolve the same way everywhere
    int parent;
  };
  std::vector<Node> nodes;
  nodes.reserve(size_t(2 * n));
  for (int i = 0; i < n; ++i) nodes.push_back({weights[size_t(i)], i, -1});
  std::vector<int> live(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) live[size_t(i)] = i;
  auto lighter = [&](int a, int b) {
    const Node &x = nodes[size_t(a)], &y = nodes[size_t(b)];
    return x.weight != y.weight ? x.weight < y.weight : x.order < y.order;
  };
  while (live.size() > 1) {
    std::sort(live.begin(), live.end(), lighter);
    const int a = live[0], b = live[1];
    const int id = int(nodes.size());
    nodes.push_back({nodes[size_t(a)].weight + nodes[size_t(b)].weight, id, -1});
    nodes[size_t(a)].parent = nodes[size_t(b)].parent = id;
    live.erase(live.begin(), live.begin() + 2);
    live.push_back(id);
  }
  std::vector<int> lengths(size_t(n), 0);
  for (int i = 0; i < n; ++i)
    for (int p = nodes[size_t(i)].parent; p >= 0; p = nodes[size_t(p)].parent) ++lengths[size_t(i)];
  return lengths;
}

// Lengths of at most kMaxCodeBits: raise a floor under the probabilities until Huffman fits.
std::vector<int> limited_lengths(const std::array<double, kNumSymbols>& p) {
  for (double floor = 1.0 / (1 << 22);; floor *= 2) {
    std::vector<uint64_t> w(kNumSymbols);
    for (int s = 0; s < kNumSymbols; ++s)
      w[size_t(s)] = uint64_t(std::llround(std::max(p[size_t(s)], floor) * 1073741824.0)) + 1;
    std::vector<int> lengths = huffman_lengths(w);
    if (*std::max_element(lengths.begin(), lengths.end()) <= kMaxCodeBits) return lengths;
  }
}

uint16_t reverse_bits(uint32_t code, int length) {
  uint32_t r = 0;
  for (int i = 0; i < length; ++i) r |= ((code >> i) & 1u) << (length - 1 - i);
  return uint16_t(r);
}

std::unique_ptr<Codebook> build(int id) {
  auto book = std::make_unique<Codebook>();
  const std::vector<int> lengths = limited_lengths(model_probabilities(id));
  // Canonical codes: by (length, symbol), consecutive values, MSB-first; then reversed.
  std::vector<int> order(kNumSymbols);
  for (int s = 0; s < kNumSymbols; ++s) order[size_t(s)] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return lengths[size_t(a)] < lengths[size_t(b)]; });
  uint32_t code = 0;
  int prev = lengths[size_t(order[0])];
  double kraft = 0;
  for (int s : order) {
    const int len = lengths[size_t(s)];
    code <<= (len - prev);
    prev = len;
    book->length[size_t(s)] = uint8_t(len);
    book->code[size_t(s)] = reverse_bits(code, len);
    ++code;
    kraft += std::ldexp(1.0, -len);
  }
  GOSSAMER_CHECK(kraft == 1.0, "zip: codebook %d is not a complete prefix code (Kraft sum %g)", id,
                 kraft);
  for (int s = 0; s < kNumSymbols; ++s) {
    const int len = book->length[size_t(s)];
    for (uint32_t hi = 0; hi < (1u << (kMaxCodeBits - len)); ++hi)
      book->single[(hi << len) | book->code[size_t(s)]] = uint16_t(s | (len << 8));
  }
  for (uint32_t x = 0; x < kLutSize; ++x) {
    DecodeEntry e{};
    int used = 0;
    while (e.count < kMaxSymbolsPerEntry) {
      const uint16_t hit = book->single[(x >> used) & (kLutSize - 1)];
      const int s = hit & 0xff, len = hit >> 8;
      if (used + len > kMaxCodeBits) break;
      e.symbols[e.count++] = uint8_t(s);  // ESCAPE too: the decoder finds escapes afterwards
      used += len;
    }
    e.bits = uint8_t(used);
    book->multi[x] = e;
  }
  return book;
}

}  // namespace

std::array<double, kNumSymbols> model_probabilities(int id) {
  GOSSAMER_CHECK(id >= 0 && id < kNumCodebooks, "zip: codebook %d outside [0, %d)", id,
                 kNumCodebooks);
  const int zero = id % kZeroLevels, location = (id / kZeroLevels) % kLocationLevels,
            spread = id / (kZeroLevels * kLocationLevels);
  const double mean = (location + 0.5) / kLocationLevels;  // mean binade offset from the base
  const GaussianShape& g = gaussian_shape();
  std::array<double, kNumSymbols> p{};
  double window = 0;
  for (int j = -kWindowBelow; j <= kWindowAbove; ++j) {
    double q;
    if (spread == 0) {
      q = gaussian_binade(j, std::exp2(mean - g.mean));
    } else {
      const double s = g.std * std::pow(kSpreadStep, spread);
      const double sd = std::sqrt(std::max(s * s - 1.0 / 12, 0.05)), mu = mean + 0.5;
      q = phi((j + 1 - mu) / sd) - phi((j - mu) / sd);
    }
    p[size_t(kSymWindow0 + j + kWindowBelow)] = q;
    window += q;
  }
  const double p0 = kZeroLevelP[zero];
  const double escape = std::max(1.0 - window, 0.0) + kEscapeFloor;
  const double scale = (1.0 - p0) / (window + escape);
  for (int s = kSymWindow0; s < kNumSymbols; ++s) p[size_t(s)] *= scale;
  p[kSymEscape] = escape * scale;
  p[kSymExp0] = p0;
  return p;
}

const CodebookChoiceParams& codebook_choice_params() {
  static const CodebookChoiceParams params = [] {
    CodebookChoiceParams p;
    for (int l = 0; l < kZeroLevels - 1; ++l) p.zero_below[l] = kZeroLevelBelow[l];
    const double g = gaussian_shape().std;
    p.spread_above = g * 1.15;
    for (int l = 2; l < kSpreadLevels; ++l)
      p.spread_at_least[l] = g * std::pow(kSpreadStep, l - 0.5);
    return p;
  }();
  return params;
}

CodebookChoice choose_codebook(const ExponentStats& st) {
  return zip_choose_codebook(st, codebook_choice_params());
}

uint32_t codebooks_fingerprint() {
  static const uint32_t fingerprint = [] {
    uint32_t crc = 0;
    for (int id = 0; id < kNumCodebooks; ++id) {
      const std::vector<int> lengths = limited_lengths(model_probabilities(id));
      std::array<uint8_t, kNumSymbols> bytes{};
      for (int s = 0; s < kNumSymbols; ++s) bytes[size_t(s)] = uint8_t(lengths[size_t(s)]);
      crc = crc32c(bytes.data(), bytes.size(), crc);
    }
    return crc;
  }();
  return fingerprint;
}

const Codebook& codebook(int id) {
  GOSSAMER_CHECK(id >= 0 && id < kNumCodebooks, "zip: codebook %d outside [0, %d)", id,
                 kNumCodebooks);
  static std::once_flag flags[kNumCodebooks];
  static std::unique_ptr<Codebook> books[kNumCodebooks];
  std::call_once(flags[id], [id] { books[id] = build(id); });
  return *books[id];
}

}  // namespace gossamer::comm::zip
