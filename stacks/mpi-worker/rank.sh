#!/bin/sh
# Each MPI rank prints its rank and its host: the `mpi` contract test counts distinct hosts.
echo "rank=${OMPI_COMM_WORLD_RANK:-?} size=${OMPI_COMM_WORLD_SIZE:-?} host=$(hostname)"
