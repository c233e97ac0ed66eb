#!/bin/bash
# The image's entrypoint, as the MPI Operator's own base images have one: the launcher waits
# until every host of the operator's hostfile resolves, then runs its command. The operator
# creates the launcher once the workers are Ready (launcherCreationPolicy WaitForWorkersReady),
# but their DNS records follow the Ready state, not with it: under load MPICH's Hydra found a
# worker's name not yet resolvable and failed at once ("Launch proxy failed"). Open MPI does
# the same with fewer words. Every other role (the workers' sshd) runs its command at once.
#
# The wait is bounded (MPI_ENTRYPOINT_WAIT_S, 60 s): a name that never resolves is said on
# stderr and the command runs anyway, so the MPI's own error is what the job reports.
set -u
if [ "${K_MPI_JOB_ROLE:-}" = "launcher" ]; then
    hostfile="${HYDRA_HOST_FILE:-${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}}"
    deadline=$((SECONDS + ${MPI_ENTRYPOINT_WAIT_S:-60}))
    if [ -r "$hostfile" ]; then
        # MPICH's lines are "host:slots", Open MPI's "host slots=N".
        while IFS=' :' read -r host _; do
            [ -n "$host" ] || continue
            until getent hosts "$host" >/dev/null; do
                if [ "$SECONDS" -ge "$deadline" ]; then
                    echo "mpi-entrypoint: $host does not resolve; running the command anyway" >&2
                    break
                fi
                sleep 0.5
            done
        done < "$hostfile"
    fi
fi
exec "$@"
