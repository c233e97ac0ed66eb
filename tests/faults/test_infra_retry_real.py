"""``--stack-infra-retry`` on real stacks: a container cut off its network under a test is
found broken, the stack is brought down and up fresh (a new container, proven again), the test
runs again and passes there, and the run is green with the retry said (terminal, results
file); a job that really fails on the healthy stack is still FAILED and never retried; nothing
is left in the engine.

Each row starts a pytest session as a subprocess (as a user would) against the repository's
own manifest. They need a Docker engine; without one they skip, unless
PYTEST_STACKS_REQUIRE_DOCKER=1 makes that a failure.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.sessions import NEEDS_ENGINE, REPO, owned_resources

pytestmark = NEEDS_ENGINE

BODY = """
import subprocess
from pathlib import Path

import pytest
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for

pytestmark = pytest.mark.requires("submit")

def _container_ids(stack_info):
    return subprocess.run(["docker", "inspect", "-f", "{{.Id}}", stack_info["container"]],
                          capture_output=True, text=True, check=True).stdout.strip()

def test_0_a_job_that_really_fails_is_failed(backend, stack):
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="exit 3\\n")])),
                        timeout=120)
    assert (status.state, status.exit_code) == (JobState.COMPLETED, 0), str(status)

def test_1_before(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=120)

def test_2_the_fault(backend, stack, stack_info):
    ran = Path("ran-on.txt")
    with ran.open("a") as out:
        out.write(_container_ids(stack_info) + "\\n")
    if not Path("fault.txt").exists():  # once: the fresh stack is left alone
        container = stack_info["container"]
        network = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}",
                                  container], capture_output=True, text=True,
                                 check=True).stdout.strip()
        subprocess.run(["docker", "network", "disconnect", network, container], check=True,
                       capture_output=True)
        Path("fault.txt").write_text(container)
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="echo hi\\n")])),
                        timeout=120)
    assert status.state is JobState.COMPLETED, str(status)

def test_3_after(backend, stack):
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])),
                        timeout=120)
    assert status.state is JobState.COMPLETED, str(status)
"""


@pytest.mark.parametrize("stack_name", ["slurm-24.11"])
def test_a_stack_cut_off_its_network_is_brought_up_fresh_and_the_run_passes_saying_so(
        tmp_path: Path, stack_name: str) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_retry.py").write_text(BODY)
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
           "-rA", f"--stack-manifest={REPO / 'manifest.yaml'}", str(tmp_path),
           f"--stack={stack_name}", "--stack-unproven=warn", f"--stack-results={results}",
           "--stack-infra-retry=1"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=1800)
    # The product's failure (a job exiting 3) stays FAILED: the run is red for it alone.
    assert proc.returncode == 1, out[-4000:]
    said = r"1 failed, 3 passed, (\d+ warnings?, )?1 infra-retried in "
    assert re.search(said, out.splitlines()[-1]), \
        out[-4000:]
    ran_on = (tmp_path / "ran-on.txt").read_text().split()
    assert len(ran_on) == 2 and ran_on[0] != ran_on[1], \
        f"the test ran again on a fresh container, not the broken one: {ran_on}"
    [stack] = json.loads(results.read_text())["stacks"]
    [retry] = stack["infra_retries"]
    assert retry["attempt"] == 1 and "is cut off its network" in retry["fault"], retry
    outcomes = {t["nodeid"].split("::")[1].split("[")[0]: (t["outcome"], t["infra_retries"])
                for t in stack["tests"]}
    assert outcomes == {"test_0_a_job_that_really_fails_is_failed": ("failed", 0),
                        "test_1_before": ("passed", 0), "test_2_the_fault": ("passed", 1),
                        "test_3_after": ("passed", 0)}, outcomes
    assert stack["verdict"] == "fail" and stack["infra"] is None
    assert stack["observed"]["daemon"] == stack["version"], "the fresh stack was proven too"
    assert f"{stack_name} (" in out and "after 1 infra retry (attempt 1: " in out, out[-3000:]
    assert owned_resources(proc.pid) == [], "both bring-ups' resources must be torn down"
