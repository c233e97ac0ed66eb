"""examples/subprocess-client, unchanged, passes its own tests on a real Slurm or HTCondor
stack: the client only runs the scheduler's commands (the stack_commands fixture puts them on
PATH), so this proves those commands reach the real daemons as a login node's do.

The example's suite runs as its own pytest session (its own rootdir and conftest), against
this repository's manifest, on the stack this run selected; that session brings up its own
instance of the stack and tears it down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_stacks.manifest import Stack

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "subprocess-client"
#: The example's tests per backend (tests/test_slurm_client.py, tests/test_htcondor_client.py).
EXPECTED = {"slurm": 5, "htcondor": 4}

pytestmark = [pytest.mark.for_backend("slurm", "htcondor"), pytest.mark.for_provider("compose")]


def test_the_example_client_passes_its_own_tests(stack: Stack, tmp_path: Path) -> None:
    if "fs.unshared" in stack.capabilities:
        pytest.skip("the example client writes its job scripts into the run's shared folder "
                    "and reads the jobs' files back from it: a shared-path client, which a "
                    "stack without a shared file system is there to fail (its nodes have no "
                    "such folder; tests/backend/test_slurm_unshared_fs.py)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST",
                                                                    "PYTEST_CURRENT"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-p", "no:xdist", "--stack-manifest", str(REPO / "manifest.yaml"),
         f"--stack={stack.name}", f"--stack-results={tmp_path / 'results.json'}"],
        cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=stack.timeouts.ready
        + stack.timeouts.build + 900, check=False)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert f"{EXPECTED[stack.backend]} passed" in done.stdout, tail
    assert " skipped" not in done.stdout and "failed" not in done.stdout, tail
