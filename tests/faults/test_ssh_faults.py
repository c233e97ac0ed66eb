"""Faults of sites reached over SSH, on the real multi-node Slurm cluster.

A changed host key is refused before anything runs; a jump host that goes away mid-run is an
infrastructure error with the hop's logs; a slurmd that dies under a job gives the job's state
as Slurm reports it, without a hang; every container of the multi-container stack is gone
after the run. Subprocess sessions, as a user runs them; they need a Docker engine and skip
without one unless PYTEST_STACKS_REQUIRE_DOCKER=1.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pytest_stacks.providers.labels import LABEL_OWNER_PID, LABEL_OWNER_START, owner_alive
from tests.faults.sessions import NEEDS_ENGINE

REPO = Path(__file__).resolve().parents[2]
DIRECT, JUMP = "slurm-26.05-cluster-ssh", "slurm-26.05-cluster-jump"
PID_LABEL = "io.pytest-stacks.owner-pid"


pytestmark = NEEDS_ENGINE


def _run(where: Path, body: str, stack: str, *extra: str) -> subprocess.CompletedProcess[str]:
    where.mkdir(parents=True, exist_ok=True)
    (where / "pytest.ini").write_text("[pytest]\n")
    (where / "test_ssh_fault.py").write_text(body)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "-rA", f"--stack-manifest={REPO / 'manifest.yaml'}", str(where), f"--stack={stack}",
           "--stack-unproven=warn", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


def _left(project_prefix: str) -> list[str]:
    """Containers of this stack whose owning session has ended: what a finished run leaked.
    A live session's (the real window, run beside these tests by scripts/test.sh) are not."""
    out = subprocess.run(["docker", "ps", "-a", "--format",
                          f'{{{{.Names}}}} {{{{.Label "{LABEL_OWNER_PID}"}}}} '
                          f'{{{{.Label "{LABEL_OWNER_START}"}}}}'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [[*line.split(" "), "", ""][:3] for line in out]
    return [name for name, pid, start in rows if name.startswith(project_prefix)
            and not owner_alive(int(pid) if pid.isdigit() else 0, start)]


COMMON = """
import json, subprocess
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for
from pytest_stacks.providers import ssh_access

def _container(stack_info, service):
    return subprocess.run(["docker", "ps", "-q", "--filter",
                           f"label=com.docker.compose.project={stack_info['project']}",
                           "--filter", f"label=com.docker.compose.service={service}"],
                          capture_output=True, text=True, check=True).stdout.strip()

def _exec(stack_info, service, *argv):
    return subprocess.run(["docker", "exec", _container(stack_info, service), *argv],
                          capture_output=True, text=True, check=False)
"""

HOST_KEY_CHANGED = COMMON + """
from pytest_stacks.transports.ssh import HostKeyRefused
import pytest

def test_changed_host_key_is_refused_and_nothing_runs(backend, stack_info):
    # The login node gets new host keys, as a rebuilt or impersonated host would.
    _exec(stack_info, "login", "sh", "-c",
          "rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null && pkill -HUP -x sshd")
    # sshd re-executes itself on SIGHUP and answers with the old keys until it has (seen once
    # under load: the client connected first, and rightly ran the command).
    served = _exec(stack_info, "login", "sh", "-c",
                   "new=$(cut -d' ' -f2 /etc/ssh/ssh_host_ed25519_key.pub); for _ in $(seq 300);"
                   " do ssh-keyscan -t ed25519 127.0.0.1 2>/dev/null | grep -qF $new && exit 0;"
                   " sleep 0.1; done; exit 1")
    assert served.returncode == 0, "sshd never served its new host key"
    fresh = ssh_access.transport(stack_info)  # a new connection, as after a dropped one
    with pytest.raises(HostKeyRefused) as refused:
        fresh.run(["touch", "/tmp/ran-despite-a-changed-host-key"])
    print("REFUSED:", refused.value)
    marker = _exec(stack_info, "login", "test", "-e", "/tmp/ran-despite-a-changed-host-key")
    assert marker.returncode == 1, "the command ran on a host whose key changed"
"""


def test_a_changed_host_key_is_refused_before_anything_runs(tmp_path: Path) -> None:
    result = _run(tmp_path / "p", HOST_KEY_CHANGED, DIRECT, "-s")
    out = result.stdout
    assert result.returncode == 0, out[-4000:]
    assert "REFUSED: the host key of [127.0.0.1]:" in out
    assert "is not the one pinned for this run" in out and "nothing was run there" in out
    assert "PRIVATE KEY" not in out + result.stderr


JUMP_GONE = COMMON + """
def test_1_through_the_jump_host(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_2_jump_host_goes_away(backend, stack, stack_info):
    subprocess.run(["docker", "stop", "-t", "1", _container(stack_info, "jump")], check=True,
                   capture_output=True)
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)

def test_3_after(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=60)
"""


def test_a_jump_host_that_goes_away_is_an_infrastructure_error(tmp_path: Path) -> None:
    result = _run(tmp_path / "p", JUMP_GONE, JUMP)
    out = result.stdout
    assert result.returncode == 1, out[-4000:]
    assert re.match(r"1 passed(, \d+ warnings?)?, 2 infra in ", out.splitlines()[-1]), out[-3000:]
    assert "the stack died during the run" in out and "(service jump)" in out
    # The hop's own logs come with the error (its sshd's last words).
    assert "stack slurm-26.05-cluster-jump: daemon logs" in out
    assert not _left("pst-slurm-26_05-cluster-jump"), "every container must be torn down"


SLURMD_DIES = COMMON + """
def test_slurmd_dies_under_a_job(backend, stack, stack_info):
    [job] = submitted(backend.submit([JobSpec(script="srun sleep 300\\n",
                                              backend_options={"workers": 2})]))
    wait_for(backend, [job], until=frozenset({JobState.RUNNING}), timeout=60)
    _exec(stack_info, "node2", "pkill", "-KILL", "-x", "slurmd")
    [status] = wait_for(backend, [job], timeout=120)
    print("FINAL:", status.state.value, status.native_state)
    assert status.state is not JobState.RUNNING
"""


def test_a_slurmd_that_dies_mid_job_gives_slurms_verdict_without_a_hang(tmp_path: Path) -> None:
    result = _run(tmp_path / "p", SLURMD_DIES, DIRECT, "-s")
    out = result.stdout
    assert "FINAL:" in out, out[-4000:]
    final = out.split("FINAL:", 1)[1].split()[:2]
    # Slurm's own answer for a job whose node died, read back as a failure. Which one depends
    # on who notices first: slurmctld, whose pings of node2 go unanswered (NODE_FAIL, every
    # quiet run), or the batch script, which ended in error before the node was declared down
    # (FAILED, once in a loaded warm run; its srun presumably lost the step on node2). Never a
    # hang, never a success.
    assert final[0] == "failed" and final[1] in ("NODE_FAIL", "FAILED"), out[-4000:]
    assert not _left("pst-slurm-26_05-cluster-ssh"), "every container must be torn down"
