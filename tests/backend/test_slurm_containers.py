"""Slurm's container jobs beyond the contract's one probe, pinned on every Slurm stack that runs
them (`sbatch --container` with crun, :mod:`pytest_stacks.backends.slurm.containers`): the
payload's exit code is the job's, `scancel` reaches the payload through the runtime (oci.conf's
RunTimeKill) and leaves no container behind on the node, and an image the nodes keep no bundle
for is refused at submit with the bundles they do keep. The node's runtime is asked directly:
what crun lists is the backend's state, not the driver's."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until

pytestmark = [pytest.mark.requires("submit", "status", "kill", "container"),
              pytest.mark.for_backend("slurm")]

#: slurmstepd runs crun as the job's user with its state in /run/user/<user> (oci.conf).
CRUN_LIST = ("runuser -u submitter -- crun --rootless=true --root=/run/user/submitter list -q"
             " 2>/dev/null || true")


def _image(stack: Stack) -> str:
    image = str(stack.options.get("container_probe") or "")
    assert image, f"stack {stack.name} declares container but names no options.container_probe"
    return image


def _on_node(stack_info: dict[str, Any], script: str) -> list[str]:
    """What ``sh -c script`` prints on the stack's node container, word by word."""
    done = subprocess.run(["docker", "exec", stack_info["container"], "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_payloads_exit_code_is_the_jobs_and_a_kill_reaches_it(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any]) -> None:
    image = _image(stack)
    assert _on_node(stack_info, "command -v crun"), "the node has no crun"
    failing, sleeping = submitted(backend.submit([
        JobSpec(script="exit 7\n", name="exits-7", container=image),
        JobSpec(script="sleep 300\n", name="sleeps", container=image)]))
    wait_for(backend, [sleeping], until=frozenset({JobState.RUNNING}),
             timeout=stack.timeouts.job)
    # RUNNING is the batch step started; slurmstepd creates the container after that (seen
    # in a loaded CI window: RUNNING, crun's list still empty). Waited on crun's own list.
    mine = f".{sleeping.job_id}."
    try:
        poll_until(lambda: _on_node(stack_info, CRUN_LIST),
                   lambda names: any(mine in name for name in names), timeout=30,
                   interval=0.5, first_interval=0.1)
    except TimeoutError as exc:
        pytest.fail(f"job {sleeping.job_id} runs, but crun lists no container of it: {exc}")
    backend.kill([sleeping])
    failed, killed = wait_for(backend, [failing, sleeping], timeout=stack.timeouts.job)
    assert (failed.state, failed.exit_code) == (JobState.FAILED, 7), failed
    assert killed.state is JobState.CANCELLED, killed
    left = _on_node(stack_info, CRUN_LIST)
    assert not any(f".{sleeping.job_id}." in name for name in left), (
        f"the killed job's container is still there: {left}")


def test_an_image_without_a_bundle_is_refused_naming_the_bundles_kept(
        backend: JobClient, stack: Stack) -> None:
    refused, = backend.submit([JobSpec(script="true\n", container="example.org/none:1")])
    assert not refused.ok, "a job in an image no node keeps a bundle for was accepted"
    assert "no bundle" in refused.error and _image(stack) in refused.error, refused.error
