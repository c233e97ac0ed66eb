"""The client's own tests on Slurm: what it submits runs, as the login user, in the folder it
was submitted from; the states and exit codes it reads are Slurm's."""

from __future__ import annotations

import pytest
from subprocess_client import SchedulerError, SlurmJobs

pytestmark = pytest.mark.for_backend("slurm")

SCRIPT = """#!/bin/sh
#SBATCH --job-name=example
echo "job $SLURM_JOB_ID in $(basename "$PWD")"
cat input.txt > result.txt
"""


def test_a_script_in_the_working_folder_runs_there(slurm: SlurmJobs) -> None:
    (slurm.cwd / "job.sh").write_text(SCRIPT)
    (slurm.cwd / "input.txt").write_text("made on this machine\n")
    job_id = slurm.submit("job.sh")
    done = slurm.wait(job_id)
    assert (done.state, done.exit_code) == ("COMPLETED", 0), done
    # Written by the job on the node, read here: sbatch's default output in the submit folder.
    output = (slurm.cwd / f"slurm-{job_id}.out").read_text()
    assert output == f"job {job_id} in {slurm.cwd.name}\n"
    assert (slurm.cwd / "result.txt").read_text() == "made on this machine\n"


def test_a_failing_job_says_its_exit_code(slurm: SlurmJobs) -> None:
    done = slurm.wait(slurm.submit_command("exit 3"))
    assert (done.state, done.exit_code) == ("FAILED", 3), done


def test_a_cancelled_job_is_cancelled(slurm: SlurmJobs) -> None:
    job_id = slurm.submit_command("sleep 300", "--job-name=to-cancel")
    slurm.wait_for_state(job_id, {"PENDING", "RUNNING"})
    slurm.cancel(job_id)
    assert slurm.wait(job_id).state == "CANCELLED"


def test_an_unknown_job_is_unknown(slurm: SlurmJobs) -> None:
    assert slurm.job("987654").state == "UNKNOWN"


def test_a_refused_submission_is_an_error_with_slurms_words(slurm: SlurmJobs) -> None:
    with pytest.raises(SchedulerError) as refused:
        slurm.submit("no-such-script.sh")
    assert refused.value.code != 0
    assert "no-such-script.sh" in refused.value.stderr
