// ParallelConfig: the `parallel` section of a run config: which communicator backend, how the
// data-parallel optimizers shard their state and gradients, and how gradients travel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "comm/communicator.h"
#include "comm/zip/compression_policy.h"
#include "comm/zip/zip_communicator.h"
#include "core/enum_names.h"

namespace gossamer::optim {

// Gradients on the wire.
enum class CommDtype { COMM_DTYPE_FP32, COMM_DTYPE_BF16 };

struct ParallelConfig {
  comm::Backend backend = comm::Backend::BACKEND_AUTO;
  int zero_stage = 0;
  CommDtype comm_dtype = CommDtype::COMM_DTYPE_FP32;
  double bucket_mb = 4.0;
  bool overlap = true;
  double timeout_s = 300;
  int64_t check_replicas_every = 0;
  comm::zip::Compression compression = comm::zip::Compression::COMPRESSION_OFF;
  int64_t compression_min_bytes = int64_t{256} << 10;
  double link_gbps = 0;
  double codec_gbps = 0;

  template <class V>
  void visit(V& v) {
    v("backend", backend,
      "communicator: auto (nccl for device buffers with a GPU; for host buffers mpi under "
      "mpirun/srun, else single)");
    v("zero_stage", zero_stage,
      "0: replicated optimizer (all-reduce gradients); 1: optimizer state sharded "
      "(reduce-scatter gradients, all-gather parameters); 2: gradients sharded too");
    v("comm_dtype", comm_dtype, "dtype of gradients on the wire");
    v("bucket_mb", bucket_mb,
      "gradient bucket size in MB (of fp32 gradients); a bucket's collective starts as soon as "
      "backward has finished it, and under ZeRO every rank owns a 1/N slice of every bucket");
    v("overlap", overlap,
      "start bucket collectives during backward (false: all after backward, for comparison)");
    v("timeout_s", timeout_s,
      "a collective blocked longer than this ends the job naming the rank and step (0: never)");
    v("check_replicas_every", check_replicas_every,
      "every N steps, compare a hash of the parameters across ranks and stop if any replica "
      "differs (0: never; a test and debugging aid)");
    v("compression", compression,
      "lossless compression of sum all-reduces, sum reduce-scatters and all-gathers of bf16/fp32 "
      "(host buffers; docs/COMM.md): off (the backend's own collectives), plain (the "
      "compressing decorator's algorithms without compression: the same bits as on), on, "
      "adaptive (per call, compressed or the backend's own, from the cost model)");
    v("compression_min_bytes", compression_min_bytes,
      "messages smaller than this are never compressed (on: sent plain; adaptive: the backend's "
      "own collective)");
    v("link_gbps", link_gbps,
      "the link's bandwidth in GB/s for the adaptive cost model (0: measured at start-up, the "
      "minimum over ranks)");
    v("codec_gbps", codec_gbps,
      "the codec's encode/decode throughput in GB/s for the adaptive cost model (0: measured at "
      "start-up, the minimum over ranks; set it and link_gbps to make the choices, and so the "
      "bits, reproducible from run to run)");
  }
  void validate(const std::string& path = "parallel.") const;
  // Elements of one bucket (bucket_mb of fp32 values, at least 1).
  size_t bucket_elements() const;
  // The decorator's options from compression, compression_min_bytes, link_gbps and codec_gbps.
  comm::zip::ZipOptions zip_options() const;
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::CommDtype> {
  static constexpr std::pair<optim::CommDtype, std::string_view> values[] = {
      {optim::CommDtype::COMM_DTYPE_FP32, "fp32"}, {optim::CommDtype::COMM_DTYPE_BF16, "bf16"}};
};
}  // namespace gossamer
