// detect_launch_env(): rank, world size, node-local rank and ranks per node from the variables
// launchers set before any MPI call: Open MPI (OMPI_COMM_WORLD_*), MPICH/Intel MPI (PMI_*),
// Slurm's srun (SLURM_*) and bare PMIx (PMIX_RANK, whose world size is unknown before MPI
// starts: size 0).
// Invariant: a malformed or inconsistent value is an error naming the variable, never a guess.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "comm/launch_env.h"
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

// The step's tasks on this node under srun: SLURM_STEP_TASKS_PER_NODE lists them per node of
// the step in node order, runs compressed ("2(x3),1" = 2, 2, 2, 1), and SLURM_NODEID is this
// node's index in that list. 0 when the variable is unset.
int slurm_step_tasks_on_this_node() {
  const char* list = env("SLURM_STEP_TASKS_PER_NODE");
  if (!list) return 0;
  const int node = env_int("SLURM_NODEID", 0);
  const char* p = list;
  auto expect = [&](bool ok) {
    GOSSAMER_CHECK(ok,
                   "environment variable SLURM_STEP_TASKS_PER_NODE: expected a list like "
                   "'2(x3),1', found '%s'",
                   list);
  };
  auto number = [&] {
    expect(std::isdigit(static_cast<unsigned char>(*p)));
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    p = end;
    expect(v > 0 && v < (1L << 30));
    return v;
  };
  long nodes = 0;
  int tasks = 0;
  for (;; ++p) {  // every entry is checked, also those past this node's
    const long count = number();
    long repeat = 1;
    if (*p == '(') {
      expect(p[1] == 'x');
      p += 2;
      repeat = number();
      expect(*p++ == ')');
    }
    if (node >= nodes && node < nodes + repeat) tasks = int(count);
    nodes += repeat;
    if (*p == '\0') break;
    expect(*p == ',');
  }
  GOSSAMER_CHECK(node < nodes,
                 "environment variables SLURM_NODEID=%d and SLURM_STEP_TASKS_PER_NODE=%s: the "
                 "list has only %ld node(s)",
                 node, list, nodes);
  return tasks;
}

// Ranks on this node: what the launcher exported, the first found of Open MPI's, MPICH's,
// srun's step layout and sbatch's --ntasks-per-node; 0 when none says.
int detect_local_size() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const int n = env_int(name, 0); n > 0) return n;
  if (const int n = slurm_step_tasks_on_this_node(); n > 0) return n;
  return env_int("SLURM_NTASKS_PER_NODE", 0);
}

LaunchEnv detect_rank() {
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

}  // namespace

LaunchEnv detect_launch_env() {
  LaunchEnv e = detect_rank();
  e.local_size = detect_local_size();
  return e;
}

int ranks_on_this_node(int world) {
  const int local = detect_launch_env().local_size;
  return local > 0 ? std::min(local, world) : world;  // unknown: every rank shares this machine
}

}  // namespace gossamer::comm
