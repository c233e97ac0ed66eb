"""Slurm with accounting storage (capability ``accounting``): plain ``sacct`` answers from
slurmdbd, as on a site that keeps accounting (issue 55).

The jobs are submitted and followed with the reference driver (the queue's view); then the
stack's own ``sacct``, reached through ``stack_commands`` as the login user, must report the
same final states with the exit codes the scripts gave: what slurmdbd recorded, not what the
driver inferred. A stack without the capability is skipped by it (its ``sacct`` says
accounting storage is disabled, which the corpus recordings keep).
"""

from __future__ import annotations

import subprocess
import time

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.requires("submit", "status", "accounting"),
              pytest.mark.for_backend("slurm")]


def _sacct(commands, job_ids: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sacct", "-j", ",".join(job_ids), "-X", "-n", "-P", "-o",
                           "JobID,State,ExitCode"], env=commands.env, cwd=commands.shared,
                          capture_output=True, text=True, timeout=60, check=False)


def test_sacct_reports_finished_jobs_from_accounting_storage(
        backend: JobClient, stack: Stack, stack_commands) -> None:
    ok, failed = submitted(backend.submit([JobSpec(script="true\n"),
                                           JobSpec(script="exit 3\n")]))
    final = wait_for(backend, [ok, failed], timeout=stack.timeouts.job)
    assert [s.state for s in final] == [JobState.COMPLETED, JobState.FAILED], final
    ids = [ok.job_id, failed.job_id]
    expected = [f"{ok.job_id}|COMPLETED|0:0", f"{failed.job_id}|FAILED|3:0"]
    # slurmctld sends a job's end to slurmdbd asynchronously: poll, bounded.
    deadline = time.monotonic() + 30
    while True:
        answer = _sacct(stack_commands, ids)
        assert answer.returncode == 0, answer.stderr
        if answer.stdout.splitlines() == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert answer.stdout.splitlines() == expected, answer.stdout


def test_sacct_lists_the_batch_step_and_an_unknown_job_as_nothing(
        backend: JobClient, stack: Stack, stack_commands) -> None:
    (job,) = submitted(backend.submit([JobSpec(script="true\n")]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    deadline = time.monotonic() + 30
    while True:
        steps = subprocess.run(["sacct", "-j", job.job_id, "-n", "-P", "-o", "JobID,State"],
                               env=stack_commands.env, capture_output=True, text=True,
                               timeout=60, check=False)
        if steps.stdout.count("COMPLETED") == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert steps.stdout.splitlines() == [f"{job.job_id}|COMPLETED",
                                         f"{job.job_id}.batch|COMPLETED"], steps
    unknown = _sacct(stack_commands, ["987654"])
    assert (unknown.returncode, unknown.stdout) == (0, ""), unknown
