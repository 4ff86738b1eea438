// ParallelConfig: the `parallel` section of a run config: which communicator backend, how the
// data-parallel optimizers shard their state and gradients, and how gradients travel.
#pragma once

#include <cstdint>
#include <string>

namespace gossamer::optim {

struct ParallelConfig {
  std::string backend = "auto";
  int zero_stage = 0;
  std::string comm_dtype = "fp32";
  double bucket_mb = 4.0;
  bool overlap = true;
  double timeout_s = 300;
  int64_t check_replicas_every = 0;

  template <class V>
  void visit(V& v) {
    v("backend", backend,
      "communicator: \"auto\" (nccl with a GPU, mpi under mpirun/srun, else single), \"mpi\", "
      "\"nccl\" or \"single\"");
    v("zero_stage", zero_stage,
      "0: replicated optimizer (all-reduce gradients); 1: optimizer state sharded "
      "(reduce-scatter gradients, all-gather parameters); 2: gradients sharded too");
    v("comm_dtype", comm_dtype, "dtype of gradients on the wire: \"fp32\" or \"bf16\"");
    v("bucket_mb", bucket_mb,
      "gradient bucket size in MB (of fp32 gradients); a bucket's collective starts as soon as "
      "backward has finished it");
    v("overlap", overlap,
      "start bucket collectives during backward (false: all after backward, for comparison)");
    v("timeout_s", timeout_s,
      "a collective blocked longer than this ends the job naming the rank and step (0: never)");
    v("check_replicas_every", check_replicas_every,
      "every N steps, compare a hash of the parameters across ranks and stop if any replica "
      "differs (0: never; a test and debugging aid)");
  }
  void validate(const std::string& path = "parallel.") const;
};

}  // namespace gossamer::optim
