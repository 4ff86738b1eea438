// The driver of the table-driven op tests (tests/unit/test_ops*.cpp), after ggml's
// test-backend-ops. Each op is an OpCase subclass (build(): inputs, outputs, loss weights;
// forward()/backward() for float and double), instantiated over a grid of awkward shapes. A case
// never calls a kernel directly: forward()/backward() receive an op table (kernels/ops.h) and
// call its entries (ops.layernorm_forward(...)), so that the same cases check any backend.
// For every case run_case(case, backend) runs
//   1. the reference, the double CPU table (kernels::cpu_ops_f64()): forward + backward, every
//      gradient (inputs, weights, biases) checked against central finite differences of
//      L = sum_j <out_j, R_j> (fixed random R_j);
//   2. the float backend under test (kernels::cpu_ops() today; a CUDA table later), whose every
//      output and gradient is compared with the reference (relative error with the tensor's
//      RMS as floor, per-op tolerance);
//   3. checks on both runs: sentinel guard bands around every buffer are untouched, inputs are
//      unchanged, no NaN/Inf anywhere in outputs and gradients, assigned outputs are fully
//      written (pre-filled with NaN), "+=" gradients add to pre-filled nonzero values, plus
//      per-op invariants (OpCase::check); and a second run of the backend under test is
//      bitwise identical.
// Invariant: a case reaches kernels only through the table it is handed; the finite-difference
// ground truth always comes from the double CPU table, and every check of the float run uses
// the table given to run_case. Buffers are host memory: a device backend will plug in through
// a float table whose entries stage them to the device and back.
// Header-only (test code): every function is inline or a template.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "kernels/ops.h"

namespace gossamer::op_test {

// The op table over element type T: Ops<double> the reference, Ops<float> a backend under test.
template <class T>
using Ops = kernels::BasicOpTable<T>;

// ---- guarded buffers -------------------------------------------------------------------------

inline constexpr size_t kGuard = 32;  // sentinel elements before and after every buffer

template <class T>
T sentinel();
template <>
inline float sentinel<float>() {
  return std::bit_cast<float>(uint32_t{0x7FC5A5A5});  // a NaN with a payload no op produces
}
template <>
inline double sentinel<double>() {
  return std::bit_cast<double>(uint64_t{0x7FF8A5A5A5A5A5A5});
}
template <>
inline uint16_t sentinel<uint16_t>() {  // bf16 buffers: a NaN pattern to_bf16 never writes
  return uint16_t{0x7FA5};
}
template <>
inline unsigned char sentinel<unsigned char>() {  // byte buffers (scratch): never written there
  return 0xA5;
}
template <>
inline uint32_t sentinel<uint32_t>() {  // index buffers: above any index of the tests
  return uint32_t{0xA5A5A5A5};
}
template <>
inline int32_t sentinel<int32_t>() {  // step counts: far from any count of the tests
  return int32_t{-0x5A5A5A5B};
}

// A buffer of n elements with kGuard sentinels on each side.
template <class T>
class Guarded {
 public:
  Guarded() = default;
  Guarded(size_t n, T fill) : n_(n), buf_(n + 2 * kGuard, fill) {
    for (size_t i = 0; i < kGuard; ++i) buf_[i] = buf_[kGuard + n + i] = sentinel<T>();
  }
  T* data() { return buf_.empty() ? nullptr : buf_.data() + kGuard; }
  const T* data() const { return buf_.empty() ? nullptr : buf_.data() + kGuard; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return buf_[kGuard + i]; }
  const T& operator[](size_t i) const { return buf_[kGuard + i]; }
  bool guards_intact() const {
    if (buf_.empty()) return true;
    const T s = sentinel<T>();
    for (size_t i = 0; i < kGuard; ++i) {
      if (std::memcmp(&buf_[i], &s, sizeof(T)) != 0) return false;
      if (std::memcmp(&buf_[kGuard + n_ + i], &s, sizeof(T)) != 0) return false;
    }
    return true;
  }

