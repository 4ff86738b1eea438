// The launch environment as seen before any MPI call: rank, world size, node-local rank and
// ranks per node from the variables launchers set (Open MPI, MPICH/Intel MPI PMI, Slurm's srun,
// bare PMIx). Invariant: a malformed or inconsistent value is an error naming the variable,
// never a guess.
#pragma once

namespace gossamer::comm {

struct LaunchEnv {
  // size 0: launched, but the world size is known to MPI only (bare PMIx).
  int rank = 0, size = 1, local_rank = 0;
  int local_size = 0;           // ranks on this node; 0 = no variable says
  const char* source = "none";  // which variables were found
};
LaunchEnv detect_launch_env();

// Processes of this job on this machine: the launcher's ranks per node, never more than the
// world (a variable inherited from a batch script); the whole world when no variable says.
int ranks_on_this_node(int world);

}  // namespace gossamer::comm
