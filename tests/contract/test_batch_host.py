"""What the batch host has: configurations a client must survive (issue 57).

``python.absent``: the host that runs the job has no ``python3`` (the Slurm images of this
repository install none; the HTCondor ones do, and do not declare it). A client that ships a
Python helper to run beside the job fails there; this shows the way it fails, in the
scheduler's own answer (the job's exit code, read back through the driver's status, and the
shell's words in the job's stderr), so a test of the client's own can expect it. Where python3
exists the job would exit 0 and print its value: the test cannot pass there.
"""

from __future__ import annotations

import uuid

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack


@pytest.mark.requires("submit", "status", "execution", "outputs", "python.absent")
def test_a_job_that_runs_python3_fails_with_command_not_found(
        backend: JobClient, stack: Stack, tmp_path) -> None:
    token = uuid.uuid4().hex
    script = ("exec 2> err.txt\n"
              f"python3 -c 'import sys; print(\"{token}\")' > out.txt\n")
    [handle] = submitted(backend.submit([JobSpec(script=script, name="python-helper",
                                                 outputs=("err.txt", "out.txt"))]))
    [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
    assert (status.state, status.exit_code) == (JobState.FAILED, 127), status
    [fetched] = backend.fetch_outputs([handle], tmp_path)
    assert fetched.ok, fetched.error
    assert fetched.files["out.txt"].read_text() == ""
    err = fetched.files["err.txt"].read_text()
    assert "python3: command not found" in err, err
