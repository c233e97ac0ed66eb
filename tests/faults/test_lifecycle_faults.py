"""Real lifecycle faults against a real Docker engine: nothing leaks, failures are explained.

These start pytest sessions as subprocesses (as a user would) against the real slurm-24.11
stack and kill, interrupt or break them. They need a Docker engine; without one they skip,
unless PYTEST_STACKS_REQUIRE_DOCKER=1 (CI) makes a missing engine a failure.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.sessions import (
    NEEDS_ENGINE,
    REPO,
    RUN_LABEL,
    STACK,
    ctrl_c_as_a_terminal,
    owned_resources,
    run_argv,
    start_long,
)

pytestmark = NEEDS_ENGINE


def _in_no_container(pid: str) -> bool:
    """A process outside every container (its cgroup names no docker container)."""
    try:
        return "docker" not in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_tears_down(tmp_path: Path, sig: signal.Signals) -> None:
    proc, _ = start_long(tmp_path)
    os.killpg(proc.pid, sig)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode != 0
    assert owned_resources(proc.pid) == [], out[-3000:]


@pytest.mark.exclusive  # a concurrent run's bring-up would reap the dead run's resources first
@pytest.mark.parametrize("stack", [STACK, "k8s-1.36-mpi-0.8"])
def test_sigkill_leftovers_are_reaped_by_the_next_run(tmp_path: Path, stack: str) -> None:
    """For the Kubernetes stack the whole plane (etcd, apiserver, the run's namespace and
    every object in it, the operator) lives in the labelled container, so reaping it reaps
    them all."""
    proc, _ = start_long(tmp_path / "dead", stack)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert owned_resources(proc.pid), "SIGKILL cannot tear down: the resources must still be there"
    survivor = tmp_path / "next"
    survivor.mkdir()
    cmd = [*run_argv(survivor, "def test_ok(backend):\n    pass\n"), f"--stack={stack}"]
    result = subprocess.run(cmd, cwd=survivor, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    assert owned_resources(proc.pid) == [], "the next run must reap what the dead run left"
    leftover = subprocess.run(["pgrep", "-f", "kube-apiserver|mpi-operator|kwok"],
                              capture_output=True, text=True, check=False).stdout.split()
    assert not [pid for pid in leftover if _in_no_container(pid)], "plane processes leaked"


def test_two_concurrent_sessions_on_the_same_stack(tmp_path: Path) -> None:
    body = ("from pytest_stacks.contract import JobSpec, submitted, wait_for, JobState\n"
            "def test_job(backend):\n"
            "    [h] = submitted(backend.submit([JobSpec(script='true\\n')]))\n"
            "    [s] = wait_for(backend, [h], timeout=60)\n"
            "    assert s.state is JobState.COMPLETED\n")
    procs = []
    for name in ("a", "b"):
        where = tmp_path / name
        where.mkdir()
        procs.append(subprocess.Popen([*run_argv(where, body), f"--stack={STACK}"], cwd=where,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for proc, out in zip(procs, outs, strict=True):
        assert proc.returncode == 0, out[-3000:]
        assert "1 passed" in out
        assert owned_resources(proc.pid) == []


def test_xdist_workers_share_one_stack(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import os, pathlib\n"
        "def pytest_stacks_backend(stack, default, info):\n"
        f"    pathlib.Path(r'{tmp_path}', 'seen-' + os.environ.get('PYTEST_XDIST_WORKER', 'main'))"
        ".write_text(info['container'])\n")
    body = "".join(f"def test_{i}(backend):\n    pass\n" for i in range(6))
    cmd = [*run_argv(tmp_path, body), f"--stack={STACK}", "-n", "2"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    seen = {p.read_text() for p in tmp_path.glob("seen-*")}
    assert len(list(tmp_path.glob("seen-*"))) == 2, "both workers must have attached"
    assert len(seen) == 1, f"workers attached to different containers: {seen}"


def _docker_objects() -> dict[str, set[str]]:
    def ids(*argv: str) -> set[str]:
        return set(subprocess.run(["docker", *argv], capture_output=True, text=True,
                                  check=True).stdout.split())
    return {"images": ids("images", "-q", "pytest-stacks/slurm"),
            "containers": ids("ps", "-aq"), "dangling": ids("images", "-qf", "dangling=true")}


def _broken_manifest(tmp_path: Path, dockerfile: str, ready_timeout: float = 120,
                     dead_peer: bool = False) -> Path:
    """A one-service stack built from `dockerfile`; with `dead_peer`, a second service of the
    same image that exits with status 3 at once (a controller that died)."""
    folder = tmp_path / "stack"
    folder.mkdir()
    (folder / "Dockerfile").write_text(dockerfile)
    peer = ("  ctld:\n    image: \"pytest-stacks/slurm:${SLURM_IMAGE_TAG}\"\n"
            "    command: [\"sh\", \"-c\", \"exit 3\"]\n") if dead_peer else ""
    (folder / "compose.yaml").write_text(
        "services:\n  slurm:\n    build:\n      context: .\n      args:\n"
        "        BASE_IMAGE: \"${BASE_IMAGE}\"\n"
        "    image: \"pytest-stacks/slurm:${SLURM_IMAGE_TAG}\"\n    init: true\n"
        "    stop_grace_period: 1s\n" + peer)
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(f"""
version: 1
capabilities: {{submit: s, status: t}}
backends:
  slurm: {{window: {{anchor: "22.05", leading_edge: "26.05"}}}}
