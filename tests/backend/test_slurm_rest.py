"""Slurm over slurmrestd (transport ``rest``, issue 57): the OpenAPI version a client asks is
served or refused by the daemon itself, and a token slurmctld no longer accepts is an error
naming the fix.

Each proof is the daemon's answer: the plugin that wrote it (``meta.plugin.data_parser``),
its HTTP 404 for a version it does not serve, slurmctld's refusal of an expired token. The
tokens these tests issue for themselves (tiny lifespans) are asked through the engine as
root, the way the run's own token is, and never printed.
"""

from __future__ import annotations

import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.slurm import rest_api
from pytest_stacks.backends.slurm.adapter import rest_client
from pytest_stacks.backends.slurm.rest import RestSlurmClient
from pytest_stacks.contract import (
    JobClient,
    JobHandle,
    JobSpec,
    JobState,
    submitted,
    wait_for,
)
from pytest_stacks.errors import BackendCallError
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.for_backend("slurm"), pytest.mark.for_transport("rest")]

GATED = "v0.0.40"


def _served(stack_info: dict[str, Any]) -> list[str]:
    return [v for v in str(stack_info["rest_served"]).split(",") if v]


@pytest.mark.requires("submit", "status", rest_api.capability(GATED))
def test_the_gated_version_is_spoken_by_its_own_plugin(stack: Stack,
                                                        stack_info: dict[str, Any]) -> None:
    """Where the stack declares ``rest.v0_0_40``, a client asking for v0.0.40 runs a job
    through it, and every answer says the v0.0.40 plugin wrote it."""
    client = rest_client(stack, stack_info, GATED)
    assert client.api_version == GATED
    status, ping = client.call("GET", f"/slurm/{GATED}/ping/")
    assert status == 200 and rest_api.data_parser(ping) == GATED, ping.get("meta")
    assert client.versions() == {"daemon": stack.version, "api": GATED}
    [handle] = submitted(client.submit([JobSpec(script="exit 5\n", name="gated")]))
    [final] = wait_for(client, [handle], timeout=stack.timeouts.job)
    assert (final.state, final.exit_code) == (JobState.FAILED, 5), final
    _, job = client.call("GET", f"/slurm/{GATED}/job/{handle.job_id}")
    assert rest_api.data_parser(job) == GATED
    assert [j["job_id"] for j in job["jobs"]] == [int(handle.job_id)]


def test_a_version_the_daemon_does_not_serve_is_refused_naming_what_it_serves(
        stack: Stack, stack_info: dict[str, Any]) -> None:
    """The ask is v0.0.40 where the stack does not declare it (26.05 removed it), else the
    version just before the oldest served: the daemon answers 404 for it, and the client
    refuses at once, naming the versions served and the option that fixes it."""
    served = _served(stack_info)
    if rest_api.capability(GATED) in stack.capabilities:
        major, minor, micro = served[0].lstrip("v").split(".")
        asked = f"v{major}.{minor}.{int(micro) - 1}"
    else:
        asked = GATED
    assert asked not in served
    newest = rest_client(stack, stack_info)
    assert newest.api_version == served[-1]
    status, answer = newest.call("GET", f"/slurm/{asked}/ping/")
    assert status == 404 and not rest_api.data_parser(answer), (status, answer)
    with pytest.raises(rest_api.RestVersionError) as refused:
        rest_client(stack, stack_info, asked)
    said = str(refused.value)
    assert f"OpenAPI {asked}" in said and "no longer serves it" in said, said
    assert f"served: {', '.join(served)}" in said and "options.rest_api_version" in said


