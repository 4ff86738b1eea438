// The exponent codebooks of the zip codec: prefix codes for a float's 8-bit exponent field,
// derived from a model of the value distribution instead of a histogram of the data. A chunk is
// summarised by three statistics from one pass (mean and spread of its exponents, share of
// exponent-0 values); they pick one of kNumCodebooks precomputed codes and a base exponent.
// Models: the exponent distribution of a zero-mean Gaussian (ZipCCL's: P(binade k) =
// 2[Phi(2^(k+1)/sigma) - Phi(2^k/sigma)], a shape fixed up to the location) for spreads near a
// Gaussian's, and a log-normal magnitude (log2|x| ~ N(mu, s^2)) for wider spreads (moments,
// heavy-tailed gradients). Symbols: ESCAPE (raw exponent in a side stream), EXP0 (exponent
// field 0: zeros, subnormals) and a window of exponents base-kWindowBelow .. base+kWindowAbove.
// Invariants: every code is a complete prefix code (Kraft sum 1) with lengths 1..kMaxCodeBits;
// codes are stored bit-reversed for an LSB-first bit stream; the tables of a codebook never
// change once built (built on first use, thread-safe).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/zip/exponent_format.h"

namespace gossamer::comm::zip {

// The thresholds: spread level l >= 2 where the exponents' standard deviation s is at least
// g * 1.3^(l - 0.5) (g: the Gaussian model's), i.e. round(log_1.3(s / g)) >= l, as products and
// comparisons that give the same bits on a GPU as here.
const CodebookChoiceParams& codebook_choice_params();

// The codebook and base for a chunk with these statistics (a pure function: portable_chunk.h's
// zip_choose_codebook with codebook_choice_params()).
CodebookChoice choose_codebook(const ExponentStats& stats);

// Codebook `id` (< kNumCodebooks), built on first use.
const Codebook& codebook(int id);

// CRC-32C of every codebook's code lengths: stored in each compressed message so that a decoder
// whose tables differ from the encoder's (another build or math library) refuses the message
// instead of misreading it.
uint32_t codebooks_fingerprint();

// The model's probability of each symbol for codebook `id` (tests, the benchmark's bound).
std::array<double, kNumSymbols> model_probabilities(int id);

}  // namespace gossamer::comm::zip
