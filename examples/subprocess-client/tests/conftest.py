"""The example client's fixtures: the client, given what pytest-stacks offers a login node's
client (the scheduler's commands on PATH, a working folder the login host sees)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The client package sits beside its tests (no install needed, from here or the repo's root).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from subprocess_client import CondorJobs, SlurmJobs


@pytest.fixture
def workdir(stack_commands):
    if stack_commands.shared is None:
        pytest.skip(f"stack {stack_commands.stack} shares no folder with this machine")
    return stack_commands.shared


@pytest.fixture
def slurm(stack_commands, workdir) -> SlurmJobs:
    return SlurmJobs(env=stack_commands.env, cwd=workdir)


@pytest.fixture
def condor(stack_commands, workdir) -> CondorJobs:
    return CondorJobs(env=stack_commands.env, cwd=workdir)
