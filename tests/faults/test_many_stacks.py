"""Several real stacks in one run: concurrent bring-up within its bound, a stack ended as soon
as its tests are over, an interrupt while several come up, and a Docker engine restarted under
the run.

Subprocess sessions against real Slurm stacks, as a user runs them. They need a Docker engine;
without one they skip, unless PYTEST_STACKS_REQUIRE_DOCKER=1 (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.sessions import NEEDS_ENGINE, engine_answers

REPO = Path(__file__).resolve().parents[2]
STACKS = ("slurm-24.11", "slurm-26.05")
PID_LABEL = "io.pytest-stacks.owner-pid"


pytestmark = NEEDS_ENGINE


def _project(where: Path, body: str, *stacks: str) -> list[str]:
    where.mkdir(parents=True, exist_ok=True)
    (where / "pytest.ini").write_text("[pytest]\n")
    (where / "test_many.py").write_text(body)
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--stack-manifest={REPO / 'manifest.yaml'}", str(where),
            *(f"--stack={s}" for s in stacks)]


def _left_by(owner_pid: int) -> list[str]:
    found = []
    for kind in ("ps -aq", "network ls -q", "volume ls -q"):
        out = subprocess.run(["docker", *kind.split(), "--filter",
                              f"label={PID_LABEL}={owner_pid}"],
                             capture_output=True, text=True, check=True).stdout.split()
        found += [f"{kind.split()[0]}:{x}" for x in out]
    return found


# Each test writes, per stack, when its bring-up began and ended, as the run directory records
# it; the last test to run sees both stacks proven.
INTERVALS = """
import glob, json, os, pathlib

def test_intervals(stack, backend):
    seen = {}
    for path in glob.glob(os.path.join(os.environ["TMPDIR"], "pytest-stacks-*", "*", "*.json")):
        data = json.loads(pathlib.Path(path).read_text())
        if "started_at" in data and data.get("startup_s"):
            seen[data["stack"]] = [data["started_at"], data["started_at"] + data["startup_s"]]
    pathlib.Path(os.environ["INTERVALS_OUT"]).write_text(json.dumps(seen))
"""


def _intervals(tmp_path: Path, parallel: int) -> dict[str, list[float]]:
    out = tmp_path / f"intervals-{parallel}.json"
    cmd = [*_project(tmp_path / f"p{parallel}", INTERVALS, *STACKS),
           f"--stack-parallel={parallel}"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                            env={**os.environ, "INTERVALS_OUT": str(out)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    seen: dict[str, list[float]] = json.loads(out.read_text())
    assert sorted(seen) == sorted(STACKS), seen
    return seen


def test_stacks_come_up_concurrently_within_the_bound(tmp_path: Path) -> None:
    together = _intervals(tmp_path, parallel=2)
    (a0, a1), (b0, b1) = together[STACKS[0]], together[STACKS[1]]
    assert a0 < b1 and b0 < a1, f"with --stack-parallel=2 bring-ups did not overlap: {together}"
    one_by_one = _intervals(tmp_path, parallel=1)
    (a0, a1), (b0, b1) = sorted(one_by_one.values())
    # (startup_s is recorded to the hundredth of a second)
    assert a1 <= b0 + 0.02, f"with --stack-parallel=1 two bring-ups overlapped: {one_by_one}"


# Each test writes, for its stack, how many containers of the run's other stacks Docker still
# has; the owner is this process (single process) or the xdist controller (its parent).
OTHERS_SEEN = """
import json, os, pathlib, subprocess, time

def _others(name):
    owner = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    # One listing with each container's stack label: a `docker inspect` of the ids listed
    # raced the other stack's teardown, which runs meanwhile (a container gone in between).
    stacks = subprocess.run(["docker", "ps", "-a", "--filter",
                             f"label=io.pytest-stacks.owner-pid={owner}", "--format",
                             '{{.Label "io.pytest-stacks.stack"}}'],
                            capture_output=True, text=True, check=True).stdout.split()
    return sorted(s for s in stacks if s != name)

def test_others(stack, backend):
    out = pathlib.Path(os.environ["OTHERS_OUT"])
    seen = json.loads(out.read_text()) if out.exists() else []
    others = _others(stack.name)
    # The second stack's test: the first one's teardown runs in the background from this
    # test's setup on; wait (bounded) for Docker to show it gone.
    deadline = time.monotonic() + float(os.environ["OTHERS_WAIT"]) * bool(seen)
    while others and time.monotonic() < deadline:
        time.sleep(0.5)
        others = _others(stack.name)
    out.write_text(json.dumps(seen + [[stack.name, others]]))
