"""The MPI worker image's entrypoint (stacks/mpi-worker/mpi-entrypoint.sh), run as the
launcher's pod runs it: it waits for the hostfile's names, bounded, then runs the command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENTRYPOINT = Path(__file__).parents[2] / "stacks" / "mpi-worker" / "mpi-entrypoint.sh"


def run(tmp_path: Path, lines: str, role: str) -> subprocess.CompletedProcess[str]:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(lines)
    env = {**os.environ, "K_MPI_JOB_ROLE": role, "HYDRA_HOST_FILE": str(hostfile),
           "MPI_ENTRYPOINT_WAIT_S": "1"}
    return subprocess.run(["bash", str(ENTRYPOINT), "sh", "-c", "echo ran $0", "it"],
                          env=env, capture_output=True, text=True, timeout=30, check=False)


def test_the_launcher_runs_its_command_once_the_names_resolve(tmp_path: Path) -> None:
    done = run(tmp_path, "localhost:1\nlocalhost:1\n", "launcher")
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran it\n", "")


def test_a_name_that_never_resolves_is_said_and_the_command_still_runs(tmp_path: Path) -> None:
    done = run(tmp_path, "localhost slots=1\nno-such-worker.invalid slots=1\n", "launcher")
    assert done.returncode == 0 and done.stdout == "ran it\n"
    assert "no-such-worker.invalid does not resolve" in done.stderr


def test_a_worker_does_not_wait(tmp_path: Path) -> None:
    done = run(tmp_path, "no-such-worker.invalid:1\n", "worker")
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran it\n", "")
