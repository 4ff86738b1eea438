// How a per-shard top-k spreads SCAPE's budget over the tensors, for one momentum (issue 12,
// part 1; docs/RESULTS.md). From a SCAPE checkpoint's momentum (scape.m, the flat state) and
// its run config, it selects the top-k of |m| over the whole space (what one rank does) and
// the top-k_r of every rank's shard (what N ranks do) for several layouts, and prints per
// layout how far each tensor's selected fraction is from the global one. The momentum is the
// same for every layout, so the differences are the layouts' alone (a training run at N ranks
// also diverges because its masks differ from step to step).
//   bench_shard_selection CHECKPOINT_DIR CONFIG [--density D] [--world N] [--buckets MB,...]
// A bucket of 0 is the contiguous layout (one slice per rank). Prints a markdown table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/shard_layout.h"
#include "optim/sparse_mask.h"
#include "run/run_config.h"

using namespace gossamer;

namespace {

// Selected fraction of every view for a mask given as one flag per flat element.
std::vector<double> fractions(const model::ParamLayout& layout, const std::vector<char>& in) {
  std::vector<double> f;
  for (const model::ParamView& v : layout.views()) {
    size_t n = 0;
    for (size_t i = v.offset; i < v.offset + v.numel; ++i) n += in[i] != 0;
    f.push_back(v.numel ? double(n) / double(v.numel) : 0.0);
  }
  return f;
}

// The union of every rank's top-k of its shard of `score` under `layout`.
std::vector<char> per_shard_mask(const std::vector<float>& score, const optim::ShardLayout& layout,
                                 double density) {
  std::vector<char> in(score.size(), 0);
  for (int r = 0; r < layout.world(); ++r) {
    std::vector<float> mine(layout.size(r));
    const std::vector<optim::ShardPiece> pieces = layout.pieces(r);
    for (const optim::ShardPiece& p : pieces)
      std::copy(score.begin() + ptrdiff_t(p.begin), score.begin() + ptrdiff_t(p.end),
                mine.begin() + ptrdiff_t(p.local));
    const size_t k = std::min(mine.size(), size_t(std::ceil(density * double(mine.size()))));
    for (uint32_t l : optim::top_k_indices(mine, k)) in[layout.global_index(r, l)] = 1;
  }
  return in;
}

void report(const std::string& name, const model::ParamLayout& layout,
            const std::vector<double>& ref, const std::vector<double>& got) {
  std::vector<double> rel;
  double worst = 0;
  std::string worst_name;
  double blocks_ref = 0, blocks_got = 0, all_ref = 0, all_got = 0;
  for (size_t v = 0; v < ref.size(); ++v) {
    const model::ParamView& view = layout.views()[v];
    const double kr = ref[v] * double(view.numel), kg = got[v] * double(view.numel);
    all_ref += kr, all_got += kg;
    if (view.name.rfind("blocks.", 0) == 0) blocks_ref += kr, blocks_got += kg;
    if (ref[v] < 0.002) continue;  // tensors the global mask hardly touches
    const double r = std::fabs(got[v] - ref[v]) / ref[v];
    rel.push_back(r);
    if (r > worst) worst = r, worst_name = view.name;
  }
  std::sort(rel.begin(), rel.end());
  const size_t within =
      size_t(std::count_if(rel.begin(), rel.end(), [](double r) { return r <= 0.05; }));
  std::printf("| %s | %zu of %zu | %.1f%% | %s (%.0f%%) | %.1f%% | %.1f%% |\n", name.c_str(),
              within, rel.size(), 100 * rel[rel.size() / 2], worst_name.c_str(), 100 * worst,
              100 * blocks_ref / all_ref, 100 * blocks_got / all_got);
}

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    out.push_back(std::stod(s.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  GOSSAMER_CHECK(argc >= 3,
                 "usage: bench_shard_selection CHECKPOINT_DIR CONFIG [--density D] "
                 "[--world N] [--buckets MB,...]");
  const std::string ckpt = argv[1], config = argv[2];
  double density = 0.01;
  int world = 4;
  std::vector<double> buckets = {0, 4, 1, 0.25, 0.0625};
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--density")
      density = std::stod(v);
    else if (k == "--world")
      world = std::stoi(v);
    else if (k == "--buckets")
      buckets = parse_list(v);
    else
      fail("bench_shard_selection: unknown option %s", k.c_str());
  }
  const run::RunConfig rc = run::load_run_config(config, {});
  const auto model = model::make_model(rc.model, 1, 1, kernels::cpu_ops());
  const model::ParamLayout& layout = model->layout();
  const io::SafetensorsReader reader(ckpt + "/optimizer.safetensors");
  const std::vector<float> m = reader.read_as<float>("scape.m", {int64_t(layout.total())});
  std::vector<float> score(m.size());
  for (size_t i = 0; i < m.size(); ++i) score[i] = std::fabs(m[i]);
  const size_t P = layout.total();
  std::vector<char> global(P, 0);
  for (uint32_t i : optim::top_k_indices(score, size_t(std::ceil(density * double(P)))))
    global[i] = 1;
  const std::vector<double> ref = fractions(layout, global);
  std::printf("# %s, |m| of %zu parameters, density %g, %d ranks against one\n", ckpt.c_str(), P,
              density, world);
  std::printf(
      "| layout | tensors within 5%% of one rank | median abs. rel. diff | worst tensor | blocks' "
      "share of the budget (1 rank) | (%d ranks) |\n|---|---|---|---|---|---|\n",
      world);
  for (double mb : buckets) {
    const size_t elems = mb <= 0 ? optim::ShardLayout::kOneBucket
                                 : std::max<size_t>(1, size_t(mb * 1e6 / sizeof(float)));
    const optim::ShardLayout layout_n(P, world, elems);
    const std::string name =
        mb <= 0 ? "contiguous (one slice per rank)" : strprintf("per bucket, %g MB buckets", mb);
    report(name, layout, ref, fractions(layout, per_shard_mask(score, layout_n, density)));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "[error] %s\n", e.what());
  return 1;
}
