"""No shared file system between the login node and the compute nodes (capability
``fs.unshared``, configuration ``no-shared-fs``), proven from the stack itself: a file a job
writes in its working directory is on the node it ran on (read through the engine, for the
assertion only) and not on the login node, and a file the client leaves at a path on the login
node is not at that path on the node, so a client that assumes shared paths fails here.

On a stack with one job area for all (slurm-26.05-cluster-ssh) both tests fail: the job's
file is on the login node too, and the job finds the client's file.
"""

from __future__ import annotations

import subprocess
import uuid
from typing import Any

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import ssh_access

pytestmark = [pytest.mark.for_backend("slurm"), pytest.mark.for_transport("ssh"),
              pytest.mark.for_provider("compose")]

JOB_AREA = "/work"


def _compute_nodes(info: dict[str, Any]) -> dict[str, str]:
    """service name -> container, for the stack's slurmd nodes, read from Docker."""
    found = {}
    for service in ("node1", "node2"):
        ids = subprocess.run(
            ["docker", "ps", "-q",
             "--filter", f"label=com.docker.compose.project={info['project']}",
             "--filter", f"label=com.docker.compose.service={service}"],
            capture_output=True, text=True, timeout=30, check=True).stdout.split()
        assert len(ids) == 1, f"{service}: containers {ids}"
        found[service] = ids[0]
    return found


def on_node(container: str, script: str) -> subprocess.CompletedProcess[str]:
    """``sh -c script`` in a node's container, as the node sees it (never the client's way)."""
    return subprocess.run(["docker", "exec", container, "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.requires("submit", "status", "execution", "fs.unshared")
def test_a_file_the_job_writes_is_on_its_node_and_not_on_the_login_node(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any]) -> None:
    token = uuid.uuid4().hex
    marker = f"marker-{token}.txt"
    [handle] = submitted(backend.submit([JobSpec(
        script=f"echo {token} > {marker}\nhostname > host-{token}.txt\n", name="unshared")]))
    [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status

    found = {}
    for service, container in _compute_nodes(stack_info).items():
        listed = on_node(container, f"find {JOB_AREA} -name {marker}")
        assert listed.returncode == 0, listed.stderr
        for path in listed.stdout.split():
            found[service] = (path, on_node(container, f"cat {path}").stdout.strip())
    assert len(found) == 1, (f"the job's file should be on exactly one node (on both: the "
                             f"nodes share the job area), found {found}")
    [(path, content)] = found.values()
    assert content == token

    login = ssh_access.transport(stack_info)
    assert login.run(["test", "-d", path.rsplit("/", 1)[0]]).ok, (
        "the job's directory has the same path on the login node (the client made it there)")
    seen = login.run(["find", JOB_AREA, "-name", marker])
    assert seen.ok, seen.stderr
    assert seen.stdout.strip() == "", (
        f"the job's file {path} (written on {next(iter(found))}) is on the login node too: "
        f"the job area is shared")


@pytest.mark.requires("submit", "status", "execution", "fs.unshared")
def test_a_job_does_not_find_what_the_client_left_at_a_login_node_path(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any]) -> None:
    """The shared-path client's way: write the input on the login node, name its path in the
    job. The job, run on a node, does not find it, and fails."""
    token = uuid.uuid4().hex
    folder = f"{JOB_AREA}/jobs/shared-path-{token}"
    login = ssh_access.transport(stack_info)
    login.put_files(folder, {"in.txt": f"{token}\n".encode()}, user=login.login_user)
    try:
        assert login.run(["grep", "-qx", token, f"{folder}/in.txt"]).ok
        [handle] = submitted(backend.submit([JobSpec(
            script=f"grep -qx {token} {folder}/in.txt || exit 7\n", name="shared-path")]))
        [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
        assert status.state is JobState.FAILED and status.exit_code == 7, (
            f"{status}: the job read the file the client wrote on the login node, so the "
            f"login node and the job's node share {JOB_AREA}")
    finally:
        login.run(["rm", "-rf", "--", folder])
