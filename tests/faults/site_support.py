"""What the existing-deployment fault tests share: a stack kept by ``pytest-stacks up`` as the
"site", sessions run as a user runs them, and a poll that says what it waited for."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.faults.sessions import NEEDS_ENGINE

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "pytest-stacks")
T = TypeVar("T")


#: The lifecycle fault tests' own rule: skip without an engine, unless CI requires one.
ENGINE = NEEDS_ENGINE


@contextlib.contextmanager
def kept_stack(name: str, home: Path) -> Iterator[dict[str, Any]]:
    """``pytest-stacks up NAME`` in a private run root; its public facts (what ``up`` prints);
    ``pytest-stacks down NAME`` after, which must leave none of its containers."""
    env = {**os.environ, "TMPDIR": str(home)}
    up = subprocess.run([CLI, "up", name], capture_output=True, text=True, env=env,
                        timeout=1500, check=False)
    assert up.returncode == 0, f"pytest-stacks up {name} failed:\n{up.stderr[-4000:]}"
    shown: dict[str, Any] = json.loads(up.stdout)
    try:
        yield shown
    finally:
        down = subprocess.run([CLI, "down", name], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
        assert down.returncode == 0, down.stdout + down.stderr


def write_manifest(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "site-manifest.yaml"
    path.write_text(text)
    return path


def pytest_session(args: list[str], *, env: dict[str, str], cwd: Path,
                   timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "-rA", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **env}, timeout=timeout, check=False)


def poll(ask: Callable[[], T], *, timeout: float, what: str, interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while True:
        answer = ask()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:.0f}s")
        time.sleep(interval)


#: A user's test that holds a job on the site until the session is ended.
HOLD = """
import time
import pytest
from pytest_stacks.contract import JobSpec, submitted

@pytest.mark.requires("submit")
def test_holds_a_job(backend):
    submitted(backend.submit([JobSpec(script="sleep 600\\n", name="held")]))
    time.sleep(600)
"""
#: A user's test that must never run: its site fails the preflight.
NEVER = """
import pytest

@pytest.mark.requires("submit")
def test_one(backend):
    raise AssertionError("must not run")
"""


def start_holder(where: Path, stack: str, manifest: Path,
                 env: dict[str, str]) -> subprocess.Popen[str]:
    """A session holding one job on the site, in a process group of its own (to be killed)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "test_hold.py").write_text(HOLD)
    (where / "pytest.ini").write_text("[pytest]\n")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           str(where), f"--stack={stack}", f"--stack-manifest={manifest}",
           "--stack-unproven=warn"]
    # A session started from a background job inherits SIGINT ignored (a shell's `cmd &`),
    # and Python then never turns it into KeyboardInterrupt: the holder's Ctrl-C is restored.
    return subprocess.Popen(cmd, cwd=where, env={**os.environ, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def assert_whole_pass(results: Path, daemon: str) -> None:
    """The site's row of the results file: provider existing, the observed daemon version,
    a pass, and every declared capability proven by a passing test."""
    [row] = json.loads(results.read_text())["stacks"]
    assert (row["provider"], row["observed"]["daemon"], row["verdict"]) == \
        ("existing", daemon, "pass"), row
    offered = {name for name, c in row["capabilities"].items() if c["offered"]}
    assert offered and all(row["capabilities"][c]["status"] == "pass" for c in offered), row


def infra_in_seconds(where: Path, stack: str, manifest: Path, env: dict[str, str],
                     expected: str) -> None:
    """A session on a site that fails its preflight: one infrastructure error naming
    ``expected``, within 60 s, and the test itself never ran. 60 s, not the 5 to 10 s it takes
    on an idle machine: the session is a whole pytest process, and a new machine's CI builds
    three Kubernetes versions beside it (an unreachable host took 35 s there); what this
    guards against is a wait for the stack's readiness timeout, minutes."""
    (where / "test_one.py").write_text(NEVER)
    started = time.monotonic()
    done = pytest_session([str(where / "test_one.py"), f"--stack={stack}",
                           f"--stack-manifest={manifest}"], env=env, cwd=where)
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "1 infra" in out.strip().splitlines()[-1], out[-3000:]
    assert expected in out, out[-3000:]
    assert "must not run" not in out
    assert took < 60, f"the preflight took {took:.0f}s"


def compose_exec(project: str, service: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command in a service of a kept compose stack, over the engine, as root: what the
    site holds, read through the trusted channel rather than the client under test."""
    container = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project}",
         "--filter", f"label=com.docker.compose.service={service}"],
        capture_output=True, text=True, check=True).stdout.split()[0]
    return subprocess.run(["docker", "exec", container, *argv], capture_output=True,
                          text=True, timeout=60, check=False)


@dataclass
class Holders:
    """Two sessions holding a job each on one site: ``dead`` to be SIGKILLed, ``live`` to go
    on; ``live_output`` is what the live one printed once ended with a user's Ctrl-C."""

    dead: subprocess.Popen[str]
    live: subprocess.Popen[str]
    live_output: str = ""

    def kill_dead(self) -> None:
        os.killpg(self.dead.pid, signal.SIGKILL)
        self.dead.wait(timeout=30)


@contextlib.contextmanager
def two_holders(start: Callable[[Path], subprocess.Popen[str]],
                where: Path) -> Iterator[Holders]:
    holders = Holders(start(where / "dead"), start(where / "live"))
    try:
        yield holders
    finally:
        for process in (holders.dead, holders.live):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)  # a user's Ctrl-C: the run ends itself
        holders.live_output = holders.live.communicate(timeout=300)[0]
        holders.dead.communicate(timeout=30)


def reap_site(manifest: Path, stack: str, env: dict[str, str]) -> str:
    """``pytest-stacks reap NAME``, which must succeed; what it printed."""
    reaped = subprocess.run([CLI, "--manifest", str(manifest), "reap", stack],
                            capture_output=True, text=True, env={**os.environ, **env},
                            timeout=300, check=False)
    assert reaped.returncode == 0, reaped.stdout + reaped.stderr
    return reaped.stdout
