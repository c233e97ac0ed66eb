"""Slurm reached over SSH (login node, jump hosts): what users of such sites depend on.

These run on every Slurm stack whose transport is ``ssh`` (deselected elsewhere); the contract
suite already runs through that transport (the driver is the same), so here the transport
itself is checked: the non-root login user, arguments that survive the remote shell byte for
byte, the declared route, private per-run credentials. Those checks submit no job, so they
require no capability (they prove the route, not ``submit`` or ``status``); the one that does
run a job across both compute nodes requires what it exercises.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import ssh_access
from pytest_stacks.transports.ssh import SshTransport

pytestmark = [pytest.mark.for_backend("slurm"), pytest.mark.for_transport("ssh")]


@pytest.fixture
def ssh(stack: Stack, stack_info: dict[str, Any]) -> SshTransport:
    return ssh_access.transport(stack_info)


def test_commands_run_as_the_non_root_login_user(ssh: SshTransport, stack: Stack) -> None:
    who = ssh.run(["id", "-un"])
    uid = ssh.run(["id", "-u"])
    assert who.ok and who.stdout.strip() == ssh.login_user, who
    assert uid.ok and uid.stdout.strip() != "0", "the login user must not be root"


def test_arguments_survive_the_remote_shell(ssh: SshTransport) -> None:
    tricky = ["a b", "c'd", '"e"', "$HOME", "`id`", "; touch /tmp/pwned", "x\ny", "*"]
    result = ssh.run(["printf", r"%s\0", *tricky])
    assert result.ok, result
    assert result.stdout.split("\0")[:-1] == tricky
    assert not ssh.run(["test", "-e", "/tmp/pwned"]).ok, "an argument ran as a command"


@pytest.mark.for_provider("compose")
def test_the_route_is_the_declared_one(ssh: SshTransport, stack: Stack) -> None:
    via = stack.options["ssh"].get("via") or []
    assert len(ssh.hops) == len(via) + 1
    assert ssh.hops[0].host == "127.0.0.1", "the first hop is this machine's published port"
    # Later hops (the inner jump hosts, then the login node) by service name, port 22.
    inner = [v["service"] for v in via[1:]] + (["login"] if via else [])
    assert [(h.host, h.port) for h in ssh.hops[1:]] == [(name, 22) for name in inner]
    assert ssh.run(["hostname"]).stdout.strip() == "login"


@pytest.mark.for_provider("compose")  # a site's key is the user's own, made once
def test_credentials_are_per_run_and_private(ssh: SshTransport, stack_info: dict[str, Any]
                                             ) -> None:
    route = json.loads(stack_info["ssh"])
    key, known_hosts = Path(route["key"]), Path(route["known_hosts"])
    for path in (key, known_hosts):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert "tokens" in key.parts, "credentials live where artifacts never copy them"
    secret = key.read_text()
    assert "PRIVATE KEY" in secret
    shown = json.dumps(stack_info)
    assert secret.strip().splitlines()[1] not in shown
    # Every hop's host key is pinned: one known_hosts line per hop.
    assert len(known_hosts.read_text().splitlines()) == len(route["hops"])


@pytest.mark.requires("submit", "status", "execution", "outputs")
def test_a_job_spans_both_compute_nodes(backend: JobClient, stack: Stack,
                                        tmp_path: Path) -> None:
    if stack.configuration == "single-node":
        pytest.skip("one node")
    spec = JobSpec(script="srun hostname > hosts.txt\n", outputs=("hosts.txt",),
                   backend_options={"workers": 2})
    [handle] = submitted(backend.submit([spec]))
    [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    [out] = backend.fetch_outputs([handle], tmp_path)
    hosts = sorted(out.files["hosts.txt"].read_text().split())
    assert hosts == ["node1", "node2"], hosts