 private:
  size_t n_ = 0;
  std::vector<T> buf_;
};

// All buffers of one run of a case, in type T.
template <class T>
struct Run {
  std::vector<Guarded<T>> in;    // forward inputs, from the case's double values
  std::vector<Guarded<T>> grad;  // one per input; empty when the input has no gradient
  std::vector<Guarded<T>> out;   // forward outputs, pre-filled with NaN (all are assigned)
  std::vector<Guarded<T>> dout;  // loss weights R_j of out_j; empty when out_j is not in L
  std::vector<Guarded<T>> work;  // workspaces, pre-filled with NaN
};

// ---- the case abstraction --------------------------------------------------------------------

class OpCase {
 public:
  struct Input {
    std::string name;
    std::vector<double> value;
    bool has_grad = true;
    bool grad_assigned = false;  // backward assigns (=) this gradient instead of adding (+=)
  };
  struct Output {
    std::string name;
    size_t n = 0;
    std::vector<double> weight;  // R_j; empty: not part of the loss
    // State an op saves for its backward in a layout its backend chooses: sized at the largest
    // any backend needs, partly written by the others; not compared with the reference and
    // not required finite (checked through the backward's gradients only).
    bool backend_defined = false;
  };

  virtual ~OpCase() = default;
  virtual std::string name() const = 0;
  // Declares inputs, outputs and workspaces and draws every value (and integer argument).
  virtual void build(Rng& rng) = 0;
  // Run the op through `ops` on the buffers of r (OP_CASE_DISPATCH implements the four).
  virtual void forward(const Ops<float>& ops, Run<float>& r) = 0;
  virtual void forward(const Ops<double>& ops, Run<double>& r) = 0;
  virtual void backward(const Ops<float>& ops, Run<float>& r) = 0;
  virtual void backward(const Ops<double>& ops, Run<double>& r) = 0;
  // Op-specific invariants, called after forward + backward.
  virtual void check(const Run<float>&) const {}
  virtual void check(const Run<double>&) const {}

  // Central-difference step. Inputs are O(1); with h = 1e-5 in double the truncation error is
  // h^2 f'''/6 ~ 1e-11 and the rounding error is (rounding of the outputs, ~1e-16 each and
  // ~1e-14 summed into L; L itself is summed in long double) / 2h ~ 1e-9.
  virtual double grad_eps() const { return 1e-5; }
  // |analytic - fd| <= fd_atol + fd_rtol |fd|: ~100x the error budget above, while any real bug
  // (a missing term, a wrong index) gives errors of the order of the gradient itself.
  virtual double fd_atol() const { return 1e-7; }
  virtual double fd_rtol() const { return 1e-6; }
  // float vs double: max |f - d| / (|d| + rms(d)) per tensor. Float rounding of reductions of
  // up to ~10^3 terms of mixed sign stays below ~1e-6 relative to the RMS; 1e-5 leaves margin.
  virtual double max_err() const { return 1e-5; }
  // Lower bound of the RMS scale in that comparison, for tensors that are 0 in real arithmetic.
  virtual double err_floor() const { return 0.0; }
  // Gradients with more elements are checked on a random subset of this size, plus extras.
  virtual size_t fd_max_points() const { return 400; }
  virtual std::vector<size_t> fd_extra_points(size_t /*input*/) const { return {}; }

  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  const std::vector<size_t>& works() const { return works_; }
  std::vector<Input>& mutable_inputs() { return inputs_; }
  std::vector<Output>& mutable_outputs() { return outputs_; }

 protected:
  std::vector<double>& add_input(const std::string& name, size_t n, bool has_grad = true,
                                 bool grad_assigned = false) {
    inputs_.push_back({name, std::vector<double>(n), has_grad, grad_assigned});
    return inputs_.back().value;
  }
  // loss_rng: draw random loss weights R (null: the output is not part of the loss).
  void add_output(const std::string& name, size_t n, Rng* loss_rng) {
    std::vector<double> weight;
    if (loss_rng != nullptr) {
      weight.resize(n);
      for (auto& w : weight) w = loss_rng->normal();
    }
    add_output(name, n, std::move(weight));
  }
  void add_output(const std::string& name, size_t n, std::vector<double> weight) {
    outputs_.push_back({name, n, std::move(weight)});
  }
  void add_saved_state(const std::string& name, size_t n) {
    outputs_.push_back({name, n, {}, /*backend_defined=*/true});
  }
  void add_work(size_t n) { works_.push_back(n); }

