// MPI runtime shared by the mpi and nccl backends: MPI_Init_thread(MPI_THREAD_MULTIPLE) when the
// first communicator needs it, MPI_Finalize when the last one is gone (only if we initialized
// MPI), the bf16 reduction operators, dtype / op / error-code translation and ending the job.
// Invariant: MPI is process-wide, so the runtime is too: one reference-counted instance, the one
// piece of process-wide state in src/comm; MPI cannot start again once finalized.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.h"

namespace gossamer::comm {

class MpiRuntime {
 public:
  // Initializes MPI (thread level MULTIPLE, or an error) on first use; shared afterwards.
  static std::shared_ptr<MpiRuntime> acquire();
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  MPI_Op op(ReduceOp op, DType dtype) const;  // bf16: our fp32-accumulating operators
  // What apply_mpi_transport_defaults() set before MPI_Init, for the log; empty when MPI was
  // initialized by someone else or the library is not Open MPI.
  const std::string& transport_defaults() const { return transport_defaults_; }

 private:
  MpiRuntime() = default;
  bool initialized_here_ = false;
  std::string transport_defaults_;
  MPI_Op bf16_ops_[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, max, min
};

MPI_Datatype mpi_datatype(DType dtype);  // bf16 travels as MPI_UINT16_T
std::string mpi_error_string(int code);
// Throws gossamer::Error "<what>: <MPI error string>" unless rc == MPI_SUCCESS.
void mpi_check(int rc, const char* what);

// How long a rank other than 0 waits after logging its error before it aborts the job.
inline constexpr double kAbortGraceForRankZeroSeconds = 3.0;
// Ends the whole job from rank `rank` of `comm`: logs `message`, then MPI_Abort. A rank other
// than 0 first waits kAbortGraceForRankZeroSeconds, so that when every rank fails at the same
// point (a config check against the world size, a file every rank reads) rank 0 reports its own
// error before the job ends; rank 0 aborts at once. A rank failing alone only ends the job a
// few seconds later.
[[noreturn]] void mpi_abort_job(MPI_Comm comm, int rank, int exit_code, const std::string& message);

}  // namespace gossamer::comm
