// Transport defaults the mpi backend gives Open MPI before MPI_Init, only where the user has not
// chosen (an OMPI_MCA_* variable already set, e.g. by `mpirun --mca`, always wins).
// Today one: the TCP transport sends messages of up to 2 MiB eagerly. Open MPI's default (64 KiB)
// sends anything larger by rendezvous: the receiver's acknowledgement travels back on a
// connection that, in a bidirectional exchange, is queued full of the receiver's own data, so
// every 512 KiB-1 MiB step of the zip decorator's pipelines waited behind it (plain 86% of a 1
// Gbit/s link, eager 95%: docs/PERF.md). No effect on shared memory or other transports.
// Invariant: called at most once, before MPI_Init; never overrides a value the user set.
#pragma once

#include <string>

namespace gossamer::comm {

// Applies the defaults (Open MPI builds only) and returns a one-line description of what was
// set, or that the user's settings were kept, for the log; empty for other MPI libraries.
std::string apply_mpi_transport_defaults();

}  // namespace gossamer::comm
