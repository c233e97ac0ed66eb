/* Tiny MPI program of the slurm-cluster and mpi-worker images (compiled at build time to
 * /usr/local/bin/mpi-ranks, also installed as pytest-stacks-rank: the name the
 * contract suite's mpi test runs on every backend). Every rank prints
 * "rank=R size=N host=HOST" (the contract's format) and "rank R of N on HOST"; rank 0
 * then prints the sum of all ranks from an MPI_Allreduce, which proves that
 * the ranks really talked to each other across the nodes (not just started).
 * Exit status 1 if the sum is wrong. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len, sum = -1;
    char host[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("rank=%d size=%d host=%s\n", rank, size, host);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("allreduce: sum of ranks %d (expected %d)\n", sum, size * (size - 1) / 2);
    }
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
