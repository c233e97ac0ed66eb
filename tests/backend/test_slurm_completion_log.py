"""Slurm: final states survive the job leaving slurmctld's memory.

Real stacks keep finished jobs for MinJobAge (300 s), longer than a test should wait, so the
fallback the driver uses afterwards, the jobcomp/filetxt completion log read with `sacct -c`,
is checked directly against the live queue's answer on every Slurm stack, fakes included.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.requires("submit", "status", "kill"), pytest.mark.for_backend("slurm")]


class _Reader:
    """Lets wait_for poll the completion log instead of the queue."""

    def __init__(self, read: Any) -> None:
        self.status = read


def test_completion_log_agrees_with_the_queue(backend: JobClient, stack: Stack) -> None:
    completion_log = getattr(backend, "completion_log", None)
    if completion_log is None:
        pytest.skip("the backend client is not the reference Slurm driver")
    ok, failed, victim = submitted(backend.submit([
        JobSpec(script="true\n"), JobSpec(script="exit 6\n"), JobSpec(script="sleep 300\n")]))
    wait_for(backend, [victim], until=frozenset({JobState.RUNNING}), timeout=stack.timeouts.job)
    backend.kill([victim])
    live = wait_for(backend, [ok, failed, victim], timeout=stack.timeouts.job)
    # jobcomp is written as each job ends; poll it like the queue.
    logged = wait_for(_Reader(completion_log), [ok, failed, victim], timeout=stack.timeouts.job)
    assert [s.state for s in logged] == [JobState.COMPLETED, JobState.FAILED,
                                         JobState.CANCELLED], logged
    assert [s.state for s in live] == [s.state for s in logged]
    assert logged[1].exit_code == 6 == live[1].exit_code