 private:
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::vector<size_t> works_;
};

// Implements the four virtual entry points with the case's templates
// fwd<T>(const Ops<T>&, Run<T>&) / bwd<T>(...), and the two check() overrides with chk<T>().
// clang-format off
#define OP_CASE_DISPATCH                                                                 \
  void forward(const Ops<float>& ops, Run<float>& r) override { fwd(ops, r); }           \
  void forward(const Ops<double>& ops, Run<double>& r) override { fwd(ops, r); }         \
  void backward(const Ops<float>& ops, Run<float>& r) override { bwd(ops, r); }          \
  void backward(const Ops<double>& ops, Run<double>& r) override { bwd(ops, r); }
#define OP_CASE_CHECKS                                       \
  void check(const Run<float>& r) const override { chk(r); } \
  void check(const Run<double>& r) const override { chk(r); }
// clang-format on

inline void fill_normal(std::vector<double>& v, Rng& rng, double mean = 0.0, double stddev = 1.0) {
  for (auto& x : v) x = mean + stddev * rng.normal();
}

// ---- the driver ------------------------------------------------------------------------------

// prefill[i]: initial values of input i's gradient buffer (ignored for assigned gradients).
template <class T>
Run<T> make_run(const OpCase& c, const std::vector<std::vector<double>>& prefill) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  Run<T> r;
  for (size_t i = 0; i < c.inputs().size(); ++i) {
    const auto& in = c.inputs()[i];
    Guarded<T> g(in.value.size(), T(0));
    for (size_t k = 0; k < in.value.size(); ++k) g[k] = static_cast<T>(in.value[k]);
    r.in.push_back(std::move(g));
    if (!in.has_grad) {
      r.grad.emplace_back();
    } else if (in.grad_assigned) {
      r.grad.emplace_back(in.value.size(), nan);
    } else {
      Guarded<T> d(in.value.size(), T(0));
      for (size_t k = 0; k < in.value.size(); ++k) d[k] = static_cast<T>(prefill[i][k]);
      r.grad.push_back(std::move(d));
    }
  }
  for (const auto& o : c.outputs()) {
    r.out.emplace_back(o.n, nan);
    Guarded<T> w(o.weight.size(), T(0));
    for (size_t k = 0; k < o.weight.size(); ++k) w[k] = static_cast<T>(o.weight[k]);
    r.dout.push_back(std::move(w));
  }
  for (size_t n : c.works()) r.work.emplace_back(n, nan);
  return r;
}

template <class T>
long double loss(const OpCase& c, const Run<T>& r) {
  long double l = 0;
  for (size_t j = 0; j < c.outputs().size(); ++j) {
    const auto& w = c.outputs()[j].weight;
    for (size_t k = 0; k < w.size(); ++k) l += static_cast<long double>(r.out[j][k]) * w[k];
  }
  return l;
}

// The gradient the backward produced: buffer minus pre-fill (exact for the pre-fills used).
template <class T>
std::vector<double> produced_grad(const OpCase& c, const Run<T>& r, size_t i,
                                  const std::vector<std::vector<double>>& prefill) {
  std::vector<double> g(r.grad[i].size());
  for (size_t k = 0; k < g.size(); ++k) {
    const double base =
        c.inputs()[i].grad_assigned ? 0.0 : static_cast<double>(static_cast<T>(prefill[i][k]));
    g[k] = static_cast<double>(r.grad[i][k]) - base;
  }
  return g;
}

template <class T>
size_t count_nonfinite(const Guarded<T>& g) {
  size_t bad = 0;
  for (size_t k = 0; k < g.size(); ++k) bad += !std::isfinite(g[k]);
  return bad;
}

