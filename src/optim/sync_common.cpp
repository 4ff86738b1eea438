// The shared synchronisation steps of the optimizers (see sync_common.h).
#include "optim/sync_common.h"

#include <vector>

#include "core/error.h"

namespace gossamer::optim {

Buffer<kernels::CopyRun> piece_runs(std::span<const ShardPiece> pieces, PieceMove move,
                                    const MemoryOps& memory) {
  std::vector<kernels::CopyRun> runs;
  runs.reserve(pieces.size());
  for (const ShardPiece& p : pieces) {
    if (move == PieceMove::TO_PACKED)
      runs.push_back({.dst_offset = p.local, .src_offset = p.begin, .n = p.size()});
    else
      runs.push_back({.dst_offset = p.begin, .src_offset = p.local, .n = p.size()});
  }
  Buffer<kernels::CopyRun> dev(runs.size(), memory);
  dev.upload(runs.data(), runs.size());
  return dev;
}

void agree_gradients_finite(comm::Communicator& control, bool locally_finite, int64_t t) {
  const int world = control.size(), rank = control.rank();
  int32_t flag = locally_finite ? 0 : int32_t(world - rank);  // max -> lowest failing rank
  if (world > 1) control.all_reduce(&flag, 1, comm::DType::I32, comm::ReduceOp::MAX).wait();
  if (flag != 0)
    throw CollectiveError(
        strprintf("step %lld: non-finite (NaN/Inf) gradients on rank %d, found before they were "
                  "communicated; stopping without updating (the last checkpoint is intact)",
                  (long long)t, world - flag));
}

void sum_over_ranks(comm::Communicator& control, std::span<float> values) {
  if (control.size() > 1)
    control.all_reduce(values.data(), values.size(), comm::DType::F32, comm::ReduceOp::SUM).wait();
}

void clip_to_norm(const kernels::OpTable& ops, float* g, size_t n, double norm, double max_norm) {
  if (max_norm <= 0) return;
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) ops.scale(g, float(coef), n);
}

void clip_owned_to_norm(const kernels::OpTable& ops, float* g, const OwnedShard& own, double norm,
                        double max_norm) {
  for (const ShardPiece& p : own.pieces) clip_to_norm(ops, g + p.begin, p.size(), norm, max_norm);
}

double sum_squares_owned(const kernels::OpTable& ops, const float* x, const OwnedShard& own) {
  double sum = 0;
  for (const ShardPiece& p : own.pieces) sum += ops.sum_squares(x + p.begin, p.size());
  return sum;
}

void all_gather_shards(comm::Communicator& comm, std::span<float> params, const ShardLayout& shards,
                       int rank) {
  if (comm.size() == 1) return;
  GOSSAMER_CHECK(params.size() == shards.total(), "parameter all-gather: %zu elements, layout %zu",
                 params.size(), shards.total());
  std::vector<comm::Work> work;
  for (size_t b = 0; b < shards.num_buckets(); ++b)
    work.push_back(comm.all_gather(params.data() + shards.piece(rank, b).begin,
                                   params.data() + shards.bucket_begin(b), shards.bucket_counts(b),
                                   comm::DType::F32));
  for (comm::Work& w : work) w.wait();
}

}  // namespace gossamer::optim
