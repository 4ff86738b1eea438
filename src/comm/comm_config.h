// CommConfig: the communicator's keys of a run config's `parallel` section (backend, timeout,
// the order of float sums, lossless compression and its cost model, simulated time). The comm
// layer owns them; optim::ParallelConfig adds the data-parallel optimizers' keys, and
// run/run_communicators.h builds from them.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "comm/sim_config.h"
#include "comm/zip/compression_policy.h"
#include "comm/zip/zip_communicator.h"

namespace gossamer::comm {

// parallel.sum_order.
enum class SumOrder { SUM_ORDER_FIXED, SUM_ORDER_BACKEND };

struct CommConfig {
  Backend backend = Backend::BACKEND_AUTO;
  int ranks = 0;
  double timeout_s = 300;
  zip::Compression compression = zip::Compression::COMPRESSION_OFF;
  int64_t compression_min_bytes = int64_t{256} << 10;
  SumOrder sum_order = SumOrder::SUM_ORDER_FIXED;
  double link_gbps = 0;
  double codec_gbps = 0;
  SimConfig sim;

  template <class V>
  void visit(V& v) {
    v("backend", backend,
      "communicator: auto (nccl for device buffers with a GPU; for host buffers mpi under "
      "mpirun/srun, else single)");
    v("ranks", ranks,
      "N >= 1: the run's N ranks as threads of this process (the inprocess backend; as "
      "`train --ranks N`, which overrides it; refused under a launcher); 0: one process per "
      "rank, as the launcher (mpirun, srun) started them");
    v("timeout_s", timeout_s,
      "a collective blocked longer than this ends the job naming the rank and step (0: never)");
    v("compression", compression,
      "lossless compression of sum all-reduces, sum reduce-scatters and all-gathers of bf16/fp32 "
      "(host buffers; docs/COMM.md): off (none; the sums' algorithm is sum_order's), plain (the "
      "compressing decorator's algorithms without compression: the same bits as on), on, "
      "adaptive (per call, compressed or not, from the cost model)");
    v("compression_min_bytes", compression_min_bytes,
      "messages smaller than this are never compressed");
    v("sum_order", sum_order,
      "host buffers at several ranks: fixed (sums in one order, each element at its owner rank: "
      "its own value, then rank - 1, rank - 2, ...; bit for bit the same under mpirun, srun and "
      "--ranks, with any MPI library; compression off then runs the zip decorator's plain "
      "algorithms, adaptive falls back to them) or backend (the backend's own collectives, "
      "whose order MPI picks by size and rank count)");
    v("link_gbps", link_gbps,
      "the link's bandwidth in GB/s for the adaptive cost model (0: measured at start-up, the "
      "minimum over ranks)");
    v("codec_gbps", codec_gbps,
      "the codec's encode/decode throughput in GB/s for the adaptive cost model (0: measured at "
      "start-up, the minimum over ranks; set it and link_gbps to make the choices, and so the "
      "bits, reproducible from run to run)");
    v.subsection("sim", sim,
                 "simulated time on a modelled network, for ranks in one process "
                 "(docs/NETWORK.md)",
                 "");
  }
  // Errors name the key under `path` ("parallel.").
  void validate(const std::string& path) const;
  // The decorator's options from compression, compression_min_bytes, link_gbps and codec_gbps.
  zip::ZipOptions zip_options() const;
};

}  // namespace gossamer::comm

namespace gossamer {
template <>
struct EnumNames<comm::SumOrder> {
  static constexpr std::pair<comm::SumOrder, std::string_view> values[] = {
      {comm::SumOrder::SUM_ORDER_FIXED, "fixed"}, {comm::SumOrder::SUM_ORDER_BACKEND, "backend"}};
};
}  // namespace gossamer