// Guards, unchanged inputs, finiteness of outputs and gradients, per-op invariants.
template <class T>
void check_run(const OpCase& c, const Run<T>& r, const char* type) {
  for (size_t i = 0; i < r.in.size(); ++i) {
    const auto& in = c.inputs()[i];
    EXPECT_TRUE(r.in[i].guards_intact()) << type << " input " << in.name << ": guard written";
    size_t changed = 0;
    for (size_t k = 0; k < in.value.size(); ++k) {
      const T want = static_cast<T>(in.value[k]);
      changed += std::memcmp(&r.in[i][k], &want, sizeof(T)) != 0;
    }
    EXPECT_EQ(changed, 0u) << type << " input " << in.name << " was modified";
    EXPECT_TRUE(r.grad[i].guards_intact()) << type << " grad " << in.name << ": guard written";
    EXPECT_EQ(count_nonfinite(r.grad[i]), 0u) << type << " grad " << in.name << ": NaN/Inf";
  }
  for (size_t j = 0; j < r.out.size(); ++j) {
    const auto& name = c.outputs()[j].name;
    EXPECT_TRUE(r.out[j].guards_intact()) << type << " output " << name << ": guard written";
    if (!c.outputs()[j].backend_defined) {
      EXPECT_EQ(count_nonfinite(r.out[j]), 0u)
          << type << " output " << name << ": NaN/Inf (or an element left unassigned)";
    }
    EXPECT_TRUE(r.dout[j].guards_intact()) << type << " dout " << name << ": guard written";
  }
  for (size_t w = 0; w < r.work.size(); ++w) {
    EXPECT_TRUE(r.work[w].guards_intact()) << type << " workspace " << w << ": guard written";
  }
  c.check(r);
}

// max_k |f_k - d_k| / (|d_k| + max(rms(d), min_floor))
inline double max_rel_err(const std::vector<double>& f, const std::vector<double>& d,
                          double min_floor) {
  double ss = 0;
  for (double x : d) ss += x * x;
  const double floor = std::max({std::sqrt(ss / std::max<size_t>(d.size(), 1)), min_floor, 1e-30});
  double worst = 0;
  for (size_t k = 0; k < d.size(); ++k) {
    worst = std::max(worst, std::fabs(f[k] - d[k]) / (std::fabs(d[k]) + floor));
  }
  return worst;
}

template <class T>
std::vector<double> to_double(const Guarded<T>& g) {
  std::vector<double> v(g.size());
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(g[k]);
  return v;
}

