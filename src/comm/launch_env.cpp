// detect_launch_env(): rank, world size and node-local rank from the variables launchers set
// before any MPI call: Open MPI (OMPI_COMM_WORLD_*), MPICH/Intel MPI (PMI_*), Slurm's srun
// (SLURM_*) and bare PMIx (PMIX_RANK, whose world size is unknown before MPI starts: size 0).
// Invariant: a malformed or inconsistent value is an error naming the variable, never a guess.
#include <cstdlib>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"

namespace gossamer::comm {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int parse_env_int(const char* name, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  GOSSAMER_CHECK(end != value && *end == '\0' && v >= 0 && v < (1L << 30),
                 "environment variable %s: expected a non-negative integer, found '%s'", name,
                 value);
  return int(v);
}

int env_int(const char* name, int fallback) {
  const char* v = env(name);
  return v ? parse_env_int(name, v) : fallback;
}

LaunchEnv checked(LaunchEnv e, const char* rank_var, const char* size_var, const char* local_var) {
  GOSSAMER_CHECK(e.size == 0 || e.rank < e.size,
                 "environment variables %s=%d and %s=%d: the rank must be below the size", rank_var,
                 e.rank, size_var, e.size);
  GOSSAMER_CHECK(e.size == 0 || e.local_rank < e.size,
                 "environment variables %s=%d and %s=%d: the local rank must be below the size",
                 local_var, e.local_rank, size_var, e.size);
  return e;
}

}  // namespace

LaunchEnv detect_launch_env() {
  LaunchEnv e;
  if (const char* rank = env("OMPI_COMM_WORLD_RANK")) {
    e.rank = parse_env_int("OMPI_COMM_WORLD_RANK", rank);
    e.size = env_int("OMPI_COMM_WORLD_SIZE", 0);
    GOSSAMER_CHECK(e.size > 0,
                   "environment variable OMPI_COMM_WORLD_SIZE: missing or 0 while "
                   "OMPI_COMM_WORLD_RANK is set");
    e.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    e.source = "OMPI_COMM_WORLD_*";
    return checked(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK");
  }
  if (const char* rank = env("PMI_RANK")) {
    e.rank = parse_env_int("PMI_RANK", rank);
    e.size = env_int("PMI_SIZE", 0);
    GOSSAMER_CHECK(e.size > 0, "environment variable PMI_SIZE: missing or 0 while PMI_RANK is set");
    e.local_rank = env_int("MPI_LOCALRANKID", 0);
    e.source = "PMI_RANK/PMI_SIZE";
    return checked(e, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID");
  }
  if (const char* rank = env("SLURM_PROCID")) {
    // srun sets SLURM_STEP_NUM_TASKS for its step; SLURM_NTASKS is the allocation's.
    const char* size_var = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    e.rank = parse_env_int("SLURM_PROCID", rank);
    e.size = env_int(size_var, 0);
    GOSSAMER_CHECK(e.size > 0, "environment variable %s: missing or 0 while SLURM_PROCID is set",
                   size_var);
    e.local_rank = env_int("SLURM_LOCALID", 0);
    e.source = "SLURM_PROCID/SLURM_NTASKS";
    return checked(e, "SLURM_PROCID", size_var, "SLURM_LOCALID");
  }
  if (const char* rank = env("PMIX_RANK")) {
    e.rank = parse_env_int("PMIX_RANK", rank);
    e.size = 0;  // PMIx exports no size variable: MPI will tell
    e.local_rank = 0;
    e.source = "PMIX_RANK";
    return e;
  }
  return e;
}

}  // namespace gossamer::comm