stacks:
  - name: broken-slurm
    backend: slurm
    version: "24.11.5"
    provider: compose
    transport: local
    configuration: single-node
    capabilities: [submit, status]
    lanes: [full]
    base_image: {{name: debian, tag: trixie-slim, seed: trixie}}
    compose: {{directory: stack, service: slurm}}
    timeouts: {{ready: {ready_timeout}}}
""")
    return manifest


@pytest.mark.exclusive  # it counts the engine's images and containers: a build beside it adds some
def test_broken_dockerfile_gives_the_clear_build_error(tmp_path: Path) -> None:
    manifest = _broken_manifest(
        tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo step-one\n"
                  "RUN this-command-does-not-exist --really\n")
    work = tmp_path / "proj"
    work.mkdir()
    before = _docker_objects()
    cmd = [*run_argv(work, "def test_x(backend):\n    pass\n", manifest), "--stack=broken-slurm"]
    result = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600,
                            check=False)
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert "1 infra" in out
    assert "image build failed at step" in out and "this-command-does-not-exist" in out
    # Nothing a later run could mistake for a good build: no tagged image of the stack, no
    # container of the failed step, no new dangling image.
    after = _docker_objects()
    assert after["images"] <= before["images"], after["images"] - before["images"]
    assert after["containers"] <= before["containers"], after["containers"] - before["containers"]
    assert after["dangling"] <= before["dangling"], after["dangling"] - before["dangling"]
    assert "broken-slurm" in out
    assert "Traceback" not in out


def test_daemon_that_never_gets_ready_fails_at_its_timeout_with_logs(tmp_path: Path) -> None:
    manifest = _broken_manifest(
        tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
                  "CMD [\"sh\", \"-c\", \"echo pretending-to-be-slurmctld; sleep 600\"]\n",
        ready_timeout=8, dead_peer=True)
    work = tmp_path / "proj"
    work.mkdir()
    cmd = [*run_argv(work, "def test_x(backend):\n    pass\n", manifest), "--stack=broken-slurm"]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600,
                          check=False)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    assert "daemons not ready after 8s" in out  # its own timeout, not the run's
    assert "pretending-to-be-slurmctld" in out, "the container's logs must be attached"
    # A peer that died is named with its exit status: its name no longer resolves, which
    # the waiting client reports as its own failure otherwise.
    assert "not running: ctld exited (exit code 3)" in out


CREDENTIAL_TEST = """
import pathlib, stat, os
from pytest_stacks.contract import JobSpec, submitted, wait_for

def test_token_is_private_then_fail(backend, stack_info):
    token_dir = pathlib.Path(stack_info["token_dir"])
    files = [p for p in token_dir.iterdir() if p.is_file()]
    assert files, "a token must have been minted for this run"
    assert stat.S_IMODE(token_dir.stat().st_mode) == 0o700
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.stat().st_uid == os.getuid()
    pathlib.Path(r"{leak}").write_text(files[0].read_text().strip())
    [h] = submitted(backend.submit([JobSpec(script="echo captured-marker; exit 5\\n")]))
    wait_for(backend, [h], timeout=120)
    assert False, "deliberate failure to exercise the failure report"
"""


def test_htcondor_token_is_private_never_printed_and_failures_carry_diagnostics(
        tmp_path: Path) -> None:
    leak = tmp_path / "token-value"
    work = tmp_path / "proj"
    junit = tmp_path / "report.xml"
    cmd = [*run_argv(work, CREDENTIAL_TEST.format(leak=leak)), "--stack=htcondor-23.9",
           f"--junitxml={junit}", "-rA"]
    result = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900,
                            check=False)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    assert "1 failed" in out, out[-3000:]
    token = leak.read_text()
    assert len(token) > 40
    assert token not in out, "the token was printed"
    assert token not in junit.read_text(), "the token is in the junit report"
    token_body = token.split(".")[1] if token.count(".") >= 2 else token
    assert token_body not in out and token_body not in junit.read_text()
    # The failing test's report carries the scheduler's view and the daemons' logs.
    assert "scheduler view of this test's jobs" in out
    assert "JobStatus" in out and "ExitCode = 5" in out
    assert "captured-marker" in out
    assert "SchedLog" in out


def test_ctrl_c_during_bring_up_leaves_nothing(tmp_path: Path) -> None:
    """Interrupted while waiting for readiness: the half-started stack is still removed."""
    manifest = _broken_manifest(
        tmp_path, "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
                  "CMD [\"sh\", \"-c\", \"echo never-ready; sleep 600\"]\n", ready_timeout=300)
    work = tmp_path / "proj"
    cmd = [*run_argv(work, "def test_x(backend):\n    pass\n", manifest), "--stack=broken-slurm"]
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, preexec_fn=ctrl_c_as_a_terminal)
    deadline = time.monotonic() + 300
    while not owned_resources(proc.pid):
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"the stack never started coming up:\n{out[-3000:]}")
        time.sleep(0.2)
    time.sleep(1)  # well inside the readiness wait
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode != 0
    assert owned_resources(proc.pid) == [], out[-3000:]


KILLED_MID_RUN = """
import subprocess
from pytest_stacks.contract import JobSpec, submitted, wait_for

