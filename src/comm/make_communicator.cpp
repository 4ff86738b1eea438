// make_communicator(): resolves parallel.backend ("auto" | "single" | "mpi" | "nccl") to a
// backend and logs the choice and the reason on rank 0. auto = nccl when built with CUDA and a
// GPU is visible, else mpi when a launcher started this process with (possibly) more ranks,
// else single. Invariant: an unknown or unavailable backend is an error naming parallel.backend.
#include <cstdlib>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "comm/mpi_communicator.h"
#include "comm/single_communicator.h"
#include "core/error.h"
#include "core/log.h"
#ifdef GOSSAMER_HAVE_NCCL
#include "comm/nccl_communicator.h"
#include "comm/nccl_device.h"
#endif

namespace gossamer::comm {

namespace {

std::string describe(const LaunchEnv& env) {
  if (env.size == 0) return strprintf("launched by %s (world size from MPI)", env.source);
  return strprintf("launched by %s as rank %d of %d", env.source, env.rank, env.size);
}

std::unique_ptr<Communicator> make_mpi(const LaunchEnv& env) {
#ifdef OPEN_MPI
  // srun without a PMIx server (--mpi=none, or pmi2 with an Open MPI built without PMI-2, as
  // Debian's): MPI_Init aborts blaming the build. Say the likely fix first.
  if (env.size > 1 && std::getenv("SLURM_STEP_NUM_TASKS") && !std::getenv("PMIX_RANK") &&
      !std::getenv("OMPI_COMM_WORLD_RANK"))
    log_warn(
        "comm: srun started this process without PMIx (SLURM_MPI_TYPE=%s); if MPI_Init fails, "
        "launch with `srun --mpi=pmix` (scripts/srun.sh does) or set MpiDefault=pmix",
        std::getenv("SLURM_MPI_TYPE") ? std::getenv("SLURM_MPI_TYPE") : "none");
#endif
  auto comm = std::make_unique<MpiCommunicator>();
  if (env.size > 0 && comm->size() != env.size)
    log_warn(
        "comm: %s, but MPI reports rank %d of %d; using MPI's view (a launcher variable "
        "inherited from a batch script?)",
        describe(env).c_str(), comm->rank(), comm->size());
  return comm;
}

std::unique_ptr<Communicator> make_nccl() {
#ifdef GOSSAMER_HAVE_NCCL
  return make_nccl_communicator();
#else
  fail(
      "parallel.backend = \"nccl\": this build has no CUDA/NCCL (configure with "
      "-DGOSSAMER_CUDA=ON)");
#endif
}

int visible_gpus() {
#ifdef GOSSAMER_HAVE_NCCL
  return cuda_device_count();
#else
  return 0;
#endif
}

void log_choice(const Communicator& comm, const std::string& why) {
  if (comm.rank() == 0)
    log_info("comm: backend %s, %d rank(s) (%s)", comm.backend(), comm.size(), why.c_str());
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(const std::string& backend) {
  const LaunchEnv env = detect_launch_env();
  const bool launched = env.size != 1;  // size 0: launched, size known only to MPI
  if (backend == "single") {
    GOSSAMER_CHECK(!launched,
                   "parallel.backend = \"single\": this process was %s; use \"mpi\", \"nccl\" "
                   "or \"auto\" under a launcher",
                   describe(env).c_str());
    auto comm = make_single_communicator();
    log_choice(*comm, "parallel.backend = \"single\"");
    return comm;
  }
  if (backend == "mpi") {
    auto comm = make_mpi(env);
    log_choice(*comm, "parallel.backend = \"mpi\"");
    return comm;
  }
  if (backend == "nccl") {
    const int gpus = visible_gpus();
#ifdef GOSSAMER_HAVE_NCCL
    GOSSAMER_CHECK(gpus > 0,
                   "parallel.backend = \"nccl\": no GPU is visible (cudaGetDeviceCount found "
                   "none); use \"mpi\" or \"auto\"");
#endif
    auto comm = make_nccl();
    log_choice(*comm, strprintf("parallel.backend = \"nccl\", %d GPU(s) visible", gpus));
    return comm;
  }
  GOSSAMER_CHECK(backend == "auto",
                 "parallel.backend: expected \"auto\", \"single\", \"mpi\" or \"nccl\", found "
                 "\"%s\"",
                 backend.c_str());
  if (const int gpus = visible_gpus(); gpus > 0) {
    auto comm = make_nccl();
    log_choice(*comm, strprintf("auto: built with CUDA and %d GPU(s) visible", gpus));
    return comm;
  }
#ifdef GOSSAMER_HAVE_NCCL
  const char* no_gpu = "no GPU visible";
#else
  const char* no_gpu = "built without CUDA";
#endif
  if (launched) {
    auto comm = make_mpi(env);
    log_choice(*comm, strprintf("auto: %s, %s", no_gpu, describe(env).c_str()));
    return comm;
  }
  auto comm = make_single_communicator();
  if (env.source == std::string("none"))
    log_choice(*comm, strprintf("auto: %s, no launcher variables (OMPI_COMM_WORLD_*, PMI_*, "
                                "SLURM_*, PMIX_RANK) found",
                                no_gpu));
  else  // e.g. a one-task srun
    log_choice(*comm, strprintf("auto: %s, %s", no_gpu, describe(env).c_str()));
  return comm;
}

}  // namespace gossamer::comm
