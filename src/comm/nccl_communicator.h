// The "nccl" backend: device buffers, one NCCL communicator bootstrapped over MPI (rank 0's
// ncclUniqueId broadcast with MPI_Bcast), cudaSetDevice(local_rank), and one communication
// stream. Compiled only with CUDA (GOSSAMER_HAVE_NCCL). Each operation first waits (on the
// device) for the work already issued to the compute stream (default: the legacy default
// stream), and its Work completes when a cudaEvent recorded after it on the comm stream does.
// Invariant: operations run in issue order on the one comm stream.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace gossamer::comm {

// Throws gossamer::Error when no GPU is visible or a rank's local rank has no GPU.
std::unique_ptr<Communicator> make_nccl_communicator();

// The stream whose earlier work every later operation of `comm` (an nccl communicator) waits
// for; `stream` is a cudaStream_t (0 = the legacy default stream). Set it again whenever the
// ops move to another stream (kernels::cuda::set_stream).
void nccl_set_compute_stream(Communicator& comm, void* stream);

}  // namespace gossamer::comm