def test_1_before(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_2_container_killed_under_the_test(backend, stack, stack_info):
    if stack.provider != "fake":
        subprocess.run(["docker", "kill", stack_info["container"]], check=True,
                       capture_output=True)
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_3_after(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)
"""


def test_a_stack_killed_mid_run_is_infra_for_its_tests_and_others_go_on(tmp_path: Path) -> None:
    cmd = [*run_argv(tmp_path, KILLED_MID_RUN), f"--stack={STACK}", "--stack=fake-slurm",
           "-p", "no:randomly", "-rA"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, out[-4000:]
    # The fake's three tests and the real stack's first pass; the two after the kill are
    # infrastructure errors (with the container's state), not product failures.
    assert re.match(r"4 passed(, \d+ warnings?)?, 2 infra in ", out.splitlines()[-1]), out[-4000:]
    assert "the stack died during the run" in out and "is exited (exit code 137)" in out
    assert "PASSED test_fault.py::test_3_after[fake-slurm]" in out
    assert owned_resources(proc.pid) == [], "the dead stack's resources must be torn down"


WORKER_DIES = """
import os
import re
from pytest_stacks.contract import JobSpec, submitted, wait_for

def test_0(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_1_worker_dies(backend, stack):
    os._exit(3)

def test_2(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_3(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)
"""


def test_a_worker_that_dies_fails_the_run_by_name_and_leaks_nothing(tmp_path: Path) -> None:
    cmd = [*run_argv(tmp_path, WORKER_DIES), f"--stack={STACK}", "-n", "2", "-p", "no:randomly"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, out[-4000:]
    assert re.search(r"worker 'gw\d' crashed while running '.*test_1_worker_dies", out), out[-4000:]
    assert "3 passed" in out.splitlines()[-1], out[-3000:]
    assert owned_resources(proc.pid) == [], "the controller must tear the stack down once"
    downs = out.count("teardown not proven")
    assert downs == 0, out[-3000:]


def test_a_stack_a_test_failed_on_is_kept_on_request_until_down(tmp_path: Path) -> None:
    """--stack-keep=on-failure: the stack stays up and reachable as the run says, a later
    run's reaper leaves it alone, and `pytest-stacks down NAME` ends it, proven."""
    work = tmp_path / "failing"
    cmd = [*run_argv(work, "def test_fails(backend, stack):\n    assert False, 'look'\n"),
           f"--stack={STACK}", "--stack-keep=on-failure"]
    failed = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600,
                            check=False)
    assert failed.returncode == 1, failed.stdout[-3000:]
    [line] = [ln for ln in failed.stdout.splitlines() if f"{STACK} is kept" in ln]
    assert f"End it: pytest-stacks down {STACK}" in line
    found = re.search(r"docker exec -it (\S+) bash", line)
    assert found, line
    container = found.group(1)
    run = subprocess.run(["docker", "inspect", "-f", f'{{{{index .Config.Labels "{RUN_LABEL}"}}}}',
                          container], capture_output=True, text=True, check=True).stdout.strip()
    assert run, f"the kept container {container} carries no run label"
    reach = subprocess.run(["docker", "exec", container, "sinfo", "-V"], capture_output=True,
                           text=True, check=False)
    assert reach.returncode == 0 and "slurm" in reach.stdout, reach
    later = tmp_path / "later"
    ok = subprocess.run([*run_argv(later, "def test_ok(backend):\n    pass\n"),
                         f"--stack={STACK}"], cwd=later, capture_output=True, text=True,
                        timeout=600, check=False)
    assert ok.returncode == 0, ok.stdout[-3000:]
    still = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", container],
                           capture_output=True, text=True, check=False)
    assert still.stdout.strip() == "true", "a later run's reaper removed a kept stack"
    down = subprocess.run([str(Path(sys.executable).parent / "pytest-stacks"), "--manifest",
                           str(REPO / "manifest.yaml"), "down", STACK], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "ended run" in down.stdout
    gone = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={RUN_LABEL}={run}",
                           "--filter", f"label=io.pytest-stacks.stack={STACK}"],
                          capture_output=True, text=True, check=True)
    assert gone.stdout.split() == [], "down left containers of the kept stack"
