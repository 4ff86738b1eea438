// make_communicator(): resolves parallel.backend ("auto" | "single" | "mpi" | "nccl") for the
// buffers' location to a backend (choose_backend, a pure function) and logs the choice and the
// reason on rank 0. Invariant: an unknown or unavailable backend is an error naming
// parallel.backend; host buffers never reach NCCL.
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
#include "kernels/cuda/cuda_context.cuh"
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
  if (comm->rank() == 0 && !comm->transport_defaults().empty())
    log_info("comm: mpi transport: %s", comm->transport_defaults().c_str());
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
  return kernels::cuda::visible_gpus();
#else
  return 0;
#endif
}

void log_choice(const Communicator& comm, const std::string& why) {
  if (comm.rank() == 0)
    log_info("comm: backend %s, %d rank(s) (%s)", comm.backend(), comm.size(), why.c_str());
}

}  // namespace

BackendChoice choose_backend(Backend requested, BufferLocation where, const LaunchEnv& env,
                             int gpus, bool built_with_nccl) {
  const bool launched = env.size != 1;  // size 0: launched, size known only to MPI
  const bool host = where == BufferLocation::BUFFER_LOCATION_HOST;
  switch (requested) {
    case Backend::BACKEND_SINGLE:
      GOSSAMER_CHECK(!launched,
                     "parallel.backend = \"single\": this process was %s; use %s under a "
                     "launcher",
                     describe(env).c_str(),
                     host ? "\"mpi\", \"nccl\" or \"auto\"" : "\"nccl\" or \"auto\"");
      return {Backend::BACKEND_SINGLE, "parallel.backend = \"single\""};
    case Backend::BACKEND_MPI:
      GOSSAMER_CHECK(host,
                     "parallel.backend = \"mpi\": this run's buffers live in device memory "
                     "(kernels.device = cuda), which this build's MPI cannot move (it is not "
                     "CUDA-aware); use \"nccl\" or \"auto\"");
      return {Backend::BACKEND_MPI, "parallel.backend = \"mpi\""};
    case Backend::BACKEND_NCCL:
      GOSSAMER_CHECK(!host,
                     "parallel.backend = \"nccl\": NCCL moves device memory, and this run's "
                     "buffers live in host memory (the CPU backend); use \"mpi\" or \"auto\"");
      GOSSAMER_CHECK(built_with_nccl,
                     "parallel.backend = \"nccl\": this build has no CUDA/NCCL (configure with "
                     "-DGOSSAMER_CUDA=ON)");
      GOSSAMER_CHECK(gpus > 0,
                     "parallel.backend = \"nccl\": no GPU is visible (cudaGetDeviceCount found "
                     "none); use \"mpi\" or \"auto\"");
      return {Backend::BACKEND_NCCL,
              strprintf("parallel.backend = \"nccl\", %d GPU(s) visible", gpus)};
    case Backend::BACKEND_AUTO:
      break;
  }
  if (!host) {
    GOSSAMER_CHECK(built_with_nccl && gpus > 0,
                   "parallel.backend = \"auto\": device buffers need NCCL and a visible GPU "
                   "(%s)",
                   built_with_nccl ? "no GPU is visible" : "this build has no CUDA/NCCL");
    return {Backend::BACKEND_NCCL, strprintf("auto: device buffers, %d GPU(s) visible", gpus)};
  }
  const std::string buffers = gpus > 0 ? "host buffers (never nccl)" : "host buffers";
  if (launched)
    return {Backend::BACKEND_MPI,
            strprintf("auto: %s, %s", buffers.c_str(), describe(env).c_str())};
  if (env.source == std::string("none"))
    return {Backend::BACKEND_SINGLE,
            strprintf("auto: %s, no launcher variables (OMPI_COMM_WORLD_*, PMI_*, SLURM_*, "
                      "PMIX_RANK) found",
                      buffers.c_str())};
  return {Backend::BACKEND_SINGLE,  // e.g. a one-task srun
          strprintf("auto: %s, %s", buffers.c_str(), describe(env).c_str())};
}

std::unique_ptr<Communicator> make_communicator(Backend backend, BufferLocation where) {
  const LaunchEnv env = detect_launch_env();
#ifdef GOSSAMER_HAVE_NCCL
  constexpr bool kBuiltWithNccl = true;
#else
  constexpr bool kBuiltWithNccl = false;
#endif
  const BackendChoice choice = choose_backend(backend, where, env, visible_gpus(), kBuiltWithNccl);
  std::unique_ptr<Communicator> comm;
  switch (choice.backend) {
    case Backend::BACKEND_SINGLE:
      comm = make_single_communicator();
      break;
    case Backend::BACKEND_MPI:
      comm = make_mpi(env);
      break;
    default:
      comm = make_nccl();
      break;
  }
  log_choice(*comm, choice.why);
  return comm;
}

std::unique_ptr<Communicator> make_communicator(std::string_view backend, BufferLocation where) {
  const auto b = enum_from_name<Backend>(backend);
  GOSSAMER_CHECK(b.has_value(), "parallel.backend: expected %s, found \"%s\"",
                 enum_choices<Backend>().c_str(), std::string(backend).c_str());
  return make_communicator(*b, where);
}

}  // namespace gossamer::comm