"""


@pytest.mark.parametrize(("how", "extra"), [
    ("early, one process", []),
    ("early, xdist", ["-n", "1", "--stack-group"]),
    ("at-end", ["--stack-release=at-end"]),
])
def test_a_stack_ends_as_soon_as_its_tests_are_over(tmp_path: Path, how: str,
                                                    extra: list[str]) -> None:
    out = tmp_path / "others.json"
    cmd = [*_project(tmp_path / "p", OTHERS_SEEN, *STACKS), "--stack-unproven=warn", *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False,
                            env={**os.environ, "OTHERS_OUT": str(out),
                                 "OTHERS_WAIT": "0" if how == "at-end" else "60"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    (first, seen_first), (second, seen_second) = json.loads(out.read_text())
    assert {first, second} == set(STACKS)
    assert seen_first, f"{first}'s test saw no container of {second}: {seen_first}"
    if how == "at-end":
        assert second in seen_first and first in seen_second, (first, seen_second)
    else:  # the first stack's containers were gone (Docker says so) while the second ran
        assert seen_second == [], f"{first} still had containers: {seen_second}"


def test_interrupt_while_several_stacks_come_up_leaves_nothing(tmp_path: Path) -> None:
    body = "def test_x(backend):\n    pass\n"
    proc = subprocess.Popen(_project(tmp_path / "proj", body, *STACKS), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    # Interrupt once both stacks have begun to create containers, mid bring-up.
    while time.monotonic() < deadline and len(
            {line for line in _left_by(proc.pid) if line.startswith("ps:")}) < 2:
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before both stacks were coming up"
    interrupted = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    took = time.monotonic() - interrupted
    assert proc.returncode != 0, out[-3000:]
    assert took < 90, f"teardown after an interrupt took {took:.0f}s"
    assert _left_by(proc.pid) == [], out[-3000:]
    assert "Traceback" not in out


# --- the engine restarted under the run ----------------------------------------------------

ENGINE_BODY = """
import os, pathlib, time
from pytest_stacks.contract import JobSpec, submitted, wait_for

def _job(backend):
    return wait_for(backend, submitted(backend.submit([JobSpec(script="echo hi\\n")])),
                    timeout=30)

def test_1_before(backend):
    _job(backend)

def test_2_engine_restarts_under_the_test(backend):
    pathlib.Path(os.environ["RESTART_NOW"]).write_text("go")
    done = pathlib.Path(os.environ["RESTART_DONE"])
    for _ in range(1200):
        if done.exists():
            break
        time.sleep(0.1)
    _job(backend)

def test_3_after(backend):
    _job(backend)
"""


def _restart_engine() -> None:
    """Restart the Docker engine as this machine runs it: systemd's unit, or the dockerd that
    `pytest-stacks doctor --fix` started."""
    if shutil.which("systemctl") and subprocess.run(
            ["systemctl", "is-active", "--quiet", "docker"], check=False).returncode == 0:
        subprocess.run(["systemctl", "restart", "docker"], check=True, timeout=180)
        return
    pids = subprocess.run(["pidof", "dockerd"], capture_output=True, text=True,
                          check=False).stdout.split()
    if not pids:
        pytest.fail("cannot restart the Docker engine: no systemd unit and no dockerd process")
    # The engine comes back with the environment it had, not this test's (whose TMPDIR, where
    # runc keeps its exec files, is deleted with the test's temporary folder).
    raw = Path(f"/proc/{pids[0]}/environ").read_bytes().split(b"\0")
    engine_env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    engine_env.pop("TMPDIR", None)
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.2)
    with open("/var/log/dockerd.log", "ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True,
                         env=engine_env, cwd="/")


def _wait_for_engine(timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if engine_answers():
            return
        time.sleep(0.5)
    pytest.fail("the Docker engine did not come back after the restart")


@pytest.mark.exclusive  # it restarts the one Docker engine every run on the machine uses
@pytest.mark.skipif(os.geteuid() != 0, reason="restarting the Docker engine needs root")
def test_engine_restart_mid_run_is_infra_within_a_bounded_time(tmp_path: Path) -> None:
    restart_now, restart_done = tmp_path / "restart-now", tmp_path / "restart-done"
    env = {**os.environ, "RESTART_NOW": str(restart_now), "RESTART_DONE": str(restart_done)}
    started = time.monotonic()
    proc = subprocess.Popen(_project(tmp_path / "proj", ENGINE_BODY, STACKS[0]),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while not restart_now.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert restart_now.exists(), "the run never reached the test that restarts the engine"
        _restart_engine()
    finally:
        _wait_for_engine()
        restart_done.write_text("done")
    out, _ = proc.communicate(timeout=300)
    took = time.monotonic() - started
    assert took < 400, f"the run took {took:.0f}s after an engine restart"
    assert proc.returncode == 1, out[-4000:]
    # The tests after the restart are infrastructure errors naming the dead stack, not
    # product failures; the first test passed before it.
    assert "1 passed" in out and "2 infra" in out, out[-4000:]
    assert "the stack died during the run" in out
    assert "Traceback" not in out
    # What the restart left behind (stopped containers, the network) is gone after the run's
    # own teardown, or else after the next run's reaping.
    if _left_by(proc.pid):
        subprocess.run(_project(tmp_path / "next", "def test_ok(backend):\n    pass\n",
                                STACKS[0]), capture_output=True, text=True, timeout=600,
                       check=False)
    assert _left_by(proc.pid) == []
