"""What the fault tests share (once, instead of each importing another test file's private
helpers): whether a Docker engine answers and the skip without one, the labelled resources a
session owns, and pytest sessions started as subprocesses, as a user starts them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STACK = "slurm-24.11"
RUN_LABEL = "io.pytest-stacks.run"
PID_LABEL = "io.pytest-stacks.owner-pid"


def engine_answers() -> bool:
    """Whether this machine's Docker engine answers ``docker info``."""
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, check=False).returncode == 0


#: The fault tests' rule: skip without an engine, unless PYTEST_STACKS_REQUIRE_DOCKER=1 (CI)
#: makes a missing engine a failure.
NEEDS_ENGINE = pytest.mark.skipif(
    not engine_answers() and os.environ.get("PYTEST_STACKS_REQUIRE_DOCKER") != "1",
    reason="no Docker engine (scripts/setup.sh installs one)")


def owned_resources(owner_pid: int) -> list[str]:
    """The containers, networks and volumes labelled as the session ``owner_pid``'s."""
    found = []
    for kind in ("ps -aq", "network ls -q", "volume ls -q"):
        out = subprocess.run(["docker", *kind.split(), "--filter",
                              f"label={PID_LABEL}={owner_pid}"],
                             capture_output=True, text=True, check=True).stdout.split()
        found += [f"{kind.split()[0]}:{x}" for x in out]
    return found


def run_argv(tmp_path: Path, body: str, manifest: Path | None = None) -> list[str]:
    """A project in ``tmp_path`` whose one test file is ``body``, and the pytest command that
    runs it on ``manifest`` (default: the repository's)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_fault.py").write_text(body)
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--stack-manifest={manifest or REPO / 'manifest.yaml'}", str(tmp_path)]


LONG_TEST = """
import pathlib, time
def test_long(backend, stack):
    pathlib.Path(r"{marker}").write_text("started")
    time.sleep(600)
"""


def ctrl_c_as_a_terminal() -> None:
    """SIGINT as a terminal delivers it: a caller that runs these tests in the background of a
    shell without job control has SIGINT ignored, and an ignored signal stays ignored across
    exec, so the session under test would never see Ctrl-C at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_long(tmp_path: Path, stack: str = STACK, wait: float = 600,
               ) -> tuple[subprocess.Popen[str], Path]:
    """A session whose one test runs for 10 minutes, once it has reached that test (within
    ``wait`` seconds: a stack built on first use needs longer)."""
    marker = tmp_path / "started"
    cmd = [*run_argv(tmp_path, LONG_TEST.format(marker=marker)), f"--stack={stack}"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, preexec_fn=ctrl_c_as_a_terminal)
    deadline = time.monotonic() + wait
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"the session never reached its test:\n{out[-3000:]}")
        time.sleep(0.5)
    assert owned_resources(proc.pid), "a running session must own labelled resources"
    return proc, marker
