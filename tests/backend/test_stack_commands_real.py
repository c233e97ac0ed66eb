"""The scheduler's commands on PATH, on a real Slurm stack: what the daemons did, not what the
shim says. The job's own `id -un` and the owner of the file it wrote name the login user; a
script given on stdin runs; the exit code and words of an unknown job are slurmctld's."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.for_backend("slurm"), pytest.mark.for_provider("compose")]


def _run(commands, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=commands.env, cwd=commands.shared, input=stdin,
                          capture_output=True, text=True, timeout=120, check=False)


def _appears(path: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.2)
    raise AssertionError(f"the job never wrote {path}")


def test_a_job_from_stdin_runs_as_the_login_user_in_the_shared_folder(stack_commands,
                                                                      stack: Stack) -> None:
    if "fs.unshared" in stack.capabilities:  # its nodes have no run's folder: see below
        pytest.skip("the job runs on a node, which has no shared folder on a stack without a "
                    "shared file system (tests/backend/test_slurm_unshared_fs.py proves that "
                    "a job there does not see the login node's files)")
    assert stack_commands.user != "root" and "sbatch" in stack_commands.commands
    script = "#!/bin/sh\nid -un > who.txt\npwd >> who.txt\n"
    submitted = _run(stack_commands, "sbatch", "--parsable", stdin=script)
    assert submitted.returncode == 0, submitted.stderr
    written = _appears(stack_commands.shared / "who.txt").splitlines()
    assert written == [stack_commands.user, str(stack_commands.shared)]
    # Written in the container by the login user (uid 1000 there), never by root.
    assert (stack_commands.shared / "who.txt").stat().st_uid != 0


def test_an_unknown_job_gets_slurmctlds_words_and_exit_code(stack_commands) -> None:
    shown = _run(stack_commands, "scontrol", "show", "job", "987654")
    assert shown.returncode == 1
    assert "Invalid job id specified" in shown.stderr


def test_a_command_missing_on_the_login_host_is_not_on_path(stack_commands) -> None:
    assert not (stack_commands.bin / "condor_submit").exists()
    assert set(stack_commands.commands) <= {p.name for p in stack_commands.bin.iterdir()}
