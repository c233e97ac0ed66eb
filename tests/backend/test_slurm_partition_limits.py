"""Partitions with limits (configuration ``partition-limits``, capability
``limits.partition``): a job over a partition's limit ends in the state the pinned Slurm gives
it, read back from Slurm (issue 57).

Every test first reads the limit it judges against from ``scontrol show partition`` (or the
node's memory from ``scontrol show node``), through ``stack_commands`` as the login user, so
it cannot pass on a stack where that configuration is not in force; and each puts a job
within the limit beside the one over it, so a partition that runs nothing cannot pass either.
Jobs are submitted with the reference driver (``backend_options["partition"]`` and
``["memory_mb"]``) and their reasons read back both through it and from ``scontrol show job``.

What 24.11 answers here (stacks/slurm/partitions-limits.conf, ``EnforcePartLimits=NO``): a
job over ``MaxTime`` or ``MaxMemPerNode`` is accepted and pends with the limit as its reason,
forever (a client that waits for it to start waits until its own timeout); a job over every
node's ``RealMemory`` is refused at submit.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from pytest_stacks.contract import JobClient, JobHandle, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.requires("submit", "status", "kill", "limits.partition"),
              pytest.mark.for_backend("slurm")]

#: How long slurmctld may take to give a pending job its reason (its scheduler's next pass).
REASON_WITHIN = 30.0


def _shown(commands, *what: str) -> dict[str, str]:
    """``scontrol show WHAT -o`` as key -> value (one record)."""
    answer = subprocess.run(["scontrol", "show", *what, "-o"], env=commands.env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert answer.returncode == 0, answer.stderr
    return dict(word.split("=", 1) for word in answer.stdout.split() if "=" in word)


def _pending_for(backend: JobClient, commands, handle: JobHandle, reason: str
                 ) -> dict[str, str]:
    """Waits (bounded) until Slurm gives the job ``reason``; returns ``scontrol show job``."""
    deadline = time.monotonic() + REASON_WITHIN
    while True:
        [status] = backend.status([handle])
        if status.reason == reason or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert (status.state, status.native_state, status.reason) == (
        JobState.PENDING, "PENDING", reason), status
    job = _shown(commands, "job", handle.job_id)
    assert (job["JobState"], job["Reason"]) == ("PENDING", reason), job
    return job


def test_the_partitions_limits_are_in_force(stack_commands) -> None:
    short, small = _shown(stack_commands, "partition", "short"), _shown(
        stack_commands, "partition", "small")
    assert (short["MaxTime"], short["State"]) == ("00:01:00", "UP"), short
    assert (small["MaxMemPerNode"], small["State"]) == ("256", "UP"), small
    default = _shown(stack_commands, "partition", "debug")
    assert (default["Default"], default["MaxTime"]) == ("YES", "UNLIMITED"), default


def test_a_job_over_the_time_limit_pends_with_partition_time_limit(
        backend: JobClient, stack: Stack, stack_commands) -> None:
    assert _shown(stack_commands, "partition", "short")["MaxTime"] == "00:01:00"
    short = {"partition": "short"}
    over, within = submitted(backend.submit([
        JobSpec(script="true\n", name="over-time", walltime_s=120, backend_options=short),
        JobSpec(script="true\n", name="within-time", walltime_s=60, backend_options=short)]))
    [done] = wait_for(backend, [within], timeout=stack.timeouts.job)
    assert done.state is JobState.COMPLETED, done
    job = _pending_for(backend, stack_commands, over, "PartitionTimeLimit")
    assert (job["Partition"], job["TimeLimit"]) == ("short", "00:02:00"), job
    [killed] = backend.kill([over])
    assert killed.ok, killed
    [status] = wait_for(backend, [over], timeout=stack.timeouts.job)
    assert status.state is JobState.CANCELLED, status


def test_a_job_over_the_partitions_memory_limit_pends_with_its_reason(
        backend: JobClient, stack: Stack, stack_commands) -> None:
    assert _shown(stack_commands, "partition", "small")["MaxMemPerNode"] == "256"
    over, within = submitted(backend.submit([
        JobSpec(script="true\n", name="over-memory",
                backend_options={"partition": "small", "memory_mb": 512}),
        JobSpec(script="true\n", name="within-memory",
                backend_options={"partition": "small", "memory_mb": 128})]))
    [done] = wait_for(backend, [within], timeout=stack.timeouts.job)
    assert done.state is JobState.COMPLETED, done
    job = _pending_for(backend, stack_commands, over, "MaxMemPerLimit")
    assert (job["Partition"], job["MinMemoryNode"]) == ("small", "512M"), job
    [killed] = backend.kill([over])
    assert killed.ok, killed


def test_a_job_over_every_nodes_memory_is_refused_at_submit(
        backend: JobClient, stack: Stack, stack_commands) -> None:
    node = _shown(stack_commands, "node", "localhost")
    assert node["RealMemory"] == "1024", node
    over, within = backend.submit([JobSpec(script="true\n", backend_options={"memory_mb": 2048}),
                                   JobSpec(script="true\n", backend_options={"memory_mb": 1024})])
    assert over.handle is None and over.error == (
        "sbatch: error: Memory specification can not be satisfied\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not "
        "available"), over
    assert within.handle is not None, within
    [done] = wait_for(backend, [within.handle], timeout=stack.timeouts.job)
    assert done.state is JobState.COMPLETED, done
