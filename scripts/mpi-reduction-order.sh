#!/usr/bin/env bash
# Which summation order this machine's MPI uses for float sums (issue 41's question: can an
# in-process communicator be bit-identical to `mpirun -np N`?). Compiles a small probe with mpicc
# and runs it at 2, 3 and 4 ranks: for MPI_Allreduce and MPI_Reduce_scatter (MPI_SUM, float,
# 16 to 4M elements), the number of elements that differ from the rank-order fold
# ((x0 + x1) + x2) + ..., and at 4 ranks from the pairwise order (x0 + x1) + (x2 + x3).
# Usage: scripts/mpi-reduction-order.sh      (Open MPI's flags as in tests/e2e/lib.sh)
set -euo pipefail
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/probe.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static float val(int r, size_t i) {
  unsigned x = (unsigned)(i * 2654435761u + r * 40503u + 12345u);
  x ^= x >> 13;
  x *= 0x5bd1e995;
  x ^= x >> 15;
  return (float)((x & 0xffffff) / 16777216.0 - 0.5) * (1.0f + r * 0.37f);
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t sizes[] = {16, 1000, 65536, 1 << 20, 1 << 22};
  for (int s = 0; s < 5; ++s) {
    size_t m = sizes[s];
    float* x = malloc(m * 4);
    float* y = malloc(m * 4);
    for (size_t i = 0; i < m; ++i) x[i] = val(r, i);
    memcpy(y, x, m * 4);
    MPI_Allreduce(MPI_IN_PLACE, y, (int)m, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    size_t fwd = 0, rev = 0, pair = 0;
    for (size_t i = 0; i < m; ++i) {
      float a = val(0, i);
      for (int k = 1; k < n; ++k) a += val(k, i);
      float b = val(n - 1, i);
      for (int k = n - 2; k >= 0; --k) b += val(k, i);
      fwd += a != y[i];
      rev += b != y[i];
      if (n == 4) {
        float p = (val(0, i) + val(1, i)) + (val(2, i) + val(3, i));
        pair += p != y[i];
      }
    }
    // reduce_scatter with equal counts
    int* counts = malloc(n * sizeof(int));
    for (int k = 0; k < n; ++k) counts[k] = (int)(m / n);
    size_t c = m / n;
    float* z = malloc(c * 4 + 4);
    memcpy(y, x, m * 4);
    MPI_Reduce_scatter(y, z, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    size_t rsf = 0;
    for (size_t j = 0; j < c; ++j) {
      size_t i = r * c + j;
      float a = val(0, i);
      for (int k = 1; k < n; ++k) a += val(k, i);
      rsf += a != z[j];
    }
    size_t tot_f, tot_r, tot_rs;
    MPI_Reduce(&fwd, &tot_f, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rev, &tot_r, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rsf, &tot_rs, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r == 0 && n == 4) printf("  pairwise (x0+x1)+(x2+x3) mismatches on rank 0: %zu\n", pair);
    if (r == 0)
      printf(
          "N=%d m=%zu: allreduce != rank-order fold at %zu of %zu (reverse fold: %zu); "
          "reduce_scatter != fold at %zu of %zu\n",
          n, m, tot_f, m * n, tot_r, tot_rs, c * n);
    free(x);
    free(y);
    free(z);
    free(counts);
  }
  MPI_Finalize();
}
C
mpicc -O2 -o "$dir/probe" "$dir/probe.c"
for np in 2 3 4; do
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$np" --oversubscribe \
    --bind-to none --mca btl self,vader "$dir/probe"
done