template <class T>
bool bitwise_equal(const Guarded<T>& a, const Guarded<T>& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// A fixed nonzero pattern in [-1.5, 1.5] * magnitude, exact in float for magnitude = 2^k.
inline std::vector<double> prefill_pattern(size_t n, double magnitude) {
  std::vector<double> p(n);
  for (size_t k = 0; k < n; ++k) p[k] = magnitude * 0.5 * static_cast<double>(int(k % 7) - 3);
  return p;
}

// FNV-1a: a per-case seed that is the same on every platform (std::hash is not).
inline uint64_t name_seed(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Sets the OpenMP thread count for a scope and restores it, also when a test throws.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ScopedThreads() { omp_set_num_threads(saved_); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_;
};

// Step 1: the reference run in double and the finite-difference check of its gradients.
struct Reference {
  std::vector<std::vector<double>> prefill;  // initial values of the gradient buffers
  Run<double> run;
  std::vector<std::vector<double>> grad;  // the gradient of each input (empty: none)
  double worst_fd = 0;                    // worst |analytic - fd| / tolerance
};

// Checks reference gradient `grad` of input i against central finite differences of the loss,
// all points for small inputs, else a random subset plus the ends and the case's extras.
// probe: a run whose input i is perturbed one element at a time (and restored). Returns the
// worst |analytic - fd| / tolerance.
inline double check_finite_differences(OpCase& c, const Ops<double>& ref, Run<double>& probe,
                                       size_t i, const std::vector<double>& grad, Rng& rng) {
  const auto& in = c.inputs()[i];
  const size_t n = in.value.size();
  std::vector<size_t> points;
  if (n <= c.fd_max_points()) {
    for (size_t k = 0; k < n; ++k) points.push_back(k);
  } else {
    for (size_t k = 0; k < c.fd_max_points(); ++k) points.push_back(rng.below(n));
    points.push_back(0);
    points.push_back(n - 1);
  }
  for (size_t k : c.fd_extra_points(i)) points.push_back(k);
  size_t bad = 0;
  double worst = 0;
  for (size_t k : points) {
    const double x0 = probe.in[i][k];
    const double xp = x0 + c.grad_eps(), xm = x0 - c.grad_eps();
    probe.in[i][k] = xp;
    c.forward(ref, probe);
    const long double lp = loss(c, probe);
    probe.in[i][k] = xm;
    c.forward(ref, probe);
    const long double lm = loss(c, probe);
    probe.in[i][k] = x0;
    const double fd = static_cast<double>((lp - lm) / (xp - xm));
    const double err = std::fabs(grad[k] - fd);
    worst = std::max(worst, err / (c.fd_atol() + c.fd_rtol() * std::fabs(fd)));
    if (err > c.fd_atol() + c.fd_rtol() * std::fabs(fd) && ++bad <= 5) {
      ADD_FAILURE() << c.name() << ": d" << in.name << "[" << k << "] analytic " << grad[k]
                    << " vs finite difference " << fd;
    }
  }
  EXPECT_EQ(bad, 0u) << c.name() << ": d" << in.name << " wrong at " << bad << " of "
                     << points.size() << " checked points";
  return worst;
}

// Whether the reference's finite-difference checks run: yes, unless GOSSAMER_SKIP_FD_CHECK=1.
// scripts/gpu-check.sh sets it for the CUDA op test, whose subject is the CUDA ops against the
// double reference: the unit op tests check that reference with finite differences on every
// build, and on the device machine (plain-loop gemm) the probes would take minutes of its time.
inline bool fd_checks_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("GOSSAMER_SKIP_FD_CHECK");
    const bool skip = env != nullptr && std::string(env) == "1";
    if (skip)
      std::printf("op test harness: finite-difference checks skipped (GOSSAMER_SKIP_FD_CHECK=1)\n");
    return !skip;
  }();
  return enabled;
}

inline Reference reference_run(OpCase& c, const Ops<double>& ref, Rng& rng) {
  const size_t nin = c.inputs().size();
  Reference r;
  r.prefill.resize(nin);
  for (size_t i = 0; i < nin; ++i) r.prefill[i] = prefill_pattern(c.inputs()[i].value.size(), 1);
  r.run = make_run<double>(c, r.prefill);
  c.forward(ref, r.run);
  c.backward(ref, r.run);
  check_run(c, r.run, "double");

  r.grad.resize(nin);
  // The thousands of small probe forwards run on one thread: a parallel region per tiny call
  // only adds fork/join cost (and stalls when the machine is oversubscribed). The analytic
  // runs above and of the backend under test keep the default thread count.
  ScopedThreads one_thread(1);
  Run<double> probe = make_run<double>(c, r.prefill);
  for (size_t i = 0; i < nin; ++i) {
    if (!c.inputs()[i].has_grad) continue;
    r.grad[i] = produced_grad(c, r.run, i, r.prefill);
    if (fd_checks_enabled())
      r.worst_fd = std::max(r.worst_fd, check_finite_differences(c, ref, probe, i, r.grad[i], rng));
  }
  return r;
}

// Pre-fills of the float gradient buffers, scaled to each reference gradient's RMS, so that
// (P + g) - P loses nothing measurable in float.
inline std::vector<std::vector<double>> float_prefill(const OpCase& c, const Reference& ref) {
  std::vector<std::vector<double>> prefill(c.inputs().size());
  for (size_t i = 0; i < prefill.size(); ++i) {
    const auto& g = ref.grad[i];
    double ss = 0;
    for (double x : g) ss += x * x;
    const double rms = g.empty() ? 1.0 : std::sqrt(ss / g.size());
    const double pow2 = rms > 0 ? std::exp2(std::floor(std::log2(rms))) : 1.0;
    prefill[i] = prefill_pattern(c.inputs()[i].value.size(), pow2);
  }
  return prefill;
}

