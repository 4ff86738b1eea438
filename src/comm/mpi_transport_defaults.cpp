// Implementation of mpi_transport_defaults.h: environment variables read by Open MPI's MCA
// parameter system at MPI_Init (the same ones `mpirun --mca NAME VALUE` exports to its ranks).
#include "comm/mpi_transport_defaults.h"

#include <mpi.h>

#include <cstdlib>

#include "core/error.h"

namespace gossamer::comm {

std::string apply_mpi_transport_defaults() {
#ifdef OPEN_MPI
  // 2 MiB: above the decorator's largest step message (1 MiB raw compressed steps, which may
  // grow slightly when incompressible; 512 KiB plain steps). The eager limit includes Open MPI's
  // headers; the first fragment of longer messages and the fragment size follow it.
  // The three go together (the first fragment may not exceed the eager limit), so a user who set
  // any of them keeps Open MPI's values for the others.
  static constexpr const char* kNames[] = {"btl_tcp_eager_limit", "btl_tcp_rndv_eager_limit",
                                           "btl_tcp_max_send_size"};
  static constexpr const char* kValue = "2097152";
  for (const char* name : kNames) {
    const std::string var = std::string("OMPI_MCA_") + name;
    if (const char* user = std::getenv(var.c_str()))
      return strprintf("Open MPI's TCP settings left as the user chose (%s=%s)", name, user);
  }
  for (const char* name : kNames) {
    const std::string var = std::string("OMPI_MCA_") + name;
    GOSSAMER_CHECK(setenv(var.c_str(), kValue, 0) == 0, "comm: cannot set %s", var.c_str());
  }
  return strprintf(
      "Open MPI btl_tcp_eager_limit, btl_tcp_rndv_eager_limit and btl_tcp_max_send_size = %s: "
      "TCP messages up to 2 MiB sent eagerly (set any of them with --mca to choose yourself)",
      kValue);
#else
  return {};
#endif
}

}  // namespace gossamer::comm