def _token(stack_info: dict[str, Any], lifespan: int) -> str:
    issued = subprocess.run(["docker", "exec", "--user", "root", stack_info["container"],
                             "scontrol", "token", "username=submitter", f"lifespan={lifespan}"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert issued.returncode == 0, issued.stderr
    return rest_api.parse_token(issued.stdout)


def test_an_expired_token_is_refused_naming_the_fix(stack: Stack,
                                                    stack_info: dict[str, Any]) -> None:
    """A token past its lifespan: slurmctld refuses it, and the client says it expired and
    how to get another, instead of reading every job as unknown."""
    token = _token(stack_info, 1)
    expiry = rest_api.token_expiry(token)
    assert expiry is not None
    time.sleep(max(0.0, expiry - time.time()) + 1.5)
    client = RestSlurmClient(stack_info["rest_url"], token, stack.name,
                             api_version=_served(stack_info)[-1])
    ghost = JobHandle(stack.name, "4999997")
    for ask in (lambda: client.status([ghost]), client.versions):
        with pytest.raises(BackendCallError) as refused:
            ask()
        said = str(refused.value)
        assert "expired at" in said and "scontrol token username=submitter" in said, said
        assert token not in said


def test_the_run_token_is_private_and_works(backend: JobClient, stack: Stack,
                                            stack_info: dict[str, Any]) -> None:
    """The run's token sits in the run directory readable by its owner only, and the
    stack's client is the REST one (it names the OpenAPI version it speaks, the newest
    served) and reaches slurmctld with it."""
    path = Path(stack_info["rest_token_file"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert backend.versions() == {"daemon": stack.version, "api": _served(stack_info)[-1]}


def _curl(commands: Any, headers: Path, *argv: str, body: str | None = None) -> Any:
    """``curl`` as a user's test runs it: everything from ``stack_commands.env``, the token
    from a 0600 header file (never on a command line: ``ps`` and a failed assertion's
    report would show it)."""
    line = ["curl", "-sS", "--max-time", "30", "-H", f"@{headers}", *argv]
    if body is not None:
        line += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    return subprocess.run(line, env=commands.env, input=body, capture_output=True, text=True,
                          timeout=60, check=False)


def _header_file(commands: Any, folder: Path) -> Path:
    env = commands.env
    path = folder / "slurmrestd-headers"
    path.touch(mode=0o600)
    path.write_text(f"X-SLURM-USER-NAME: {env['SLURMRESTD_USER']}\n"
                    f"X-SLURM-USER-TOKEN: {env['SLURM_JWT']}\n")
    return path


@pytest.mark.requires("submit", "status")
def test_curl_reaches_slurmrestd_from_the_stack_commands_environment(
        stack: Stack, stack_commands: Any, tmp_path: Path) -> None:
    """Issue 57 item 4: a user's own REST client (here curl) gets the way in from
    ``stack_commands.env`` as a shelling-out client gets sbatch: the URL, the user, the run's
    token and the API version. What it submits is slurmctld's job, read back with the
    stack's own scontrol (the login host's command on PATH)."""
    import json

    env = stack_commands.env
    base = f"{env['SLURMRESTD_URL']}/slurm/{env['SLURMRESTD_API']}"
    headers = _header_file(stack_commands, tmp_path)
    ping = _curl(stack_commands, headers, f"{base}/ping")
    assert ping.returncode == 0, ping.stderr
    assert rest_api.ping_up(json.loads(ping.stdout))[0], ping.stdout
    assert json.loads(ping.stdout)["meta"]["plugin"]["data_parser"].endswith(
        env["SLURMRESTD_API"])
    body = rest_api.submit_body(script="#!/bin/sh\nexit 4\n", name="curl-job",
                                workdir="/tmp", environment={"PATH": "/usr/bin:/bin"},
                                cpus=1, minutes=1)
    sent = _curl(stack_commands, headers, "-X", "POST", f"{base}/job/submit", body=json.dumps(body))
    assert sent.returncode == 0, sent.stderr
    answer = json.loads(sent.stdout)
    assert not rest_api.errors(answer), answer
    job_id = str(answer["job_id"])
    deadline = time.monotonic() + stack.timeouts.job
    while True:
        shown = subprocess.run(["scontrol", "show", "job", job_id], env=env,
                               capture_output=True, text=True, timeout=60, check=False)
        if "JobState=FAILED" in shown.stdout or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "JobState=FAILED" in shown.stdout and "ExitCode=4:0" in shown.stdout, shown.stdout
    refused = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                              "-H", f"X-SLURM-USER-NAME: {env['SLURMRESTD_USER']}",
                              f"{base}/ping"], capture_output=True, text=True, timeout=60,
                             check=False)
    assert refused.stdout == "401", refused  # no token: slurmrestd refuses, not the shim
