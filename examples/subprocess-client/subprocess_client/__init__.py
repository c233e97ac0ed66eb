"""A small batch client that only shells out to the scheduler's own commands, as many real
clients do (dask-jobqueue, submitit, Parsl's providers): Slurm through sbatch, squeue,
scontrol, sacct and scancel; HTCondor through condor_submit, condor_q, condor_history,
condor_rm and condor_transfer_data. It knows nothing of pytest-stacks: its tests hand it the
environment (PATH) and a working folder, as production hands it a login node's."""

from subprocess_client.errors import SchedulerError
from subprocess_client.htcondor import CondorJobs
from subprocess_client.slurm import SlurmJobs

__all__ = ["CondorJobs", "SchedulerError", "SlurmJobs"]
