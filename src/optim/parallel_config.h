// ParallelConfig: the `parallel` section of a run config: the communicator's keys (which
// backend, timeouts, compression: comm/comm_config.h), how the data-parallel optimizers shard
// their state and gradients, and how gradients travel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "comm/comm_config.h"
#include "core/enum_names.h"

namespace gossamer::optim {

// Gradients on the wire.
enum class CommDtype { COMM_DTYPE_FP32, COMM_DTYPE_BF16 };

// The comm keys (comm/comm_config.h, listed first) and the data-parallel optimizers' own.
struct ParallelConfig : comm::CommConfig {
  int zero_stage = 0;
  CommDtype comm_dtype = CommDtype::COMM_DTYPE_FP32;
  double bucket_mb = 4.0;
  bool overlap = true;
  int64_t check_replicas_every = 0;

  // Resume metadata (run/resume_check.h): the value a checkpoint written before a key existed
  // ran with (added_later), and the keys whose change leaves the run the same run (harmless).
  template <class R>
  static void resume_keys(R& r) {
    r.harmless_section();  // sharding and communication (the world size may change too)
  }

  template <class V>
  void visit(V& v) {
    comm::CommConfig::visit(v);
    v("zero_stage", zero_stage,
      "0: replicated optimizer (all-reduce gradients); 1: optimizer state sharded "
      "(reduce-scatter gradients, all-gather parameters); 2: gradients sharded too");
    v("comm_dtype", comm_dtype, "dtype of gradients on the wire");
    v("bucket_mb", bucket_mb,
      "gradient bucket size in MB (of fp32 gradients); a bucket's collective starts as soon as "
      "backward has finished it, and under ZeRO every rank owns a 1/N slice of every bucket");
    v("overlap", overlap,
      "start bucket collectives during backward (false: all after backward, for comparison)");
    v("check_replicas_every", check_replicas_every,
      "every N steps, compare a hash of the parameters across ranks and stop if any replica "
      "differs (0: never; a test and debugging aid)");
  }
  void validate(const std::string& path = "parallel.") const;
  // Elements of one bucket (bucket_mb of fp32 values, at least 1).
  size_t bucket_elements() const;
};

}  // namespace gossamer::optim

namespace gossamer {
template <>
struct EnumNames<optim::CommDtype> {
  static constexpr std::pair<optim::CommDtype, std::string_view> values[] = {
      {optim::CommDtype::COMM_DTYPE_FP32, "fp32"}, {optim::CommDtype::COMM_DTYPE_BF16, "bf16"}};
};
}  // namespace gossamer
