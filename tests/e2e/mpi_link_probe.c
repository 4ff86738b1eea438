/* MPI link probe for tests/e2e/test_emulate_network.sh and docs/NETWORK.md (built there with
 * mpicc, not by CMake): each rank's egress throughput to its ring neighbour, one link at a time,
 * the link's 1-byte latency, and every rank's network namespace. Usage: mpi_link_probe
 * [MBYTES=4] [REPS=1]. Prints on rank 0: "rank R netns net:[INODE]" per rank and per link
 * "link S->D bytes=B seconds=T mbit_per_s=M half_rtt_us=L" (L: half the mean round trip of 100
 * ping-pongs). Invariant: a timed transfer starts after a barrier and a warm-up on the same pair
 * (TCP connections open lazily) and ends with the receiver's 1-byte acknowledgement, so it
 * times the whole message arriving, not just leaving. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NETNS_LEN 64

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double mbytes = argc > 1 ? atof(argv[1]) : 4.0;
  int reps = argc > 2 ? atoi(argv[2]) : 1;
  if (size < 2 || mbytes <= 0 || reps < 1) {
    if (rank == 0) fprintf(stderr, "mpi_link_probe: needs >= 2 ranks, MBYTES > 0, REPS >= 1\n");
    MPI_Finalize();
    return 2;
  }
  size_t bytes = (size_t)(mbytes * 1024 * 1024);

  char netns[NETNS_LEN] = {0};
  ssize_t n = readlink("/proc/self/ns/net", netns, NETNS_LEN - 1);
  if (n < 0) strcpy(netns, "unknown");
  char* all = rank == 0 ? malloc((size_t)size * NETNS_LEN) : NULL;
  MPI_Gather(netns, NETNS_LEN, MPI_CHAR, all, NETNS_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) printf("rank %d netns %s\n", r, all + (size_t)r * NETNS_LEN);
    fflush(stdout);
    free(all);
  }

  char* buf = malloc(bytes);
  memset(buf, rank + 1, bytes);
  char ack = 0;
  for (int src = 0; src < size; ++src) {
    int dst = (src + 1) % size;
    /* Warm-up: open the TCP connections both ways and move 64 KiB (past the eager limit). */
    size_t warm = bytes < 65536 ? bytes : 65536;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == src) {
      MPI_Send(buf, (int)warm, MPI_CHAR, dst, 0, MPI_COMM_WORLD);
      MPI_Recv(&ack, 1, MPI_CHAR, dst, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == dst) {
      MPI_Recv(buf, (int)warm, MPI_CHAR, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&ack, 1, MPI_CHAR, src, 1, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; ++i) {
      if (rank == src) {
        MPI_Send(buf, (int)bytes, MPI_CHAR, dst, 2, MPI_COMM_WORLD);
      } else if (rank == dst) {
        MPI_Recv(buf, (int)bytes, MPI_CHAR, src, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
    if (rank == src) MPI_Recv(&ack, 1, MPI_CHAR, dst, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == dst) MPI_Send(&ack, 1, MPI_CHAR, src, 3, MPI_COMM_WORLD);
    double times[2] = {MPI_Wtime() - t0, 0}; /* seconds, half round trip */
    const int pings = 100;
    double p0 = MPI_Wtime();
    for (int i = 0; i < pings; ++i) {
      if (rank == src) {
        MPI_Send(&ack, 1, MPI_CHAR, dst, 5, MPI_COMM_WORLD);
        MPI_Recv(&ack, 1, MPI_CHAR, dst, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == dst) {
        MPI_Recv(&ack, 1, MPI_CHAR, src, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&ack, 1, MPI_CHAR, src, 6, MPI_COMM_WORLD);
      }
    }
    times[1] = (MPI_Wtime() - p0) / pings / 2;
    /* The sender's times are the measurement; it reports them to rank 0. */
    if (rank == src && src != 0) MPI_Send(times, 2, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
    if (rank == 0 && src != 0)
      MPI_Recv(times, 2, MPI_DOUBLE, src, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
      double total = (double)bytes * reps;
      printf("link %d->%d bytes=%.0f seconds=%.4f mbit_per_s=%.2f half_rtt_us=%.1f\n", src, dst,
             total, times[0], total * 8 / times[0] / 1e6, times[1] * 1e6);
      fflush(stdout);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
