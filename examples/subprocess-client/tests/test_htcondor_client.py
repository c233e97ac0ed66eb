"""The client's own tests on HTCondor: a spooled submission runs, its outputs come back with
condor_transfer_data; states and exit codes are the schedd's."""

from __future__ import annotations

import pytest
from subprocess_client import CondorJobs

pytestmark = pytest.mark.for_backend("htcondor")

SUBMIT = """executable = job.sh
arguments = {arguments}
transfer_input_files = input.txt
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
output = out.txt
error = err.txt
log = job.log
queue
"""


def _job(condor: CondorJobs, body: str, arguments: str = "") -> str:
    (condor.cwd / "job.sh").write_text("#!/bin/sh\n" + body)
    (condor.cwd / "job.sh").chmod(0o755)
    (condor.cwd / "input.txt").write_text("made on this machine\n")
    (condor.cwd / "job.sub").write_text(SUBMIT.format(arguments=arguments))
    return condor.submit("job.sub", spool=True)


def test_a_spooled_job_runs_and_its_outputs_come_back(condor: CondorJobs) -> None:
    job_id = _job(condor, 'echo "args $1 $2"; cat input.txt\n', "one two")
    done = condor.wait(job_id)
    assert (done.state, done.exit_code) == ("COMPLETED", 0), done
    condor.transfer(job_id)
    assert (condor.cwd / "out.txt").read_text() == "args one two\nmade on this machine\n"


def test_a_failing_job_says_its_exit_code(condor: CondorJobs) -> None:
    done = condor.wait(_job(condor, "exit 3\n"))
    assert (done.state, done.exit_code) == ("COMPLETED", 3), done


def test_a_removed_job_is_removed(condor: CondorJobs) -> None:
    job_id = _job(condor, "sleep 300\n")
    condor.remove(job_id)
    assert condor.wait(job_id).state == "REMOVED"


def test_an_unknown_job_is_unknown(condor: CondorJobs) -> None:
    assert condor.job("987654.0").state == "UNKNOWN"