// Step 2: every output and gradient of the float run vs the reference. Returns the worst
// relative error.
inline double compare_with_reference(const OpCase& c, const std::string& label,
                                     const Run<float>& r32,
                                     const std::vector<std::vector<double>>& prefill32,
                                     const Reference& ref) {
  double worst = 0;
  for (size_t j = 0; j < r32.out.size(); ++j) {
    if (c.outputs()[j].backend_defined) continue;
    const double e = max_rel_err(to_double(r32.out[j]), to_double(ref.run.out[j]), c.err_floor());
    worst = std::max(worst, e);
    EXPECT_LE(e, c.max_err()) << c.name() << ": " << label << " vs double, output "
                              << c.outputs()[j].name;
  }
  for (size_t i = 0; i < c.inputs().size(); ++i) {
    if (!c.inputs()[i].has_grad) continue;
    const double e = max_rel_err(produced_grad(c, r32, i, prefill32), ref.grad[i], c.err_floor());
    worst = std::max(worst, e);
    EXPECT_LE(e, c.max_err()) << c.name() << ": " << label << " vs double, d" << c.inputs()[i].name;
  }
  return worst;
}

// Step 3, determinism: a second run of the backend under test is bitwise identical to r32.
inline void check_deterministic(OpCase& c, const Ops<float>& backend, const Run<float>& r32,
                                const std::vector<std::vector<double>>& prefill32) {
  Run<float> again = make_run<float>(c, prefill32);
  c.forward(backend, again);
  c.backward(backend, again);
  for (size_t j = 0; j < r32.out.size(); ++j) {
    EXPECT_TRUE(bitwise_equal(r32.out[j], again.out[j]))
        << c.name() << ": output " << c.outputs()[j].name << " differs between two runs";
  }
  for (size_t i = 0; i < c.inputs().size(); ++i) {
    EXPECT_TRUE(bitwise_equal(r32.grad[i], again.grad[i]))
        << c.name() << ": d" << c.inputs()[i].name << " differs between two runs";
  }
}

// Runs case c: the double CPU reference (finite differences), then `backend`, the float op
// table under test, against it (see the top of this file).
inline void run_case(OpCase& c, const Ops<float>& backend) {
  Rng rng(0x5eed, name_seed(c.name()));
  c.build(rng);
  // Inputs and loss weights are rounded to float, so that the float and double runs see the
  // same values and their comparison measures the ops' arithmetic alone.
  for (auto& in : c.mutable_inputs()) {
    for (auto& x : in.value) x = static_cast<float>(x);
  }
  for (auto& out : c.mutable_outputs()) {
    for (auto& w : out.weight) w = static_cast<float>(w);
  }

  const Reference ref = reference_run(c, kernels::cpu_ops_f64(), rng);

  const std::string label = std::string(backend.backend) + " float";
  const std::vector<std::vector<double>> prefill32 = float_prefill(c, ref);
  Run<float> r32 = make_run<float>(c, prefill32);
  c.forward(backend, r32);
  c.backward(backend, r32);
  check_run(c, r32, label.c_str());
  const double worst32 = compare_with_reference(c, label, r32, prefill32, ref);
  check_deterministic(c, backend, r32, prefill32);
  std::printf("  %-44s fd err/tol %.2e   %s rel err %.2e\n", c.name().c_str(), ref.worst_fd,
              label.c_str(), worst32);
}

// ---- the ops ---------------------------------------------------------------------------------

inline std::string dims(const char* op, std::initializer_list<std::pair<const char*, int>> d) {
  std::string s = op;
  for (const auto& [k, v] : d) s += std::string("_") + k + std::to_string(v);
  return s;
}

// ---- the grid --------------------------------------------------------------------------------

struct CaseEntry {
  std::string name;
  std::function<std::unique_ptr<OpCase>()> make;
};

// gtest prints a failing parameter with this (instead of its bytes).
inline void PrintTo(const CaseEntry& e, std::ostream* os) {
  *os << e.name;
}

template <class Case, class... Args>
CaseEntry entry(Args... args) {
  auto make = [=] { return std::unique_ptr<OpCase>(new Case(args...)); };
  return {make()->name(), make};
}

}  // namespace gossamer::op_test
